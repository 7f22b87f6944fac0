//! A Get that cannot report the state property mode compares: the hidden
//! custom insync trigger, a property the Get leaves out, Reasons while
//! every property agrees. The resource's one Test judges it, and the
//! change message says why.

use super::*;
use crate::test_support::fake_provider::FakeProvider;
use crate::test_support::{fixture_typedef, reasons_typedef};

fn s(t: &str) -> Value {
    Value::str(t)
}

fn map(pairs: &[(&str, Value)]) -> Map {
    Map(pairs
        .iter()
        .map(|(k, v)| (Value::sym(*k), v.clone()))
        .collect())
}

fn reason(code: &str, phrase: &str) -> Value {
    Value::Hash(Map(vec![(s("Code"), s(code)), (s("Phrase"), s(phrase))]))
}

/// One run of `provider` over `desired` (titled by its `name`): the
/// answers of `insync?` for `properties`, and a Set when one is out of
/// sync.
fn run(provider: &FakeProvider, desired: Map, properties: &[&str]) -> Vec<Insync> {
    let name = Value::Hash(
        desired
            .iter()
            .filter(|(k, _)| {
                ["name", "dsc_name", "dsc_destinationpath"].contains(&k.key_name().unwrap_or(""))
            })
            .cloned()
            .collect(),
    );
    let canonical = canonicalize(provider, vec![desired]).unwrap().remove(0);
    let current = get(provider, Some(vec![name.clone()])).unwrap().remove(0);
    let answers: Vec<Insync> = properties
        .iter()
        .map(|p| insync(provider, &name, p, Some(&current), &canonical).unwrap())
        .collect();
    if answers.iter().any(|a| matches!(a, Insync::OutOfSync(_))) {
        invoke_set_method(provider, &name, &canonical).unwrap();
    }
    answers
}

fn compliance(system: &[(&str, Value)], in_desired_state: bool) -> FakeProvider {
    let provider = FakeProvider::of_type(reasons_typedef());
    *provider.system.borrow_mut() = Map(system.iter().map(|(k, v)| (s(k), v.clone())).collect());
    provider.in_desired_state.set(in_desired_state);
    provider
}

fn desired_compliance() -> Map {
    map(&[
        ("name", s("c")),
        ("dsc_name", s("c")),
        ("dsc_value", s("wanted")),
        ("validation_mode", s("property")),
    ])
}

#[test]
fn the_custom_insync_trigger_is_answered_by_the_test() {
    for (in_desired_state, methods) in [
        (true, vec![DscMethod::Get, DscMethod::Test]),
        (false, vec![DscMethod::Get, DscMethod::Test, DscMethod::Set]),
    ] {
        let provider = FakeProvider::new();
        provider.in_desired_state.set(in_desired_state);
        let desired = map(&[
            ("name", s("Title")),
            ("dsc_destinationpath", s("C:\\Foo")),
            ("validation_mode", s("property")),
            (CUSTOM_INSYNC_TRIGGER, s("do_not_specify_in_manifest")),
        ]);
        let answers = run(&provider, desired, &[CUSTOM_INSYNC_TRIGGER]);
        let expected = if in_desired_state {
            Insync::InSync
        } else {
            Insync::OutOfSync(Some(TEST_SAYS_NOT_IN_DESIRED_STATE.to_owned()))
        };
        assert_eq!(answers, [expected]);
        assert_eq!(provider.methods(), methods);
    }
}

#[test]
fn a_property_the_get_leaves_out_is_judged_by_the_test() {
    // Get-TargetResource's hashtable has no Contents: nothing to compare.
    let provider = FakeProvider::new();
    provider.system.borrow_mut().remove_named("Contents");
    let desired = map(&[
        ("name", s("Title")),
        ("dsc_destinationpath", s("C:\\Foo")),
        ("dsc_ensure", s("Present")),
        ("dsc_contents", s("hello")),
        ("validation_mode", s("property")),
    ]);
    let answers = run(&provider, desired.clone(), &["dsc_ensure", "dsc_contents"]);
    assert_eq!(answers, [Insync::InSync, Insync::InSync]);
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Test]);
    let said = provider.logged("debug").join("\n");
    assert!(
        said.contains("Title: its Get left out a property the manifest sets"),
        "{said}"
    );

    // Out of sync: the left-out property says what the Test says, never
    // `changed nil to …`.
    let drifted = FakeProvider::new();
    drifted.system.borrow_mut().remove_named("Contents");
    drifted.in_desired_state.set(false);
    let answers = run(&drifted, desired, &["dsc_contents"]);
    assert_eq!(
        answers,
        [Insync::OutOfSync(Some(
            TEST_SAYS_NOT_IN_DESIRED_STATE.to_owned()
        ))]
    );
    assert_eq!(
        drifted.methods(),
        [DscMethod::Get, DscMethod::Test, DscMethod::Set]
    );
}

#[test]
fn a_property_reported_as_null_is_compared() {
    // Left out is not the same as `$null`: a Get that returns the key
    // reports it, and its value differs.
    let provider = FakeProvider::new();
    provider
        .system
        .borrow_mut()
        .insert(s("Contents"), Value::Nil);
    let desired = map(&[
        ("name", s("Title")),
        ("dsc_destinationpath", s("C:\\Foo")),
        ("dsc_contents", s("hello")),
        ("validation_mode", s("property")),
    ]);
    let answers = run(&provider, desired, &["dsc_contents"]);
    assert!(
        matches!(&answers[0], Insync::OutOfSync(Some(m)) if m.starts_with("dsc_contents changed"))
    );
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Set]);
}

#[test]
fn reasons_with_equal_copies_are_judged_by_the_test_and_shown() {
    let provider = compliance(
        &[
            ("Name", s("c")),
            ("Value", s("wanted")),
            (
                "Reasons",
                Value::Array(vec![reason("Fixture:Value", "The value is 'actual'")]),
            ),
        ],
        false,
    );
    let answers = run(&provider, desired_compliance(), &["dsc_value"]);
    assert_eq!(
        answers,
        [Insync::OutOfSync(Some(format!(
            "{TEST_SAYS_NOT_IN_DESIRED_STATE}: Fixture:Value: The value is 'actual'"
        )))]
    );
    assert_eq!(
        provider.methods(),
        [DscMethod::Get, DscMethod::Test, DscMethod::Set]
    );
}

#[test]
fn a_compliant_reason_with_a_test_that_agrees_is_in_sync() {
    let provider = compliance(
        &[
            ("Name", s("c")),
            ("Value", s("wanted")),
            (
                "Reasons",
                Value::Array(vec![reason("Fixture:Compliant", "All is well")]),
            ),
        ],
        true,
    );
    let answers = run(&provider, desired_compliance(), &["dsc_value"]);
    assert_eq!(answers, [Insync::InSync]);
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Test]);
}

#[test]
fn empty_reasons_or_differing_properties_need_no_test() {
    // The real state and empty Reasons: compared, one Get.
    let in_sync = compliance(
        &[
            ("Name", s("c")),
            ("Value", s("wanted")),
            ("Reasons", Value::Array(vec![])),
        ],
        false,
    );
    assert_eq!(
        run(&in_sync, desired_compliance(), &["dsc_value"]),
        [Insync::InSync]
    );
    assert_eq!(in_sync.methods(), [DscMethod::Get]);
    // The real state differs: the values show the change, no Test.
    let drifted = compliance(
        &[
            ("Name", s("c")),
            ("Value", s("actual")),
            (
                "Reasons",
                Value::Array(vec![reason("Fixture:Value", "differs")]),
            ),
        ],
        true,
    );
    let answers = run(&drifted, desired_compliance(), &["dsc_value"]);
    assert_eq!(
        answers,
        [Insync::OutOfSync(Some(
            "dsc_value changed 'actual' to 'wanted'".to_owned()
        ))]
    );
    assert_eq!(drifted.methods(), [DscMethod::Get, DscMethod::Set]);
}

#[test]
fn reasons_are_shown_without_the_secrets_they_quote() {
    let secret = "s3cr3t-'pa\"ss";
    let provider = compliance(
        &[
            ("Name", s("c")),
            ("Value", s("wanted")),
            ("Secret", s(secret)),
            (
                "Reasons",
                Value::Array(vec![reason(
                    "Fixture:Secret",
                    &format!("The secret is {secret}"),
                )]),
            ),
        ],
        false,
    );
    let mut desired = desired_compliance();
    desired.insert_symbol("dsc_secret", Value::Sensitive(Box::new(s(secret))));
    let answers = run(&provider, desired, &["dsc_value", "dsc_secret"]);
    let shown = format!("{answers:?}\n{}", provider.everything_shown());
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(shown.contains("Fixture:Secret: The secret is"), "{shown}");
}

#[test]
fn reasons_of_a_type_without_a_read_only_reasons_are_no_cause() {
    // The fixture file type declares no Reasons: a member of that name is
    // not the convention's.
    let provider = FakeProvider::of_type(fixture_typedef());
    *provider.system.borrow_mut() = Map(vec![
        (s("DestinationPath"), s("C:\\Foo")),
        (s("Contents"), s("hello")),
        (s("Reasons"), Value::Array(vec![reason("x", "y")])),
    ]);
    let desired = map(&[
        ("name", s("Title")),
        ("dsc_destinationpath", s("C:\\Foo")),
        ("dsc_contents", s("hello")),
        ("validation_mode", s("property")),
    ]);
    assert_eq!(run(&provider, desired, &["dsc_contents"]), [Insync::InSync]);
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

#[test]
fn a_left_out_property_of_a_resource_that_differs_already_needs_no_test() {
    // Reported absent while it should be present: it changes anyway.
    let provider = FakeProvider::new();
    *provider.system.borrow_mut() = Map(vec![
        (s("DestinationPath"), s("C:\\Foo")),
        (s("Ensure"), s("Absent")),
    ]);
    let desired = map(&[
        ("name", s("Title")),
        ("dsc_destinationpath", s("C:\\Foo")),
        ("dsc_ensure", s("Present")),
        ("dsc_contents", s("hello")),
        ("validation_mode", s("property")),
    ]);
    let answers = run(&provider, desired, &["dsc_ensure"]);
    assert_eq!(
        answers,
        [Insync::OutOfSync(Some(
            "dsc_ensure changed 'Absent' to 'Present'".to_owned()
        ))]
    );
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Set]);
}
