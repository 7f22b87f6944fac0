//! Property tests (10,000 generated cases each):
//! (a) every generated script parses under tree-sitter-powershell;
//! (b) every string formats to exactly one single-quoted literal whose
//!     PowerShell value is the original text;
//! (c) no secret leaks into the redacted rendering;
//! and each call as data writes back to the same body.
//!
//! The parse checks read only what the builder generated: the prelude in
//! front of it is constant text, parsed once by
//! `shipped_templates::every_shipped_template_parses_clean`. Parsing it
//! again in every case was nine tenths of this file's time (about three
//! minutes of CI's `cargo test`), and searching it made a check depend on
//! the prelude's own quotes.

mod common;

use common::*;
use proptest::prelude::*;
use pwshlib_core::call_data::DscCallData;
use pwshlib_core::literal::quote;
use pwshlib_core::script::{DscMethod, Script};
use pwshlib_core::secrecy::{peel, REDACTION_FALLBACK, REDACTION_MARKER};
use pwshlib_core::{Map, Timestamp, TypeDef, Value};
use pwshlib_pslint::{parse_errors, with_tree};

const CASES: u32 = 10_000;

/// The generated part of a script's text or of its redacted rendering: the
/// text after the prelude, which every script starts with unchanged.
fn generated(text: &str) -> &str {
    text.strip_prefix(pwshlib_core::templates::PRELUDE)
        .unwrap_or(text)
}

/// PowerShell's tokenizer, written out here independently of the code under
/// test: in a single-quoted literal, U+0027 and U+2018..U+201B are all quote
/// characters; two in a row stand for the second one, a lone one ends the
/// literal. Returns the value and the byte length of the literal.
fn powershell_reads(literal: &str) -> Option<(String, usize)> {
    let is_quote = |c: char| matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}');
    let mut chars = literal.char_indices().peekable();
    if !chars.next().is_some_and(|(_, c)| is_quote(c)) {
        return None;
    }
    let mut value = String::new();
    while let Some((at, c)) = chars.next() {
        if !is_quote(c) {
            value.push(c);
            continue;
        }
        match chars.peek() {
            Some(&(_, next)) if is_quote(next) => {
                value.push(next);
                chars.next();
            }
            _ => return Some((value, at + c.len_utf8())),
        }
    }
    None
}

/// `script` with every single-quoted literal emptied (`''`), as
/// PowerShell's tokenizer delimits them, but for names (`'MSFT_Binding'`):
/// what is left is code.
fn without_string_texts(script: &str) -> String {
    let mut code = String::new();
    let mut rest = script;
    while let Some(c) = rest.chars().next() {
        if let Some((text, length)) = powershell_reads(rest) {
            if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                code.push_str(&rest[..length]);
            } else {
                code.push_str("''");
            }
            rest = &rest[length..];
        } else {
            code.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    code
}

/// Text that stresses quoting and redaction: every PowerShell quote
/// character, newlines, comment and marker characters, skeleton fragments.
fn tricky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => any::<char>().prop_map(String::from),
        3 => prop::sample::select(vec![
            "'", "\u{2018}", "\u{2019}", "\u{201A}", "\u{201B}", "\"", "`", "$", "#", "<#", "#>",
            "\n", "\r\n", "@'", "'@", "@{", "}", ";", " = ", "-Password ", "$cred_1", "é", "日本",
            "\u{1F600}", "\u{FEFF}", "\u{2028}",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|parts| parts.concat().replace('\0', "0"))
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => tricky_text(),
        1 => any::<String>().prop_map(|s| s.replace('\0', "0")),
    ]
}

/// Secrets: tricky text, plus texts that collide with the redaction marker
/// or the script skeleton, plus long ones.
fn secret_text() -> impl Strategy<Value = String> {
    let marker_fragment =
        (0..REDACTION_MARKER.len(), 0..REDACTION_MARKER.len()).prop_map(|(a, b)| {
            let (a, b) = (a.min(b), a.max(b) + 1);
            REDACTION_MARKER[a..b.min(REDACTION_MARKER.len())].to_owned()
        });
    prop_oneof![
        6 => any_text(),
        2 => marker_fragment,
        1 => prop::sample::select(vec![
            REDACTION_MARKER, "#<Sensitive [value redacted]>", "d '#<Se", "ord '", "' -Pa",
            "Password", "$InvokeParams", "New-PsCredential -User", "PuppetSensitive", REDACTION_FALLBACK,
        ])
        .prop_map(str::to_owned),
        1 => (any_text(), 300..700usize).prop_map(|(t, n)| format!("{t}{}", "x9'\n".repeat(n))),
    ]
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    (-62_135_596_800i64..253_402_300_799i64, 0u32..1_000_000_000).prop_map(|(secs, nanos)| {
        Timestamp::from_nanos(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
    })
}

fn key() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => "[a-zA-Z_][a-zA-Z0-9_]{0,8}".prop_map(Value::Str),
        2 => any_text().prop_map(Value::Str),
        1 => any_text().prop_map(Value::Symbol),
        1 => any_text().prop_map(|t| secret(Value::Str(t))),
    ]
}

/// Keeps the first of keys that are equal without case: PowerShell would
/// refuse the others, and script building refuses them up front (a test of
/// its own in script_building.rs).
fn distinct_keys(pairs: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let mut seen = std::collections::HashSet::new();
    pairs
        .into_iter()
        .filter(|(key, _)| {
            peel(key)
                .0
                .key_name()
                .is_none_or(|name| seen.insert(name.to_lowercase()))
        })
        .collect()
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        "-?[1-9][0-9]{19,40}".prop_map(Value::BigInt),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any_text().prop_map(Value::Str),
        any_text().prop_map(Value::Symbol),
        timestamp().prop_map(Value::Timestamp),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner.clone()), 0..4)
                .prop_map(|pairs| Value::Hash(Map(distinct_keys(pairs)))),
            inner.prop_map(secret),
        ]
    })
}

fn maybe_secret(value: Value, wrap: bool) -> Value {
    if wrap {
        secret(value)
    } else {
        value
    }
}

fn credential() -> impl Strategy<Value = Value> {
    (any_text(), any_text(), any::<(bool, bool, bool)>()).prop_map(
        |(user, password, (su, sp, sh))| {
            maybe_secret(
                hash(vec![
                    ("user", maybe_secret(s(&user), su)),
                    ("password", maybe_secret(s(&password), sp)),
                ]),
                sh,
            )
        },
    )
}

/// A value New-CimInstance can type as a property (or nil, which the
/// builder leaves out): a scalar, or an array whose items are all strings,
/// all Int32 or all booleans (possibly empty), any of them Sensitive.
fn cim_value() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any_text().prop_map(Value::Str),
        timestamp().prop_map(Value::Timestamp),
    ];
    let array = prop_oneof![
        prop::collection::vec(any_text().prop_map(Value::Str), 0..4),
        prop::collection::vec(any::<i32>().prop_map(|i| Value::Int(i.into())), 0..4),
        prop::collection::vec(any::<bool>().prop_map(Value::Bool), 0..4),
    ]
    .prop_map(Value::Array);
    (prop_oneof![3 => scalar, 1 => array], any::<bool>())
        .prop_map(|(value, wrap)| maybe_secret(value, wrap))
}

/// A CIM instance hash; nested ones carry `cim_instance_type`.
fn cim_instance(nested: bool) -> BoxedStrategy<Value> {
    let property = prop_oneof![
        4 => cim_value(),
        1 => credential(),
    ];
    let base = (
        prop::collection::vec(("[a-zA-Z_][a-zA-Z0-9_]{0,8}|[^\u{0}]{1,6}", property), 0..4),
        "[A-Za-z_]{1,12}",
        any::<bool>(),
    )
        .prop_map(move |(pairs, class, wrap)| {
            let mut pairs: Vec<(Value, Value)> =
                distinct_keys(pairs.into_iter().map(|(k, v)| (Value::Str(k), v)).collect());
            if nested {
                pairs.push((s("cim_instance_type"), s(&class)));
            }
            maybe_secret(Value::Hash(Map(pairs)), wrap)
        });
    if nested {
        return base.boxed();
    }
    (
        base,
        prop::collection::vec(cim_instance(true), 0..3),
        any::<bool>(),
    )
        .prop_map(|(outer, children, as_array)| {
            let mut outer = outer;
            let target = match &mut outer {
                Value::Sensitive(inner) => inner.as_mut(),
                other => other,
            };
            if let Value::Hash(map) = target {
                if as_array && !children.is_empty() {
                    map.0.push((s("children"), Value::Array(children)));
                } else if let Some(child) = children.into_iter().next() {
                    map.0.push((s("child"), child));
                }
            }
            outer
        })
        .boxed()
}

fn method() -> impl Strategy<Value = DscMethod> {
    prop::sample::select(vec![DscMethod::Get, DscMethod::Set, DscMethod::Test])
}

fn definition() -> impl Strategy<Value = TypeDef> {
    prop::sample::select(vec![
        (Some("MOF"), Some("1.2.0")),
        (Some("Class"), Some("0.3.1")),
        (None, None),
    ])
    .prop_map(|(implementation, version)| kitchen_sink(implementation, version))
}

/// A resource hash for [`kitchen_sink`] with every attribute optional.
fn should() -> impl Strategy<Value = Map> {
    (
        (
            any_text(),
            prop::option::of(credential()),
            prop::option::of(credential()),
            prop::option::of(any_text()),
        ),
        (
            prop::option::of(prop::collection::vec(any_text().prop_map(Value::Str), 0..4)),
            prop::option::of(any::<u32>()),
            prop::option::of(timestamp()),
            prop::option::of(prop::collection::vec(cim_instance(false), 0..3)),
            prop::option::of(cim_instance(false)),
            prop::option::of(value()),
        ),
    )
        .prop_map(
            |((name, runas, password, text), (list, number, when, bindings, single, anything))| {
                let mut pairs = vec![
                    ("name", s("title")),
                    ("dsc_name", s(&name)),
                    ("dsc_timeout", Value::Int(5)),
                ];
                let mut add = |k: &'static str, v: Option<Value>| {
                    if let Some(v) = v {
                        pairs.push((k, v));
                    }
                };
                add("dsc_psdscrunascredential", runas);
                add("dsc_password", password);
                add("dsc_text", text.map(Value::Str));
                add("dsc_list", list.map(Value::Array));
                add("dsc_number", number.map(|n| Value::Int(n.into())));
                add("dsc_when", when.map(Value::Timestamp));
                add("dsc_bindings", bindings.map(Value::Array));
                add("dsc_single", single);
                add("dsc_anything", anything);
                resource(pairs)
            },
        )
}

/// Places the given secrets at fixed spots of every kind: credential
/// passwords and users, Sensitive strings in arrays and free-form hashes,
/// Sensitive hash keys, Sensitive CIM instance values and a whole Sensitive
/// nested instance. `public` fills the non-secret spots.
fn with_secrets(secrets: &[String; 8], public: &[String; 3]) -> Map {
    let sec = |i: usize| secret(s(&secrets[i]));
    resource(vec![
        ("name", s("title")),
        ("dsc_name", s(&public[0])),
        (
            "dsc_psdscrunascredential",
            hash(vec![("user", s(&public[1])), ("password", sec(0))]),
        ),
        (
            "dsc_password",
            hash(vec![("user", sec(1)), ("password", s(&secrets[2]))]),
        ),
        ("dsc_list", Value::Array(vec![s(&public[2]), sec(3)])),
        (
            "dsc_anything",
            Value::Hash(Map(vec![
                (secret(s(&secrets[4])), s(&public[0])),
                (s("plain"), Value::Array(vec![sec(5), Value::Int(7)])),
            ])),
        ),
        (
            "dsc_bindings",
            Value::Array(vec![hash(vec![
                ("protocol", s(&public[1])),
                ("hostname", sec(6)),
                (
                    "authentication",
                    secret(hash(vec![
                        ("cim_instance_type", s("MSFT_Auth")),
                        ("token", s(&secrets[7])),
                    ])),
                ),
            ])]),
        ),
    ])
}

fn secrets8() -> impl Strategy<Value = [String; 8]> {
    prop::array::uniform8(secret_text())
}

/// Checks (c) for one script: every secret of 4+ characters is absent from
/// the redacted rendering unless the script without any secret holds it
/// anyway (then it is public text, e.g. a secret equal to a public value).
fn assert_no_leak(
    script: &Script,
    secrets: &[String],
    skeleton: &str,
) -> Result<(), TestCaseError> {
    let redacted = script.redacted();
    for secret in secrets {
        if secret.chars().count() >= 4 && redacted.contains(secret.as_str()) {
            prop_assert!(
                skeleton.contains(secret.as_str()),
                "secret {secret:?} leaked into:\n{redacted}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// (a) Every generated script, and its redacted rendering, parses with
    /// no ERROR or MISSING node, whatever the values and method.
    #[test]
    fn every_generated_script_parses(def in definition(), should in should(), method in method()) {
        let script = build(&def, &should, method);
        prop_assert_eq!(generated(script.text()), script.inline_body());
        let errors = parse_errors(script.body());
        prop_assert!(errors.is_empty(), "{errors:?}\n{}", script.body());
        // Every built script carries its call as data, whose JSON (the
        // request's dsc) reads back as the same value.
        let call = script.call().ok_or_else(|| TestCaseError::fail("no call as data"))?;
        let read = DscCallData::from_json(&call.to_json()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&read.properties, &call.properties);
        prop_assert_eq!(&read.module, &call.module);
        let redacted = script.redacted();
        if redacted != REDACTION_FALLBACK {
            let errors = parse_errors(generated(&redacted));
            prop_assert!(errors.is_empty(), "redacted: {errors:?}\n{redacted}");
        }
    }

    /// (b) A string becomes exactly one single-quoted literal, the grammar
    /// sees one string token spanning exactly that literal, and PowerShell's
    /// tokenizer rule reads the original text back out of it.
    #[test]
    fn every_string_is_one_literal_with_its_own_value(text in any_text()) {
        let literal = quote(&text).unwrap();
        let (read_back, length) = powershell_reads(&literal)
            .ok_or_else(|| TestCaseError::fail(format!("{literal:?} is not one literal")))?;
        prop_assert_eq!(&read_back, &text);
        prop_assert_eq!(length, literal.len());
        let script = format!("$x = {literal}\n");
        let start = "$x = ".len();
        let strings = with_tree(&script, |tree| {
            let mut found = Vec::new();
            let mut stack = vec![tree.root_node()];
            while let Some(node) = stack.pop() {
                prop_assert!(!node.is_error() && !node.is_missing(), "{}", tree.root_node().to_sexp());
                if node.kind() == "verbatim_string_characters" {
                    found.push(node.byte_range());
                }
                let mut cursor = node.walk();
                stack.extend(node.children(&mut cursor));
            }
            Ok(found)
        })
        .unwrap()?;
        prop_assert_eq!(strings, vec![start..start + literal.len()]);
    }

    /// (c) No secret leaks: the redacted rendering does not depend on the
    /// secrets' contents at all (swap them for others: same rendering), and
    /// no secret of 4+ characters occurs in it unless the public skeleton
    /// holds it. The marked text form redacts the same way.
    #[test]
    fn no_secret_leaks_into_the_redacted_rendering(
        def in definition(),
        method in prop::sample::select(vec![DscMethod::Set, DscMethod::Test]),
        first in secrets8(),
        second in secrets8(),
        public in prop::array::uniform3(any_text()),
    ) {
        let a = build(&def, &with_secrets(&first, &public), method);
        let b = build(&def, &with_secrets(&second, &public), method);
        prop_assert_eq!(a.redacted_with(REDACTION_MARKER), b.redacted_with(REDACTION_MARKER));
        // The data form the host receives does not depend on the
        // secrets at all (each is bound by variable), and holds none.
        prop_assert_eq!(a.body(), b.body());
        let blank: [String; 8] = Default::default();
        let skeleton = build(&def, &with_secrets(&blank, &public), method);
        for secret in first.iter().filter(|s| s.chars().count() >= 4) {
            let public = skeleton.text().contains(secret.as_str());
            prop_assert!(public || !a.body().contains(secret.as_str()), "{secret:?} in {}", a.body());
        }
        assert_no_leak(&a, &first, skeleton.text())?;
        assert_no_leak(&b, &second, skeleton.text())?;
        let from_marked = Script::from_marked(&a.marked().unwrap());
        prop_assert_eq!(from_marked.text(), a.text());
        assert_no_leak(&from_marked, &first, skeleton.text())?;
        let errors = parse_errors(a.body());
        prop_assert!(errors.is_empty(), "{errors:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Any value inside a CIM instance either builds into a script that
    /// parses, or is refused with an error naming its attribute path
    /// (a plain hash, an array of mixed or nested types): never a panic,
    /// never a `-Property` value New-CimInstance would throw for.
    #[test]
    fn any_value_in_a_cim_instance_builds_or_is_refused_naming_its_path(
        member in value(),
        method in prop::sample::select(vec![DscMethod::Set, DscMethod::Test]),
    ) {
        let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
        let should = resource(vec![
            ("dsc_name", s("x")),
            ("dsc_bindings", Value::Array(vec![hash(vec![("member", member)])])),
        ]);
        let resource = pwshlib_core::script::InvocableResource::new(&def, &should, method, VENDORED).unwrap();
        match pwshlib_core::script::build_script(&resource) {
            Ok(script) => {
                let errors = parse_errors(script.body());
                prop_assert!(errors.is_empty(), "{errors:?}");
                // The code, not the text of its strings (a member's text may
                // read `= @{`, or span lines).
                let code = without_string_texts(script.body());
                let line = code.lines().find(|l| l.starts_with("$cim_") && l.contains("MSFT_Binding")).unwrap();
                prop_assert!(!line.contains("= $null") && !line.contains("= @()") && !line.contains("= @{"), "{line}");
            }
            Err(e) => prop_assert!(e.to_string().starts_with("dsc_bindings.member"), "{e}"),
        }
    }
}

/// The edge cases the contract lists, one by one, in every secret spot.
#[test]
fn listed_secret_edge_cases_never_leak() {
    let long: String = "abc'\u{2019}\n#".chars().cycle().take(10 * 1024).collect();
    let cases = [
        "pa'ss",
        "pa''ss'",
        "\u{2018}x\u{2019}y\u{201A}z\u{201B}",
        "\"dq\"",
        "line\nbreak\r\nend",
        "#hash#",
        "<#block#>",
        REDACTION_MARKER,
        "#<Sensitive [value redacted]>",
        "#<Sensitive [value redacted]> and more",
        "Sensitive",
        "d '#<Sensitive",
        "' -Password",
        "$InvokeParams",
        &long,
        "pässwörd-日本語-😀",
        "\u{FEFF}bom",
        "'#<S",
    ];
    let public: [String; 3] = ["key".into(), "DOMAIN\\user".into(), "public".into()];
    let blank: [String; 8] = Default::default();
    for def in [
        kitchen_sink(Some("MOF"), Some("1.2.0")),
        kitchen_sink(Some("Class"), Some("1.0")),
    ] {
        let skeleton = build(&def, &with_secrets(&blank, &public), DscMethod::Set);
        for case in cases {
            let secrets: [String; 8] = std::array::from_fn(|_| case.to_owned());
            let script = build(&def, &with_secrets(&secrets, &public), DscMethod::Set);
            let redacted = script.redacted();
            if case.chars().count() >= 4 && !skeleton.text().contains(case) {
                assert!(!redacted.contains(case), "{case:?} leaked:\n{redacted}");
            }
            assert!(script
                .text()
                .contains(&pwshlib_core::literal::escape_quotes(case)));
            assert!(parse_errors(script.body()).is_empty(), "{case:?}");
            assert!(
                parse_errors(generated(&redacted)).is_empty(),
                "{case:?}: {redacted}"
            );
        }
    }
}

/// When the standard marker would show a secret, another marker is used.
#[test]
fn a_secret_equal_to_the_marker_switches_markers() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let secrets: [String; 8] = std::array::from_fn(|_| "#<Sensitive [value redacted]>".to_owned());
    let public: [String; 3] = ["a".into(), "b".into(), "c".into()];
    let script = build(&def, &with_secrets(&secrets, &public), DscMethod::Set);
    let redacted = script.redacted();
    assert!(!redacted.contains("#<Sensitive [value redacted]>"));
    assert_ne!(redacted, REDACTION_FALLBACK);
    assert_eq!(redacted.len(), script.redacted().len());
}
