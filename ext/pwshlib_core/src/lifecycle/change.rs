//! The steps of a change: `set`'s decisions (the action, a Set refused
//! after a failed Get, a failed Set taken), what `delete` sends, and the
//! first and last steps of `invoke_set_method` and `invoke_test_method`.

use super::redaction::shown;
use super::{
    debug_lazy, dsc_props, invocation_identity, invocation_name_hash, name_hash_of, title_of,
    title_text, Insync, LifecycleState, Provider, NOT_IN_DESIRED_STATE,
};
use crate::cache::PackedMap;
use crate::redact::shown_resource;
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

const NOT_APPLIED_AFTER_GET_FAILED: &str = "not applied, because its current state could not be read (the DSC Get failed; see the error above)";
const SET_FAILED_MESSAGE: &str = "Invoke-DscResource Set did not succeed; see the error above";

/// The message of the error that marks a resource whose Get failed as
/// failed, instead of a blind Set.
pub fn get_failed_message(typedef: &TypeDef, title: Option<&Value>) -> String {
    let title = title.map(shown).unwrap_or_default();
    format!("{}[{title}]: {NOT_APPLIED_AFTER_GET_FAILED}", typedef.name)
}

/// `set`'s change of the resource titled `name` (desired state `should`)
/// when its Get failed earlier in the run (already reported): the message
/// of the error that fails it, instead of a blind Set. None: set it.
pub fn set_refused_after_failed_get<P: Provider>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<Option<String>, P::Error> {
    let typedef = provider.typedef()?;
    let identity = invocation_identity(typedef.identity_namevars(), name, should);
    if !provider.with_state(|s| s.failed_gets.get_identity(&identity).is_some()) {
        return Ok(None);
    }
    Ok(Some(get_failed_message(&typedef, title_of(name).as_ref())))
}

/// After `create`/`update`/`delete` of the resource titled `name` with
/// `should` (as they were passed): the message of the error that fails it
/// when its Set failed (already reported through `context.err`), taken, so
/// that the Resource API marks it failed and the run goes on. `should` is
/// what `invoke_set_method` was given; anything but a hash stands for an
/// empty one, as `invoke_set_method` files it.
pub fn take_set_failure(
    state: &mut LifecycleState,
    name: &Value,
    should: &Value,
) -> Option<&'static str> {
    let empty = Map::new();
    let should = should.as_map().unwrap_or(&empty);
    // The key `invoke_set_method` files a failed Set under.
    let key = invocation_name_hash(name, should);
    state.failed_sets.remove(&key).map(|_| SET_FAILED_MESSAGE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAction {
    Create,
    Update,
    Delete,
}

impl SetAction {
    pub fn method_name(self) -> &'static str {
        match self {
            SetAction::Create => "create",
            SetAction::Update => "update",
            SetAction::Delete => "delete",
        }
    }
    pub fn context_method(self) -> &'static str {
        match self {
            SetAction::Create => "creating",
            SetAction::Update => "updating",
            SetAction::Delete => "deleting",
        }
    }
}

/// docs/behavior.md §3 "set": compares `dsc_ensure` case-insensitively.
pub fn set_action(typedef: &TypeDef, is: Option<&Map>, should: &Map) -> SetAction {
    if typedef.attribute("dsc_ensure").is_none() {
        return SetAction::Update;
    }
    let text = |v: Option<&Value>, default: &str| match v {
        Some(Value::Str(s)) | Some(Value::Symbol(s)) => s.to_lowercase(),
        _ => default.to_owned(),
    };
    let is_ensure = text(is.and_then(|m| m.get_named("dsc_ensure")), "absent");
    let should_ensure = text(should.get_named("dsc_ensure"), "present");
    match (is_ensure.as_str(), should_ensure.as_str()) {
        ("absent", "present") => SetAction::Create,
        ("present", "absent") => SetAction::Delete,
        _ => SetAction::Update,
    }
}

/// What `delete` sends: the title plus the canonicalized resource's `dsc_`
/// attributes (its desired state, the run-as credential and the timeout
/// among them: a resource may need a non-key property to find what it
/// removes, as its Get needs it to look in the right place), with
/// `Ensure = 'Absent'`.
pub fn delete_should<P: Provider>(provider: &P, name: &Value) -> Result<Map, P::Error> {
    let mut should = name_hash_of(name);
    if let Some(canonical) =
        provider.with_state(|s| s.canonicalized.get(&should).map(PackedMap::unpack))
    {
        for (key, value) in canonical.iter() {
            let Some(attr) = key.key_name().filter(|k| k.starts_with("dsc_")) else {
                continue;
            };
            if should.get_named(attr).is_none() && !value.is_nil() {
                should.insert_symbol(attr, value.clone());
            }
        }
    }
    should.insert_symbol("dsc_ensure", Value::str("Absent"));
    Ok(should)
}

/// `invoke_set_method`'s first step: the name hash the Set runs under and
/// the props it sends.
pub fn set_call<P: Provider>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<(Map, Map), P::Error> {
    let typedef = provider.typedef()?;
    debug_lazy(provider, || {
        format!(
            "Invoking Set Method for '{}' with {}",
            title_text(name),
            shown_resource(&typedef, should)
        )
    })?;
    let name_hash = invocation_name_hash(name, should);
    provider.with_state(|s| s.failed_sets.remove(&name_hash));
    Ok((name_hash, dsc_props(should)))
}

/// `invoke_set_method`'s last step, with the Set's answer `data` (None: it
/// failed, reported): the run forgets what it read of the resource. True
/// when the Set asked for a reboot (`rebootrequired`, the outcome every
/// route gives: `$global:DSCMachineStatus = 1` called directly,
/// `RebootRequired` through Invoke-DscResource); the spine then hands the
/// request to the catalog's `reboot` resource, a Puppet object only Ruby
/// reaches (docs/behavior.md §3 "reboots").
pub fn set_result<P: Provider>(
    provider: &P,
    name: &Value,
    name_hash: &Map,
    data: Option<&Value>,
) -> Result<bool, P::Error> {
    provider.with_state(|s| s.forget(name_hash));
    let asked = match data {
        Some(Value::Hash(result)) => {
            matches!(result.get_named("rebootrequired"), Some(Value::Bool(true)))
        }
        Some(_) => false,
        None => {
            provider.with_state(|s| s.failed_sets.insert(name_hash, "Set failed".into()));
            false
        }
    };
    if asked {
        debug_lazy(provider, || {
            format!("The DSC Set of '{}' asked for a reboot", title_text(name))
        })?;
    }
    Ok(asked)
}

/// `invoke_test_method`'s first step: the name hash the Test runs under and
/// the props it sends.
pub fn test_call<P: Provider>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<(Map, Map), P::Error> {
    debug_lazy(provider, || {
        format!(
            "Relying on DSC Test method for validating if '{}' is in the desired state",
            title_text(name)
        )
    })?;
    Ok((invocation_name_hash(name, should), dsc_props(should)))
}

/// `invoke_test_method`'s last step, with the Test's answer `data`: the
/// answer, kept for the run.
pub fn test_result<P: Provider>(provider: &P, name_hash: &Map, data: Option<&Value>) -> Insync {
    let in_desired_state = data
        .and_then(Value::as_map)
        .and_then(|m| m.get_named("indesiredstate"))
        .map(|v| matches!(v, Value::Bool(true)));
    provider.with_state(|s| {
        s.test_results
            .insert(name_hash, (name_hash.clone(), in_desired_state))
    });
    match in_desired_state {
        None => Insync::UseDefault,
        Some(true) => Insync::InSync,
        Some(false) => Insync::OutOfSync(Some(NOT_IN_DESIRED_STATE.to_owned())),
    }
}
