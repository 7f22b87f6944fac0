//! The Export step: each instance a Get result (munged, typed, Sensitive,
//! cached), titled by its keys; a resource that cannot list itself one
//! warning and no instances.

use super::*;
use crate::munge::parse_json;
use crate::redact::shown_resource;
use crate::test_support::fake_provider::FakeProvider;
use crate::test_support::fixture_typedef;

/// The Export call as the spine makes it, sent to the fake, its answer
/// read and listed.
fn export(provider: &FakeProvider) -> Vec<Map> {
    let (call, script) = dsc_call(provider, &Map::new(), &Map::new(), DscMethod::Export)
        .unwrap()
        .unwrap();
    let data = script.call().expect("a call as data");
    assert_eq!(data.method, DscMethod::Export);
    assert!(data.properties.is_empty());
    let answer = provider.answers.borrow_mut().pop_front().unwrap();
    match dsc_outcome(provider, &call, Ok(answer)).unwrap() {
        Outcome::Data(data) => export_result(provider, Some(data)).unwrap(),
        Outcome::Failed => export_result(provider, None).unwrap(),
        Outcome::Collision => panic!("no collision was answered"),
    }
}

#[test]
fn each_exported_instance_is_a_get_result_titled_by_its_key() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(
        r#"{"instances":[
            {"DestinationPath":"C:\\a","Ensure":"Present","Contents":"A","Port":"8080"},
            {"DestinationPath":"C:\\b","Ensure":"Absent"},
            {"DestinationPath":"C:\\c","Contents":"","Ensure":"Present"}
        ]}"#,
    );
    let listed = export(&provider);
    assert_eq!(
        listed.len(),
        2,
        "the Absent instance is not one the machine has"
    );
    let first = &listed[0];
    assert_eq!(first.get_named("name"), Some(&Value::str("C:\\a")));
    assert_eq!(first.get_named("title"), Some(&Value::str("C:\\a")));
    assert_eq!(
        first.get_named("dsc_destinationpath"),
        Some(&Value::str("C:\\a"))
    );
    assert_eq!(first.get_named("dsc_contents"), Some(&Value::str("A")));
    // Munged as a Get result is: a UInt32 reported as text is an integer.
    assert_eq!(first.get_named("dsc_port"), Some(&Value::Int(8080)));
    assert_eq!(listed[1].get_named("name"), Some(&Value::str("C:\\c")));
    // Cached as the run's Get result: `get` of that title makes no call.
    let name = Value::Hash(name_hash_of_instance(
        &provider.typedef,
        &Map(vec![(Value::str("DestinationPath"), Value::str("C:\\a"))]),
    ));
    assert!(matches!(get_step(&provider, &name), GetStep::Answer(_)));
}

#[test]
fn an_exported_secret_is_sensitive_and_never_shown() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.debug_kept.set(true);
    let secret = "p'a\"s$s\nwörd-[REDACTED]-\u{1F511}";
    let instance = serde_json::json!({"instances": [{
        "DestinationPath": "C:\\a",
        "Password": {"UserName": "alice", "Password": secret, "cim_instance_type": "MSFT_Credential"},
    }]});
    provider.answer(&instance.to_string());
    let listed = export(&provider);
    let password = listed[0]
        .get_named("dsc_password")
        .unwrap()
        .as_map()
        .unwrap();
    assert_eq!(password.get_named("user"), Some(&Value::str("alice")));
    assert!(
        !shown_resource(&provider.typedef, &listed[0]).contains("wörd"),
        "shown: {}",
        shown_resource(&provider.typedef, &listed[0])
    );
    assert!(!provider.everything_shown().contains("wörd"));
}

#[test]
fn a_resource_that_cannot_list_itself_says_so_once_and_lists_nothing() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(
        r#"{"instances":null,"cannot_export":"its class 'FixtureFile' defines no static Export() method","errormessage":""}"#,
    );
    assert!(export(&provider).is_empty());
    let warnings: Vec<_> = provider
        .logs
        .borrow()
        .iter()
        .filter(|(level, _)| level == "warning")
        .map(|(_, message)| message.clone())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("cannot list instances"));
    assert!(warnings[0].contains("puppet resource dsc_fixturefile <title>"));
    assert!(warnings[0].contains("'FixtureFile'"));
    assert!(warnings[0].contains("no static Export() method"));
}

#[test]
fn an_answer_without_instances_is_reported() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    let data = parse_json(r#"{"indesiredstate":true}"#).unwrap();
    assert!(export_result(&provider, Some(data)).unwrap().is_empty());
    assert!(provider
        .everything_shown()
        .contains("answered its Export with no list of instances"));
}

#[test]
fn a_failed_export_is_reported_and_lists_nothing() {
    let provider = FakeProvider::with_real_scripts(fixture_typedef());
    provider.answer(r#"{"instances":null,"errormessage":"Export threw: boom"}"#);
    assert!(export(&provider).is_empty());
    assert!(provider.everything_shown().contains("boom"));
}

#[test]
fn the_key_property_makes_a_title_puppet_can_use_again() {
    let typedef = fixture_typedef();
    let hash = name_hash_of_instance(
        &typedef,
        &Map(vec![
            (Value::str("destinationPATH"), Value::str("C:\\x")),
            (Value::str("Contents"), Value::str("ignored")),
        ]),
    );
    assert_eq!(hash.get_named("name"), Some(&Value::str("C:\\x")));
    assert_eq!(
        hash.get_named("dsc_destinationpath"),
        Some(&Value::str("C:\\x"))
    );
    assert_eq!(hash.get_named("dsc_contents"), None);
}
