//! The steps of the Resource API's `canonicalize`, `get` and `insync?`, and
//! of `invoke_get_method`, which the Ruby spine calls in turn.

use super::judged_by_test::{
    answer_shape, cannot_report, JudgedByTest, CUSTOM_INSYNC_TRIGGER,
    TEST_SAYS_NOT_IN_DESIRED_STATE,
};
use super::redaction::{
    change_message, may_hold_secrets, mirror_sensitivity_in_place, mirrors_secrets, redactor_for,
};
use super::{
    debug_lazy, invocation_identity, invocation_name_hash, name_hash_of, title_of_map, title_text,
    with_attributes_of, Insync, Provider, GET_RETURNED_THIS, NOT_IN_DESIRED_STATE,
};
use crate::cache::{Identity, PackedMap};
use crate::canonical::{canonicalize_resource, is_absent, is_empty_value, values_equal};
use crate::munge::munge_get_result_owned;
use crate::redact::{self, mark_attributes, shown_resource};
use crate::script::passed_to_get;
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// `canonicalize`'s answer for one resource, `system` being what
/// `invoke_get_method_for_canonicalize` read of it (None: not asked, or the
/// Get failed). A resource canonicalized earlier in this run (the target
/// state, a Get result) comes back unchanged at no cost; one meant to be
/// absent comes back as the manifest says. The bool says whether the
/// answer differs from the resource given.
pub fn canonicalize_one<P: Provider>(
    provider: &P,
    resource: Map,
    system: Option<Map>,
) -> Result<(Map, bool), P::Error> {
    let typedef = provider.typedef()?;
    // Every cache is keyed by the same namevars: one identity serves all
    // the lookups and inserts for this resource.
    let id = Identity::of(typedef.identity_namevars(), &resource);
    if canonicalized_earlier(provider, &id) {
        return Ok((resource, false));
    }
    debug_lazy(provider, || {
        format!("Canonicalizing {}", shown_resource(&typedef, &resource))
    })?;
    let (canonical, changed) = match system {
        Some(system)
            if !is_absent(resource.get_named("dsc_ensure"))
                && !is_absent(system.get_named("dsc_ensure")) =>
        {
            let given = resource.clone();
            let canonical =
                canonicalize_resource(&typedef, resource, system, &|n| provider.is_metaparam(n));
            let changed = canonical != given;
            (canonical, changed)
        }
        _ => (resource, false),
    };
    let packed = PackedMap::pack(&canonical);
    provider.with_state(|s| s.canonicalized.insert_identity(id, packed));
    Ok((canonical, changed))
}

/// Whether `canonicalize` asks the system about a resource: not when it was
/// canonicalized earlier in this run (`id`), nor when it is meant to be
/// absent (its `dsc_ensure`).
pub fn system_wanted<P: Provider>(provider: &P, id: &Identity, ensure: Option<&Value>) -> bool {
    !is_absent(ensure) && !canonicalized_earlier(provider, id)
}

/// The debug line after a `canonicalize` call, when one is kept.
pub fn canonicalized_all<P: Provider>(provider: &P, out: &[Map]) -> Result<(), P::Error> {
    let typedef = provider.typedef()?;
    debug_lazy(provider, || {
        let shown_out: Vec<Value> = out
            .iter()
            .map(|m| Value::Hash(mark_attributes(&typedef, m)))
            .collect();
        format!(
            "Canonicalized Resources: {}",
            redact::shown(&Value::Array(shown_out))
        )
    })
}

/// Whether the resource of `id` was canonicalized earlier in this run:
/// `canonicalize` returns it unchanged, and `insync?` may read it in brief
/// (`in_brief`).
pub(super) fn canonicalized_earlier<P: Provider>(provider: &P, id: &Identity) -> bool {
    provider.with_state(|s| s.canonicalized.get_identity(id).is_some())
}

/// What the run knows of a resource's system state already.
#[derive(Debug, Clone, PartialEq)]
pub enum Known {
    /// Its Get result.
    Read(Map),
    /// Its Get failed (reported): no second call.
    Failed,
    /// Nothing: a Get is due.
    Unknown,
}

/// 2.x `invoke_get_method_for_canonicalize`'s first step: the run's one Get
/// of the resource of `id`, when it was made.
pub fn known_system<P: Provider>(provider: &P, id: &Identity) -> Known {
    provider.with_state(|s| {
        if let Some(cached) = s.query_results.get_identity(id) {
            Known::Read(cached.unpack())
        } else if s.failed_gets.get_identity(id).is_some() {
            Known::Failed
        } else {
            Known::Unknown
        }
    })
}

/// Notes that the Get of `resource` failed in this run (reported): no
/// further PowerShell call is made for it, and its Set is marked failed.
pub fn note_get_failed<P: Provider>(provider: &P, resource: &Map) {
    provider.with_state(|s| s.failed_gets.insert(resource, ()));
}

/// Whether this resource's Get failed earlier in the run (already reported).
pub fn get_failed<P: Provider>(provider: &P, resource: &Map) -> bool {
    provider.with_state(|s| s.failed_gets.get(resource).is_some())
}

/// `get`'s first line.
pub fn get_begins<P: Provider>(provider: &P) -> Result<(), P::Error> {
    debug_lazy(provider, || {
        "Collecting data from the DSC Resource".to_owned()
    })
}

/// What `get` does for one name.
#[derive(Debug, Clone, PartialEq)]
pub enum GetStep {
    /// The answer, known without a call: the run's Get result, or the
    /// title alone after a failed Get (reported already; it keeps Puppet
    /// going, and `set` then marks the resource failed).
    Answer(Map),
    /// `invoke_get_method` with this hash: the title merged with the whole
    /// canonicalized resource when there is one (its desired state for the
    /// call, and for munging and for knowing secrets).
    Query(Map),
}

/// `get`'s step for one name (a title, or a hash of namevars).
pub fn get_step<P: Provider>(provider: &P, name: &Value) -> GetStep {
    let name_hash = name_hash_of(name);
    if let Some(mut cached) =
        provider.with_state(|s| s.query_results.get(&name_hash).map(PackedMap::unpack))
    {
        // The cached Get may have been made for a hash titled `title:`;
        // Puppet matches results on the namevars it asked for.
        if let Some(name) = name_hash.get_named("name").filter(|v| !v.is_nil()) {
            cached.insert_symbol("name", name.clone());
        }
        return GetStep::Answer(cached);
    }
    if get_failed(provider, &name_hash) {
        return GetStep::Answer(name_hash);
    }
    let canonical = provider.with_state(|s| s.canonicalized.get(&name_hash).map(PackedMap::unpack));
    GetStep::Query(match &canonical {
        Some(canonical) => with_attributes_of(name_hash, canonical),
        None => name_hash,
    })
}

/// `invoke_get_method`'s first step: the props a Get sends, the desired
/// state as Set and Test get it (an absent one too; the keys alone for a
/// listing, whose hash holds no more).
pub fn get_props<P: Provider>(provider: &P, name_hash: &Map) -> Result<Map, P::Error> {
    let typedef = provider.typedef()?;
    retrieving(provider, name_hash)?;
    Ok(name_hash
        .iter()
        .filter(|(k, v)| {
            !v.is_nil()
                && k.key_name()
                    .and_then(|n| typedef.attribute(n))
                    .is_some_and(passed_to_get)
        })
        .cloned()
        .collect())
}

/// The names of the attributes a Get passes when they are set: the keys
/// [`get_props`] keeps.
pub fn attributes_passed_to_get(typedef: &TypeDef) -> impl Iterator<Item = &str> {
    typedef
        .attributes
        .iter()
        .filter(|attr| passed_to_get(attr))
        .map(|attr| attr.name.as_str())
}

/// The debug line before a Get of `name_hash` is made.
pub fn retrieving<P: Provider>(provider: &P, name_hash: &Map) -> Result<(), P::Error> {
    let typedef = provider.typedef()?;
    debug_lazy(provider, || {
        format!("retrieving {}", shown_resource(&typedef, name_hash))
    })
}

/// `invoke_get_method`'s last step: the DSC answer `data` of the Get of
/// `name_hash` as the Puppet hash (kept for the run), or None when there is
/// none.
pub fn get_result<P: Provider>(
    provider: &P,
    name_hash: &Map,
    data: Option<Value>,
) -> Result<Option<Map>, P::Error> {
    let Some(data) = data else {
        return Ok(None);
    };
    let typedef = provider.typedef()?;
    let title = title_of_map(name_hash);
    let Value::Hash(mut data) = data else {
        provider.err(
            title.as_ref(),
            "Invoke-DscResource Get returned a value that is not an object",
        )?;
        return Ok(None);
    };
    let returned_this = matches!(
        data.remove_named(GET_RETURNED_THIS),
        Some(Value::Bool(true))
    );
    let shape = answer_shape(&typedef, name_hash, &data, returned_this);
    // The result's values are moved into the Puppet hash. An error message
    // quotes values the system reported, its secrets too (by the type, or
    // where the desired state holds a Sensitive value): a result that may
    // hold any is kept for scrubbing them (most hold none).
    let kept_for_redaction = (may_hold_secrets(&typedef, &data)
        || mirrors_secrets(&typedef, &data, name_hash))
    .then(|| Value::Hash(data.clone()));
    let (mut munged, errors) = munge_get_result_owned(&typedef, name_hash, data);
    if !errors.is_empty() {
        let mut redactor = redactor_for(&typedef, &[name_hash]);
        if let Some(data) = &kept_for_redaction {
            redactor.add_value(&redact::mark_result(&typedef, data, &[name_hash]));
        }
        for message in errors {
            provider.err(title.as_ref(), &redactor.scrub(&message))?;
        }
    }
    for (key, value) in munged.iter_mut() {
        let should = key.key_name().and_then(|k| name_hash.get_named(k));
        mirror_sensitivity_in_place(value, should.unwrap_or(&Value::Nil));
    }
    // Sensitive-typed values go back to Puppet as Sensitive, as the type
    // schema wants them: Puppet logs the current state it is given.
    let munged = redact::mark_attributes_owned(&typedef, munged);
    if let Some((judgement, why)) = cannot_report(&typedef, name_hash, shape, &munged) {
        debug_lazy(provider, || {
            format!(
                "{}: {why}: judging it by its Test instead, as validation_mode => resource does",
                title.as_ref().map(title_text).unwrap_or_default()
            )
        })?;
        provider.with_state(|s| s.judged_by_test.insert(name_hash, judgement));
    }
    let packed = PackedMap::pack(&munged);
    provider.with_state(|s| s.query_results.insert(name_hash, packed));
    debug_lazy(provider, || {
        format!(
            "Returned to Puppet as {}",
            shown_resource(&typedef, &munged)
        )
    })?;
    Ok(Some(munged))
}

/// What `insync?` needs before it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum InsyncStep {
    Answer(Insync),
    /// The resource's Test: `invoke_test_method`, then `insync` again with
    /// its answer.
    Test,
}

/// `insync?` of `property`. `test` is the answer of the resource's
/// `invoke_test_method` when the spine made it after a [`InsyncStep::Test`].
pub fn insync_step<P: Provider>(
    provider: &P,
    name: &Value,
    property: &str,
    is_hash: Option<&Map>,
    should_hash: &Map,
    test: Option<&Insync>,
) -> Result<InsyncStep, P::Error> {
    let typedef = provider.typedef()?;
    if typedef
        .attribute(property)
        .is_some_and(|a| a.is_ensurable_workaround())
    {
        // Not a DSC property: nothing on the system can differ from it.
        return Ok(InsyncStep::Answer(Insync::InSync));
    }
    // Every cache of the state has the same namevars: one identity serves
    // them all, made without building the merged name hash.
    let identity =
        provider.with_state(|s| invocation_identity(s.query_results.namevars(), name, should_hash));
    let marker = (identity.clone(), property.to_owned());
    if provider.with_state(|s| s.insync_reported.remove(&marker)) {
        // The corrective-change check that Puppet makes after a change.
        return Ok(InsyncStep::Answer(Insync::UseDefault));
    }
    let answer = if provider.with_state(|s| s.failed_gets.get_identity(&identity).is_some()) {
        // Nothing to compare with, and no Test either: out of sync, so that
        // `set` marks the resource failed.
        Insync::OutOfSync(Some(format!(
            "{property}: the current state could not be read"
        )))
    } else {
        let is_value = match is_hash.and_then(|h| h.get_named(property)) {
            Some(v) => Some(v.clone()),
            None => provider.with_state(|s| {
                s.query_results
                    .get_identity(&identity)
                    .and_then(|m| m.unpack().remove_named(property))
            }),
        };
        let is_value = is_value.unwrap_or(Value::Nil);
        let should_value = should_hash.get_named(property);
        let judgement = judgement_of(provider, &identity);
        let by_test = if validates_whole_resource(should_hash)
            || judgement.is_some()
            || property == CUSTOM_INSYNC_TRIGGER
        {
            let Some(in_desired_state) = test_answer(provider, name, should_hash, &identity, test)
            else {
                return Ok(InsyncStep::Test);
            };
            in_desired_state.map(|in_desired_state| {
                answer_of_test(
                    &typedef,
                    property,
                    in_desired_state,
                    (&is_value, should_value),
                    &shown_cause(should_hash, judgement.as_ref()),
                )
            })
        } else {
            None
        };
        // Without a Test answer (or when it failed), the properties compare.
        by_test.unwrap_or_else(|| compare_property(&typedef, property, &is_value, should_value))
    };
    if matches!(answer, Insync::OutOfSync(_)) {
        // The change is reported: Puppet's corrective check gets nil.
        provider.with_state(|s| s.insync_reported.insert(marker));
    }
    Ok(InsyncStep::Answer(answer))
}

/// `validation_mode => resource`: DSC's Test judges the whole resource.
pub(super) fn validates_whole_resource(should_hash: &Map) -> bool {
    matches!(
        should_hash.get_named("validation_mode"),
        Some(Value::Str(m) | Value::Symbol(m)) if m.eq_ignore_ascii_case("resource")
    )
}

/// Why this run's Get of the resource cannot be compared property by
/// property, when it cannot: its Test judges it (docs/behavior.md §3
/// "insync?").
pub(super) fn judgement_of<P: Provider>(provider: &P, identity: &Identity) -> Option<JudgedByTest> {
    provider.with_state(|s| s.judged_by_test.get_identity(identity).cloned())
}

/// What a Test judged out of sync says where the values show nothing, and
/// which properties they cannot show: the Reasons the Get returned, else
/// that the Test says so (pwshlib 2.x's words for `validation_mode =>
/// resource`).
struct ShownCause<'a> {
    message: String,
    unreported: &'a [String],
}

fn shown_cause<'a>(should_hash: &Map, judgement: Option<&'a JudgedByTest>) -> ShownCause<'a> {
    match judgement {
        Some(judgement) => ShownCause {
            message: judgement.message(),
            unreported: &judgement.unreported,
        },
        None if validates_whole_resource(should_hash) => ShownCause {
            message: NOT_IN_DESIRED_STATE.to_owned(),
            unreported: &[],
        },
        None => ShownCause {
            message: TEST_SAYS_NOT_IN_DESIRED_STATE.to_owned(),
            unreported: &[],
        },
    }
}

/// The resource's one Test in this run: Some(in desired state), or None
/// when it failed; None outside when it is yet to be made (`test`: the
/// answer of the one just made).
fn test_answer<P: Provider>(
    provider: &P,
    name: &Value,
    should_hash: &Map,
    identity: &Identity,
    test: Option<&Insync>,
) -> Option<Option<bool>> {
    if let Some(answer) =
        provider.with_state(|s| s.test_results.get_identity(identity).map(|e| e.1))
    {
        return Some(answer);
    }
    let answer = match test? {
        Insync::InSync => Some(true),
        Insync::OutOfSync(_) => Some(false),
        Insync::UseDefault => None,
    };
    let name_hash = invocation_name_hash(name, should_hash);
    provider.with_state(|s| {
        s.test_results
            .insert_identity(identity.clone(), (name_hash, answer));
    });
    Some(answer)
}

/// A property's answer from the Test of the whole resource: out of sync
/// says how the property differs, or else the cause shown.
fn answer_of_test(
    typedef: &TypeDef,
    property: &str,
    in_desired_state: bool,
    (is_value, should_value): (&Value, Option<&Value>),
    cause: &ShownCause,
) -> Insync {
    if in_desired_state {
        return Insync::InSync;
    }
    let shows_values =
        property != CUSTOM_INSYNC_TRIGGER && !cause.unreported.iter().any(|p| p == property);
    let message = match should_value {
        Some(should) if shows_values && !values_equal(is_value, should) => {
            change_message(typedef, property, is_value, should)
        }
        _ => cause.message.clone(),
    };
    Insync::OutOfSync(Some(message))
}

/// A property's answer from comparing its values: nil for what is not a
/// DSC property or has no desired value.
fn compare_property(
    typedef: &TypeDef,
    property: &str,
    is_value: &Value,
    should_value: Option<&Value>,
) -> Insync {
    if !property.starts_with("dsc_") {
        return Insync::UseDefault;
    }
    let Some(should_value) = should_value.filter(|v| !is_empty_value(v)) else {
        return Insync::UseDefault;
    };
    if values_equal(is_value, should_value) {
        return Insync::InSync;
    }
    Insync::OutOfSync(Some(change_message(
        typedef,
        property,
        is_value,
        should_value,
    )))
}
