//! What a Get is handed (the desired state; the keys alone for a listing)
//! and the guard for a `Get()` that returns `$this`.

use super::*;
use crate::test_support::fake_provider::{json, FakeProvider};
use crate::test_support::fixture_typedef;

fn s(t: &str) -> Value {
    Value::str(t)
}

fn manifest(ensure: &str) -> Map {
    Map(vec![
        (Value::sym("name"), s("Title")),
        (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
        (Value::sym("dsc_ensure"), s(ensure)),
        (Value::sym("dsc_contents"), s("HELLO")),
        (Value::sym("dsc_checksum"), Value::Nil),
        (Value::sym("dsc_timeout"), Value::Int(30)),
        (Value::sym("validation_mode"), s("property")),
    ])
}

fn title() -> Value {
    Value::Hash(Map(vec![
        (Value::sym("name"), s("Title")),
        (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
    ]))
}

fn system(contents: &str) -> String {
    json(&Value::Hash(Map(vec![
        (s("DestinationPath"), s("C:\\Foo")),
        (s("Ensure"), s("Present")),
        (s("Contents"), s(contents)),
    ])))
}

/// The `Property = @{…}` of each script the provider sent.
fn properties_sent(provider: &FakeProvider) -> Vec<String> {
    provider
        .scripts
        .borrow()
        .iter()
        .map(|script| {
            let line = script
                .lines()
                .find(|l| l.starts_with("$InvokeParams"))
                .expect("an $InvokeParams line");
            let start = line.find("Property = @{").expect("a Property table");
            let end = line.find("}; ModuleName").expect("ModuleName after it");
            line[start..=end].to_owned()
        })
        .collect()
}

#[test]
fn get_is_handed_the_desired_state_as_set_and_test_are() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(&system("HELLO"));
    canonicalize(&provider, vec![manifest("present")]).unwrap();
    // The non-read-only dsc_ properties with a value: never dsc_timeout, a
    // parameter, a nil or a read-only property.
    assert_eq!(
        properties_sent(&provider),
        ["Property = @{destinationpath = 'C:\\Foo'; ensure = 'present'; contents = 'HELLO'}"]
    );
}

#[test]
fn the_one_get_of_a_run_serves_canonicalize_get_and_insync() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(&system("HELLO"));
    let canonical = canonicalize(&provider, vec![manifest("present")])
        .unwrap()
        .remove(0);
    let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
    let answer = insync(
        &provider,
        &title(),
        "dsc_contents",
        Some(&current),
        &canonical,
    )
    .unwrap();
    assert_eq!(answer, Insync::InSync);
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

#[test]
fn a_listing_gets_keys_only_and_an_absent_desired_state_all_of_it() {
    // A listing (`puppet resource`): the title is all there is.
    let listing = FakeProvider::with_real_scripts(fixture_typedef());
    listing.answer(&system("HELLO"));
    get(&listing, Some(vec![title()])).unwrap();
    assert_eq!(
        properties_sent(&listing),
        ["Property = @{destinationpath = 'C:\\Foo'}"]
    );
    // ensure => absent: canonicalize makes no Get; get's is handed the
    // desired state, as every other Get is (a resource may need a
    // non-key property to look in the right place).
    let absent = FakeProvider::with_real_scripts(fixture_typedef());
    absent.answer(&system("HELLO"));
    canonicalize(&absent, vec![manifest("Absent")]).unwrap();
    get(&absent, Some(vec![title()])).unwrap();
    assert_eq!(
        properties_sent(&absent),
        ["Property = @{destinationpath = 'C:\\Foo'; ensure = 'Absent'; contents = 'HELLO'}"]
    );
}

#[test]
fn an_absent_desired_state_hands_get_its_secrets_as_data() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(&system("HELLO"));
    let mut desired = manifest("absent");
    let credential = Map(vec![
        (s("user"), s("svc")),
        (s("password"), Value::Sensitive(Box::new(s("p'ss-word")))),
    ]);
    desired.insert_symbol("dsc_psdscrunascredential", Value::Hash(credential.clone()));
    desired.insert_symbol("dsc_password", Value::Hash(credential));
    invoke_get_method(&provider, &desired).unwrap();
    let sent = properties_sent(&provider).remove(0);
    assert!(sent.contains("destinationpath = 'C:\\Foo'"), "{sent}");
    assert!(sent.contains("contents = 'HELLO'"), "{sent}");
    assert!(sent.contains("psdscrunascredential = $cred_"), "{sent}");
    assert!(sent.contains("password = $cred_"), "{sent}");
    assert!(!provider.everything_shown().contains("p'ss-word"));
    assert!(!provider
        .scripts
        .borrow()
        .iter()
        .any(|script| script.contains("p'ss-word")));
}

/// One run of a resource whose Get reports the desired contents, flagged
/// (or not) as a `Get()` that returned `$this`, while DSC's Test says
/// `in_desired_state`. The methods called, and whether a Set followed.
fn run_echoing(flagged: bool, in_desired_state: bool) -> (FakeProvider, bool) {
    let provider = FakeProvider::new();
    {
        let mut system = provider.system.borrow_mut();
        system.insert(s("DestinationPath"), s("C:\\Foo"));
        system.insert(s("Ensure"), s("Present"));
        system.insert(s("Contents"), s("HELLO"));
        if flagged {
            system.insert(s(GET_RETURNED_THIS), Value::Bool(true));
        }
    }
    provider.in_desired_state.set(in_desired_state);
    let canonical = canonicalize(&provider, vec![manifest("present")])
        .unwrap()
        .remove(0);
    let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
    assert!(current.get_named(GET_RETURNED_THIS).is_none());
    let mut changed = false;
    for property in ["dsc_ensure", "dsc_contents", "dsc_destinationpath"] {
        let answer = insync(&provider, &title(), property, Some(&current), &canonical).unwrap();
        changed |= matches!(answer, Insync::OutOfSync(_));
    }
    if changed {
        invoke_set_method(&provider, &title(), &canonical).unwrap();
    }
    (provider, changed)
}

#[test]
fn a_get_that_returned_this_is_judged_by_one_test() {
    let (drifted, changed) = run_echoing(true, false);
    assert!(changed);
    assert_eq!(
        drifted.methods(),
        [DscMethod::Get, DscMethod::Test, DscMethod::Set]
    );
    let (in_sync, changed) = run_echoing(true, true);
    assert!(!changed);
    assert_eq!(in_sync.methods(), [DscMethod::Get, DscMethod::Test]);
    let said = in_sync.logged("debug").join("\n");
    assert!(
        said.contains("Title: its Get() returned the very instance it was called on"),
        "{said}"
    );
    assert!(said.contains("judging it by its Test instead"), "{said}");
}

#[test]
fn an_unflagged_get_is_compared_by_property() {
    // The same echo without the flag (Invoke-DscResource's route): nothing
    // tells it apart, so the properties compare and agree.
    let (provider, changed) = run_echoing(false, false);
    assert!(!changed);
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

#[test]
fn a_resource_judged_by_test_gets_no_answer_in_brief() {
    let (provider, _) = run_echoing(true, true);
    let should = manifest("present");
    let answer = insync_in_brief(
        &provider,
        &title(),
        "dsc_contents",
        |_| Some(should.clone()),
        |_| Some(None),
    )
    .unwrap();
    assert_eq!(answer, None);
}
