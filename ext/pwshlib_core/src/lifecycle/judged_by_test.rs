//! When a Get cannot report the state property mode compares
//! (docs/behavior.md §3 "insync?"): the resource is then judged by its one
//! Test, and the change message says why. Decided once per Get, from its
//! answer and the desired state it was handed.

use super::redaction::redactor_for;
use crate::canonical::{is_empty_value, values_equal};
use crate::redact;
use crate::typedef::{Attribute, Behaviour, TypeDef};
use crate::value::{Map, Value};

/// The hidden property the Resource API adds to a type with the
/// `custom_insync` feature and nothing else to compare (every attribute a
/// key, a parameter or read-only); its value never reaches DSC.
pub const CUSTOM_INSYNC_TRIGGER: &str = "rsapi_custom_insync_trigger";

/// The change message where nothing else can be shown.
pub const TEST_SAYS_NOT_IN_DESIRED_STATE: &str =
    "the resource's Test says it is not in the desired state";

/// Why a resource's Get cannot be compared property by property, kept for
/// the run beside its Get result.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedByTest {
    /// The properties set in the manifest that the Get's answer left out:
    /// their change message is the Test's, not `changed nil to …`.
    pub unreported: Vec<String>,
    /// The Reasons the Get returned, shown (secrets scrubbed), when they
    /// are why: the change message of a property whose values agree.
    pub reasons: Option<String>,
}

impl JudgedByTest {
    /// The message of an out-of-sync property the Test judged, whose
    /// values cannot show the change.
    pub fn message(&self) -> String {
        match &self.reasons {
            Some(reasons) => format!("{TEST_SAYS_NOT_IN_DESIRED_STATE}: {reasons}"),
            None => TEST_SAYS_NOT_IN_DESIRED_STATE.to_owned(),
        }
    }
}

/// What of the Get's answer decides: computed before the answer is munged
/// (which keeps no trace of a key left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerShape {
    pub returned_this: bool,
    pub unreported: Vec<String>,
    /// Each Reason of a non-empty `Reasons`, shown as `Code: Phrase`.
    pub reasons: Vec<String>,
}

/// The properties Puppet compares: a `dsc_` property (not a key, a
/// parameter or read-only) with a desired value.
fn compared<'a>(typedef: &'a TypeDef, desired: &'a Map) -> impl Iterator<Item = &'a Attribute> {
    typedef.attributes.iter().filter(move |attribute| {
        attribute.is_dsc_property()
            && matches!(
                attribute.behaviour,
                Behaviour::Property | Behaviour::InitOnly
            )
            && desired
                .get_named(&attribute.name)
                .is_some_and(|v| !is_empty_value(v))
    })
}

/// The member of a DSC answer named `name` as PowerShell names it (case
/// ignored).
fn member<'a>(answer: &'a Map, name: &str) -> Option<&'a Value> {
    answer
        .iter()
        .find(|(key, _)| key.key_name().is_some_and(|k| k.eq_ignore_ascii_case(name)))
        .map(|(_, value)| value)
}

/// Reads the raw DSC answer of a Get handed `desired`.
pub fn answer_shape(
    typedef: &TypeDef,
    desired: &Map,
    answer: &Map,
    returned_this: bool,
) -> AnswerShape {
    let unreported = compared(typedef, desired)
        .filter(|attribute| {
            attribute
                .dsc_name()
                .is_some_and(|name| member(answer, name).is_none())
        })
        .map(|attribute| attribute.name.clone())
        .collect();
    AnswerShape {
        returned_this,
        unreported,
        reasons: reasons_of(typedef, answer),
    }
}

/// A non-empty `Reasons`, when the type declares it as `NotConfigurable`
/// (read-only): each instance as `Code: Phrase`.
fn reasons_of(typedef: &TypeDef, answer: &Map) -> Vec<String> {
    if !typedef
        .attribute("dsc_reasons")
        .is_some_and(|a| a.behaviour == Behaviour::ReadOnly)
    {
        return Vec::new();
    }
    let Some(Value::Array(items)) = member(answer, "Reasons") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_map)
        .map(|reason| {
            let text = |name| match member(reason, name) {
                Some(Value::Str(s)) => s.clone(),
                Some(Value::Nil) | None => String::new(),
                Some(other) => other.to_string(),
            };
            match (text("Code"), text("Phrase")) {
                (code, phrase) if phrase.is_empty() => code,
                (code, phrase) if code.is_empty() => phrase,
                (code, phrase) => format!("{code}: {phrase}"),
            }
        })
        .collect()
}

/// Whether the Get whose answer had `shape` cannot report, and why:
/// `munged` is the Puppet hash made of it, `desired` the desired state the
/// Get was handed. Left-out properties and Reasons matter only while
/// every property it reported agrees: a resource whose properties already
/// differ (one reported absent that should be present) changes anyway and
/// needs no Test, and one whose Reasons are empty reports its real state.
pub fn cannot_report(
    typedef: &TypeDef,
    desired: &Map,
    shape: AnswerShape,
    munged: &Map,
) -> Option<(JudgedByTest, &'static str)> {
    let reported_agree = compared(typedef, desired)
        .filter(|attribute| !shape.unreported.contains(&attribute.name))
        .all(|attribute| {
            let is = munged.get_named(&attribute.name).unwrap_or(&Value::Nil);
            desired
                .get_named(&attribute.name)
                .is_some_and(|should| values_equal(is, should))
        });
    let why = if shape.returned_this {
        "its Get() returned the very instance it was called on (`return $this`), so the \
         values it reports may be the desired ones it was given"
    } else if reported_agree && !shape.unreported.is_empty() {
        "its Get left out a property the manifest sets, so there is nothing to compare it with"
    } else if reported_agree && !shape.reasons.is_empty() {
        "its Get reports Reasons why it is not in the desired state while every property \
         it reports agrees"
    } else {
        return None;
    };
    let reasons = (!shape.reasons.is_empty())
        .then(|| shown_reasons(typedef, desired, munged, &shape.reasons));
    Some((
        JudgedByTest {
            unreported: shape.unreported,
            reasons,
        },
        why,
    ))
}

/// The Reasons as one line, each value a secret may hide in scrubbed as an
/// error message is: the desired state's secrets, and what the type calls
/// secret in the answer.
fn shown_reasons(typedef: &TypeDef, desired: &Map, munged: &Map, reasons: &[String]) -> String {
    let mut redactor = redactor_for(typedef, &[desired]);
    redactor.add_value(&Value::Hash(redact::mark_attributes(typedef, munged)));
    redactor.scrub(&reasons.join("; "))
}
