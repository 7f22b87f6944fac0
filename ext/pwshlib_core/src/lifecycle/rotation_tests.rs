//! A rotated secret: run 1 stores secret A, run 2 declares
//! secret B where the manifest marks it Sensitive inside a free-form hash,
//! an array in it, an embedded CIM instance and a plain String attribute,
//! while the system still holds A. Neither A nor B may show in any form,
//! however short: the Get result is marked where the desired state holds a
//! Sensitive value, so whatever the system holds there shows as the marker.

use proptest::prelude::*;

use super::*;
use crate::literal::escape_quotes;
use crate::secrecy::{GUARDED_SECRET_CHARS, REDACTED_SENSITIVE};
use crate::test_support::fake_provider::{json, FakeProvider};
use crate::test_support::secret_typedef;

use super::secret_tests::any_secret;

const TITLE: &str = "vault-one";

fn s(text: &str) -> Value {
    Value::str(text)
}

fn secret(value: Value) -> Value {
    Value::Sensitive(Box::new(value))
}

fn str_map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn sym_map(pairs: Vec<(&str, Value)>) -> Map {
    pairs.into_iter().map(|(k, v)| (Value::sym(k), v)).collect()
}

/// What the system reports, `held` in every place the manifest marks
/// Sensitive (wrapped by `wrap`, so that the same shape gives the expected
/// marked rendering), beside public values.
fn system_state(held: &str, wrap: impl Fn(Value) -> Value) -> Value {
    str_map(vec![
        ("VaultName", s(TITLE)),
        ("Ensure", s("Present")),
        (
            "Options",
            str_map(vec![
                ("hk", wrap(s(held))),
                ("pub", s("visible-text")),
                // Any item of an array where the manifest has a secret item
                // is secret: the system may order them otherwise.
                (
                    "list",
                    Value::Array(vec![wrap(s("item-text")), wrap(s(held))]),
                ),
                ("nested", str_map(vec![("deep", wrap(s(held)))])),
            ]),
        ),
        (
            "Endpoints",
            Value::Array(vec![str_map(vec![
                ("cim_instance_type", s("MSFT_FixtureEndpoint")),
                ("Address", wrap(s(held))),
            ])]),
        ),
        ("Note", wrap(s(held))),
    ])
}

/// The desired state of run `declared`: the secret in each place,
/// Sensitive.
fn desired(declared: &str) -> Map {
    let hidden = || secret(s(declared));
    sym_map(vec![
        ("name", s(TITLE)),
        ("dsc_vaultname", s(TITLE)),
        ("dsc_ensure", s("Present")),
        (
            "dsc_options",
            str_map(vec![
                ("hk", hidden()),
                ("pub", s("visible-text")),
                ("list", Value::Array(vec![s("item-text"), hidden()])),
                ("nested", str_map(vec![("deep", hidden())])),
            ]),
        ),
        (
            "dsc_endpoints",
            Value::Array(vec![str_map(vec![("address", hidden())])]),
        ),
        ("dsc_note", hidden()),
    ])
}

const SET_DONE: &str = r#"{"indesiredstate":true,"rebootrequired":false,"errormessage":""}"#;

/// What both runs showed (every log line of each, the change messages of
/// run 2), and the raw data line of run 2's Get.
struct Shown {
    text: String,
    raw_data: Vec<String>,
    run2_get: Map,
}

/// Run 1 creates the resource with `a`; run 2 (a fresh provider: the next
/// Puppet run) finds `a` on the system, declares `b`, and its Set fails
/// with an error that quotes both, as PowerShell's errors quote values.
fn rotate(a: &str, b: &str) -> Shown {
    let run1 = FakeProvider::with_real_scripts(secret_typedef());
    run1.answer(&json(&str_map(vec![
        ("VaultName", s(TITLE)),
        ("Ensure", s("Absent")),
    ])));
    let should1 = desired(a);
    invoke_get_method(&run1, &should1).unwrap().unwrap();
    run1.answer(SET_DONE);
    invoke_set_method(&run1, &s(TITLE), &should1).unwrap();

    let run2 = FakeProvider::with_real_scripts(secret_typedef());
    run2.answer(&json(&system_state(a, |v| v)));
    let should2 = desired(b);
    let current = invoke_get_method(&run2, &should2).unwrap().unwrap();
    let mut changes = Vec::new();
    for property in ["dsc_options", "dsc_endpoints", "dsc_note"] {
        let answer = insync(&run2, &s(TITLE), property, Some(&current), &should2).unwrap();
        if let Insync::OutOfSync(Some(message)) = answer {
            changes.push(message);
        }
    }
    let quoting = format!(
        "Cannot set 'hk' from '{}' to '{}': {:?} / {:?} / {} / {}",
        escape_quotes(a),
        escape_quotes(b),
        a,
        b,
        serde_json::to_string(a).unwrap(),
        serde_json::to_string(b).unwrap()
    );
    let answer = serde_json::json!({"indesiredstate": false, "rebootrequired": false, "errormessage": quoting});
    run2.answer(&answer.to_string());
    invoke_set_method(&run2, &s(TITLE), &should2).unwrap();
    assert_eq!(
        run2.logged("err").len(),
        1,
        "the Set failed: {:?}",
        run2.logs
    );

    // The first is the Get's; the Set's shows its error, scrubbed.
    let raw_data = run2
        .logged("debug")
        .into_iter()
        .filter(|line| line.starts_with("raw data received: "))
        .take(1)
        .collect();
    let text = [
        run1.everything_shown(),
        run2.everything_shown(),
        changes.join("\n"),
    ]
    .join("\n");
    Shown {
        text: comparable(&text),
        raw_data,
        run2_get: current,
    }
}

/// `text` with what differs from one run to the next by chance alone made
/// alike: the scripts' random variable names, the time each call took, and
/// the random markers used where a secret spells the standard one (the
/// markers stand where the placeholders' standard ones do).
fn comparable(text: &str) -> String {
    let names = regex::Regex::new(r"\$(cred|cim)_[0-9a-f]{32}").unwrap();
    let times = regex::Regex::new(r"took [0-9.]+ s").unwrap();
    let markers = regex::Regex::new(r#"'[0-9a-f]{32}'|"[0-9a-f]{32}"|[0-9]{30,}"#).unwrap();
    let text = names.replace_all(text, "$${1}_NAME");
    let text = times.replace_all(&text, "took N s");
    markers
        .replace_all(&text, regex::NoExpand(REDACTED_SENSITIVE))
        .into_owned()
}

/// Every rendering of `secret` that can be looked for in output: the whole
/// value single-quoted (PowerShell), double-quoted, JSON- and
/// debug-escaped, whatever its length; and the text (and each of its
/// lines) with quotes doubled or not, when it has at least
/// [`GUARDED_SECRET_CHARS`] characters (shorter, it is ordinary text).
fn renderings(secret: &str) -> Vec<String> {
    let escaped = escape_quotes(secret);
    let mut forms = vec![
        format!("'{escaped}'"),
        format!("\"{secret}\""),
        format!("{secret:?}"),
        serde_json::to_string(secret).unwrap(),
    ];
    let mut texts = Vec::new();
    for form in [secret, escaped.as_str()] {
        texts.push(form.to_owned());
        if form.contains(['\n', '\r']) {
            texts.extend(
                form.split(['\n', '\r'])
                    .flat_map(|l| [l.to_owned(), l.trim().to_owned()]),
            );
        }
    }
    texts.retain(|text| text.chars().count() >= GUARDED_SECRET_CHARS);
    forms.extend(texts);
    forms
}

/// Neither secret adds an occurrence of any rendering of itself to what
/// the runs show, over the same runs with long placeholders in their
/// places: what the public text holds anyway (a one-character secret is in
/// any text; `'o'` is in the prelude; the marker may spell a secret) is
/// there as often with the placeholders, and a leak would add to it.
fn check_rotation(a: &str, b: &str) {
    let shown = rotate(a, b);
    let baseline = rotate("placeholder-of-secret-A", "placeholder-of-secret-B");
    for secret in [a, b] {
        // A form that holds the marker text cannot be told from what
        // redaction shows (a secret's line that is the marker, or the
        // marker and a line end); the secret's other forms still count.
        let forms = renderings(secret)
            .into_iter()
            .filter(|form| !form.contains(REDACTED_SENSITIVE));
        for form in forms {
            let count = shown.text.matches(&form).count();
            let expected = baseline.text.matches(&form).count();
            assert!(
                count <= expected,
                "{form:?} of {secret:?} shows {count} times, {expected} with placeholders:\n{}",
                shown.text
            );
        }
    }

    // The raw data line is the system's state with the marker wherever the
    // manifest holds a Sensitive value, whatever the system holds there.
    let expected = format!("raw data received: {}", system_state(a, secret));
    let spelled = [a, b]
        .iter()
        .flat_map(|x| renderings(x))
        .any(|form| form.chars().count() >= GUARDED_SECRET_CHARS && expected.contains(&form));
    if spelled {
        // A secret spells out (part of) the marker: another one shows.
        assert_eq!(shown.raw_data.len(), 1);
    } else {
        assert_eq!(shown.raw_data, vec![expected]);
    }

    // What goes back to Puppet holds A as Sensitive in every such place.
    let get = &shown.run2_get;
    let options = get.get_named("dsc_options").unwrap().as_map().unwrap();
    assert_eq!(options.get_named("hk"), Some(&secret(s(a))));
    assert_eq!(
        options
            .get_named("nested")
            .unwrap()
            .as_map()
            .unwrap()
            .get_named("deep"),
        Some(&secret(s(a)))
    );
    assert_eq!(options.get_named("pub"), Some(&s("visible-text")));
    let Some(Value::Array(endpoints)) = get.get_named("dsc_endpoints") else {
        panic!("endpoints: {get:?}");
    };
    let endpoint = endpoints[0].as_map().unwrap();
    assert_eq!(endpoint.get_named("address"), Some(&secret(s(a))));
    assert_eq!(get.get_named("dsc_note"), Some(&secret(s(a))));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_rotated_secret_shows_in_no_form_old_or_new(a in any_secret(), b in any_secret()) {
        check_rotation(&a, &b);
    }
}

/// The six forms the issue tried, and the short ones whose escaped
/// renderings slipped through the text scrub (`\` shows as `"\\"`).
#[test]
fn rotated_secrets_of_the_shapes_that_leaked_show_in_no_form() {
    let shapes = [
        "plain-secret-text",
        "back\\slash",
        "it's",
        "it\u{2019}s",
        "new\nline",
        "say \"hi\"",
        "\\",
        "\\\\",
        "'",
        "\"",
        "a",
    ];
    for a in shapes {
        for b in shapes {
            check_rotation(a, b);
        }
    }
}

/// The error of a pwshlib 2.x override's `retry_invoke_dsc_resource` is
/// text the lifecycle did not make: it is scrubbed of every secret the
/// provider knows in the run, desired (B) and found on the system (A).
#[test]
fn text_from_outside_the_lifecycle_is_scrubbed_of_the_runs_known_secrets() {
    let (a, b) = ("old-secret-of-the-run", "new-secret-of-the-run");
    let provider = FakeProvider::with_real_scripts(secret_typedef());
    provider.answer(&json(&system_state(a, |v| v)));
    let canonical = canonicalize(&provider, vec![desired(b)]).unwrap();
    assert_eq!(canonical.len(), 1);
    let error = format!("busy: '{a}' and \"{b}\" / {:?}", escape_quotes(b));
    let scrubbed = scrub_with_known_secrets(&provider, &error).unwrap();
    assert!(!scrubbed.contains(a) && !scrubbed.contains(b), "{scrubbed}");
    assert!(scrubbed.starts_with("busy: '"), "{scrubbed}");
    assert!(scrubbed.contains(REDACTED_SENSITIVE), "{scrubbed}");
    // A provider that knows nothing leaves the text as it is.
    let fresh = FakeProvider::with_real_scripts(secret_typedef());
    assert_eq!(scrub_with_known_secrets(&fresh, &error).unwrap(), error);
}
