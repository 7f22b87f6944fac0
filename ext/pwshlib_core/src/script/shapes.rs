//! What a Puppet value is as a DSC property: a nested CIM instance (a hash
//! naming its class), a credential (a hash of user and password), how many
//! CIM types an untyped array's items have, and the words errors use for a
//! value's kind.

use crate::error::{Error, Result};
use crate::literal::{case_duplicate_keys, push_escaped};
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

/// How many CIM types the items of an untyped array have, as MMI's
/// `CimConverter` counts them when `New-CimInstance -ClientOnly -Property`
/// makes a property with `CimProperty.Create(name, value, flags)`: an
/// integer is Int32, or Int64 beyond Int32's range, or Decimal beyond
/// that (as PowerShell types the same literal, and the host the same
/// value); a float a Double. Nil items have no type and are not counted.
/// More than one, and the array has no CIM type: `CimConverter` throws
/// (Windows PowerShell 5.1 and PowerShell 7 alike).
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

pub(super) fn invalid(attribute: &str, message: &str) -> Error {
    Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: message.to_owned(),
    }
}

const NUL_IN_STRING: &str = "a string with a NUL character cannot be passed to PowerShell";

/// A name or text no PowerShell string can hold: refused, naming where.
pub(super) fn refuse_nul(text: &str, attribute: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(invalid(attribute, NUL_IN_STRING));
    }
    Ok(())
}

/// PowerShell compares hashtable keys without case: `@{Key = 1; key = 2}`
/// is a parse error, a Hashtable cannot hold both, and a CIM instance
/// cannot either. Refused naming the attribute path (and the keys, unless
/// they are secret).
pub(super) fn refuse_case_duplicates(map: &Map, secret: bool, attribute: &str) -> Result<()> {
    let Some((first, second)) = case_duplicate_keys(map) else {
        return Ok(());
    };
    let keys = if secret {
        "two keys of a Sensitive hash".to_owned()
    } else {
        let quoted = |name: &str| {
            let mut text = String::from("'");
            push_escaped(&mut text, name);
            text.push('\'');
            text
        };
        format!("the keys {} and {}", quoted(first), quoted(second))
    };
    Err(invalid(
        attribute,
        &format!(
            "{keys} differ only in case; PowerShell compares hashtable keys without case, so it would refuse them"
        ),
    ))
}
