use super::*;
use crate::secrecy::REDACTED_SENSITIVE;
use crate::test_support::fake_provider::{out, FakeProvider};
use crate::test_support::fixture_typedef;

fn s(t: &str) -> Value {
    Value::str(t)
}

fn manifest(mode: &str) -> Map {
    Map(vec![
        (Value::sym("name"), s("Title")),
        (Value::sym("dsc_destinationpath"), s("c:\\foo")),
        (Value::sym("dsc_ensure"), s("present")),
        (Value::sym("dsc_contents"), s("HELLO")),
        (Value::sym("validation_mode"), s(mode)),
    ])
}

fn title() -> Value {
    Value::Hash(Map(vec![
        (Value::sym("name"), s("Title")),
        (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
    ]))
}

/// Drives one resource the way the Resource API does; returns whether a
/// Set was needed.
fn drive(provider: &FakeProvider, manifest: Map) -> bool {
    let canonical = canonicalize(provider, vec![manifest]).unwrap().remove(0);
    let current = get(provider, Some(vec![title()])).unwrap().remove(0);
    assert_eq!(
        canonicalize(provider, vec![current.clone()]).unwrap()[0],
        current
    );
    let target = canonicalize(provider, vec![canonical.clone()])
        .unwrap()
        .remove(0);
    assert_eq!(target, canonical);
    let mut changed = false;
    for property in ["dsc_ensure", "dsc_contents", "dsc_destinationpath"] {
        let answer = insync(provider, &title(), property, Some(&current), &target).unwrap();
        if matches!(answer, Insync::OutOfSync(_)) {
            changed = true;
            // Puppet's corrective-change check asks once more.
            assert_eq!(
                insync(provider, &title(), property, Some(&current), &target).unwrap(),
                Insync::UseDefault
            );
        }
    }
    if changed {
        let action = set_action(&provider.typedef, Some(&current), &target);
        assert_eq!(action, SetAction::Update);
        invoke_set_method(provider, &title(), &target).unwrap();
    }
    changed
}

#[test]
fn in_sync_resource_costs_one_get() {
    let provider = FakeProvider::new();
    provider
        .system
        .borrow_mut()
        .insert(s("Contents"), s("hello"));
    assert!(!drive(&provider, manifest("property")));
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

#[test]
fn canonicalize_keeps_system_casing() {
    let provider = FakeProvider::new();
    let canonical = canonicalize(&provider, vec![manifest("property")])
        .unwrap()
        .remove(0);
    assert_eq!(
        canonical.get_named("dsc_destinationpath"),
        Some(&s("C:\\Foo"))
    );
    assert_eq!(canonical.get_named("dsc_contents"), Some(&s("hello")));
    assert_eq!(canonical.get_named("dsc_ensure"), Some(&s("Present")));
    assert_eq!(canonical.get_named("name"), Some(&s("Title")));
}

#[test]
fn changed_resource_costs_one_get_and_one_set_and_forgets_its_state() {
    let provider = FakeProvider::new();
    let mut m = manifest("property");
    m.insert_symbol("dsc_contents", s("other"));
    assert!(drive(&provider, m));
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Set]);
    assert!(provider.state.borrow().query_results.is_empty());
}

#[test]
fn resource_mode_adds_exactly_one_test() {
    let provider = FakeProvider::new();
    provider.in_desired_state.set(false);
    assert!(drive(&provider, manifest("resource")));
    assert_eq!(
        provider.methods(),
        [DscMethod::Get, DscMethod::Test, DscMethod::Set]
    );
    let provider = FakeProvider::new();
    assert!(!drive(&provider, manifest("resource")));
    assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Test]);
}

#[test]
fn change_message_shows_values_but_never_secrets() {
    let provider = FakeProvider::new();
    let secret = Value::Sensitive(Box::new(s("p'ss\nword")));
    let should = Map(vec![
        (Value::sym("name"), s("Title")),
        (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
        (Value::sym("dsc_contents"), s("new")),
        (
            Value::sym("dsc_password"),
            Value::Hash(Map(vec![(s("user"), s("bob")), (s("password"), secret)])),
        ),
    ]);
    let is = Map(vec![
        (Value::sym("dsc_contents"), s("old")),
        (
            Value::sym("dsc_password"),
            Value::Hash(Map(vec![
                (s("user"), s("bob")),
                (s("password"), s("p'ss\nword-old")),
            ])),
        ),
    ]);
    let Insync::OutOfSync(Some(message)) =
        insync(&provider, &title(), "dsc_contents", Some(&is), &should).unwrap()
    else {
        panic!("expected a change");
    };
    assert_eq!(message, "dsc_contents changed 'old' to 'new'");
    let Insync::OutOfSync(Some(message)) =
        insync(&provider, &title(), "dsc_password", Some(&is), &should).unwrap()
    else {
        panic!("expected a change");
    };
    assert!(!message.contains("p'ss"), "{message}");
    assert!(message.contains(REDACTED_SENSITIVE), "{message}");
}

#[test]
fn nothing_returned_mentions_a_timeout_and_uses_the_resource_timeout() {
    let provider = FakeProvider::new();
    provider.answers.borrow_mut().push_back(ExecuteOutput {
        stdout: None,
        errormessage: Some(
            "Catastrophic failure: PowerShell module timeout (5000 ms) exceeded while executing"
                .into(),
        ),
        native_stdout: None,
    });
    let mut m = manifest("property");
    m.insert_symbol("dsc_timeout", Value::Int(5));
    assert_eq!(invoke_get_method(&provider, &m).unwrap(), None);
    let errors = provider.logged("err");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("[\"Title\"] Nothing returned"),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("timeout"), "{}", errors[0]);
    // The next resource has no timeout: it does not stick.
    let mut other = manifest("property");
    other.insert_symbol("name", s("Other"));
    invoke_get_method(&provider, &other).unwrap();
    assert_eq!(
        provider
            .calls
            .borrow()
            .iter()
            .map(|c| c.1)
            .collect::<Vec<_>>(),
        [Some(5000), None]
    );
}

#[test]
fn invalid_json_reports_parse_error_and_excerpt() {
    let provider = FakeProvider::new();
    provider
        .answers
        .borrow_mut()
        .push_back(out("{not json at all"));
    assert_eq!(
        invoke_get_method(&provider, &manifest("property")).unwrap(),
        None
    );
    let errors = provider.logged("err");
    assert!(errors[0].contains("invalid JSON"), "{}", errors[0]);
    assert!(errors[0].contains("{not json at all"), "{}", errors[0]);
}

#[test]
fn logon_failure_is_remembered_for_the_run() {
    let provider = FakeProvider::new();
    provider.answers.borrow_mut().push_back(out(
        r#"{"errormessage":"Logon failure: the user has not been granted the requested logon type at this computer"}"#,
    ));
    let mut m = manifest("property");
    let cred = Value::Hash(Map(vec![
        (s("user"), s("svc")),
        (s("password"), Value::Sensitive(Box::new(s("Secr3t")))),
    ]));
    m.insert_symbol("dsc_psdscrunascredential", cred.clone());
    assert_eq!(invoke_get_method(&provider, &m).unwrap(), None);
    let mut other = manifest("property");
    other.insert_symbol("name", s("Other"));
    other.insert_symbol("dsc_psdscrunascredential", cred);
    assert_eq!(invoke_get_method(&provider, &other).unwrap(), None);
    assert_eq!(provider.methods(), [DscMethod::Get]);
    let errors = provider.logged("err");
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("svc") && errors[0].contains("logon rights"),
        "{}",
        errors[0]
    );
    assert!(errors[1].starts_with("[\"Other\"]"), "{}", errors[1]);
    assert!(errors.iter().all(|e| !e.contains("Secr3t")));
}

#[test]
fn collision_is_retried_and_the_retry_result_used() {
    let provider = FakeProvider::new();
    provider.with_state(|s| s.collision_wait_seconds = 0.5);
    let collided = format!(r#"{{"errormessage":"{COLLISION_MESSAGE}"}}"#);
    provider
        .answers
        .borrow_mut()
        .extend([out(&collided), out(&collided)]);
    let result = invoke_get_method(&provider, &manifest("property"))
        .unwrap()
        .unwrap();
    assert_eq!(result.get_named("dsc_contents"), Some(&s("hello")));
    assert_eq!(provider.methods(), [DscMethod::Get; 3]);
    assert_eq!(*provider.sleeps.borrow(), [0.5, 0.5]);
    assert!(provider.logged("notice")[0].contains("collision"));
    assert!(provider.logged("err").is_empty());
}

#[test]
fn collision_gives_up_after_five_retries() {
    let provider = FakeProvider::new();
    provider.with_state(|s| s.collision_wait_seconds = 0.0);
    let collided = format!(r#"{{"errormessage":"{COLLISION_MESSAGE}"}}"#);
    provider
        .answers
        .borrow_mut()
        .extend((0..6).map(|_| out(&collided)));
    assert_eq!(
        invoke_get_method(&provider, &manifest("property")).unwrap(),
        None
    );
    assert_eq!(provider.methods().len(), 6);
    assert_eq!(provider.logged("err").len(), 1);
}

#[test]
fn reboot_request_is_answered_not_warned() {
    // The spine hands the request to the catalog's `reboot` resource, or
    // warns when there is none: a Puppet object the core never sees.
    let provider = FakeProvider::new();
    let name_hash = manifest("property");
    let answer = |asked: bool| {
        let mut result = Map::new();
        result.insert_symbol("rebootrequired", Value::Bool(asked));
        Value::Hash(result)
    };
    assert!(set_result(&provider, &title(), &name_hash, Some(&answer(true))).unwrap());
    assert!(!set_result(&provider, &title(), &name_hash, Some(&answer(false))).unwrap());
    assert!(!set_result(&provider, &title(), &name_hash, None).unwrap());
    assert!(provider.logged("warning").is_empty());
}

#[test]
fn dsc_error_is_scrubbed_of_secrets() {
    let provider = FakeProvider::new();
    provider
        .answers
        .borrow_mut()
        .push_back(out(r#"{"errormessage":"bad password 'Secr\"3t' for svc"}"#));
    let mut m = manifest("property");
    m.insert_symbol(
        "dsc_psdscrunascredential",
        Value::Hash(Map(vec![
            (s("user"), s("svc")),
            (s("password"), Value::Sensitive(Box::new(s("Secr\"3t")))),
        ])),
    );
    invoke_get_method(&provider, &m).unwrap();
    let errors = provider.logged("err");
    assert!(!errors[0].contains("Secr"), "{}", errors[0]);
    assert!(errors[0].contains(REDACTED_SENSITIVE));
}

#[test]
fn set_actions_compare_ensure_case_insensitively() {
    let def = fixture_typedef();
    let ensure = |v: &str| Map(vec![(Value::sym("dsc_ensure"), s(v))]);
    assert_eq!(
        set_action(&def, Some(&ensure("absent")), &ensure("PRESENT")),
        SetAction::Create
    );
    assert_eq!(
        set_action(&def, None, &ensure("Present")),
        SetAction::Create
    );
    assert_eq!(
        set_action(&def, Some(&ensure("Present")), &ensure("present")),
        SetAction::Update
    );
    assert_eq!(
        set_action(&def, Some(&ensure("present")), &ensure("ABSENT")),
        SetAction::Delete
    );
    assert_eq!(
        set_action(&def, Some(&ensure("Present")), &Map::new()),
        SetAction::Update
    );
    assert_eq!(
        set_action(&def, Some(&ensure("Absent")), &ensure("absent")),
        SetAction::Update
    );
}

#[test]
fn absent_manifest_skips_the_get_in_canonicalize() {
    let provider = FakeProvider::new();
    let mut m = manifest("property");
    m.insert_symbol("dsc_ensure", s("ABSENT"));
    let out = canonicalize(&provider, vec![m.clone()]).unwrap();
    assert_eq!(out[0], m);
    assert!(provider.methods().is_empty());
}

#[test]
fn a_thousand_resources_cost_a_thousand_gets() {
    let provider = FakeProvider::new();
    for i in 0..1000 {
        let mut m = manifest("property");
        m.insert_symbol("name", s(&format!("R{i}")));
        m.insert_symbol("dsc_destinationpath", s(&format!("c:\\r{i}")));
        let canonical = canonicalize(&provider, vec![m]).unwrap().remove(0);
        let t = Value::Hash(Map(vec![
            (Value::sym("name"), s(&format!("R{i}"))),
            (Value::sym("dsc_destinationpath"), s(&format!("C:\\R{i}"))),
        ]));
        let current = get(&provider, Some(vec![t.clone()])).unwrap().remove(0);
        insync(&provider, &t, "dsc_contents", Some(&current), &canonical).unwrap();
    }
    assert_eq!(provider.methods().len(), 1000);
}

#[test]
fn a_failed_get_is_not_retried_and_nothing_else_is_called() {
    for failure in [
        ExecuteOutput::default(),
        out("{not json"),
        out(r#"{"errormessage":"The resource failed"}"#),
    ] {
        let provider = FakeProvider::new();
        provider.answers.borrow_mut().push_back(failure);
        let m = manifest("resource");
        let canonical = canonicalize(&provider, vec![m.clone()]).unwrap().remove(0);
        assert_eq!(canonical, m);
        // get hands back the title only, without a second Get.
        let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
        assert_eq!(current, name_hash_of(&title()));
        assert_eq!(
            canonicalize(&provider, vec![current.clone()]).unwrap()[0],
            current
        );
        // Out of sync without a Test (resource mode), so that set runs and
        // marks the resource failed; the corrective check gets nil.
        let answer = insync(
            &provider,
            &title(),
            "dsc_contents",
            Some(&current),
            &canonical,
        )
        .unwrap();
        assert!(
            matches!(&answer, Insync::OutOfSync(Some(m)) if m.contains("could not be read")),
            "{answer:?}"
        );
        assert_eq!(
            insync(
                &provider,
                &title(),
                "dsc_contents",
                Some(&current),
                &canonical
            )
            .unwrap(),
            Insync::UseDefault
        );
        assert!(get_failed(&provider, &canonical));
        assert_eq!(provider.methods(), [DscMethod::Get]);
        assert_eq!(provider.logged("err").len(), 1);
        // Another resource is unaffected.
        let mut other = manifest("property");
        other.insert_symbol("name", s("Other"));
        other.insert_symbol("dsc_destinationpath", s("c:\\other"));
        assert!(!get_failed(&provider, &other));
        canonicalize(&provider, vec![other]).unwrap();
        assert_eq!(provider.methods(), [DscMethod::Get, DscMethod::Get]);
    }
    let message = get_failed_message(&fixture_typedef(), Some(&s("Title")));
    assert!(
        message.starts_with("dsc_fixturefile[Title]: ") && message.contains("could not be read"),
        "{message}"
    );
}

#[test]
fn a_credential_get_without_password_is_in_sync_when_the_user_matches() {
    let provider = FakeProvider::new();
    let password = Value::Sensitive(Box::new(s("x")));
    let credential = |user: &str| {
        Value::Hash(Map(vec![
            (s("user"), s(user)),
            (s("password"), password.clone()),
        ]))
    };
    provider.system.borrow_mut().insert(
        s("Password"),
        Value::Hash(Map(vec![
            (s("user"), s("Alice")),
            (s("password"), Value::Nil),
        ])),
    );
    let mut m = manifest("property");
    m.insert_symbol("dsc_contents", s("hello"));
    m.insert_symbol("dsc_password", credential("alice"));
    let canonical = canonicalize(&provider, vec![m]).unwrap().remove(0);
    let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
    let is_password = current.get_named("dsc_password").unwrap();
    assert_eq!(
        is_password.as_map().unwrap().get_named("password"),
        Some(&password)
    );
    assert_eq!(
        insync(
            &provider,
            &title(),
            "dsc_password",
            Some(&current),
            &canonical
        )
        .unwrap(),
        Insync::InSync
    );

    // Another user: a real change, which never shows the password.
    let provider = FakeProvider::new();
    provider.system.borrow_mut().insert(
        s("Password"),
        Value::Hash(Map(vec![
            (s("user"), s("Bob")),
            (s("password"), Value::Nil),
        ])),
    );
    let mut m = manifest("property");
    m.insert_symbol("dsc_password", credential("Alice"));
    let canonical = canonicalize(&provider, vec![m]).unwrap().remove(0);
    let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
    assert_eq!(
        current
            .get_named("dsc_password")
            .and_then(Value::as_map)
            .and_then(|p| p.get_named("password")),
        Some(&password)
    );
    let answer = insync(
        &provider,
        &title(),
        "dsc_password",
        Some(&current),
        &canonical,
    )
    .unwrap();
    let Insync::OutOfSync(Some(message)) = answer else {
        panic!("{answer:?}")
    };
    assert!(
        message.contains("Bob") && message.contains("#<Sensitive [value redacted]>"),
        "{message}"
    );
    assert!(
        !message.contains("'x'") && !message.contains("\"x\""),
        "{message}"
    );
}

#[test]
fn the_ensurable_workaround_is_in_sync_whatever_puppet_holds() {
    let mut provider = FakeProvider::new();
    provider.typedef = Arc::new(crate::test_support::scaffolded_enum_typedef());
    let title = Value::str("acl");
    let should = Map(vec![
        (Value::sym("name"), title.clone()),
        (Value::sym("dsc_path"), s("c:\\data")),
        (Value::sym("ensurable"), Value::Bool(false)),
        (Value::sym("validation_mode"), s("resource")),
    ]);
    // Even with no current value and a resource-mode Test pending, nothing
    // is asked of DSC and nothing is out of sync.
    for is in [None, Some(Map::new())] {
        assert_eq!(
            insync(&provider, &title, "ensurable", is.as_ref(), &should).unwrap(),
            Insync::InSync
        );
    }
    assert!(provider.methods().is_empty(), "{:?}", provider.methods());
}

#[test]
fn the_invocation_identity_is_that_of_the_merged_name_hash() {
    let namevars = vec!["name".to_owned(), "dsc_key".to_owned()];
    let should = Map(vec![
        (Value::sym("name"), s("From-Should")),
        (Value::sym("dsc_key"), s("C:\\Key")),
        (Value::sym("dsc_other"), s("x")),
    ]);
    let titled = Map(vec![
        (Value::sym("title"), s("T")),
        (Value::sym("dsc_key"), s("k")),
    ]);
    let names = [
        s("Title"),
        Value::Nil,
        Value::Hash(Map(vec![(Value::sym("name"), s("N"))])),
        Value::Hash(Map(vec![(Value::sym("dsc_key"), s("other"))])),
        Value::Hash(Map(vec![(Value::sym("name"), Value::Nil)])),
    ];
    for name in &names {
        for should in [&should, &titled, &Map::new()] {
            assert_eq!(
                invocation_identity(&namevars, name, should),
                Identity::of(&namevars, &invocation_name_hash(name, should)),
                "{name:?} {should:?}"
            );
        }
    }
}

#[test]
fn the_identity_of_a_call_is_the_identity_of_its_merged_name_hash() {
    let namevars = vec!["name".to_owned(), "dsc_destinationpath".to_owned()];
    let should = manifest("property");
    for name in [
        s("Title"),
        title(),
        Value::Hash(Map(vec![(Value::sym("name"), s("Other"))])),
        Value::Hash(Map(vec![(Value::sym("dsc_destinationpath"), s("D:\\Bar"))])),
    ] {
        let merged = invocation_name_hash(&name, &should);
        assert_eq!(
            invocation_identity(&namevars, &name, &should),
            Identity::of(&namevars, &merged),
            "{name}"
        );
        // What the title says wins over the desired state.
        if let Value::Hash(title_hash) = &name {
            for (key, value) in title_hash.iter() {
                assert_eq!(merged.get_named(key.key_name().unwrap()), Some(value));
            }
        }
    }
}

/// A namevar lookup over converted resources, as the binding's reads a
/// Ruby hash: a resource that is not a hash cannot be read.
fn namevars_of(
    resources: &[Value],
) -> impl FnMut(usize, &str) -> Result<Option<Value>, Unconvertible> + '_ {
    |index, name| match &resources[index] {
        Value::Hash(map) => Ok(map.get_named(name).cloned()),
        _ => Err(Unconvertible),
    }
}

#[test]
fn a_resource_canonicalized_in_the_run_comes_back_as_given_only_when_debug_is_dropped() {
    let provider = FakeProvider::new();
    let m = manifest("property");
    let mut other = manifest("property");
    other.insert_symbol("dsc_destinationpath", s("c:\\other"));
    let given = [Value::Hash(m.clone()), Value::Hash(other), s("not a hash")];
    provider.debug_kept.set(false);
    assert_eq!(
        canonical_as_given(&provider, 3, namevars_of(&given)).unwrap(),
        [false, false, false]
    );
    canonicalize(&provider, vec![m.clone()]).unwrap();
    // Found by its namevars (in any case), whatever else it holds.
    let mut same = m.clone();
    same.insert_symbol("dsc_destinationpath", s("C:\\FOO"));
    same.insert_symbol("dsc_contents", s("changed"));
    let given = [Value::Hash(same), given[1].clone(), given[2].clone()];
    assert_eq!(
        canonical_as_given(&provider, 3, namevars_of(&given)).unwrap(),
        [true, false, false]
    );
    // With debug kept, the full path logs each resource: nothing in brief.
    provider.debug_kept.set(true);
    assert_eq!(
        canonical_as_given(&provider, 3, namevars_of(&given)).unwrap(),
        [false, false, false]
    );
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

/// The entries of `map` named in `names`, as the binding reads them.
fn entries_of(map: &Map, names: &[&str]) -> Map {
    map.iter()
        .filter(|(key, _)| key.key_name().is_some_and(|name| names.contains(&name)))
        .cloned()
        .collect()
}

#[test]
fn insync_in_brief_answers_as_insync_for_a_known_resource_compared_by_property() {
    let provider = FakeProvider::new();
    let mut m = manifest("property");
    m.insert_symbol("dsc_contents", s("other"));
    let whole_should = canonicalize(&provider, vec![m]).unwrap().remove(0);
    let current = get(&provider, Some(vec![title()])).unwrap().remove(0);
    let mut asked = Vec::new();
    let answer = insync_in_brief(
        &provider,
        &title(),
        "dsc_contents",
        |names| {
            asked.extend(names.iter().map(|n| (*n).to_owned()));
            Some(entries_of(&whole_should, names))
        },
        |names| Some(Some(entries_of(&current, names))),
    )
    .unwrap();
    // Only the property, how it is validated and the identity are read.
    assert_eq!(asked[..3], ["dsc_contents", "validation_mode", "title"]);
    assert!(!asked.iter().any(|n| n == "dsc_ensure"), "{asked:?}");
    let whole = FakeProvider::new();
    let mut m = manifest("property");
    m.insert_symbol("dsc_contents", s("other"));
    canonicalize(&whole, vec![m]).unwrap();
    let expected = insync(
        &whole,
        &title(),
        "dsc_contents",
        Some(&current),
        &whole_should,
    )
    .unwrap();
    assert!(
        matches!(expected, Insync::OutOfSync(Some(_))),
        "{expected:?}"
    );
    assert_eq!(answer, Some(expected));
    // The corrective check that follows is answered in brief too.
    let again = insync_in_brief(
        &provider,
        &title(),
        "dsc_contents",
        |names| Some(entries_of(&whole_should, names)),
        |names| Some(Some(entries_of(&current, names))),
    )
    .unwrap();
    assert_eq!(again, Some(Insync::UseDefault));
}

#[test]
fn insync_in_brief_declines_a_test_an_unknown_resource_and_what_does_not_convert() {
    let provider = FakeProvider::new();
    let by_test = canonicalize(&provider, vec![manifest("resource")])
        .unwrap()
        .remove(0);
    let whole = |names: &[&str]| Some(entries_of(&by_test, names));
    assert_eq!(
        insync_in_brief(&provider, &title(), "dsc_contents", whole, |_| Some(None)).unwrap(),
        None
    );
    let unknown = FakeProvider::new();
    let should = manifest("property");
    assert_eq!(
        insync_in_brief(
            &unknown,
            &title(),
            "dsc_contents",
            |names| Some(entries_of(&should, names)),
            |_| Some(None)
        )
        .unwrap(),
        None
    );
    let known = FakeProvider::new();
    let should = canonicalize(&known, vec![manifest("property")])
        .unwrap()
        .remove(0);
    let no_should = insync_in_brief(&known, &title(), "dsc_contents", |_| None, |_| Some(None));
    assert_eq!(no_should.unwrap(), None);
    let no_is = insync_in_brief(
        &known,
        &title(),
        "dsc_contents",
        |names| Some(entries_of(&should, names)),
        |_| None,
    );
    assert_eq!(no_is.unwrap(), None);
    // Declining asked PowerShell nothing more than the one Get.
    assert_eq!(known.methods(), [DscMethod::Get]);
    assert_eq!(provider.methods(), [DscMethod::Get]);
}

#[test]
fn a_set_after_a_failed_get_is_refused_and_a_failed_set_is_taken_once() {
    let provider = FakeProvider::new();
    provider
        .answers
        .borrow_mut()
        .push_back(ExecuteOutput::default());
    let m = manifest("property");
    canonicalize(&provider, vec![m.clone()]).unwrap();
    let refused = set_refused_after_failed_get(&provider, &title(), &m).unwrap();
    assert_eq!(
        refused,
        Some(get_failed_message(&provider.typedef, Some(&s("Title"))))
    );
    let mut other = manifest("property");
    other.insert_symbol("dsc_destinationpath", s("c:\\other"));
    let other_title = Value::Hash(name_hash_of(&Value::Hash(Map(vec![
        (Value::sym("name"), s("Other")),
        (Value::sym("dsc_destinationpath"), s("c:\\other")),
    ]))));
    assert_eq!(
        set_refused_after_failed_get(&provider, &other_title, &other).unwrap(),
        None
    );
    // A Set that returns nothing has failed (and was reported).
    provider
        .answers
        .borrow_mut()
        .push_back(ExecuteOutput::default());
    invoke_set_method(&provider, &other_title, &other).unwrap();
    let should = Value::Hash(other.clone());
    let failure = take_set_failure(&mut provider.state.borrow_mut(), &other_title, &should);
    assert!(
        failure.is_some_and(|m| m.contains("did not succeed")),
        "{failure:?}"
    );
    assert_eq!(
        take_set_failure(&mut provider.state.borrow_mut(), &other_title, &should),
        None
    );
    // A Set that succeeds leaves nothing to take.
    provider
        .answers
        .borrow_mut()
        .push_back(out(r#"{"rebootrequired":false,"errormessage":""}"#));
    invoke_set_method(&provider, &other_title, &other).unwrap();
    assert_eq!(
        take_set_failure(&mut provider.state.borrow_mut(), &other_title, &should),
        None
    );
}

#[test]
fn a_host_not_running_as_system_is_warned_about_once_per_run() {
    // The prelude marks every direct call of a 5.1 host
    // that is not SYSTEM with an identity record; the provider warns once,
    // with no resource's title, and shows the resource's own records as
    // before.
    let provider = FakeProvider::new();
    let streams = r#"{"pwshlib_streams":[{"kind":"identity","text":"CONTOSO\\admin"},{"kind":"warning","text":"own"}]}"#;
    let result = r#"{"name":"Example","ensure":"Present"}"#;
    for _ in 0..2 {
        provider
            .answers
            .borrow_mut()
            .push_back(out(&format!("{streams}\n{result}")));
    }
    let mut other = manifest("property");
    other.insert_symbol("name", s("Other"));
    invoke_get_method(&provider, &manifest("property")).unwrap();
    invoke_get_method(&provider, &other).unwrap();
    let warnings = provider.logged("warning");
    let identity: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("CONTOSO\\admin"))
        .collect();
    assert_eq!(identity.len(), 1, "{warnings:?}");
    assert!(
        identity[0].starts_with("DSC resources run as CONTOSO\\admin, not as SYSTEM")
            && identity[0].contains("PWSHLIB_DSC_DIRECT=system"),
        "{}",
        identity[0]
    );
    assert_eq!(warnings.iter().filter(|w| w.contains("own")).count(), 2);
    assert!(provider.logged("err").is_empty());
}
