//! What a script is built from: the [`InvocableResource`] (pwshlib 2.x's
//! name) and its [`InvokeParameter`]s, made from a type definition and a
//! resource hash, or read from the hash the Ruby methods pass around.

use super::DscMethod;
use crate::cim_type::MofType;
use crate::error::{Error, Result};
use crate::secrecy::{mark, secrecy_of_type};
use crate::typedef::{Attribute, Behaviour, TypeDef, TypeShape};
use crate::value::{Map, Value};
use crate::vendored;

/// One DSC property to pass: the value as given and the type information
/// the script needs to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeParameter {
    /// The Puppet attribute, e.g. `dsc_ensure`.
    pub attribute: String,
    pub value: Value,
    pub mof_type: Option<MofType>,
    pub mof_is_embedded: bool,
    /// The shape of the attribute's Puppet type: for a CIM instance, the
    /// types of its members (empty and mixed arrays inside instances are
    /// typed from it). `Other` when unknown.
    pub shape: TypeShape,
}

impl InvokeParameter {
    /// The DSC property name: the attribute without `dsc_`.
    pub fn property_name(&self) -> &str {
        self.attribute
            .strip_prefix("dsc_")
            .unwrap_or(&self.attribute)
    }

    pub fn is_array(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_array)
    }
}

/// What pwshlib 2.x calls the invocable resource: everything needed to build
/// one script. Converts to and from a Value (a Ruby hash) for the
/// Ruby-visible `invocable_resource` / `ps_script_content` pair.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocableResource {
    /// The type's name (`dsc_psrepository`), as in pwshlib 2.x.
    pub name: Option<String>,
    pub friendly_name: String,
    pub resource_name: String,
    /// `MOF`, `Class`, or None.
    pub implementation: Option<String>,
    pub module_name: String,
    pub module_version: Option<String>,
    pub method: DscMethod,
    /// Empty when the script does not need it (MOF without a version).
    pub vendored_modules_path: String,
    /// In type definition order.
    pub parameters: Vec<InvokeParameter>,
}

/// A parameter's value with what its attribute's type calls secret wrapped
/// in Sensitive: a caller of `invoke_dsc_resource` may pass a
/// Sensitive-typed value as a plain String, and the script must still
/// treat it as a secret span (redacted in the `--debug` dump, guarded in
/// errors). The literal text is the same either way, so the wire is too.
fn secret_by_type(value: &Value, attribute: &Attribute) -> Value {
    if attribute.secrecy.is_public() && !value.is_collection() {
        return value.clone();
    }
    mark(value, &attribute.secrecy)
}

impl InvocableResource {
    /// `should` is a resource hash (Symbol keys, `dsc_` attributes), method
    /// is Get/Set/Test, `vendored_modules_path` comes from the load path.
    ///
    /// Get, Set and Test pass every `dsc_` property of `should`
    /// ([`passed_to_get`]). Never passed: `dsc_timeout`, read-only
    /// properties, nil values.
    pub fn new(
        typedef: &TypeDef,
        should: &Map,
        method: DscMethod,
        vendored_modules_path: &str,
    ) -> Result<Self> {
        let parameters = typedef
            .attributes
            .iter()
            .filter(|attr| passed_to_get(attr))
            .filter_map(|attr| {
                let value = should.get_named(&attr.name)?;
                (!value.is_nil()).then(|| InvokeParameter {
                    attribute: attr.name.clone(),
                    value: secret_by_type(value, attr),
                    mof_type: attr.mof_type.clone(),
                    mof_is_embedded: attr.mof_is_embedded,
                    shape: attr.shape.clone(),
                })
            })
            .collect();
        Ok(InvocableResource {
            // The type's name, as in pwshlib 2.x (`context.type.definition[:name]`).
            name: Some(typedef.name.clone()),
            friendly_name: typedef.friendly_name.clone(),
            resource_name: typedef.resource_name.clone(),
            implementation: typedef.implementation.clone(),
            module_name: typedef.module_name.clone(),
            module_version: typedef.module_version.clone(),
            method,
            vendored_modules_path: vendored_modules_path.to_owned(),
            parameters,
        })
    }

    /// Like [`InvocableResource::new`], looking the vendored path up on the
    /// load path. Every resource gets it on PSModulePath (a vendored module
    /// may import its vendored siblings by name); it must exist for
    /// Class-based resources and MOF resources with a version, whose
    /// module is loaded from it.
    pub fn from_load_path(
        typedef: &TypeDef,
        should: &Map,
        method: DscMethod,
        load_path: &[String],
    ) -> Result<Self> {
        let path = match vendored::vendored_modules_path(load_path, &typedef.module_name) {
            Ok(path) => path,
            Err(e)
                if needs_vendored_path(
                    typedef.is_class_based(),
                    typedef.module_version.as_ref(),
                ) =>
            {
                return Err(e)
            }
            Err(_) => String::new(),
        };
        InvocableResource::new(typedef, should, method, &path)
    }

    /// Marks each parameter's value by its attribute's Puppet type, as
    /// [`InvocableResource::new`] does, when the resource is of `typedef`'s
    /// type: a resource hash built or edited by hand (a pwshlib 2.x
    /// override of `invoke_dsc_resource`) may hold a Sensitive-typed value
    /// as a plain String, and the script must still treat it as a secret
    /// span (redacted in the `--debug` dump). The wire is the same.
    pub fn mark_secrets_by_type(&mut self, typedef: &TypeDef) {
        let same_type = typedef
            .friendly_name
            .eq_ignore_ascii_case(&self.friendly_name)
            && self.name.as_deref().is_none_or(|name| name == typedef.name);
        if !same_type {
            return;
        }
        for parameter in &mut self.parameters {
            if let Some(attribute) = typedef.attribute(&parameter.attribute) {
                parameter.value = secret_by_type(&parameter.value, attribute);
            }
        }
    }

    pub fn is_class_based(&self) -> bool {
        self.implementation
            .as_deref()
            .is_some_and(|i| i.eq_ignore_ascii_case("Class"))
    }

    /// The pwshlib 2.x hash: `name`, the `dscmeta_*` keys,
    /// `dsc_invoke_method` (lowercase), `vendored_modules_path`, and
    /// `parameters`: `{dsc_x: {value:, mof_type:, mof_is_embedded:}}`.
    pub fn to_value(&self) -> Value {
        let text = |s: &Option<String>| s.clone().map(Value::Str).unwrap_or(Value::Nil);
        let mut parameters = Map::new();
        for p in &self.parameters {
            let mut entry = Map::new();
            entry.insert_symbol("value", p.value.clone());
            let mof_type = p.mof_type.as_ref().map(MofType::as_str);
            entry.insert_symbol("mof_type", mof_type.map_or(Value::Nil, Value::str));
            entry.insert_symbol("mof_is_embedded", Value::Bool(p.mof_is_embedded));
            parameters.insert_symbol(&p.attribute, Value::Hash(entry));
        }
        let mut map = Map::new();
        map.insert_symbol("name", text(&self.name));
        map.insert_symbol(
            "dscmeta_resource_friendly_name",
            Value::str(&self.friendly_name),
        );
        map.insert_symbol("dscmeta_resource_name", Value::str(&self.resource_name));
        map.insert_symbol(
            "dscmeta_resource_implementation",
            text(&self.implementation),
        );
        map.insert_symbol("dscmeta_module_name", Value::str(&self.module_name));
        map.insert_symbol("dscmeta_module_version", text(&self.module_version));
        map.insert_symbol(
            "dsc_invoke_method",
            Value::str(self.method.as_str().to_ascii_lowercase()),
        );
        map.insert_symbol(
            "vendored_modules_path",
            Value::str(&self.vendored_modules_path),
        );
        map.insert_symbol("parameters", Value::Hash(parameters));
        Value::Hash(map)
    }

    /// Reads the hash [`InvocableResource::to_value`] writes (Symbol or
    /// String keys).
    pub fn from_value(value: &Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidValue {
            attribute: "invocable resource".into(),
            message,
        };
        let map = value
            .as_map()
            .ok_or_else(|| invalid("it is not a hash".into()))?;
        let text = |key: &str| -> Option<String> {
            match map.get_named(key)? {
                Value::Str(s) | Value::Symbol(s) => Some(s.clone()),
                _ => None,
            }
        };
        let required = |key: &str| text(key).ok_or_else(|| invalid(format!("it has no {key}")));
        let method_text = required("dsc_invoke_method")?;
        let method = DscMethod::parse(&method_text)
            .ok_or_else(|| invalid(format!("unknown dsc_invoke_method {method_text:?}")))?;
        let mut parameters = Vec::new();
        if let Some(entries) = map.get_named("parameters") {
            let entries = entries
                .as_map()
                .ok_or_else(|| invalid("parameters is not a hash".into()))?;
            for (key, entry) in entries.iter() {
                let attribute = key
                    .key_name()
                    .ok_or_else(|| invalid(format!("parameter key {key} is not a name")))?;
                let entry = entry
                    .as_map()
                    .ok_or_else(|| invalid(format!("parameter {attribute} is not a hash")))?;
                // The 2.x hash has no Puppet type; one given under `type`
                // shapes the value and says where its secrets are.
                let declared_type = entry.get_named("type").and_then(Value::key_name);
                let value = entry.get_named("value").cloned().unwrap_or(Value::Nil);
                let value = match declared_type {
                    Some(puppet_type) => mark(&value, &secrecy_of_type(puppet_type)),
                    None => value,
                };
                let mof_is_embedded =
                    matches!(entry.get_named("mof_is_embedded"), Some(Value::Bool(true)));
                parameters.push(InvokeParameter {
                    attribute: attribute.to_owned(),
                    value,
                    mof_type: entry
                        .get_named("mof_type")
                        .and_then(Value::key_name)
                        .map(|mof_type| MofType::parse(mof_type, mof_is_embedded)),
                    mof_is_embedded,
                    shape: declared_type.map(TypeShape::parse).unwrap_or_default(),
                });
            }
        }
        Ok(InvocableResource {
            name: text("name"),
            friendly_name: required("dscmeta_resource_friendly_name")?,
            resource_name: text("dscmeta_resource_name").unwrap_or_default(),
            implementation: text("dscmeta_resource_implementation"),
            module_name: required("dscmeta_module_name")?,
            module_version: text("dscmeta_module_version").filter(|v| !v.is_empty()),
            method,
            vendored_modules_path: text("vendored_modules_path").unwrap_or_default(),
            parameters,
        })
    }

    pub(super) fn vendored_path(&self) -> Result<&str> {
        if self.vendored_modules_path.is_empty() {
            return Err(Error::MissingVendoredPath {
                module: self.module_name.clone(),
                searched: "no vendored modules path was given".into(),
            });
        }
        Ok(&self.vendored_modules_path)
    }
}

/// docs/behavior.md §4 "What a Get is handed": which attributes (those
/// with a value in the desired state) go to a Get: every non-read-only
/// `dsc_` property, as Set and Test get them and as the DSC engines hand
/// `Get()` the whole desired state (PSDesiredStateConfiguration 2.x, DSC
/// v3, Machine Configuration), an absent one too: many resources read
/// what they report through them (nxFile's `Mode`, ScheduledTask's
/// `TaskPath`, SqlServerDsc's `ServerName`), and one that looks in the
/// wrong place cannot say whether the resource is there. A listing's hash
/// holds the namevars alone, so its Get is keys-only as it stands.
pub fn passed_to_get(attribute: &Attribute) -> bool {
    attribute.is_dsc_property() && attribute.behaviour != Behaviour::ReadOnly
}

fn needs_vendored_path(class_based: bool, version: Option<&String>) -> bool {
    class_based || version.is_some()
}
