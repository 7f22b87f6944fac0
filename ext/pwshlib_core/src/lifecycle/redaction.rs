//! What a message may show of the values it quotes: the system state mirrors
//! the secrecy of the desired state, change messages show secrets as the
//! marker, and an invocation's errors are scrubbed of its own values.

use super::Provider;
use crate::cache::PackedMap;
use crate::redact::{attribute_secrecy, desired_value, key_secrecy, mark_attributes, Redactor};
use crate::secrecy::{mark, secrecy_of_value, Secrecy, REDACTED_SENSITIVE};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// Wraps the parts of a system value that are secret in the desired value
/// (or sit under a `password` key) in Sensitive, so they are never shown:
/// whatever the system holds where the manifest has a Sensitive value (a
/// rotated secret's old text too), by the positions
/// [`secrecy_of_value`] finds, hash members and array items at any depth.
pub fn mirror_sensitivity(is: &Value, should: &Value) -> Value {
    mark(is, &secrecy_of_value(should))
}

/// [`mirror_sensitivity`] of a value held in place: a scalar whose desired
/// value holds nothing Sensitive (most values) stays as it is, with no copy
/// made.
pub fn mirror_sensitivity_in_place(is: &mut Value, should: &Value) {
    if !is.is_collection() && !should.contains_sensitive() {
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

/// Whether the desired state holds a Sensitive value for any property that
/// `result` (a DSC result) reports: what the system holds there is secret
/// too ([`crate::redact::mark_result`]).
pub(super) fn mirrors_secrets(typedef: &TypeDef, result: &Map, desired: &Map) -> bool {
    result.iter().any(|(key, _)| {
        desired_value(typedef, key, &[desired]).is_some_and(Value::contains_sensitive)
    })
}

/// Adds to `redactor` the secrets of the resource's system state as this
/// run's Get found it (cached already marked, by the type and by the
/// desired state): an error of a later call may quote what the system
/// holds, a rotated secret's old value too. `desired` are the call's
/// name_hash and props; the first names the resource.
pub(super) fn add_known_state<P: Provider>(
    redactor: &mut Redactor,
    provider: &P,
    desired: &[&Map],
) {
    let Some(name_hash) = desired.first() else {
        return;
    };
    let known = provider.with_state(|s| s.query_results.get(name_hash).map(PackedMap::unpack));
    if let Some(known) = known {
        redactor.add_value(&Value::Hash(known));
    }
}

/// `text` with every secret this provider knows in the run scrubbed: the
/// desired states it canonicalized and the system states its Gets found,
/// each marked by the type and (the system states) by the desired state.
/// For text the lifecycle did not make, such as the error that a pwshlib
/// 2.x override's `retry_invoke_dsc_resource` reports: it may be about any
/// resource of the type. Made only when there is such text to scrub.
pub fn scrub_with_known_secrets<P: Provider>(provider: &P, text: &str) -> Result<String, P::Error> {
    let typedef = provider.typedef()?;
    let known: Vec<Map> = provider.with_state(|s| {
        s.canonicalized
            .values()
            .chain(s.query_results.values())
            .map(PackedMap::unpack)
            .collect()
    });
    let mut redactor = Redactor::new();
    for map in known.iter().filter(|map| may_hold_secrets(&typedef, map)) {
        redactor.add_value(&Value::Hash(mark_attributes(&typedef, map)));
    }
    Ok(redactor.scrub(text))
}
