//! The call as data ([`DscCallData`]) made from an [`InvocableResource`],
//! the one place a call is built and checked: each property typed by its
//! CIM type, a credential bound as a PSCredential, embedded instances with
//! their class, a date-time cast, an empty array typed by its element
//! type, and every Sensitive leaf bound beside the value by variable.
//! Whatever the call cannot carry is refused here, naming the attribute;
//! the script text (`render.rs`) is written from the finished value.
//!
//! Embedded instances follow `New-CimInstance -ClientOnly -Property`, which
//! makes each entry a property with `CimProperty.Create(name, value,
//! flags)`: that infers the CIM type from the .NET value (MMI's
//! `CimConverter`) and throws ArgumentException when it cannot: for
//! `$null`, a hashtable, a PSCredential, an untyped empty array (`object[]`
//! has no element type to go by) and an untyped array whose items are of
//! more than one CIM type. Typed arrays (`[string[]]`, `[CimInstance[]]`)
//! are typed by their element type. Same in Windows PowerShell 5.1 and
//! PowerShell 7, and the host builds instances with the same MMI calls. So
//! nil members are left out, empty arrays are typed from the Puppet type
//! (or left out when it does not say), mixed arrays are typed from it (or
//! refused), credentials become `MSFT_Credential` instances, and a plain
//! hash is refused, naming its path.

use super::shapes::{
    cim_kinds, credential_parts, invalid, is_cim_hash, is_credential_hash, kind_name, named_entry,
    refuse_case_duplicates, refuse_nul,
};
use super::{InvocableResource, InvokeParameter, Route};
use crate::bound::{BoundValue, SecretBinding, SECRET_PREFIX};
use crate::call_data::{CallValue, DscCallData, Instance, ModuleSpec};
use crate::cim_type::CimType;
use crate::error::{Error, Result};
use crate::literal::{format_float, powershell_type};
use crate::secrecy::peel;
use crate::typedef::TypeShape;
use crate::value::{Map, Value};

/// The call of `resource` on `route`; `names` makes each bound variable's
/// name from its prefix (`cred_`, `secret_`).
///
/// # Errors
/// A value the call cannot carry (named by its attribute), a vendored
/// path that is needed and not known.
pub fn call_data(
    resource: &InvocableResource,
    route: Route,
    names: &mut dyn FnMut(&str) -> String,
) -> Result<DscCallData> {
    let class_based = resource.is_class_based();
    for (text, attribute) in [
        (Some(&resource.friendly_name), "Name"),
        (Some(&resource.module_name), "ModuleName"),
        (resource.module_version.as_ref(), "RequiredVersion"),
    ] {
        refuse_nul(text.map_or("", String::as_str), attribute)?;
    }
    let mut values = Values {
        names,
        secrets: Vec::new(),
    };
    let properties = resource
        .parameters
        .iter()
        .map(|parameter| {
            let name = parameter.property_name();
            refuse_nul(name, &parameter.attribute)?;
            Ok((name.to_owned(), values.property(parameter)?))
        })
        .collect::<Result<Vec<_>>>()?;
    // A MOF resource of a pinned version is loaded from its manifest in
    // the vendored folder; every resource whose folder is known gets it
    // on PSModulePath (a vendored module may import its siblings by name).
    let pinned_mof = resource.module_version.is_some() && !class_based;
    let needs_path = class_based || pinned_mof || !resource.vendored_modules_path.is_empty();
    let vendored_path = if needs_path {
        let folder = resource.vendored_path()?;
        if folder.contains('\0') {
            return Err(Error::MissingVendoredPath {
                module: resource.module_name.clone(),
                searched: "the vendored path contains a NUL character".into(),
            });
        }
        Some(folder.to_owned())
    } else {
        None
    };
    let path = match &vendored_path {
        Some(folder) if pinned_mof => {
            let module = &resource.module_name;
            Some(format!("{folder}/{module}/{module}.psd1"))
        }
        _ => None,
    };
    Ok(DscCallData {
        name: resource.friendly_name.clone(),
        method: resource.method,
        module: ModuleSpec {
            name: resource.module_name.clone(),
            version: resource.module_version.clone(),
            path,
        },
        route,
        vendored_path,
        class_based,
        timeout_ms: None,
        properties,
        secrets: values.secrets,
    })
}

struct Values<'n> {
    names: &'n mut dyn FnMut(&str) -> String,
    secrets: Vec<SecretBinding>,
}

impl Values<'_> {
    fn bind(&mut self, prefix: &str, value: BoundValue) -> CallValue {
        let name = (self.names)(prefix);
        self.secrets.push(SecretBinding {
            name: name.clone(),
            value,
        });
        CallValue::Var(name)
    }

    /// A leaf: itself, or inside a secret a variable bound to it.
    fn leaf(&mut self, secret: bool, value: CallValue, bound: BoundValue) -> CallValue {
        if secret {
            self.bind(SECRET_PREFIX, bound)
        } else {
            value
        }
    }

    fn property(&mut self, parameter: &InvokeParameter) -> Result<CallValue> {
        let attribute = parameter.attribute.as_str();
        let (value, secret) = peel(&parameter.value);
        let Some(mof_type) = &parameter.mof_type else {
            return self.plain(value, secret, attribute);
        };
        let element = mof_type.element();
        match (element, value) {
            (_, Value::Nil) => Ok(CallValue::Null),
            (CimType::Credential, Value::Array(items)) => {
                self.credentials(items, secret, attribute)
            }
            (CimType::Credential, _) => self.credential(value, secret, attribute),
            (CimType::Instance(Some(class)), _) => {
                self.instance_property(parameter, class, value, secret)
            }
            (_, Value::Array(items)) if items.is_empty() => Ok(typed_empty(element)),
            (CimType::DateTime, _) => self.datetime(value, secret, attribute),
            _ => self.plain(value, secret, attribute),
        }
    }

    fn instance_property(
        &mut self,
        parameter: &InvokeParameter,
        class: &str,
        value: &Value,
        secret: bool,
    ) -> Result<CallValue> {
        let attribute = parameter.attribute.as_str();
        let shape = parameter.shape.element();
        match value {
            Value::Array(items) => Ok(CallValue::Instances(
                items
                    .iter()
                    .map(|item| self.instance(Some(class), item, secret, attribute, shape))
                    .collect::<Result<_>>()?,
            )),
            Value::Hash(_) => {
                let instance = self.instance(Some(class), value, secret, attribute, shape)?;
                Ok(if parameter.is_array() {
                    CallValue::Instances(vec![instance])
                } else {
                    instance
                })
            }
            other => Err(invalid(
                attribute,
                &format!(
                    "a {class} CIM instance must be a hash (or an array of hashes), not {}",
                    kind_name(other)
                ),
            )),
        }
    }

    /// A credential: a variable the host binds to a PSCredential.
    fn credential(&mut self, value: &Value, secret: bool, attribute: &str) -> Result<CallValue> {
        let (_, hash_secret) = peel(value);
        let (user, user_secret, password) = credential_parts(value, attribute)?;
        refuse_nul(user, attribute)?;
        refuse_nul(password, attribute)?;
        Ok(self.bind(
            "cred_",
            BoundValue::Credential {
                user: user.to_owned(),
                user_secret: secret || hash_secret || user_secret,
                password: password.to_owned(),
            },
        ))
    }

    /// A `PSCredential[]`: each credential bound, the array typed so that
    /// PowerShell binds it to the resource's `[PSCredential[]]` parameter
    /// as it is.
    fn credentials(&mut self, items: &[Value], secret: bool, attribute: &str) -> Result<CallValue> {
        let items = items
            .iter()
            .map(|item| {
                let (item, item_secret) = peel(item);
                self.credential(item, secret || item_secret, attribute)
            })
            .collect::<Result<_>>()?;
        Ok(CallValue::Typed {
            element: "PSCredential".into(),
            items,
        })
    }

    /// A date-time: `[DateTime]` of its text, item by item in an array.
    fn datetime(&mut self, value: &Value, secret: bool, attribute: &str) -> Result<CallValue> {
        match value {
            Value::Str(text) => Ok(CallValue::DateTime(Box::new(self.plain(
                &Value::Str(text.clone()),
                secret,
                attribute,
            )?))),
            Value::Array(items) => Ok(CallValue::Array(
                items
                    .iter()
                    .map(|item| {
                        let (item, item_secret) = peel(item);
                        self.datetime(item, secret || item_secret, attribute)
                    })
                    .collect::<Result<_>>()?,
            )),
            other => self.plain(other, secret, attribute),
        }
    }

    /// Any value with no type to go by, as its PowerShell literal would be.
    fn plain(&mut self, value: &Value, secret: bool, attribute: &str) -> Result<CallValue> {
        Ok(match value {
            Value::Nil => CallValue::Null,
            Value::Bool(flag) => self.leaf(secret, CallValue::Bool(*flag), BoundValue::Bool(*flag)),
            Value::Int(whole) => self.leaf(
                secret,
                CallValue::Int(*whole),
                BoundValue::Integer(whole.to_string()),
            ),
            Value::BigInt(text) => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid(
                        attribute,
                        "an integer that is not a decimal number",
                    ));
                }
                self.leaf(
                    secret,
                    CallValue::BigInt(text.clone()),
                    BoundValue::Integer(text.clone()),
                )
            }
            Value::Float(real) => {
                let text = format_float(*real).ok_or_else(|| {
                    invalid(
                        attribute,
                        &format!("the number {real} has no PowerShell literal"),
                    )
                })?;
                self.leaf(
                    secret,
                    CallValue::Real(text.clone()),
                    BoundValue::Real(text),
                )
            }
            Value::Str(text) | Value::Symbol(text) => {
                refuse_nul(text, attribute)?;
                self.leaf(
                    secret,
                    CallValue::Text(text.clone()),
                    BoundValue::Text(text.clone()),
                )
            }
            Value::Timestamp(time) => {
                let iso = time.to_iso8601();
                let text = self.leaf(secret, CallValue::Text(iso.clone()), BoundValue::Text(iso));
                CallValue::DateTime(Box::new(text))
            }
            Value::Sensitive(inner) => self.plain(inner, true, attribute)?,
            Value::Array(items) => CallValue::Array(
                items
                    .iter()
                    .map(|item| self.plain(item, secret, attribute))
                    .collect::<Result<_>>()?,
            ),
            Value::Hash(map) => self.hash(map, secret, attribute)?,
        })
    }

    /// A hashtable: string keys as they are; a key that is not a string, or
    /// any key of a Sensitive hash, makes it a table of typed keys.
    fn hash(&mut self, map: &Map, secret: bool, attribute: &str) -> Result<CallValue> {
        refuse_case_duplicates(map, secret, attribute)?;
        let child = |key: &Value| match key.key_name() {
            Some(name) => format!("{attribute}.{name}"),
            None => attribute.to_owned(),
        };
        let plain_keys = !secret
            && map
                .keys()
                .all(|key| matches!(key, Value::Str(_) | Value::Symbol(_)));
        if plain_keys {
            let mut members = Vec::with_capacity(map.len());
            for (key, value) in map.iter() {
                let name = key.key_name().unwrap_or_default().to_owned();
                refuse_nul(&name, attribute)?;
                members.push((name, self.plain(value, false, &child(key))?));
            }
            return Ok(CallValue::Hash(members));
        }
        let mut pairs = Vec::with_capacity(map.len());
        for (key, value) in map.iter() {
            let typed_key = self.plain(key, secret, attribute)?;
            pairs.push((typed_key, self.plain(value, secret, &child(key))?));
        }
        Ok(CallValue::Table(pairs))
    }

    /// An embedded instance: its class from the property's type (top
    /// level) or its `cim_instance_type` (nested), nil members left out,
    /// empty arrays typed from the Puppet type or left out.
    fn instance(
        &mut self,
        class: Option<&str>,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<CallValue> {
        let (value, instance_secret) = peel(value);
        let secret = secret || instance_secret;
        let map = value.as_map().ok_or_else(|| {
            invalid(
                attribute,
                &format!("a CIM instance must be a hash, not {}", kind_name(value)),
            )
        })?;
        refuse_case_duplicates(map, secret, attribute)?;
        let type_entry = named_entry(map, "cim_instance_type");
        let class = match (class, type_entry) {
            (Some(class), _) => class.to_owned(),
            (None, Some((_, name))) => peel(name)
                .0
                .key_name()
                .ok_or_else(|| invalid(attribute, "cim_instance_type must be a string"))?
                .to_owned(),
            (None, None) => {
                return Err(invalid(
                    attribute,
                    "a nested CIM instance needs a cim_instance_type",
                ))
            }
        };
        refuse_nul(&class, attribute)?;
        let mut properties = Vec::with_capacity(map.len());
        for (key, property) in map.iter() {
            if type_entry.is_some_and(|(k, _)| std::ptr::eq(k, key)) {
                continue;
            }
            let Some(name) = peel(key).0.key_name() else {
                return Err(invalid(attribute, "a CIM property's name must be a string"));
            };
            let child = format!("{attribute}.{name}");
            refuse_nul(name, &child)?;
            let member_shape = shape.member(name).unwrap_or(&TypeShape::Other);
            let typed = match peel(property).0 {
                Value::Nil => continue,
                Value::Array(items) if items.is_empty() => {
                    match member_shape.element().cim_element_type() {
                        Some(element) => typed_empty(&element),
                        None => continue,
                    }
                }
                _ => self.nested(property, secret, &child, member_shape)?,
            };
            properties.push((name.to_owned(), typed));
        }
        Ok(CallValue::Instance(Instance { class, properties }))
    }

    /// A value inside an embedded instance (never nil).
    fn nested(
        &mut self,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<CallValue> {
        let (inner, inner_secret) = peel(value);
        let secret = secret || inner_secret;
        if is_cim_hash(inner) {
            return self.instance(None, inner, secret, attribute, shape.element());
        }
        if is_credential_hash(inner) {
            return self.credential_instance(inner, secret, attribute);
        }
        match inner {
            Value::Hash(_) => Err(invalid(attribute, PLAIN_HASH_IN_CIM)),
            Value::Array(items) => self.nested_array(items, secret, attribute, shape),
            _ => self.plain(inner, secret, attribute),
        }
    }

    fn credential_instance(
        &mut self,
        value: &Value,
        secret: bool,
        attribute: &str,
    ) -> Result<CallValue> {
        match self.credential(value, secret, attribute)? {
            CallValue::Var(name) => Ok(CallValue::CredentialInstance(name)),
            other => Ok(other),
        }
    }

    /// An array inside an embedded instance: instances and credentials
    /// as instances; scalars untyped when they are of one CIM type, else
    /// typed by the Puppet type's element type.
    fn nested_array(
        &mut self,
        items: &[Value],
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<CallValue> {
        if items
            .iter()
            .all(|item| is_cim_hash(item) || is_credential_hash(item))
        {
            let mut instances = Vec::with_capacity(items.len());
            for item in items {
                let (item, item_secret) = peel(item);
                let secret = secret || item_secret;
                instances.push(if is_cim_hash(item) {
                    self.instance(None, item, secret, attribute, shape.element())?
                } else {
                    self.credential_instance(item, secret, attribute)?
                });
            }
            return Ok(CallValue::Instances(instances));
        }
        let mut typed = Vec::with_capacity(items.len());
        for item in items {
            match peel(item).0 {
                Value::Hash(_) => return Err(invalid(attribute, PLAIN_HASH_IN_CIM)),
                Value::Array(_) => return Err(invalid(attribute, NESTED_ARRAY)),
                _ => typed.push(self.plain(item, secret, attribute)?),
            }
        }
        if cim_kinds(items) <= 1 {
            return Ok(CallValue::Array(typed));
        }
        let element = shape
            .element()
            .cim_element_type()
            .ok_or_else(|| invalid(attribute, MIXED_ARRAY))?;
        Ok(CallValue::Typed {
            element: powershell_type(&element).to_owned(),
            items: typed,
        })
    }
}

/// Why an array of arrays is refused.
const NESTED_ARRAY: &str =
    "an array inside an array cannot be a CIM property (CIM has no arrays of arrays)";
/// Why an array of mixed kinds with no element type is refused.
const MIXED_ARRAY: &str =
    "an array that mixes value types (say numbers and strings) cannot be a CIM property: New-CimInstance cannot tell its CIM type, and the Puppet type does not say";
/// Why a plain hash inside a CIM instance is refused.
const PLAIN_HASH_IN_CIM: &str =
    "a hash inside a CIM instance must be a CIM instance (with a cim_instance_type) or a credential (user and password): New-CimInstance cannot pass a plain hashtable as a CIM property";

/// An empty array of the CIM type's PowerShell type.
fn typed_empty(element: &CimType) -> CallValue {
    CallValue::Typed {
        element: powershell_type(element).to_owned(),
        items: Vec::new(),
    }
}
