//! What a message may show of the values it quotes: the system state mirrors
//! the secrecy of the desired state, change messages show secrets as the
//! marker, and an invocation's errors are scrubbed of its own values.

use crate::redact::{attribute_secrecy, key_secrecy, mark, mark_attributes, Redactor, Secrecy};
use crate::typedef::TypeDef;
use crate::value::{Map, Value, REDACTED_SENSITIVE};

/// Wraps the parts of a system value that are secret in the desired value
/// (or sit under a `password` key) in Sensitive, so they are never shown.
pub fn mirror_sensitivity(is: &Value, should: &Value) -> Value {
    match (is, should) {
        (Value::Nil, _) | (Value::Sensitive(_), _) => is.clone(),
        (_, Value::Sensitive(_)) => Value::Sensitive(Box::new(is.clone())),
        (Value::Hash(is_map), _) => {
            let should_map = should.as_map();
            Value::Hash(
                is_map
                    .iter()
                    .map(|(k, v)| {
                        let name = k.key_name().unwrap_or_default();
                        let counterpart = should_map
                            .and_then(|m| {
                                m.iter()
                                    .find(|(sk, _)| {
                                        sk.key_name().is_some_and(|s| s.eq_ignore_ascii_case(name))
                                    })
                                    .map(|(_, sv)| sv)
                            })
                            .unwrap_or(&Value::Nil);
                        let v = mirror_sensitivity(v, counterpart);
                        let v = if name.eq_ignore_ascii_case("password")
                            && !v.is_nil()
                            && !matches!(v, Value::Sensitive(_))
                        {
                            Value::Sensitive(Box::new(v))
                        } else {
                            v
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            )
        }
        (Value::Array(items), _) => {
            let secret_items = should
                .as_array()
                .is_some_and(|a| a.iter().any(Value::contains_sensitive));
            Value::Array(
                items
                    .iter()
                    .map(|i| {
                        if secret_items && !i.is_nil() {
                            Value::Sensitive(Box::new(i.clone()))
                        } else {
                            mirror_sensitivity(i, &Value::Nil)
                        }
                    })
                    .collect(),
            )
        }
        _ => is.clone(),
    }
}

/// [`mirror_sensitivity`] of a value held in place: a scalar whose desired
/// value is not Sensitive (most values) stays as it is, with no copy made.
pub fn mirror_sensitivity_in_place(is: &mut Value, should: &Value) {
    if !is.is_collection() && !matches!(should, Value::Sensitive(_)) {
        return;
    }
    *is = mirror_sensitivity(is, should);
}

/// A value for a change message: strings bare, secrets as the marker.
pub(super) fn shown(value: &Value) -> String {
    match value {
        Value::Str(s) => s.clone(),
        Value::Sensitive(_) => REDACTED_SENSITIVE.to_owned(),
        other => other.to_string(),
    }
}

/// `dsc_x changed 'old' to 'new'`, with what the type schema or the desired
/// value calls secret shown as the marker.
pub(super) fn change_message(
    typedef: &TypeDef,
    property: &str,
    is: &Value,
    should: &Value,
) -> String {
    let secrecy = attribute_secrecy(typedef, property);
    let is = mark(&mirror_sensitivity(is, should), &secrecy);
    let should = mark(should, &secrecy);
    Redactor::for_values([&is, &should]).scrub(&format!(
        "{property} changed '{}' to '{}'",
        shown(&is),
        shown(&should)
    ))
}

/// The redactor for an invocation's own values: every Sensitive value, and
/// every value the type schema calls Sensitive (even given in the clear).
pub(super) fn redactor_for(typedef: &TypeDef, maps: &[&Map]) -> Redactor {
    // Most invocations (every in-sync Get of plain values) have nothing to
    // scrub: told without marking (copying) every value.
    if !maps.iter().any(|map| may_hold_secrets(typedef, map)) {
        return Redactor::new();
    }
    let marked: Vec<Value> = maps
        .iter()
        .map(|map| Value::Hash(mark_attributes(typedef, map)))
        .collect();
    Redactor::for_values(&marked)
}

/// False only when no value of `map` can be secret: none is or holds a
/// Sensitive value, none belongs to an attribute whose type makes any part
/// of it secret, none is named `password`, and none is a hash or an array
/// (where a `password` member makes a secret at any depth).
pub(super) fn may_hold_secrets(typedef: &TypeDef, map: &Map) -> bool {
    map.iter().any(|(key, value)| {
        if value.is_nil() {
            return false;
        }
        if value.contains_sensitive() || value.is_collection() {
            return true;
        }
        *key_secrecy(typedef, key) != Secrecy::default()
    })
}
