//! The `$InvokeParams = @{…}` line, and each property's value written by
//! its CIM type: a credential variable, embedded CIM instances (`cim.rs`),
//! or a literal (typed where it is an empty array, a `[DateTime]` cast).

use super::{InvocableResource, InvokeParameter};
use crate::bound::{BoundValue, SecretBinding};
use crate::cim_type::CimType;
use crate::error::{Error, Result};
use crate::literal::{powershell_type, quote, TrackedText};
use crate::secrecy::peel;
use crate::value::{Map, Value};

pub(super) fn named_entry<'m>(map: &'m Map, name: &str) -> Option<&'m (Value, Value)> {
    map.iter()
        .find(|(k, _)| k.key_name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
}

/// A nested CIM instance: a hash that names its class.
pub(super) fn is_cim_hash(value: &Value) -> bool {
    peel(value)
        .0
        .as_map()
        .is_some_and(|m| named_entry(m, "cim_instance_type").is_some())
}

/// A credential nested in a CIM instance: a hash of exactly user and password.
pub(super) fn is_credential_hash(value: &Value) -> bool {
    peel(value).0.as_map().is_some_and(|m| {
        m.len() == 2 && named_entry(m, "user").is_some() && named_entry(m, "password").is_some()
    })
}

pub(super) struct Builder<'n> {
    pub(super) names: &'n mut dyn FnMut(&str) -> String,
    /// The credentials, each a `$cred_…` variable the host binds to a
    /// `PSCredential` it builds (`bound.rs`).
    pub(super) credentials: Vec<SecretBinding>,
    /// `$cim_… = New-CimInstance …` lines, nested instances first.
    pub(super) cim_instances: TrackedText,
    /// A class-based resource: its embedded instances are made by the
    /// prelude's `New-PwshlibEmbeddedInstance` (see [`Builder::instance_command`]).
    pub(super) class_based: bool,
}

/// Makes a CIM instance: what a MOF resource's embedded instances are, on
/// Windows PowerShell 5.1 and PowerShell 7 alike (its parameters are typed
/// `CimInstance`).
pub(super) const NEW_CIM_INSTANCE: &str = " = New-CimInstance -ClientOnly -ClassName ";
/// Makes a class-based resource's embedded instance: the prelude's function
/// decides at run time between a CIM instance (Windows PowerShell 5.1, whose
/// LCM needs one) and a hashtable (PowerShell 7, where
/// PSDesiredStateConfiguration 2.x assigns the value to the class instance's
/// property and PowerShell converts a hashtable to the property's class;
/// it cannot convert a CIM instance, and pwsh on Linux has no
/// New-CimInstance at all). Issue 31, item 14.
pub(super) const NEW_EMBEDDED_INSTANCE: &str = " = New-PwshlibEmbeddedInstance -ClassName ";

/// Makes an embedded `MSFT_Credential` from a bound credential (followed
/// by its variable's name): the prelude's `New-PwshlibCredentialInstance`.
pub(super) const NEW_CREDENTIAL_INSTANCE: &str = " = New-PwshlibCredentialInstance -Credential $";

impl<'n> Builder<'n> {
    pub(super) fn new(names: &'n mut dyn FnMut(&str) -> String, class_based: bool) -> Self {
        Builder {
            names,
            credentials: Vec::new(),
            cim_instances: TrackedText::binding(),
            class_based,
        }
    }

    pub(super) fn invoke_params(&mut self, resource: &InvocableResource) -> Result<TrackedText> {
        // Most parameter lines of a Get or a Set fit in this.
        let mut out = TrackedText::binding();
        out.push("$InvokeParams = @{Name = ");
        out.string(&resource.friendly_name, "Name")?;
        out.push("; Method = ");
        out.string(resource.method.as_str(), "Method")?;
        out.push("; Property = @{");
        for (i, parameter) in resource.parameters.iter().enumerate() {
            if i > 0 {
                out.push("; ");
            }
            out.key(&Value::str(parameter.property_name()), &parameter.attribute)?;
            out.push(" = ");
            self.property_value(&mut out, parameter)?;
        }
        out.push("}; ModuleName = ");
        match &resource.module_version {
            Some(version) => {
                out.push("@{ModuleName = ");
                if resource.is_class_based() {
                    out.string(&resource.module_name, "ModuleName")?;
                } else {
                    let module = &resource.module_name;
                    let path = format!("{}/{module}/{module}.psd1", resource.vendored_path()?);
                    out.string(&path, "ModuleName")?;
                }
                out.push("; RequiredVersion = ");
                out.string(version, "RequiredVersion")?;
                out.push("}");
            }
            None => out.string(&resource.module_name, "ModuleName")?,
        }
        out.push("}\n");
        Ok(out)
    }

    /// One property's value, by its CIM type: a credential variable, the
    /// embedded instances of a class, or a literal (a `[DateTime]` cast for
    /// a date-time; an empty array typed by the element type).
    fn property_value(&mut self, out: &mut TrackedText, parameter: &InvokeParameter) -> Result<()> {
        let attribute = parameter.attribute.as_str();
        let (value, secret) = peel(&parameter.value);
        let Some(mof_type) = &parameter.mof_type else {
            return out.maybe_secret(secret, |w| match value {
                Value::Array(items) if items.is_empty() => {
                    w.push("@()");
                    Ok(())
                }
                _ => w.value(value, attribute),
            });
        };
        match mof_type.element() {
            CimType::Credential => {
                if value.is_nil() {
                    out.push("$null");
                    return Ok(());
                }
                let variable = self.credential(value, secret, attribute)?;
                out.push("$");
                out.push(&variable);
                Ok(())
            }
            CimType::Instance(Some(class)) => {
                self.instance_property(out, parameter, class, value, secret)
            }
            CimType::DateTime => out.maybe_secret(secret, |w| match value {
                Value::Array(items) if items.is_empty() => {
                    typed_empty_array(w, mof_type.element());
                    Ok(())
                }
                _ => datetime_value(w, value, attribute),
            }),
            CimType::Boolean
            | CimType::Char16
            | CimType::String
            | CimType::UInt8
            | CimType::SInt8
            | CimType::UInt16
            | CimType::SInt16
            | CimType::UInt32
            | CimType::SInt32
            | CimType::UInt64
            | CimType::SInt64
            | CimType::Real32
            | CimType::Real64
            | CimType::Instance(None)
            | CimType::Unknown(_) => out.maybe_secret(secret, |w| match value {
                Value::Array(items) if items.is_empty() => {
                    typed_empty_array(w, mof_type.element());
                    Ok(())
                }
                _ => w.value(value, attribute),
            }),
        }
    }

    /// A property that holds embedded instances of `class`: one (an array
    /// of one, when the type is an array) or an array of them.
    fn instance_property(
        &mut self,
        out: &mut TrackedText,
        parameter: &InvokeParameter,
        class: &str,
        value: &Value,
        secret: bool,
    ) -> Result<()> {
        let attribute = parameter.attribute.as_str();
        let shape = parameter.shape.element();
        match value {
            Value::Nil => {
                out.push("$null");
                Ok(())
            }
            Value::Array(items) => {
                let variables = items
                    .iter()
                    .map(|item| self.cim_instance(Some(class), item, secret, attribute, shape))
                    .collect::<Result<Vec<_>>>()?;
                self.instance_array(out, &variables);
                Ok(())
            }
            Value::Hash(_) => {
                let variable = self.cim_instance(Some(class), value, secret, attribute, shape)?;
                if parameter.is_array() {
                    self.instance_array(out, &[variable]);
                } else {
                    out.push("$");
                    out.push(&variable);
                }
                Ok(())
            }
            other => Err(Error::InvalidValue {
                attribute: attribute.to_owned(),
                message: format!(
                    "a {class} CIM instance must be a hash (or an array of hashes), not {}",
                    kind_name(other)
                ),
            }),
        }
    }

    /// A credential: a `$cred_…` variable, bound by the host to a
    /// `PSCredential` whose password is a `SecureString` it builds, so that
    /// no command (`ConvertTo-SecureString`, `New-Object`, a prelude
    /// function) ever receives the password as a string, which PowerShell's
    /// module logging would record. The user is a secret when Sensitive.
    pub(super) fn credential(
        &mut self,
        value: &Value,
        secret: bool,
        attribute: &str,
    ) -> Result<String> {
        let (_, hash_secret) = peel(value);
        let (user, user_secret, password) = credential_parts(value, attribute)?;
        // Refused here as a literal would be: no NUL reaches the host.
        for text in [user, password] {
            quote(text).map_err(|_| Error::InvalidValue {
                attribute: attribute.to_owned(),
                message: "a string with a NUL character cannot be passed to PowerShell".into(),
            })?;
        }
        let variable = (self.names)("cred_");
        self.credentials.push(SecretBinding {
            name: variable.clone(),
            value: BoundValue::Credential {
                user: user.to_owned(),
                user_secret: secret || hash_secret || user_secret,
                password: password.to_owned(),
            },
        });
        Ok(variable)
    }
}

/// The user, whether it is Sensitive, and the password of a credential hash.
pub(super) fn credential_parts<'v>(
    value: &'v Value,
    attribute: &str,
) -> Result<(&'v str, bool, &'v str)> {
    let invalid = |message: &str| Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: message.to_owned(),
    };
    let map = peel(value)
        .0
        .as_map()
        .ok_or_else(|| invalid("a credential must be a hash with 'user' and 'password'"))?;
    let member = |name: &str| -> Result<(&'v str, bool)> {
        let (_, raw) = named_entry(map, name)
            .ok_or_else(|| invalid("a credential must be a hash with 'user' and 'password'"))?;
        let (inner, is_secret) = peel(raw);
        match inner {
            Value::Str(s) | Value::Symbol(s) => Ok((s, is_secret)),
            _ => Err(invalid(
                "a credential's 'user' and 'password' must be strings",
            )),
        }
    };
    let (user, user_secret) = member("user")?;
    let (password, _) = member("password")?;
    Ok((user, user_secret, password))
}

/// `[<type>[]]@()`: an empty array typed by its CIM element type, which
/// New-CimInstance (and a typed DSC parameter) can take.
pub(super) fn typed_empty_array(out: &mut TrackedText, element: &CimType) {
    out.push("[");
    out.push(powershell_type(element));
    out.push("[]]@()");
}

/// A DateTime property: Timestamps and date-time strings become
/// `[DateTime]'…'`, arrays of them element by element.
fn datetime_value(out: &mut TrackedText, value: &Value, attribute: &str) -> Result<()> {
    match value {
        Value::Str(text) => out.datetime_text(text, attribute),
        Value::Array(items) => {
            out.push("@(");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(", ");
                }
                let (item, secret) = peel(item);
                out.maybe_secret(secret, |w| datetime_value(w, item, attribute))?;
            }
            out.push(")");
            Ok(())
        }
        other => out.value(other, attribute),
    }
}

pub(super) fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => "a number",
        Value::Str(_) | Value::Symbol(_) => "a string",
        Value::Array(_) => "an array",
        Value::Hash(_) => "a hash",
        Value::Sensitive(_) => "a Sensitive value",
        Value::Timestamp(_) => "a timestamp",
    }
}
