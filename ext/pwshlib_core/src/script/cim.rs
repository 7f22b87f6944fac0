//! Embedded CIM instances and credentials: the `$cim_… = New-CimInstance …`
//! lines (or the prelude's `New-PwshlibEmbeddedInstance` for a class-based
//! resource), nested instances first, with what New-CimInstance refuses
//! typed or refused here.

use super::builder::{
    is_cim_hash, is_credential_hash, kind_name, named_entry, typed_empty_array, Builder,
    NEW_CIM_INSTANCE, NEW_CREDENTIAL_INSTANCE, NEW_EMBEDDED_INSTANCE,
};
use crate::error::{Error, Result};
use crate::literal::{powershell_type, TrackedText};
use crate::secrecy::peel;
use crate::typedef::TypeShape;
use crate::value::Value;

impl Builder<'_> {
    /// `$cim_… = New-CimInstance -ClientOnly -ClassName '…' -Property @{…}`,
    /// after the lines of the instances nested in it. A top-level instance
    /// takes its class from the attribute's mof_type, a nested one from its
    /// `cim_instance_type` key (which is not passed as a property). `shape`
    /// is the instance's Struct type, when known, for its members' types.
    ///
    /// `New-CimInstance -ClientOnly -Property` makes each entry a property
    /// with `CimProperty.Create(name, value, flags)`, which infers the CIM
    /// type from the .NET value (MMI's `CimConverter`) and throws
    /// ArgumentException when it cannot: for `$null`, a hashtable, a
    /// PSCredential, an untyped empty array (`object[]` has no element
    /// type to go by) and an untyped array whose items are of more than one
    /// CIM type (`@(1, 'a')`, or Int32 and Int64). Typed arrays (`[string[]]`,
    /// `[CimInstance[]]`) are typed by their element type. Same in Windows
    /// PowerShell 5.1 and PowerShell 7: both use that cmdlet and MMI. So
    /// here nil members are left out, empty arrays are typed from the
    /// Puppet type (or left out when it does not say), mixed arrays are
    /// typed from it (or refused), credentials become MSFT_Credential
    /// instances, and a plain hash is refused, naming its path.
    pub(super) fn cim_instance(
        &mut self,
        class: Option<&str>,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<String> {
        let (value, instance_secret) = peel(value);
        let secret = secret || instance_secret;
        let map = value.as_map().ok_or_else(|| Error::InvalidValue {
            attribute: attribute.to_owned(),
            message: format!("a CIM instance must be a hash, not {}", kind_name(value)),
        })?;
        let type_entry = named_entry(map, "cim_instance_type");
        let (class_name, class_secret) = match (class, type_entry) {
            (Some(class), _) => (class.to_owned(), false),
            (None, Some((_, type_value))) => {
                let (type_value, type_secret) = peel(type_value);
                let name = type_value.key_name().ok_or_else(|| Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: "cim_instance_type must be a string".into(),
                })?;
                (name.to_owned(), secret || type_secret)
            }
            (None, None) => {
                return Err(Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: "a nested CIM instance needs a cim_instance_type".into(),
                })
            }
        };
        let mut properties = TrackedText::binding();
        properties.maybe_secret(secret, |w| w.refuse_case_duplicate_keys(map, attribute))?;
        properties.push("@{");
        let mut first = true;
        for (key, property) in map.iter() {
            if type_entry.is_some_and(|(k, _)| std::ptr::eq(k, key)) {
                continue;
            }
            let member_shape = key
                .key_name()
                .and_then(|name| shape.member(name))
                .unwrap_or(&TypeShape::Other);
            let (inner, _) = peel(property);
            let empty_array_type = match inner {
                // New-CimInstance cannot type $null: the member is left
                // out, which is what nil means to a DSC resource anyway.
                Value::Nil => continue,
                Value::Array(items) if items.is_empty() => {
                    match member_shape.element().cim_element_type() {
                        Some(element) => Some(element),
                        // Nothing to type it by: left out, as nil is.
                        None => continue,
                    }
                }
                _ => None,
            };
            if !first {
                properties.push("; ");
            }
            first = false;
            let child = match key.key_name() {
                Some(name) => format!("{attribute}.{name}"),
                None => attribute.to_owned(),
            };
            properties.maybe_secret(secret, |w| w.key(key, &child))?;
            properties.push(" = ");
            match empty_array_type {
                Some(element) => {
                    properties.maybe_secret(secret, |w| typed_empty_array(w, &element));
                }
                None => {
                    self.nested_value(&mut properties, property, secret, &child, member_shape)?
                }
            }
        }
        properties.push("}");
        let variable = (self.names)("cim_");
        let mut line = TrackedText::binding();
        line.push("$");
        line.push(&variable);
        line.push(self.instance_command());
        line.maybe_secret(class_secret, |w| w.string(&class_name, attribute))?;
        line.push(" -Property ");
        line.append(properties);
        line.push("\n");
        self.cim_instances.append(line);
        Ok(variable)
    }

    /// ` = ` and the command (with its `-ClassName ` switch) that makes one
    /// embedded instance of this resource: what follows the variable.
    fn instance_command(&self) -> &'static str {
        if self.class_based {
            NEW_EMBEDDED_INSTANCE
        } else {
            NEW_CIM_INSTANCE
        }
    }

    /// An array of embedded instances (the variables that hold them). A MOF
    /// resource's is `[CimInstance[]]@($a, $b)`. A class-based resource's
    /// is a variable set by the prelude's
    /// `New-PwshlibEmbeddedInstanceArray`, which makes that same
    /// `CimInstance[]` on Windows PowerShell 5.1 and a plain array of the
    /// hashtables on PowerShell 7 (a cast to `[CimInstance[]]` would fail
    /// there: a hashtable does not convert to a CIM instance).
    pub(super) fn instance_array(&mut self, out: &mut TrackedText, variables: &[String]) {
        let mut items = String::new();
        for (i, variable) in variables.iter().enumerate() {
            if i > 0 {
                items.push_str(", ");
            }
            items.push('$');
            items.push_str(variable);
        }
        if !self.class_based {
            out.push("[CimInstance[]]@(");
            out.push(&items);
            out.push(")");
            return;
        }
        let variable = (self.names)("cim_");
        let mut line = TrackedText::binding();
        line.push("$");
        line.push(&variable);
        line.push(" = New-PwshlibEmbeddedInstanceArray -Instances @(");
        line.push(&items);
        line.push(")\n");
        self.cim_instances.append(line);
        out.push("$");
        out.push(&variable);
    }

    /// A credential inside a CIM instance, as DSC's MOF schemas declare it:
    /// an `MSFT_Credential` instance (New-CimInstance cannot take a
    /// PSCredential). The prelude's `New-PwshlibCredentialInstance` makes
    /// it from the bound `PSCredential` (through the host's compiled code,
    /// so no command receives the password as a string), or, for a
    /// class-based resource on PowerShell 7, passes the credential on
    /// as the class takes it.
    fn credential_instance(
        &mut self,
        value: &Value,
        secret: bool,
        attribute: &str,
    ) -> Result<String> {
        let credential = self.credential(value, secret, attribute)?;
        let variable = (self.names)("cim_");
        let mut line = TrackedText::binding();
        line.push("$");
        line.push(&variable);
        line.push(NEW_CREDENTIAL_INSTANCE);
        line.push(&credential);
        if self.class_based {
            line.push(" -ClassBased");
        }
        line.push("\n");
        self.cim_instances.append(line);
        Ok(variable)
    }

    /// A property value inside a CIM instance (never nil: the caller leaves
    /// nil members out): nested instances and credentials become variables,
    /// arrays are typed where New-CimInstance could not type them, a plain
    /// hash is refused, anything else is a literal.
    fn nested_value(
        &mut self,
        out: &mut TrackedText,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<()> {
        let (inner, inner_secret) = peel(value);
        let secret = secret || inner_secret;
        if is_cim_hash(inner) {
            let variable = self.cim_instance(None, inner, secret, attribute, shape.element())?;
            out.push("$");
            out.push(&variable);
            return Ok(());
        }
        if is_credential_hash(inner) {
            let variable = self.credential_instance(inner, secret, attribute)?;
            out.push("$");
            out.push(&variable);
            return Ok(());
        }
        match inner {
            Value::Hash(_) => Err(plain_hash_error(attribute)),
            Value::Array(items) => self.nested_array(out, items, secret, attribute, shape),
            _ => out.maybe_secret(secret, |w| w.value(inner, attribute)),
        }
    }

    /// A non-empty array inside a CIM instance. Instances and credentials
    /// become `[CimInstance[]]@($a, $b)`. Scalars stay an untyped literal
    /// when New-CimInstance can type it (one CIM type among the items, as
    /// pwshlib 2.x wrote them), are cast to the Puppet type's element type
    /// when they mix types, and are refused when they mix types and the
    /// type does not say.
    fn nested_array(
        &mut self,
        out: &mut TrackedText,
        items: &[Value],
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<()> {
        let instances = items
            .iter()
            .all(|item| is_cim_hash(item) || is_credential_hash(item));
        if instances {
            let mut variables = Vec::with_capacity(items.len());
            for item in items {
                let (item, item_secret) = peel(item);
                variables.push(if is_cim_hash(item) {
                    self.cim_instance(
                        None,
                        item,
                        secret || item_secret,
                        attribute,
                        shape.element(),
                    )?
                } else {
                    self.credential_instance(item, secret || item_secret, attribute)?
                });
            }
            self.instance_array(out, &variables);
            return Ok(());
        }
        for item in items {
            match peel(item).0 {
                Value::Hash(_) => return Err(plain_hash_error(attribute)),
                Value::Array(_) => {
                    return Err(Error::InvalidValue {
                        attribute: attribute.to_owned(),
                        message: NESTED_ARRAY.into(),
                    })
                }
                _ => {}
            }
        }
        let kinds = cim_kinds(items);
        if kinds <= 1 {
            return out.maybe_secret(secret, |w| {
                w.value(&Value::Array(items.to_vec()), attribute)
            });
        }
        let Some(element) = shape.element().cim_element_type() else {
            return Err(Error::InvalidValue {
                attribute: attribute.to_owned(),
                message: MIXED_ARRAY.into(),
            });
        };
        out.maybe_secret(secret, |w| {
            w.push("[");
            w.push(powershell_type(&element));
            w.push("[]]");
            w.value(&Value::Array(items.to_vec()), attribute)
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

fn plain_hash_error(attribute: &str) -> Error {
    Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: PLAIN_HASH_IN_CIM.into(),
    }
}

/// How many CIM types the items of an untyped array literal have, as MMI's
/// `CimConverter` counts them: PowerShell reads an integer literal as
/// Int32, or Int64 beyond Int32's range, or Decimal beyond that; a float
/// as Double. Nil items have no type and are not counted.
pub(super) fn cim_kinds(items: &[Value]) -> usize {
    let mut kinds: Vec<&'static str> = Vec::new();
    for item in items {
        let kind = match peel(item).0 {
            Value::Nil => continue,
            Value::Bool(_) => "bool",
            Value::Int(i) if i32::try_from(*i).is_ok() => "int32",
            Value::Int(_) => "int64",
            Value::BigInt(_) => "decimal",
            Value::Float(_) => "double",
            Value::Str(_) | Value::Symbol(_) => "string",
            Value::Timestamp(_) => "datetime",
            Value::Array(_) | Value::Hash(_) | Value::Sensitive(_) => "other",
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds.len()
}
