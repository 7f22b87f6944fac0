//! Generated secrets of every shape through the lifecycle, with the real
//! script builder: what the system reports for Sensitive-typed attributes
//! (top level, hash member, CIM member, credential password) never shows
//! in a log, and no form of a secret that the script holds shows in an
//! error that quotes the script.

use proptest::prelude::*;

use super::*;
use crate::literal::escape_quotes;
use crate::secrecy::{GUARDED_SECRET_CHARS, REDACTED_SENSITIVE};
use crate::test_support::fake_provider::{json, FakeProvider};
use crate::test_support::secret_typedef;

fn secret_provider() -> FakeProvider {
    FakeProvider::with_real_scripts(secret_typedef())
}

/// Secrets of every shape: quotes of each kind (U+2018–U+201B too),
/// regular expression metacharacters, newlines, one or two characters,
/// non-ASCII, and the redaction marker itself.
pub(super) fn any_secret() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "'",
        "\"",
        "\u{2018}",
        "\u{2019}",
        "\u{201A}",
        "\u{201B}",
        "\n",
        "\r\n",
        "\r",
        ".",
        "*",
        "+",
        "?",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "|",
        "^",
        "$",
        "\\",
        "`",
        "@",
        "#",
        " ",
        "é",
        "漢",
        "😀",
        "a",
        "Z",
        "9",
        REDACTED_SENSITIVE,
        crate::secrecy::REDACTION_MARKER,
    ]);
    prop_oneof![
        "[a-z0-9'\u{2019}\"$]{1,2}",
        prop::collection::vec(piece, 1..24).prop_map(|pieces| pieces.concat()),
    ]
}

fn s(text: &str) -> Value {
    Value::str(text)
}

fn secret(text: &str) -> Value {
    Value::Sensitive(Box::new(s(text)))
}

fn sym_map(pairs: Vec<(&str, Value)>) -> Map {
    pairs.into_iter().map(|(k, v)| (Value::sym(k), v)).collect()
}

fn str_map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

/// The system's state: `current` in every Sensitive-typed place.
fn system_state(current: &Value) -> Value {
    str_map(vec![
        ("VaultName", s("vault-one")),
        ("Ensure", s("Present")),
        ("Secret", current.clone()),
        (
            "Settings",
            str_map(vec![("Label", s("label-text")), ("Token", current.clone())]),
        ),
        (
            "Endpoints",
            Value::Array(vec![str_map(vec![
                ("cim_instance_type", s("MSFT_FixtureEndpoint")),
                ("Address", s("address-text")),
                ("ApiKey", current.clone()),
            ])]),
        ),
        (
            "Credential",
            str_map(vec![
                ("user", s("user-name")),
                ("password", current.clone()),
            ]),
        ),
        ("Note", s("note-text")),
    ])
}

fn guarded(text: &str) -> bool {
    text.chars().count() >= GUARDED_SECRET_CHARS
}

/// Every form of a secret that a script or a quoted excerpt of it holds,
/// long enough to be told apart from ordinary text.
fn forms_that_must_not_show(secret: &str) -> Vec<String> {
    let escaped = escape_quotes(secret);
    let mut forms = vec![secret.to_owned(), escaped.clone()];
    for form in [secret, escaped.as_str()] {
        if form.contains(['\n', '\r']) {
            // Each line, and each line trimmed: Script::guarded_secrets
            // guards both (a log may show one line alone).
            forms.extend(
                form.split(['\n', '\r'])
                    .flat_map(|l| [l.to_owned(), l.trim().to_owned()]),
            );
        }
    }
    forms.retain(|f| guarded(f));
    forms
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn what_the_system_reports_for_sensitive_attributes_is_never_logged(current in any_secret()) {
        let provider = secret_provider();
        provider.answer(&json(&system_state(&s(&current))));
        let query = sym_map(vec![("name", s("vault-one")), ("dsc_vaultname", s("vault-one"))]);
        let munged = invoke_get_method(&provider, &query).unwrap().unwrap();

        // The raw data line is the result with each Sensitive-typed value
        // replaced by the marker, whatever the secret (even one character).
        let expected = system_state(&secret(&current));
        let raw_lines: Vec<String> = provider
            .logged("debug")
            .into_iter()
            .filter(|l| l.starts_with("raw data received: "))
            .collect();
        let standard = format!("raw data received: {expected}");
        let guarded_forms = forms_that_must_not_show(&current);
        if guarded_forms.iter().any(|form| standard.contains(form)) {
            // The secret spells out (part of) the marker: another one shows.
            prop_assert_eq!(raw_lines.len(), 1);
        } else {
            prop_assert_eq!(raw_lines, vec![standard]);
        }

        // What goes back to Puppet holds it as Sensitive, in every place.
        prop_assert_eq!(munged.get_named("dsc_secret"), Some(&secret(&current)));
        let member = |attribute: &str, key: &str| {
            let value = munged.get_named(attribute).unwrap();
            let map = match value {
                Value::Array(items) => items[0].as_map().unwrap().clone(),
                other => other.as_map().unwrap().clone(),
            };
            map.get_named(key).cloned()
        };
        prop_assert_eq!(member("dsc_settings", "token"), Some(secret(&current)));
        prop_assert_eq!(member("dsc_endpoints", "apikey"), Some(secret(&current)));
        prop_assert_eq!(member("dsc_credential", "password"), Some(secret(&current)));
        prop_assert_eq!(member("dsc_settings", "label"), Some(s("label-text")));

        // No log line quotes it, in any form.
        let shown = provider.everything_shown();
        prop_assert!(!shown.contains(&format!("{current:?}")), "{}", shown);
        for form in forms_that_must_not_show(&current) {
            prop_assert!(!shown.contains(&form), "{:?} shows in {}", form, shown);
        }
    }

    #[test]
    fn errors_that_quote_the_script_show_no_form_of_a_secret(password in any_secret()) {
        check_errors_that_quote_the_script(&password);
    }
}

/// The property above, for one secret; the cases below once got through.
fn check_errors_that_quote_the_script(password: &str) {
    let password = password.to_owned();
    let provider = secret_provider();
    let should = sym_map(vec![
        ("name", s("v1")),
        ("dsc_vaultname", s("v1")),
        ("dsc_secret", secret(&password)),
        (
            "dsc_settings",
            Value::Hash(Map(vec![
                (s("label"), s("l")),
                (s("token"), secret(&password)),
            ])),
        ),
        (
            "dsc_credential",
            Value::Hash(Map(vec![
                (s("user"), s("u")),
                (s("password"), secret(&password)),
            ])),
        ),
    ]);
    // PowerShell's parse and runtime errors quote the offending script
    // line after `+ `: answer with every line that holds a secret.
    let probe = provider
        .build_script(&provider.typedef, &dsc_props(&should), DscMethod::Set)
        .unwrap()
        .unwrap();
    let text = probe.text();
    let quoted: Vec<String> = probe
        .secret_spans()
        .iter()
        .flat_map(|span| {
            let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let end = text[span.end..]
                .find('\n')
                .map_or(text.len(), |i| span.end + i);
            text[start..end].split('\n').map(|line| format!("+ {line}"))
        })
        .collect();
    let message = format!(
        "At line:40 char:1\n{}\n+ ~~~~\nUnexpected token.",
        quoted.join("\n")
    );
    let answer = serde_json::json!({"indesiredstate": false, "rebootrequired": false, "errormessage": message});
    provider.answer(&answer.to_string());
    invoke_set_method(&provider, &s("v1"), &should).unwrap();

    let errors = provider.logged("err");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("[\"v1\"] At line:40 char:1\n+ "),
        "{}",
        errors[0]
    );
    let shown = provider.everything_shown();
    for form in forms_that_must_not_show(&password) {
        assert!(!shown.contains(&form), "{:?} shows in {}", form, shown);
    }
    // The quoted literal (quotes included) never shows, however short.
    let literal = format!("'{}'", escape_quotes(&password));
    assert!(!errors[0].contains(&literal), "{}", errors[0]);
}

#[test]
fn errors_that_quote_the_script_hide_secrets_the_property_once_let_through() {
    for password in [
        "\u{2018}\r\n",
        "'\r\n",
        "\u{2019}\n",
        "a\r\nb",
        "\r\n\u{2018}",
    ] {
        check_errors_that_quote_the_script(password);
    }
}

#[test]
fn a_doubled_quote_and_a_line_of_a_secret_are_found_in_a_quoted_excerpt() {
    let provider = secret_provider();
    let password = "p'ss\u{2019}word\nsecond-line";
    let should = sym_map(vec![
        ("name", s("v1")),
        ("dsc_vaultname", s("v1")),
        ("dsc_secret", secret(password)),
    ]);
    let excerpt =
        "At line:9 char:5\n+ ... secret = 'p''ss\u{2019}\u{2019}word\n+ second-line'; ensure ...";
    let answer = serde_json::json!({"indesiredstate": false, "rebootrequired": false, "errormessage": excerpt});
    provider.answer(&answer.to_string());
    invoke_set_method(&provider, &s("v1"), &should).unwrap();
    let errors = provider.logged("err");
    assert!(!errors[0].contains("p''ss"), "{}", errors[0]);
    assert!(!errors[0].contains("second-line"), "{}", errors[0]);
    assert!(errors[0].contains(REDACTED_SENSITIVE), "{}", errors[0]);
}

#[test]
fn keys_that_differ_only_in_case_fail_the_resource_before_any_call() {
    let provider = secret_provider();
    let should = sym_map(vec![
        ("name", s("v1")),
        ("dsc_vaultname", s("v1")),
        (
            "dsc_options",
            Value::Hash(Map(vec![(s("Key"), s("a")), (s("key"), s("b"))])),
        ),
    ]);
    invoke_set_method(&provider, &s("v1"), &should).unwrap();
    assert_eq!(
        provider.logged("err"),
        vec![
            "[\"v1\"] dsc_options: unsupported value: the keys 'Key' and 'key' differ only in case; PowerShell compares hashtable keys without case, so it would refuse them"
        ]
    );
    assert!(provider.scripts.borrow().is_empty(), "nothing was sent");
    assert!(provider.with_state(|state| state.failed_sets.get(&should).is_some()));
}

/// A value of a Sensitive-typed attribute that arrives unwrapped (a caller
/// of `invoke_dsc_resource` passing a plain String) is still a secret to
/// the invocation's redactor, whose quick check looks at the attribute's
/// type as well as at the values: an error quoting it shows the marker.
#[test]
fn an_unwrapped_value_of_a_sensitive_typed_attribute_is_scrubbed_from_errors() {
    let provider = secret_provider();
    let plain = "unwrapped-secret-value-42";
    let name_hash = sym_map(vec![("name", s("v1")), ("dsc_vaultname", s("v1"))]);
    let props = sym_map(vec![("dsc_vaultname", s("v1")), ("dsc_secret", s(plain))]);
    let message = format!("The vault rejected '{plain}'.");
    let answer = serde_json::json!({"indesiredstate": false, "rebootrequired": false, "errormessage": message});
    provider.answer(&answer.to_string());
    invoke_dsc_resource(&provider, &name_hash, &props, DscMethod::Set).unwrap();

    let errors = provider.logged("err");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(REDACTED_SENSITIVE), "{}", errors[0]);
    assert!(!errors[0].contains(plain), "{}", errors[0]);
}

/// The desired state of the fixture with `value` in every Sensitive-typed
/// place (top level, hash member, CIM member, credential password),
/// wrapped in Sensitive or not.
fn every_secret_place(value: &str, wrap: bool) -> Map {
    let v = |text: &str| if wrap { secret(text) } else { s(text) };
    sym_map(vec![
        ("dsc_vaultname", s("vault-one")),
        ("dsc_secret", v(value)),
        (
            "dsc_settings",
            Value::Hash(Map(vec![
                (s("label"), s("label-text")),
                (s("token"), v(value)),
            ])),
        ),
        (
            "dsc_endpoints",
            Value::Array(vec![Value::Hash(Map(vec![
                (s("address"), s("address-text")),
                (s("apikey"), v(value)),
            ]))]),
        ),
        (
            "dsc_credential",
            Value::Hash(Map(vec![
                (s("user"), s("user-name")),
                (s("password"), v(value)),
            ])),
        ),
    ])
}

/// A caller of `invoke_dsc_resource` may pass a Sensitive-typed attribute's
/// value unwrapped (a plain String). The `--debug` dump of the script must
/// hide it as it hides a wrapped one, while the script sent is the same.
fn check_unwrapped_secrets_in_the_debug_script(value: &str) {
    let (shown, sent) = set_with_unwrapped_secrets(value);
    assert!(
        shown.contains("Sending Invoke-DscResource Set "),
        "the call is shown: {shown}"
    );
    for form in forms_that_must_not_show(value) {
        assert!(!shown.contains(&form), "{form:?} shows in {shown}");
    }
    // A short secret's literal may also be ordinary text of the helpers
    // (`'o'` is a format string there): the secret adds no occurrence of
    // its own over a run with a long placeholder in its places. It may show
    // fewer: a secret that spells the redaction marker is shown as another
    // marker, so the marker's literal, four times in the placeholder run
    // (once per secret place), is then not shown at all.
    let literal = format!("'{}'", escape_quotes(value));
    let (placeholder_shown, _) = set_with_unwrapped_secrets("placeholder-of-the-secret");
    let occurrences = shown.matches(&literal).count();
    let placeholder_occurrences = placeholder_shown.matches(&literal).count();
    assert!(
        occurrences <= placeholder_occurrences,
        "{literal} shows {occurrences} times, {placeholder_occurrences} with a placeholder: {shown}"
    );

    let provider = secret_provider();
    let wrapped = provider
        .build_script(
            &provider.typedef,
            &every_secret_place(value, true),
            DscMethod::Set,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        without_variable_names(&sent),
        without_variable_names(wrapped.text()),
        "the wire is as for wrapped values"
    );
}

/// A Set with `value` unwrapped in every Sensitive-typed place: everything
/// logged (with `--debug`), and the script sent.
fn set_with_unwrapped_secrets(value: &str) -> (String, String) {
    let provider = secret_provider();
    let name_hash = sym_map(vec![
        ("name", s("vault-one")),
        ("dsc_vaultname", s("vault-one")),
    ]);
    provider.answer(r#"{"indesiredstate":true,"rebootrequired":false,"errormessage":""}"#);
    invoke_dsc_resource(
        &provider,
        &name_hash,
        &every_secret_place(value, false),
        DscMethod::Set,
    )
    .unwrap();
    let sent = provider.scripts.borrow();
    assert_eq!(sent.len(), 1);
    (provider.everything_shown(), sent[0].clone())
}

/// A script with its per-call `$cred_…`/`$cim_…` names made alike.
fn without_variable_names(script: &str) -> String {
    let names = regex::Regex::new(r"\$(cred|cim|secret)_[0-9a-f]{32}").unwrap();
    names.replace_all(script, "$${1}_NAME").into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn unwrapped_values_of_sensitive_typed_attributes_are_hidden_in_the_debug_script(value in any_secret()) {
        check_unwrapped_secrets_in_the_debug_script(&value);
    }
}

#[test]
fn an_unwrapped_secret_is_hidden_in_the_debug_script() {
    check_unwrapped_secrets_in_the_debug_script("unwrapped-secret-value-42");
}

/// The case the random run found under wine: the secret spells the marker,
/// so the dump must show neither the secret nor that marker in its places.
#[test]
fn an_unwrapped_secret_that_spells_the_marker_is_hidden_in_the_debug_script() {
    check_unwrapped_secrets_in_the_debug_script(REDACTED_SENSITIVE);
    let (shown, _) = set_with_unwrapped_secrets(REDACTED_SENSITIVE);
    let marker_literal = format!("'{}'", escape_quotes(REDACTED_SENSITIVE));
    assert!(!shown.contains(&marker_literal), "{shown}");
}

/// A resource hash that a pwshlib 2.x override builds or edits by hand
/// holds Sensitive-typed values in the clear: `mark_secrets_by_type` marks
/// them by the type it is of (and only that type), as
/// `InvocableResource::new` does, so that the script's dump redacts them;
/// a parameter that names its Puppet type is marked by it without one.
#[test]
fn a_hand_built_resource_hash_is_marked_by_its_type() {
    use crate::script::{build_script, InvocableResource};
    let provider = secret_provider();
    let value = "hand-built-secret-value";
    let built = InvocableResource::new(
        &provider.typedef,
        &every_secret_place(value, false),
        DscMethod::Set,
        "/opt/vendored",
    )
    .unwrap();
    let by_hand = built.to_value().unwrap_sensitive();
    let unmarked = InvocableResource::from_value(&by_hand).unwrap();
    assert!(build_script(&unmarked).unwrap().redacted().contains(value));

    let mut other_type = unmarked.clone();
    other_type.friendly_name = "SomethingElse".into();
    other_type.mark_secrets_by_type(&provider.typedef);
    assert!(build_script(&other_type)
        .unwrap()
        .redacted()
        .contains(value));

    let mut marked = unmarked.clone();
    marked.mark_secrets_by_type(&provider.typedef);
    let script = build_script(&marked).unwrap();
    assert!(!script.redacted().contains(value), "{}", script.redacted());
    assert_eq!(
        script.text().matches(value).count(),
        build_script(&unmarked)
            .unwrap()
            .text()
            .matches(value)
            .count(),
        "the wire is the same"
    );

    let alone = sym_map(vec![("dsc_vaultname", s("v1")), ("dsc_secret", s(value))]);
    let mut typed =
        InvocableResource::new(&provider.typedef, &alone, DscMethod::Set, "/opt/vendored")
            .unwrap()
            .to_value()
            .unwrap_sensitive();
    let untyped = InvocableResource::from_value(&typed).unwrap();
    assert!(build_script(&untyped).unwrap().redacted().contains(value));
    let entry = typed
        .as_map_mut()
        .and_then(|map| map.get_named_mut("parameters"))
        .and_then(Value::as_map_mut)
        .and_then(|parameters| parameters.get_named_mut("dsc_secret"))
        .and_then(Value::as_map_mut)
        .unwrap();
    entry.insert_symbol("type", s("Optional[Sensitive[String]]"));
    let typed = InvocableResource::from_value(&typed).unwrap();
    assert!(!build_script(&typed).unwrap().redacted().contains(value));
}

#[test]
fn what_a_resource_writes_shows_in_order_with_its_secrets_scrubbed() {
    // The prelude prints the resource's stream records on
    // a line before its result.
    let provider = secret_provider();
    let password = "hunter2-stream";
    let should = sym_map(vec![
        ("name", s("v1")),
        ("dsc_vaultname", s("v1")),
        ("dsc_secret", secret(password)),
    ]);
    let streams = serde_json::json!({"pwshlib_streams": [
        {"kind": "verbose", "text": format!("setting {password}")},
        {"kind": "warning", "text": format!("weak: {password}")},
        {"kind": "host", "text": "host line"},
        {"kind": "information", "text": "info line"},
    ]});
    let result = r#"{"indesiredstate":true,"rebootrequired":false,"errormessage":""}"#;
    provider.answers.borrow_mut().push_back(ExecuteOutput {
        stdout: Some(format!("{streams}\n{result}\n")),
        errormessage: None,
        native_stdout: Some(format!("console {password}\n")),
    });
    invoke_set_method(&provider, &s("v1"), &should).unwrap();
    assert!(
        provider.logged("err").is_empty(),
        "{:?}",
        provider.logged("err")
    );
    let warnings = provider.logged("warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("weak: "), "{}", warnings[0]);
    let debug = provider.logged("debug");
    let shown: Vec<&String> = debug
        .iter()
        .filter(|m| m.starts_with("v1: DSC resource "))
        .collect();
    assert_eq!(shown.len(), 4, "{debug:?}");
    // The console first: the host hands it over apart from the records.
    assert!(
        shown[0].starts_with("v1: DSC resource console: console "),
        "{}",
        shown[0]
    );
    let shown = &shown[1..];
    assert!(
        shown[0].starts_with("v1: DSC resource verbose: setting "),
        "{}",
        shown[0]
    );
    assert!(
        shown[1].contains("DSC resource host: host line"),
        "{}",
        shown[1]
    );
    assert!(
        shown[2].contains("DSC resource information: info line"),
        "{}",
        shown[2]
    );
    assert!(!provider.everything_shown().contains(password));
}
