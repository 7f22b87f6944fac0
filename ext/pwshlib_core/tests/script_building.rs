//! Example-based checks of the generated Invoke-DscResource script.

mod common;

use common::*;
use pwshlib_core::bound::{BoundValue, SecretBinding};
use pwshlib_core::script::{build_script, script_for, DscMethod, InvocableResource, Script};
use pwshlib_core::secrecy::REDACTION_MARKER;
use pwshlib_core::{templates, Error, Timestamp, Value};
use pwshlib_pslint::parse_errors;
use pwshlib_transport::protocol::{encode, ExecuteRequest, Message, PreludeRef};

fn assert_parses(script: &Script) {
    let errors = parse_errors(script.text());
    assert!(errors.is_empty(), "{errors:?}\n{}", script.text());
    let errors = parse_errors(&script.redacted());
    assert!(
        errors.is_empty(),
        "redacted: {errors:?}\n{}",
        script.redacted()
    );
}

fn ensurable() -> (pwshlib_core::TypeDef, pwshlib_core::Map) {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("name", s("my file")),
        ("validation_mode", s("property")),
        ("dsc_name", s("C:\\it's here")),
        ("dsc_ensure", s("Present")),
        ("dsc_text", s("hello")),
        ("dsc_flag", Value::Bool(true)),
        ("dsc_number", Value::Int(42)),
        ("dsc_timeout", Value::Int(30)),
        ("dsc_checksum", s("abc")),
        ("dsc_psdscrunascredential", Value::Nil),
    ]);
    (def, should)
}

/// `should` with `dsc_ensure => 'Absent'`.
fn absent(should: &pwshlib_core::Map) -> pwshlib_core::Map {
    let mut absent = should.clone();
    absent.insert_symbol("dsc_ensure", s("Absent"));
    absent
}

/// What a listing (`puppet resource`) asks with: the namevars of `should`.
fn listing(should: &pwshlib_core::Map) -> pwshlib_core::Map {
    should
        .iter()
        .filter(|(k, _)| matches!(k.key_name(), Some("name" | "dsc_name")))
        .cloned()
        .collect()
}

#[test]
fn get_passes_the_desired_state_as_set_and_test_do() {
    // As the DSC engines hand Get() the desired state.
    let (def, should) = ensurable();
    let get = build(&def, &should, DscMethod::Get);
    let set = build(&def, &should, DscMethod::Set);
    assert_eq!(
        line(get.text(), "$InvokeParams"),
        line(set.text(), "$InvokeParams").replace("Method = 'Set'", "Method = 'Get'")
    );
    assert_parses(&get);
}

#[test]
fn get_of_an_absent_desired_state_passes_it_as_set_does() {
    let (def, should) = ensurable();
    let get = build(&def, &absent(&should), DscMethod::Get);
    let set = build(&def, &absent(&should), DscMethod::Set);
    assert_eq!(
        line(get.text(), "$InvokeParams"),
        line(set.text(), "$InvokeParams").replace("Method = 'Set'", "Method = 'Get'")
    );
    assert!(line(get.text(), "$InvokeParams").contains("ensure = 'Absent'; text = 'hello'"));
    assert_parses(&get);
}

#[test]
fn get_of_a_listing_passes_the_keys_it_has() {
    let (def, should) = ensurable();
    let script = build(&def, &listing(&should), DscMethod::Get);
    assert_eq!(
        line(script.text(), "$InvokeParams"),
        format!(
            "$InvokeParams = @{{Name = 'KitchenSink'; Method = 'Get'; Property = @{{name = 'C:\\it''s here'}}; \
             ModuleName = @{{ModuleName = '{VENDORED}/PwshlibFixtureDsc/PwshlibFixtureDsc.psd1'; RequiredVersion = '1.2.0'}}}}"
        )
    );
    assert_parses(&script);
}

#[test]
fn set_and_test_pass_every_dsc_property_but_timeout_and_read_only() {
    let (def, should) = ensurable();
    for method in [DscMethod::Set, DscMethod::Test] {
        let script = build(&def, &should, method);
        let params = line(script.text(), "$InvokeParams");
        assert!(
            params.contains(&format!(
                "Method = '{}'; Property = @{{name = 'C:\\it''s here'; ensure = 'Present'; text = 'hello'; number = 42; flag = $true}}",
                method.as_str()
            )),
            "{params}"
        );
        assert!(!params.contains("timeout"), "{params}");
        assert!(!params.contains("checksum"), "{params}");
        assert!(!params.contains("validation_mode"), "{params}");
        assert!(!params.contains("psdscrunascredential"), "{params}");
        assert_parses(&script);
    }
}

#[test]
fn the_script_has_the_documented_shape() {
    let (def, should) = ensurable();
    let script = build(&def, &should, DscMethod::Set);
    let text = script.text();
    // The whole script: the prelude (helper functions), then this call's lines.
    assert!(script.has_prelude());
    assert!(text.starts_with(templates::PRELUDE));
    assert_eq!(&text[templates::PRELUDE.len()..], script.body());
    let body = script.body();
    assert!(body.starts_with(
        "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n"
    ));
    let at = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(at("$InvokeParams = @{") < at("Invoke-PwshlibDscResource -InvokeParams $InvokeParams"));
    // Every resource puts its vendored folder on PSModulePath : the call does, and puts the machine value back in its own
    // finally, so the script has no try of its own.
    assert!(body.ends_with(&format!(
        "Invoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath '{VENDORED}'\n"
    )));
    assert!(!body.contains("try {"), "{body}");
    // The body defines nothing: every function comes from the prelude.
    assert!(templates::defined_functions(body).is_empty());
    assert!(!body.contains("function "));
    assert_eq!(script.redacted(), text, "no secrets, nothing to redact");
}

/// What crosses the pipe per call once the host holds the prelude: only the
/// body, in an execute frame that names the prelude by id. Deterministic (the
/// test's variable names are fixed), so exact.
#[test]
fn the_body_of_a_get_and_of_a_set_is_small() {
    let (def, should) = ensurable();
    // A keys-only Get (a listing, which has no desired state): any other
    // Get carries the desired state, as a Set.
    let get = build(&def, &listing(&should), DscMethod::Get);
    let set = build(&def, &should, DscMethod::Set);
    let in_sync_get = build(&def, &should, DscMethod::Get);
    assert_eq!(in_sync_get.body().len(), set.body().len());
    // Each body carries the vendored path on the call:
    // 100 bytes more than without it, 83 of them the path.
    assert_eq!(get.body().len(), 518, "{}", get.body());
    assert_eq!(set.body().len(), 581, "{}", set.body());
    assert_eq!(get.text().len(), templates::PRELUDE.len() + 518);
    assert!(templates::PRELUDE.len() > 7000);
    let frame = |script: &Script| {
        let mut request = ExecuteRequest::new(script.body().to_owned(), None, None, &[] as &[&str]);
        request.prelude = Some(PreludeRef {
            id: templates::prelude_id().to_owned(),
            code: None,
        });
        encode(&Message::Execute(request)).unwrap().len()
    };
    // Both frames include the request id (`"id":0,` here: the host numbers
    // requests from 1, so a real frame is as long until request 10).
    assert_eq!(frame(&get), 650);
    assert_eq!(frame(&set), 713);
}

#[test]
fn class_based_resources_name_the_module_and_munge_psmodulepath() {
    let def = kitchen_sink(Some("Class"), Some("0.3.1"));
    let should = resource(vec![("name", s("x")), ("dsc_name", s("x"))]);
    let script = build(&def, &should, DscMethod::Get);
    let text = script.text();
    assert!(
        line(text, "$InvokeParams").ends_with(
            "ModuleName = @{ModuleName = 'PwshlibFixtureDsc'; RequiredVersion = '0.3.1'}}"
        ),
        "{text}"
    );
    assert!(script.body().ends_with(&format!(
        "RequiredVersion = '0.3.1'}}}}\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath '{VENDORED}'\n"
    )));
    assert_parses(&script);
}

#[test]
fn without_a_version_the_module_name_is_plain() {
    let def = kitchen_sink(None, None);
    let should = resource(vec![("dsc_name", s("x"))]);
    let resource = InvocableResource::new(&def, &should, DscMethod::Get, "").unwrap();
    let script = build_script(&resource).unwrap();
    assert!(line(script.text(), "$InvokeParams").ends_with("; ModuleName = 'PwshlibFixtureDsc'}"));
}

#[test]
fn a_needed_vendored_path_that_is_missing_is_an_error() {
    let def = kitchen_sink(Some("MOF"), Some("1.0"));
    let should = resource(vec![("dsc_name", s("x"))]);
    let err = script_for(&def, &should, DscMethod::Get, &["/nonexistent/lib".into()]).unwrap_err();
    assert!(matches!(err, Error::MissingVendoredPath { .. }), "{err}");
    assert!(err.to_string().contains("PwshlibFixtureDsc"), "{err}");
    // Without a version the path is not needed, so its absence is no error.
    let def = kitchen_sink(Some("MOF"), None);
    assert!(script_for(&def, &should, DscMethod::Get, &[]).is_ok());
}

#[test]
fn credentials_are_built_into_variables_and_redacted() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("dsc_name", s("x")),
        (
            "dsc_psdscrunascredential",
            hash(vec![
                ("user", s("DOMAIN\\runner")),
                ("password", secret(s("p'ss‘word"))),
            ]),
        ),
        (
            "dsc_password",
            hash(vec![
                ("user", secret(s("hidden user"))),
                ("password", s("plain but secret")),
            ]),
        ),
    ]);
    // Keys only (a listing): the run-as credential alone.
    let listed: pwshlib_core::Map = should
        .iter()
        .filter(|(k, _)| matches!(k.key_name(), Some("dsc_name" | "dsc_psdscrunascredential")))
        .cloned()
        .collect();
    let get = build(&def, &listed, DscMethod::Get);
    assert_eq!(
        generated_lines(get.text())[..],
        [
            "$cred_1 = New-PsCredential -User 'DOMAIN\\runner' -Password 'p''ss‘‘word'",
            "$InvokeParams = @{Name = 'KitchenSink'; Method = 'Get'; Property = @{psdscrunascredential = $cred_1; name = 'x'}; \
             ModuleName = @{ModuleName = 'C:/ProgramData/PuppetLabs/puppet/cache/lib/puppet_x/pwshlibfixturedsc/dsc_resources/PwshlibFixtureDsc/PwshlibFixtureDsc.psd1'; RequiredVersion = '1.2.0'}}",
        ]
    );
    let set = build(&def, &should, DscMethod::Set);
    let redacted = set.redacted();
    assert_eq!(
        generated_lines(&redacted)[..2],
        [
            format!(
                "$cred_1 = New-PsCredential -User 'DOMAIN\\runner' -Password {REDACTION_MARKER}"
            ),
            format!(
                "$cred_2 = New-PsCredential -User {REDACTION_MARKER} -Password {REDACTION_MARKER}"
            ),
        ]
    );
    assert!(line(set.text(), "$InvokeParams")
        .contains("Property = @{psdscrunascredential = $cred_1; name = 'x'; password = $cred_2}"));
    for leaked in ["p'ss", "p''ss", "hidden user", "plain but secret"] {
        assert!(!redacted.contains(leaked), "{leaked}");
        assert!(set.text().contains(&leaked.replace("p'ss", "p''ss")) || leaked == "p'ss");
    }
    assert_parses(&set);
}

fn website_bindings() -> Value {
    Value::Array(vec![
        hash(vec![
            ("protocol", s("https")),
            ("port", Value::Int(443)),
            (
                "certificatesubjects",
                Value::Array(vec![s("CN=a"), s("CN=b")]),
            ),
            (
                "authentication",
                hash(vec![
                    ("cim_instance_type", s("MSFT_FixtureAuthentication")),
                    ("anonymous", Value::Bool(false)),
                    ("basic", Value::Bool(true)),
                ]),
            ),
        ]),
        hash(vec![
            ("protocol", s("http")),
            ("port", Value::Int(80)),
            ("certificatesubjects", Value::Array(vec![])),
            (
                "inner",
                Value::Array(vec![
                    hash(vec![
                        ("cim_instance_type", s("MSFT_Inner")),
                        ("key", s("a")),
                    ]),
                    hash(vec![
                        ("cim_instance_type", s("MSFT_Inner")),
                        ("key", secret(s("b-secret"))),
                    ]),
                ]),
            ),
        ]),
    ])
}

#[test]
fn nested_cim_instance_arrays_are_built_nested_first() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("dsc_name", s("site")),
        ("dsc_bindings", website_bindings()),
        (
            "dsc_single",
            hash(vec![
                ("value", s("one")),
                (
                    "when",
                    Value::Timestamp(Timestamp::parse("2024-01-02T03:04:05Z").unwrap()),
                ),
            ]),
        ),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    let lines = &generated_lines(script.body())[..];
    assert_eq!(
        lines[..6],
        [
            "$cim_1 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureAuthentication' -Property @{anonymous = $false; basic = $true}",
            "$cim_2 = New-CimInstance -ClientOnly -ClassName 'MSFT_Binding' -Property @{protocol = 'https'; port = 443; certificatesubjects = @('CN=a', 'CN=b'); authentication = $cim_1}",
            "$cim_3 = New-CimInstance -ClientOnly -ClassName 'MSFT_Inner' -Property @{key = 'a'}",
            // Sensitive: bound by the host, never in the text.
            "$cim_4 = New-CimInstance -ClientOnly -ClassName 'MSFT_Inner' -Property @{key = $secret_1}",
            // The kitchen sink's Struct names no members, so the empty
            // array has nothing to be typed by: left out (New-CimInstance
            // throws for an untyped `@()`).
            "$cim_5 = New-CimInstance -ClientOnly -ClassName 'MSFT_Binding' -Property @{protocol = 'http'; port = 80; inner = [CimInstance[]]@($cim_3, $cim_4)}",
            "$cim_6 = New-CimInstance -ClientOnly -ClassName 'MSFT_Single' -Property @{value = 'one'; when = [DateTime]'2024-01-02T03:04:05Z'}",
        ]
    );
    assert!(lines[6].contains("Property = @{name = 'site'; bindings = [CimInstance[]]@($cim_2, $cim_5); single = $cim_6}"), "{}", lines[6]);
    assert_eq!(
        script.bindings(),
        [SecretBinding {
            name: "secret_1".into(),
            value: BoundValue::Text("b-secret".into()),
        }]
    );
    assert!(script.text().contains("\n$secret_1 = 'b-secret'\n"));
    assert!(!script.redacted().contains("b-secret"));
    assert!(script
        .redacted()
        .contains(&format!("\n$secret_1 = {REDACTION_MARKER}\n")));
    assert_parses(&script);
}

#[test]
fn a_class_based_resources_embedded_instances_are_made_by_the_prelude() {
    // On PowerShell 7 a class-based resource's embedded
    // instances must be hashtables (PowerShell converts them to the nested
    // class), on 5.1 CIM instances; New-PwshlibEmbeddedInstance and
    // New-PwshlibEmbeddedInstanceArray decide at run time. A MOF resource's
    // script stays as it was (nested_cim_instance_arrays_are_built_nested_first).
    let def = kitchen_sink(Some("Class"), Some("1.0"));
    let should = resource(vec![
        ("dsc_name", s("pool")),
        ("dsc_bindings", website_bindings()),
        (
            "dsc_single",
            hash(vec![
                ("value", s("one")),
                (
                    "login",
                    hash(vec![
                        ("user", s("svc")),
                        ("password", secret(s("pw-secret"))),
                    ]),
                ),
            ]),
        ),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    let lines = &generated_lines(script.body())[..];
    assert_eq!(
        lines[..9],
        [
            "$cim_1 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_FixtureAuthentication' -Property @{anonymous = $false; basic = $true}",
            "$cim_2 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Binding' -Property @{protocol = 'https'; port = 443; certificatesubjects = @('CN=a', 'CN=b'); authentication = $cim_1}",
            "$cim_3 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Inner' -Property @{key = 'a'}",
            "$cim_4 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Inner' -Property @{key = $secret_1}",
            "$cim_5 = New-PwshlibEmbeddedInstanceArray -Instances @($cim_3, $cim_4)",
            "$cim_6 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Binding' -Property @{protocol = 'http'; port = 80; inner = $cim_5}",
            "$cim_7 = New-PwshlibEmbeddedInstanceArray -Instances @($cim_2, $cim_6)",
            // The credential is bound as a PSCredential; the
            // prelude makes the embedded instance from it.
            "$cim_8 = New-PwshlibCredentialInstance -Credential $cred_2 -ClassBased",
            "$cim_9 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Single' -Property @{value = 'one'; login = $cim_8}",
        ]
    );
    assert!(
        lines[9].contains("Property = @{name = 'pool'; bindings = $cim_7; single = $cim_9}"),
        "{}",
        lines[9]
    );
    let names: Vec<&str> = script.bindings().iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["secret_1", "cred_2"]);
    assert!(
        !script.body().contains("b-secret") && !script.body().contains("pw-secret"),
        "{}",
        script.body()
    );
    let redacted = script.redacted();
    assert!(!redacted.contains("b-secret") && !redacted.contains("pw-secret"));
    assert!(
        !script.body().contains("New-CimInstance"),
        "{}",
        script.body()
    );
    assert!(
        !script.body().contains("[CimInstance[]]"),
        "{}",
        script.body()
    );
    assert_parses(&script);
}

#[test]
fn a_single_hash_for_an_array_cim_property_is_still_an_array() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("dsc_name", s("x")),
        ("dsc_bindings", hash(vec![("port", Value::Int(1))])),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    assert!(line(script.text(), "$InvokeParams").contains("bindings = [CimInstance[]]@($cim_1)"));
}

#[test]
fn datetimes_and_typed_empty_arrays() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let when = Timestamp::parse("2024-02-29T13:45:00.5+02:00").unwrap();
    let should = resource(vec![
        ("dsc_name", s("x")),
        ("dsc_when", Value::Timestamp(when)),
        ("dsc_list", Value::Array(vec![])),
        ("dsc_bindings", Value::Array(vec![])),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    let params = line(script.text(), "$InvokeParams");
    assert!(params.contains("list = [string[]]@()"), "{params}");
    assert!(
        params.contains("when = [DateTime]'2024-02-29T11:45:00.500Z'"),
        "{params}"
    );
    assert!(params.contains("bindings = [CimInstance[]]@()"), "{params}");
    // A date-time given as text is cast too.
    let should = resource(vec![
        ("dsc_name", s("x")),
        ("dsc_when", s("2024-01-01 10:00")),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    assert!(line(script.text(), "$InvokeParams").contains("when = [DateTime]'2024-01-01 10:00'"));
    assert_parses(&script);
}

#[test]
fn every_value_kind_in_a_free_form_property() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let anything = hash(vec![
        ("nil", Value::Nil),
        (
            "big",
            Value::BigInt("-123456789012345678901234567890".into()),
        ),
        ("float", Value::Float(-1.25e-10)),
        ("text", s("‘quoted’ ‚low‛ 'plain'")),
        (
            "with space",
            Value::Array(vec![Value::Int(1), Value::Array(vec![])]),
        ),
        ("nested", hash(vec![("if", Value::Bool(false))])),
    ]);
    let should = resource(vec![("dsc_name", s("x")), ("dsc_anything", anything)]);
    let script = build(&def, &should, DscMethod::Set);
    let params = line(script.text(), "$InvokeParams");
    assert!(
        params.contains(
            "anything = @{nil = $null; big = -123456789012345678901234567890; float = -1.25e-10; \
             text = '‘‘quoted’’ ‚‚low‛‛ ''plain'''; 'with space' = @(1, @()); nested = @{if = $false}}"
        ),
        "{params}"
    );
    assert_parses(&script);
}

#[test]
fn bad_values_give_errors_that_name_the_attribute() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let cases = [
        ("dsc_text", s("nul\0inside")),
        ("dsc_password", s("not a hash")),
        ("dsc_password", hash(vec![("user", s("u"))])),
        ("dsc_bindings", s("not an instance")),
        ("dsc_number", Value::Float(f64::INFINITY)),
    ];
    for (attribute, value) in cases {
        let should = resource(vec![("dsc_name", s("x")), (attribute, value)]);
        let resource = InvocableResource::new(&def, &should, DscMethod::Set, VENDORED).unwrap();
        let err = build_script(&resource).unwrap_err();
        assert!(err.to_string().starts_with(attribute), "{attribute}: {err}");
    }
}

#[test]
fn invocable_resource_round_trips_through_a_value() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("name", s("title")),
        ("dsc_name", s("x")),
        (
            "dsc_password",
            hash(vec![("user", s("u")), ("password", secret(s("pw12")))]),
        ),
        ("dsc_bindings", website_bindings()),
    ]);
    let original = InvocableResource::new(&def, &should, DscMethod::Test, VENDORED).unwrap();
    let value = original.to_value();
    let map = value.as_map().unwrap();
    assert_eq!(map.get_named("dsc_invoke_method"), Some(&s("test")));
    // The type's name, as in pwshlib 2.x, not the title.
    assert_eq!(map.get_named("name"), Some(&s("dsc_kitchensink")));
    let parameters = map.get_named("parameters").unwrap().as_map().unwrap();
    let password = parameters
        .get_named("dsc_password")
        .unwrap()
        .as_map()
        .unwrap();
    assert_eq!(password.get_named("mof_type"), Some(&s("PSCredential")));
    assert_eq!(
        password.get_named("mof_is_embedded"),
        Some(&Value::Bool(true))
    );
    // The 2.x hash carries no Puppet type, so the shapes come back unknown.
    let mut expected = original.clone();
    for parameter in &mut expected.parameters {
        parameter.shape = Default::default();
    }
    assert_eq!(InvocableResource::from_value(&value).unwrap(), expected);
    assert!(InvocableResource::from_value(&s("nope")).is_err());
}

#[test]
fn marked_text_round_trips_to_both_renderings() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("dsc_name", s("x")),
        (
            "dsc_password",
            hash(vec![
                ("user", s("u")),
                ("password", secret(s("it's a secret"))),
            ]),
        ),
        (
            "dsc_list",
            Value::Array(vec![s("public"), secret(s("#PuppetSensitive'"))]),
        ),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    let marked = script.marked().unwrap();
    assert!(
        parse_errors(&marked).is_empty(),
        "the marked form is PowerShell too"
    );
    let back = Script::from_marked(&marked);
    assert_eq!(back.text(), script.text());
    assert_eq!(back.redacted(), script.redacted());
    assert!(!back.redacted().contains("a secret"));
    assert_eq!(Script::from_marked("plain text").text(), "plain text");
    assert_eq!(Script::from_marked("plain text").redacted(), "plain text");
}

#[test]
fn method_names_parse_case_insensitively() {
    assert_eq!(DscMethod::parse("get"), Some(DscMethod::Get));
    assert_eq!(DscMethod::parse("SET"), Some(DscMethod::Set));
    assert_eq!(DscMethod::parse(" Test "), Some(DscMethod::Test));
    assert_eq!(DscMethod::parse("delete"), None);
}

#[test]
fn keys_that_differ_only_in_case_are_refused_with_the_attribute_path() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let nested = |pairs: Vec<(&str, Value)>| {
        let mut pairs = pairs;
        pairs.push(("cim_instance_type", s("MSFT_Inner")));
        hash(pairs)
    };
    let cases = [
        (
            "dsc_anything",
            hash(vec![("Key", s("a")), ("key", s("b"))]),
            "dsc_anything: unsupported value: the keys 'Key' and 'key' differ only in case",
        ),
        (
            "dsc_anything",
            hash(vec![("outer", hash(vec![("ÄRGER", s("a")), ("ärger", s("b"))]))]),
            "dsc_anything.outer: unsupported value: the keys 'ÄRGER' and 'ärger' differ only in case",
        ),
        (
            "dsc_single",
            hash(vec![("Port", Value::Int(1)), ("PORT", Value::Int(2))]),
            "dsc_single: unsupported value: the keys 'Port' and 'PORT' differ only in case",
        ),
        (
            "dsc_bindings",
            Value::Array(vec![hash(vec![(
                "inner",
                nested(vec![("Name", s("a")), ("name", s("b"))]),
            )])]),
            "dsc_bindings.inner: unsupported value: the keys 'Name' and 'name' differ only in case",
        ),
        (
            "dsc_anything",
            secret(hash(vec![("Hidden1", s("a")), ("hidden1", s("b"))])),
            "dsc_anything: unsupported value: two keys of a Sensitive hash differ only in case",
        ),
    ];
    for (attribute, value, expected) in cases {
        let should = resource(vec![("dsc_name", s("x")), (attribute, value)]);
        let resource = InvocableResource::new(&def, &should, DscMethod::Set, VENDORED).unwrap();
        let err = build_script(&resource).unwrap_err().to_string();
        assert!(err.starts_with(expected), "{attribute}: {err}");
        assert!(!err.contains("idden1"), "{err}");
    }
    // Keys that differ in more than case are fine.
    let should = resource(vec![
        ("dsc_name", s("x")),
        (
            "dsc_anything",
            hash(vec![("Key", s("a")), ("Keys", s("b"))]),
        ),
    ]);
    build(&def, &should, DscMethod::Set);
}
