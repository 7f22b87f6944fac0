//! One DSC call as data: [`DscCallData`], what the core makes of a resource,
//! a method and a route, and what pwshlib's host receives as the request's
//! `dsc` object (docs/protocol.md, "DSC calls as data"). Its JSON is that
//! object: the host's `DscCall.Read`, the simulator and the `--debug`
//! summary all read this one value; nothing reads script text back into
//! data.
//!
//! By job: this file the value and its JSON; `summary.rs` its redacted
//! one-line rendering for `--debug`. The script module makes it
//! (`script::call_data`, from the same resource as the script) and
//! depends on it, not the other way round.

mod summary;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map as JsonMap, Value as Json};

use crate::bound::SecretBinding;

/// One DSC call: the resource, its method, its module, how it is routed,
/// the vendored folder, the timeout and the properties as typed values.
/// Secret leaves and credentials are [`CallValue::Var`]s naming
/// [`DscCallData::secrets`], which go beside it in the request's
/// `secrets` (docs/protocol.md, "Secrets"), never in the `dsc` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DscCallData {
    /// The resource's friendly name (`Invoke-DscResource -Name`).
    pub name: String,
    pub method: DscMethod,
    pub module: ModuleSpec,
    /// `PWSHLIB_DSC_DIRECT` as read when the call was made; absent: direct.
    #[serde(default, skip_serializing_if = "is_direct")]
    pub route: Route,
    /// The folder put on PSModulePath for the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendored_path: Option<String>,
    /// A class-based resource: its embedded instances are hashtables (and
    /// a nested credential a PSCredential) on PowerShell 7, where
    /// PSDesiredStateConfiguration 2.x assigns them to the class's
    /// properties; CIM instances elsewhere.
    #[serde(default, skip_serializing_if = "is_false")]
    pub class_based: bool,
    /// The resource's timeout; the frame's `timeout_ms` carries it on the
    /// wire, so it is not repeated in the `dsc` object.
    #[serde(skip)]
    pub timeout_ms: Option<u64>,
    /// In type definition order.
    #[serde(with = "members")]
    pub properties: Vec<(String, CallValue)>,
    /// The variables [`CallValue::Var`] names, bound by the host before the
    /// call: sent as the request's `secrets`.
    #[serde(skip)]
    pub secrets: Vec<SecretBinding>,
}

/// The module a resource is loaded from. On the wire `name` is left out
/// when `path` is the manifest named after it (`…/Name/Name.psd1`), and
/// read back from there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ModuleWire", try_from = "ModuleWire")]
pub struct ModuleSpec {
    pub name: String,
    pub version: Option<String>,
    /// The module's manifest in the vendored folder, where
    /// `Invoke-DscResource` is to load it from (a MOF resource with a
    /// version): its `ModuleName`.
    pub path: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ModuleWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
}

/// `Name` of `…/Name/Name.psd1`.
fn manifest_stem(path: &str) -> Option<&str> {
    let file = path.rsplit(['/', '\\']).next()?;
    file.strip_suffix(".psd1")
}

impl From<ModuleSpec> for ModuleWire {
    fn from(module: ModuleSpec) -> ModuleWire {
        let named_by_path =
            module.path.as_deref().and_then(manifest_stem) == Some(module.name.as_str());
        ModuleWire {
            name: (!named_by_path).then_some(module.name),
            version: module.version,
            path: module.path,
        }
    }
}

impl TryFrom<ModuleWire> for ModuleSpec {
    type Error = String;

    fn try_from(wire: ModuleWire) -> Result<ModuleSpec, String> {
        let name = match (wire.name, wire.path.as_deref().and_then(manifest_stem)) {
            (Some(name), _) => name,
            (None, Some(stem)) => stem.to_owned(),
            (None, None) => return Err("the module has no name".into()),
        };
        Ok(ModuleSpec {
            name,
            version: wire.version,
            path: wire.path,
        })
    }
}

/// One property value, typed as PowerShell is to see it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallValue {
    Null,
    Bool(bool),
    /// Int32 where it fits, else Int64 (as PowerShell types the literal).
    Int(i64),
    /// An integer beyond 64 bits, in decimal: a Decimal, else a Double.
    BigInt(String),
    /// A Double, as `literal::format_float` writes it.
    Real(String),
    Text(String),
    /// An `object[]`.
    Array(Vec<CallValue>),
    /// A Hashtable whose keys are strings (compared without case).
    Hash(Vec<(String, CallValue)>),
    /// A Hashtable with a key that is not a plain string (a number, a
    /// secret).
    Table(Vec<(CallValue, CallValue)>),
    /// PowerShell's `[DateTime]` cast of the value (a string or a secret).
    DateTime(Box<CallValue>),
    /// An array of the element type (`string`, `uint32`, `DateTime`, …),
    /// as PowerShell resolves the type name: how an empty array, or one
    /// whose items mix types, gets a CIM type.
    Typed {
        element: String,
        items: Vec<CallValue>,
    },
    /// A variable the request's `secrets` bind: a secret leaf, or a
    /// PSCredential.
    Var(String),
    /// An embedded instance.
    Instance(Instance),
    /// An array of embedded instances ([`CallValue::Instance`] or
    /// [`CallValue::CredentialInstance`] items): `CimInstance[]`, or on
    /// PowerShell 7 for a class-based resource an `object[]`.
    Instances(Vec<CallValue>),
    /// An `MSFT_Credential` instance made from the credential the named
    /// variable holds (on PowerShell 7 for a class-based resource the
    /// PSCredential itself).
    CredentialInstance(String),
}

/// An embedded instance: its class and its properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub class: String,
    pub properties: Vec<(String, CallValue)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscMethod {
    Get,
    Set,
    Test,
    /// Every instance the resource lists of itself: a class-based
    /// resource's `static [<Class>[]] Export()`, a script module's
    /// `Export-TargetResource` (as `dsc resource export` of DSC v3). No
    /// properties; the answer is `{"instances": [<a Get's result>…]}`
    /// (docs/protocol.md, "DSC calls as data").
    Export,
}

impl DscMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            DscMethod::Get => "Get",
            DscMethod::Set => "Set",
            DscMethod::Test => "Test",
            DscMethod::Export => "Export",
        }
    }

    /// `get`, `set` or `test`: how pwshlib 2.x passes the method to
    /// `invoke_dsc_resource`.
    pub fn as_lowercase_str(self) -> &'static str {
        match self {
            DscMethod::Get => "get",
            DscMethod::Set => "set",
            DscMethod::Test => "test",
            DscMethod::Export => "export",
        }
    }

    /// `get`, `Get`, `GET` … → [`DscMethod::Get`].
    pub fn parse(text: &str) -> Option<DscMethod> {
        [
            DscMethod::Get,
            DscMethod::Set,
            DscMethod::Test,
            DscMethod::Export,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// How `PWSHLIB_DSC_DIRECT` routes a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Route {
    /// Unset, or any other value: direct.
    #[default]
    Direct,
    /// `0`, `false`, `no`, `off`: through `Invoke-DscResource`.
    Through,
    /// `system`: through the LCM unless the host runs as SYSTEM (5.1).
    LcmUnlessSystem,
}

fn is_direct(route: &Route) -> bool {
    *route == Route::Direct
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if
fn is_false(value: &bool) -> bool {
    !*value
}

fn tagged(tag: &str, value: Json) -> Json {
    let mut object = JsonMap::with_capacity(1);
    object.insert(tag.to_owned(), value);
    Json::Object(object)
}

fn members_json(members: &[(String, CallValue)]) -> Json {
    Json::Object(
        members
            .iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect(),
    )
}

fn members_from(json: &Json) -> Result<Vec<(String, CallValue)>, String> {
    let object = json.as_object().ok_or("members must be an object")?;
    object
        .iter()
        .map(|(name, value)| Ok((name.clone(), CallValue::from_json(value)?)))
        .collect()
}

impl CallValue {
    /// The wire's form (docs/protocol.md, "DSC calls as data"): a JSON
    /// scalar or array as itself, anything else an object of one member
    /// naming its kind.
    pub fn to_json(&self) -> Json {
        match self {
            CallValue::Null => Json::Null,
            CallValue::Bool(flag) => Json::Bool(*flag),
            CallValue::Int(whole) => Json::from(*whole),
            CallValue::BigInt(text) => tagged("int", Json::String(text.clone())),
            CallValue::Real(text) => tagged("real", Json::String(text.clone())),
            CallValue::Text(text) => Json::String(text.clone()),
            CallValue::Array(items) => Json::Array(items.iter().map(CallValue::to_json).collect()),
            CallValue::Hash(members) => tagged("hash", members_json(members)),
            CallValue::Table(pairs) => tagged(
                "table",
                Json::Array(
                    pairs
                        .iter()
                        .map(|(key, value)| Json::Array(vec![key.to_json(), value.to_json()]))
                        .collect(),
                ),
            ),
            CallValue::DateTime(inner) => tagged("datetime", inner.to_json()),
            CallValue::Typed { element, items } => {
                let mut object = JsonMap::with_capacity(2);
                object.insert("type".into(), Json::String(element.clone()));
                object.insert(
                    "items".into(),
                    Json::Array(items.iter().map(CallValue::to_json).collect()),
                );
                tagged("typed", Json::Object(object))
            }
            CallValue::Var(name) => tagged("var", Json::String(name.clone())),
            CallValue::Instance(instance) => tagged("instance", instance.to_json()),
            CallValue::Instances(items) => tagged(
                "instances",
                Json::Array(items.iter().map(CallValue::to_json).collect()),
            ),
            CallValue::CredentialInstance(name) => {
                tagged("msft_credential", Json::String(name.clone()))
            }
        }
    }

    /// [`CallValue::to_json`] backwards; `Err` says what is wrong.
    pub fn from_json(json: &Json) -> Result<CallValue, String> {
        Ok(match json {
            Json::Null => CallValue::Null,
            Json::Bool(flag) => CallValue::Bool(*flag),
            Json::Number(number) => {
                CallValue::Int(number.as_i64().ok_or("a number must be a 64-bit integer")?)
            }
            Json::String(text) => CallValue::Text(text.clone()),
            Json::Array(items) => CallValue::Array(
                items
                    .iter()
                    .map(CallValue::from_json)
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(object) => {
                let mut members = object.iter();
                let (Some((tag, inner)), None) = (members.next(), members.next()) else {
                    return Err("a tagged value must have exactly one member".into());
                };
                Self::tagged_from(tag, inner)?
            }
        })
    }

    fn tagged_from(tag: &str, inner: &Json) -> Result<CallValue, String> {
        let text = || {
            inner
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{tag} must be a string"))
        };
        let list = |json: &Json| -> Result<Vec<CallValue>, String> {
            json.as_array()
                .ok_or_else(|| format!("{tag} must be an array"))?
                .iter()
                .map(CallValue::from_json)
                .collect()
        };
        Ok(match tag {
            "int" => CallValue::BigInt(text()?),
            "real" => CallValue::Real(text()?),
            "hash" => CallValue::Hash(members_from(inner)?),
            "table" => CallValue::Table(
                inner
                    .as_array()
                    .ok_or("table must be an array")?
                    .iter()
                    .map(|pair| match pair.as_array().map(Vec::as_slice) {
                        Some([key, value]) => {
                            Ok((CallValue::from_json(key)?, CallValue::from_json(value)?))
                        }
                        _ => Err("a table entry must be a [key, value] pair".to_owned()),
                    })
                    .collect::<Result<_, String>>()?,
            ),
            "datetime" => CallValue::DateTime(Box::new(CallValue::from_json(inner)?)),
            "typed" => CallValue::Typed {
                element: inner
                    .get("type")
                    .and_then(Json::as_str)
                    .filter(|name| is_type_name(name))
                    .ok_or("typed needs a type name")?
                    .to_owned(),
                items: list(inner.get("items").ok_or("typed needs items")?)?,
            },
            "var" => CallValue::Var(text()?),
            "instance" => CallValue::Instance(Instance::from_json(inner)?),
            "instances" => CallValue::Instances(list(inner)?),
            "msft_credential" => CallValue::CredentialInstance(text()?),
            other => return Err(format!("unknown kind '{other}'")),
        })
    }
}

/// A type name the host resolves as PowerShell does: letters and digits.
pub fn is_type_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
}

impl Instance {
    fn to_json(&self) -> Json {
        let mut object = JsonMap::with_capacity(2);
        object.insert("class".into(), Json::String(self.class.clone()));
        object.insert("properties".into(), members_json(&self.properties));
        Json::Object(object)
    }

    fn from_json(json: &Json) -> Result<Instance, String> {
        Ok(Instance {
            class: json
                .get("class")
                .and_then(Json::as_str)
                .ok_or("an instance needs a class")?
                .to_owned(),
            properties: members_from(
                json.get("properties")
                    .ok_or("an instance needs properties")?,
            )?,
        })
    }
}

impl Serialize for CallValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CallValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        CallValue::from_json(&Json::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// The properties as one JSON object, in order.
mod members {
    use super::{members_from, members_json, CallValue};
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value as Json;

    pub fn serialize<S: Serializer>(
        members: &[(String, CallValue)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        members_json(members).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, CallValue)>, D::Error> {
        members_from(&Json::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl Serialize for DscMethod {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DscMethod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        // Exactly Get, Set, Test (as Invoke-DscResource's ValidateSet
        // takes them: without case, untrimmed) or Export.
        DscMethod::parse(&text)
            .filter(|method| method.as_str().eq_ignore_ascii_case(&text))
            .ok_or_else(|| D::Error::custom(format!("unknown method {text:?}")))
    }
}

impl Serialize for Route {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        [Route::Direct, Route::Through, Route::LcmUnlessSystem]
            .into_iter()
            .find(|route| route.wire_name() == text)
            .ok_or_else(|| D::Error::custom(format!("unknown route {text:?}")))
    }
}

impl Route {
    /// The route's name in the `dsc` object and the `--debug` summary.
    pub fn wire_name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Through => "invoke_dsc_resource",
            Route::LcmUnlessSystem => "lcm_unless_system",
        }
    }
}

impl DscCallData {
    /// The `dsc` object of the request.
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }

    /// A request's `dsc` object read back.
    ///
    /// # Errors
    /// What in the object is not a DSC call.
    pub fn from_json(json: &Json) -> Result<DscCallData, String> {
        DscCallData::deserialize(json).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
