//! How a value is shown in logs, errors and change messages: the one
//! `Display` of [`Value`], which writes every Sensitive part as
//! [`REDACTED_SENSITIVE`]. It lives here, not in `value.rs`, so that the
//! value model needs nothing from this module while this module reads
//! values.

use std::fmt;

use super::REDACTED_SENSITIVE;
use crate::value::Value;

/// Renders the value the way Ruby's `inspect` would for logs, with every
/// Sensitive value shown as Puppet shows it. Safe for any log line.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("nil"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::BigInt(s) => f.write_str(s),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Symbol(s) => write!(f, ":{s}"),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Hash(map) => {
                f.write_str("{")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match k {
                        Value::Symbol(s) => write!(f, "{s}: {v}")?,
                        other => write!(f, "{other} => {v}")?,
                    }
                }
                f.write_str("}")
            }
            Value::Sensitive(_) => f.write_str(REDACTED_SENSITIVE),
            Value::Timestamp(t) => f.write_str(&t.to_iso8601()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Map;

    #[test]
    fn display_never_shows_sensitive_content() {
        let value = Value::Hash(Map(vec![(
            Value::sym("dsc_cred"),
            Value::Hash(Map(vec![(
                Value::str("password"),
                Value::Sensitive(Box::new(Value::str("hunter2"))),
            )])),
        )]));
        let shown = value.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains(REDACTED_SENSITIVE));
        let mut secrets = Vec::new();
        value.secret_texts(&mut secrets);
        assert_eq!(secrets, vec!["hunter2".to_string()]);
    }
}
