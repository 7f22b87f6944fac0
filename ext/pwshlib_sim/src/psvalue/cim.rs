//! CIM types as the simulated host needs them: what New-CimInstance
//! refuses as a property value, and `[type]` casts. Type names are read
//! into the core's [`CimType`] once, and matched without a catch-all, so a
//! new CIM value type fails to compile here until it is handled.

use pwshlib_core::{CimType, Timestamp};

use super::PsValue;

/// Why real `New-CimInstance -ClientOnly -Property` would refuse this
/// property value, or None when it takes it. The cmdlet makes each entry a
/// property with MMI's `CimProperty.Create(name, value, flags)`, which asks
/// `CimConverter` for the CIM type of the .NET value and throws
/// ArgumentException when there is none: `$null`, a hashtable, a
/// PSCredential, and an `object[]` (an untyped `@(…)`) unless exactly one
/// CIM type occurs among its items (nulls and untypable items do not
/// count; an array item is an array type, which has no array of its own).
/// A typed array is typed by its element type when CIM has an array of it;
/// otherwise (`[object[]]`) its items decide, as for an untyped one.
pub fn cim_property_refusal(value: &PsValue) -> Option<&'static str> {
    match value {
        PsValue::Null => Some("a null value"),
        PsValue::Hash(_) => Some("a hashtable"),
        PsValue::Credential { .. } => Some("a PSCredential"),
        PsValue::TypedArray { element, .. }
            if cim_type_of(element)
                .as_ref()
                .and_then(cim_array_type)
                .is_some() =>
        {
            None
        }
        PsValue::Array(items) | PsValue::TypedArray { items, .. } => {
            // The CIM type of each item; None for an array (CIM has no
            // arrays of arrays).
            let mut kinds: Vec<Option<CimType>> = Vec::new();
            for item in items {
                let kind = match item {
                    PsValue::Null | PsValue::Hash(_) | PsValue::Credential { .. } => continue,
                    PsValue::Bool(_) => Some(CimType::Boolean),
                    PsValue::Int(i) if i32::try_from(*i).is_ok() => Some(CimType::SInt32),
                    PsValue::Int(_) => Some(CimType::SInt64),
                    PsValue::Float(_) => Some(CimType::Real64),
                    PsValue::Str(_) => Some(CimType::String),
                    PsValue::DateTime(_) => Some(CimType::DateTime),
                    PsValue::Cim { .. } => Some(CimType::Instance(None)),
                    PsValue::Array(_) | PsValue::TypedArray { .. } => None,
                };
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
            match kinds.as_slice() {
                [] => Some("an untyped empty array (or one with only nulls)"),
                [None] => Some("an array of arrays"),
                [_] => None,
                _ => Some("an untyped array whose items have different CIM types"),
            }
        }
        _ => None,
    }
}

/// The CIM type that a PowerShell type name (as a script casts to it,
/// lowercase, with or without `System.`) holds, by PowerShell's names and
/// accelerators (`int` is Int32, `long` Int64, `float` Single); None for a
/// type CIM has none of (`object`, `hashtable`, `decimal`, `PSCredential`).
fn cim_type_of(powershell_name: &str) -> Option<CimType> {
    let name = powershell_name
        .strip_prefix("system.")
        .or_else(|| powershell_name.strip_prefix("microsoft.management.infrastructure."))
        .unwrap_or(powershell_name);
    Some(match name {
        "string" => CimType::String,
        "bool" | "boolean" => CimType::Boolean,
        "byte" => CimType::UInt8,
        "sbyte" => CimType::SInt8,
        "uint16" => CimType::UInt16,
        "int16" => CimType::SInt16,
        "uint32" => CimType::UInt32,
        "int" | "int32" => CimType::SInt32,
        "uint64" => CimType::UInt64,
        "long" | "int64" => CimType::SInt64,
        "single" | "float" => CimType::Real32,
        "double" => CimType::Real64,
        "char" => CimType::Char16,
        "datetime" => CimType::DateTime,
        "ciminstance" => CimType::Instance(None),
        _ => return None,
    })
}

/// The CIM array type MMI's `CimConverter` makes of an array of this type;
/// None where it makes none: a PSCredential has no CIM type (the script
/// passes an `MSFT_Credential` instance), nor has a type CIM does not know.
fn cim_array_type(cim_type: &CimType) -> Option<&'static str> {
    match cim_type {
        CimType::String => Some("StringArray"),
        CimType::Boolean => Some("BooleanArray"),
        CimType::UInt8 => Some("UInt8Array"),
        CimType::SInt8 => Some("SInt8Array"),
        CimType::UInt16 => Some("UInt16Array"),
        CimType::SInt16 => Some("SInt16Array"),
        CimType::UInt32 => Some("UInt32Array"),
        CimType::SInt32 => Some("SInt32Array"),
        CimType::UInt64 => Some("UInt64Array"),
        CimType::SInt64 => Some("SInt64Array"),
        CimType::Real32 => Some("Real32Array"),
        CimType::Real64 => Some("Real64Array"),
        CimType::Char16 => Some("Char16Array"),
        CimType::DateTime => Some("DateTimeArray"),
        CimType::Instance(_) => Some("InstanceArray"),
        CimType::Credential | CimType::Unknown(_) => None,
    }
}

/// Applies a `[type]` cast from the subset: DateTime, typed arrays (the
/// provider types empty arrays and CIM instance arrays), and the common
/// scalar types. Unknown types leave the value as it is.
pub fn cast(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    let lower = type_name.to_ascii_lowercase();
    let lower = lower.strip_prefix("system.").unwrap_or(&lower);
    if let Some(element) = lower.strip_suffix("[]") {
        let items = match value {
            PsValue::Null => return Ok(PsValue::Null),
            PsValue::Array(items) | PsValue::TypedArray { items, .. } => items,
            single => vec![single],
        };
        let element_name = element
            .strip_prefix("microsoft.management.infrastructure.")
            .unwrap_or(element)
            .to_owned();
        return items
            .into_iter()
            .map(|item| cast(element, item))
            .collect::<Result<Vec<_>, _>>()
            .map(|items| PsValue::TypedArray {
                element: element_name,
                items,
            });
    }
    // Two casts the subset takes that are no CIM type.
    match lower {
        "decimal" => return to_float(type_name, value),
        "switch" => return to_boolean(type_name, value),
        _ => {}
    }
    let Some(cim_type) = cim_type_of(lower) else {
        return Ok(value);
    };
    match cim_type {
        CimType::DateTime => to_datetime(type_name, value),
        CimType::String => to_string(type_name, value),
        CimType::UInt8
        | CimType::SInt8
        | CimType::UInt16
        | CimType::SInt16
        | CimType::UInt32
        | CimType::SInt32
        | CimType::UInt64
        | CimType::SInt64 => to_integer(type_name, value),
        CimType::Real32 | CimType::Real64 => to_float(type_name, value),
        CimType::Boolean => to_boolean(type_name, value),
        CimType::Instance(_) => match value {
            PsValue::Cim { .. } | PsValue::Null => Ok(value),
            other => Err(cannot(type_name, &other)),
        },
        // Not converted by the subset: the value as it is.
        CimType::Char16 | CimType::Credential | CimType::Unknown(_) => Ok(value),
    }
}

/// PowerShell's message for a cast it cannot make.
fn cannot(type_name: &str, value: &PsValue) -> String {
    format!(
        "Cannot convert value of type \"{}\" to type \"{type_name}\".",
        value.type_name()
    )
}

fn to_datetime(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    match &value {
        PsValue::Str(text) => Timestamp::parse(text)
            .map(PsValue::DateTime)
            .ok_or_else(|| format!("Cannot convert value \"{text}\" to type \"System.DateTime\".")),
        PsValue::DateTime(_) => Ok(value),
        _ => Err(cannot(type_name, &value)),
    }
}

fn to_string(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    match value {
        PsValue::Null => Ok(PsValue::Str(String::new())),
        PsValue::Str(_) => Ok(value),
        PsValue::Int(i) => Ok(PsValue::Str(i.to_string())),
        PsValue::Float(f) => Ok(PsValue::Str(f.to_string())),
        PsValue::Bool(b) => Ok(PsValue::Str(if b { "True" } else { "False" }.to_owned())),
        other => Err(cannot(type_name, &other)),
    }
}

fn to_integer(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    match value {
        PsValue::Int(_) => Ok(value),
        PsValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
            Ok(PsValue::Int(whole_to_i64(f)))
        }
        PsValue::Str(ref s) => s
            .trim()
            .parse::<i64>()
            .map(PsValue::Int)
            .map_err(|_| cannot(type_name, &value)),
        other => Err(cannot(type_name, &other)),
    }
}

fn to_float(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    match value {
        PsValue::Int(i) => Ok(PsValue::Float(i as f64)),
        PsValue::Float(_) => Ok(value),
        PsValue::Str(ref s) => s
            .trim()
            .parse::<f64>()
            .map(PsValue::Float)
            .map_err(|_| cannot(type_name, &value)),
        other => Err(cannot(type_name, &other)),
    }
}

fn to_boolean(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    match value {
        PsValue::Bool(_) => Ok(value),
        PsValue::Int(i) => Ok(PsValue::Bool(i != 0)),
        PsValue::Null => Ok(PsValue::Bool(false)),
        other => Err(cannot(type_name, &other)),
    }
}

/// A whole number below 9.2e18 in magnitude as the i64 it is: the guard in
/// [`to_integer`], its one caller, makes the conversion exact, so nothing
/// is truncated.
#[allow(clippy::cast_possible_truncation)]
fn whole_to_i64(whole: f64) -> i64 {
    whole as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_powershell() {
        assert_eq!(
            cast("string[]", PsValue::Array(vec![])).unwrap(),
            PsValue::TypedArray {
                element: "string".into(),
                items: vec![]
            }
        );
        assert!(matches!(
            cast("DateTime", PsValue::Str("2024-01-02T03:04:05Z".into())).unwrap(),
            PsValue::DateTime(_)
        ));
        assert!(cast("DateTime", PsValue::Str("soon".into())).is_err());
        assert_eq!(
            cast("int", PsValue::Str("7".into())).unwrap(),
            PsValue::Int(7)
        );
    }

    #[test]
    fn every_cim_type_the_core_writes_reads_back_as_itself() {
        use pwshlib_core::literal::powershell_type;
        for cim_type in [
            CimType::Boolean,
            CimType::Char16,
            CimType::String,
            CimType::DateTime,
            CimType::UInt8,
            CimType::SInt8,
            CimType::UInt16,
            CimType::SInt16,
            CimType::UInt32,
            CimType::SInt32,
            CimType::UInt64,
            CimType::SInt64,
            CimType::Real32,
            CimType::Real64,
            CimType::Instance(None),
        ] {
            let name = powershell_type(&cim_type).to_ascii_lowercase();
            assert_eq!(cim_type_of(&name), Some(cim_type.clone()), "{name}");
            assert!(cim_array_type(&cim_type).is_some(), "{name}");
        }
        // What New-CimInstance has no CIM type for stays untyped.
        for name in ["pscredential", "object", "hashtable"] {
            assert_eq!(cim_type_of(name), None, "{name}");
        }
        assert_eq!(cim_array_type(&CimType::Credential), None);
    }
}
