//! Sensitive values: peeling their wrappers, reading where a value holds
//! them, and wrapping what a [`Secrecy`] calls secret.

use super::Secrecy;
use crate::value::Value;

/// Strips the Sensitive wrappers around a value (not those inside it),
/// saying whether there were any: the one place that loop is written.
pub fn peel(value: &Value) -> (&Value, bool) {
    let mut value = value;
    let mut secret = false;
    while let Value::Sensitive(inner) = value {
        value = inner;
        secret = true;
    }
    (value, secret)
}

/// Where a desired value holds its Sensitive parts: a Sensitive value is
/// secret whole, a hash's members by their (case-insensitive) names, and an
/// array's items by what any of its items holds, since the system may
/// report the items in another order than the manifest gives them.
pub fn secrecy_of_value(value: &Value) -> Secrecy {
    match value {
        Value::Sensitive(_) => Secrecy::whole(),
        Value::Hash(map) => Secrecy {
            members: map
                .iter()
                .filter_map(|(key, item)| {
                    let secrecy = secrecy_of_value(item);
                    let name = key.key_name()?;
                    (!secrecy.is_public()).then(|| (name.to_owned(), secrecy))
                })
                .collect(),
            ..Secrecy::default()
        },
        Value::Array(items) => {
            let each = items
                .iter()
                .map(secrecy_of_value)
                .filter(|secrecy| !secrecy.is_public())
                .reduce(Secrecy::merge);
            Secrecy {
                items: each.map(Box::new),
                ..Secrecy::default()
            }
        }
        _ => Secrecy::default(),
    }
}

/// `value` with every part that `secrecy` calls secret wrapped in
/// Sensitive. A hash member named `password` is secret at any depth: a
/// credential nested in a CIM instance has no type of its own to say so.
/// A scalar where `secrecy` expects secrets inside a hash or an array (the
/// system reports another shape than the type or the manifest has there)
/// is secret whole: where inside it the secret sits cannot be told.
pub fn mark(value: &Value, secrecy: &Secrecy) -> Value {
    match value {
        Value::Nil | Value::Sensitive(_) => value.clone(),
        _ if secrecy.whole => Value::Sensitive(Box::new(value.clone())),
        _ if !value.is_collection() && !secrecy.is_public() => {
            Value::Sensitive(Box::new(value.clone()))
        }
        Value::Hash(map) => Value::Hash(
            map.iter()
                .map(|(key, item)| {
                    let name = key.key_name().unwrap_or_default();
                    let item = match secrecy.member(name).or(secrecy.items.as_deref()) {
                        Some(member) => mark(item, member),
                        None => mark(item, &Secrecy::default()),
                    };
                    let item = if name.eq_ignore_ascii_case("password") {
                        mark(&item, &Secrecy::whole())
                    } else {
                        item
                    };
                    (key.clone(), item)
                })
                .collect(),
        ),
        Value::Array(items) => {
            // An array where the type has a Struct (a CIM instance given as
            // a one-element list) keeps the members' secrecy.
            let each = secrecy.items.as_deref().unwrap_or(secrecy);
            Value::Array(items.iter().map(|item| mark(item, each)).collect())
        }
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeling_strips_every_outer_wrapper_and_says_so() {
        let inner = Value::str("x");
        let twice = Value::Sensitive(Box::new(Value::Sensitive(Box::new(inner.clone()))));
        assert_eq!(peel(&twice), (&inner, true));
        assert_eq!(peel(&inner), (&inner, false));
        let nested = Value::Array(vec![Value::Sensitive(Box::new(inner.clone()))]);
        assert_eq!(peel(&nested), (&nested, false));
    }
}
