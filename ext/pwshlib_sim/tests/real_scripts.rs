//! Scripts in the exact shape the provider's script builder produces: the
//! shipped templates around the generated variable and `$InvokeParams`
//! lines.

use pwshlib_core::bound::BoundValue;
use pwshlib_core::script::DscMethod;
use pwshlib_sim::dsc::{handle_with_env, read_invocation, read_invocation_bound, Edition};
use pwshlib_sim::outcome::Outcome;
use pwshlib_sim::psvalue::PsValue;
use pwshlib_transport::protocol::{BoundSecret, SecretValue};
use serde_json::{json, Value as Json};

/// The generated parts of a Set for a kitchen-sink type, as the script
/// builder writes them: the quoted vendored path its call carries (first
/// line), then credentials, nested CIM instances, `$InvokeParams`.
const KITCHEN_SINK_SET_GENERATED: &str = include_str!("fixtures/kitchen_sink_set_generated.ps1");

/// The whole script, joined as `Script::into_script` joins it: the prelude
/// (as this build embeds it), the header, the generated lines, then the
/// call with the vendored path (the fixture's first line).
fn kitchen_sink_set() -> String {
    use pwshlib_core::script::{HEADER, INVOKE_CALL, VENDORED_PATH_PARAMETER};
    use pwshlib_core::templates;
    let (vendored, rest) = KITCHEN_SINK_SET_GENERATED.split_once('\n').unwrap();
    format!(
        "{}{HEADER}{rest}{INVOKE_CALL}{VENDORED_PATH_PARAMETER}{vendored}\n",
        templates::PRELUDE
    )
}

fn run(code: &str, state: &std::path::Path) -> Json {
    let state = state.display().to_string();
    let env = move |name: &str| (name == "PWSHLIB_SIM_STATE").then(|| state.clone());
    match handle_with_env(code, 1_000, &env) {
        Some(Outcome::Reply {
            stdout: Some(stdout),
            errormessage: None,
            ..
        }) => serde_json::from_str(stdout.trim_end()).unwrap(),
        _ => panic!("expected a DSC result"),
    }
}

#[test]
fn the_kitchen_sink_script_is_read_whole() {
    let invocation = read_invocation(&kitchen_sink_set()).unwrap().unwrap();
    assert_eq!(invocation.resource, "KitchenSink");
    assert_eq!(invocation.method, DscMethod::Set);
    let names: Vec<&str> = invocation
        .properties
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "psdscrunascredential",
            "name",
            "ensure",
            "bindings",
            "single",
            "list",
            "when",
            "anything"
        ]
    );
    assert_eq!(
        invocation.properties[0].1,
        PsValue::Credential {
            user: r"DOMAIN\runner".into(),
            password: "p'ss\u{2018}word".into()
        }
    );
    let json: serde_json::Map<String, Json> = invocation
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json()))
        .collect();
    assert_eq!(json["name"], r"C:\it's here");
    assert_eq!(
        json["bindings"],
        json!([
            {
                "protocol": "https", "port": 443, "certificatesubjects": ["CN=a", "CN=b"],
                "authentication": {"anonymous": false, "basic": true, "cim_instance_type": "MSFT_FixtureAuthentication"},
                "cim_instance_type": "MSFT_Binding"
            },
            {
                "protocol": "http", "port": 80,
                "inner": [
                    {"key": "a", "cim_instance_type": "MSFT_Inner"},
                    {"key": "b-secret", "cim_instance_type": "MSFT_Inner"}
                ],
                "cim_instance_type": "MSFT_Binding"
            }
        ])
    );
    assert_eq!(
        json["single"],
        json!({"value": "one", "when": "2024-01-02T03:04:05.0000000Z", "cim_instance_type": "MSFT_Single"})
    );
    assert_eq!(json["list"], json!([]));
    assert_eq!(json["when"], "2024-01-01T10:00:00.0000000Z");
    assert_eq!(json["anything"]["nil"], Json::Null);
    assert_eq!(
        json["anything"]["big"].as_f64(),
        Some(-1.2345678901234568e29)
    );
    assert_eq!(json["anything"]["float"], -1.25e-10);
    assert_eq!(
        json["anything"]["text"],
        "\u{2018}quoted\u{2019} \u{201A}low\u{201B} 'plain'"
    );
    assert_eq!(json["anything"]["with space"], json!([1, []]));
    assert_eq!(json["anything"]["nested"], json!({"if": false}));
    assert_eq!(
        invocation.module,
        PsValue::Hash(vec![
            (
                "ModuleName".into(),
                PsValue::Str("PwshlibFixtureDsc".into())
            ),
            ("RequiredVersion".into(), PsValue::Str("0.3.1".into())),
        ])
    );
}

#[test]
fn the_kitchen_sink_script_sets_and_gets() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, r#"{"keys": {"KitchenSink": ["name"]}}"#).unwrap();
    let set = run(&kitchen_sink_set(), &state);
    assert_eq!(
        set,
        json!({"indesiredstate": true, "rebootrequired": false, "errormessage": ""})
    );
    let get = kitchen_sink_set()
        .replace("Method = 'Set'", "Method = 'Get'")
        .replace("name = 'C:\\it''s here'", "name = 'c:\\IT''S HERE'");
    let got = run(&get, &state);
    assert_eq!(got["name"], r"C:\it's here");
    assert_eq!(got["list"], Json::Null);
    assert_eq!(got["bindings"][1]["certificatesubjects"], Json::Null);
    assert_eq!(got["anything"]["with space"], json!([1, null]));
}

/// When the templates are in the tree, a script assembled from them (as
/// docs/behavior.md §7 orders the parts) is read the same way.
#[test]
fn scripts_assembled_from_the_shipped_templates_are_recognised() {
    let templates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates");
    let read = |name: &str| std::fs::read_to_string(templates.join(name)).ok();
    let parts: Option<Vec<String>> = pwshlib_core::templates::PRELUDE_FILES
        .iter()
        .map(|name| read(name))
        .collect();
    let Some(parts) = parts else {
        eprintln!("the invocation templates are not in this tree yet; covered by the fixture");
        return;
    };
    let functions = parts.join("\n");
    let code = format!(
        "{functions}$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n\
         $cred_1 = New-PsCredential -User 'bob' -Password 'pw'\n\
         $InvokeParams = @{{Name = 'FixtureFile'; Method = 'Get'; Property = @{{destinationpath = 'C:\\a'; psdscrunascredential = $cred_1}}; ModuleName = 'PwshlibFixtureDsc'}}\n\
         Invoke-PwshlibDscResource -InvokeParams $InvokeParams\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let got = run(&code, &dir.path().join("state.json"));
    assert_eq!(got, json!({"destinationpath": "C:\\a", "Ensure": "Absent"}));
}

// Values inside CIM instances, as New-CimInstance takes them

use pwshlib_core::script::{build_script_with, InvocableResource};
use pwshlib_core::{Map, TypeDef, Value};

fn definition(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (Value::sym(k), v)).collect())
}

/// A scaffolded type whose CIM instances have typed members, a credential
/// member, and a free-form one.
fn site_typedef() -> TypeDef {
    let attribute = |type_string: &str, mof: &str, embedded: bool, namevar: bool| {
        let mut pairs = vec![
            ("type", Value::str(type_string)),
            ("mof_type", Value::str(mof)),
            ("mof_is_embedded", Value::Bool(embedded)),
        ];
        if namevar {
            pairs.push(("behaviour", Value::sym("namevar")));
            pairs.push(("mandatory_for_get", Value::Bool(true)));
        }
        definition(pairs)
    };
    let sites = "Optional[Array[Struct[{ host => String, ports => Optional[Array[Integer[0, 4294967295]]], \
                 tags => Optional[Array[String]], weights => Optional[Array[Float]], \
                 login => Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]], \
                 note => Optional[String], settings => Optional[Hash] }]]]";
    TypeDef::from_definition(&definition(vec![
        ("name", Value::str("dsc_fixturesite")),
        ("dscmeta_resource_friendly_name", Value::str("FixtureSite")),
        ("dscmeta_resource_name", Value::str("MSFT_FixtureSite")),
        ("dscmeta_resource_implementation", Value::str("MOF")),
        ("dscmeta_module_name", Value::str("PwshlibFixtureDsc")),
        ("dscmeta_module_version", Value::str("1.2.0")),
        (
            "attributes",
            definition(vec![
                ("dsc_name", attribute("String", "String", false, true)),
                (
                    "dsc_sites",
                    attribute(sites, "MSFT_FixtureSite[]", true, false),
                ),
            ]),
        ),
    ]))
    .unwrap()
}

fn hash(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (Value::str(k), v)).collect())
}

fn site_script(sites: Value) -> Result<pwshlib_core::script::Script, pwshlib_core::Error> {
    let should: Map = [
        (Value::sym("dsc_name"), Value::str("web")),
        (Value::sym("dsc_sites"), sites),
    ]
    .into_iter()
    .collect();
    let resource = InvocableResource::new(
        &site_typedef(),
        &should,
        DscMethod::Set,
        "C:/puppet/lib/puppet_x/pwshlibfixturedsc/dsc_resources",
    )?;
    let mut counter = 0;
    build_script_with(&resource, &mut |prefix| {
        counter += 1;
        format!("{prefix}{counter}")
    })
}

/// The data form of a script (its body, its credential bound as the host
/// binds it) reads as its inline form does; unbound, it is refused, as
/// under Set-StrictMode.
fn assert_data_form_reads_as_inline(script: &pwshlib_core::script::Script) {
    let bound: Vec<BoundSecret> = script
        .bindings()
        .iter()
        .map(|binding| match &binding.value {
            BoundValue::Credential { user, password, .. } => BoundSecret {
                name: binding.name.clone(),
                value: SecretValue::Credential {
                    user: user.clone(),
                    password: password.clone(),
                },
            },
            other => panic!("only the credential is bound here, not {other:?}"),
        })
        .collect();
    let tree = pwshlib_pslint::parse_tree(script.body()).unwrap();
    let from_data = read_invocation_bound(script.body(), &tree, Edition::Desktop, &bound)
        .unwrap()
        .unwrap();
    let from_text = read_invocation(script.text()).unwrap().unwrap();
    assert_eq!(
        from_data
            .properties
            .iter()
            .map(|(k, v)| (k, v.to_json()))
            .collect::<Vec<_>>(),
        from_text
            .properties
            .iter()
            .map(|(k, v)| (k, v.to_json()))
            .collect::<Vec<_>>()
    );
    assert!(
        read_invocation_bound(script.body(), &tree, Edition::Desktop, &[]).is_err(),
        "a script whose secrets are not bound must not read as whole"
    );
}

#[test]
fn nested_cim_values_are_built_in_forms_new_ciminstance_takes() {
    let secret = || Value::Sensitive(Box::new(Value::str("s3cr3t-Pa55")));
    let sites = Value::Array(vec![
        hash(vec![
            ("host", Value::str("a")),
            ("ports", Value::Array(vec![])),
            ("tags", Value::Array(vec![])),
            (
                "weights",
                Value::Array(vec![Value::Int(1), Value::Float(2.5)]),
            ),
            (
                "login",
                hash(vec![("user", Value::str("svc")), ("password", secret())]),
            ),
            ("note", Value::Nil),
            ("unknown", Value::Array(vec![])),
        ]),
        hash(vec![
            ("host", Value::str("b")),
            (
                "ports",
                Value::Array(vec![Value::Int(80), Value::Int(3_000_000_000)]),
            ),
        ]),
    ]);
    let script = site_script(sites).unwrap();
    let cim_lines: Vec<&str> = script
        .body()
        .lines()
        .filter(|l| l.starts_with("$cim_"))
        .collect();
    assert_eq!(
        cim_lines,
        [
            // From the credential the host binds.
            "$cim_1 = New-PwshlibCredentialInstance -Credential $cred_1",
            // nil and the empty array the type does not name are left
            // out; the empty arrays it names are typed; the mixed one
            // (Int32 and Double) is cast to the member's element type.
            "$cim_2 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureSite' -Property @{host = 'a'; ports = [uint32[]]@(); tags = [string[]]@(); weights = [double[]]@(1, 2.5); login = $cim_1}",
            // Int32 and Int64 literals are two CIM types too.
            "$cim_3 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureSite' -Property @{host = 'b'; ports = [uint32[]]@(80, 3000000000)}",
        ]
    );
    assert!(!script.body().contains("s3cr3t"), "{}", script.body());
    assert_data_form_reads_as_inline(&script);
    // The password is still a tracked secret.
    assert!(
        !script.redacted().contains("s3cr3t"),
        "{}",
        script.redacted()
    );
    assert!(script
        .redacted()
        .contains("-Password '#<Sensitive [value redacted]>'"));
    // The simulated host, which refuses what New-CimInstance refuses,
    // reads the whole script.
    let invocation = read_invocation(script.text()).unwrap().unwrap();
    let sites = invocation
        .properties
        .iter()
        .find(|(k, _)| k == "sites")
        .unwrap()
        .1
        .to_json();
    assert_eq!(
        sites[0]["login"],
        json!({"UserName": "svc", "Password": "s3cr3t-Pa55", "cim_instance_type": "MSFT_Credential"})
    );
    assert_eq!(sites[0]["ports"], json!([]));
    assert!(sites[0].get("note").is_none());
    assert_eq!(sites[1]["ports"], json!([80, 3_000_000_000u64]));
}

#[test]
fn a_plain_nested_hash_or_an_untypable_array_is_refused_naming_its_path() {
    let cases = [
        (
            hash(vec![("settings", hash(vec![("mode", Value::str("fast"))]))]),
            "dsc_sites.settings: ",
            "plain hashtable",
        ),
        (
            hash(vec![(
                "unknown",
                Value::Array(vec![Value::Int(1), Value::str("x")]),
            )]),
            "dsc_sites.unknown: ",
            "mixes value types",
        ),
    ];
    for (site, path, why) in cases {
        let err = site_script(Value::Array(vec![site]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(path), "{err}");
        assert!(err.contains(why), "{err}");
    }
}

/// What the builder wrote before: each of these makes real New-CimInstance
/// throw (MMI's CimConverter finds no CIM type), and the simulated host
/// refuses it; the forms the builder writes now pass.
#[test]
fn the_simulated_new_ciminstance_refuses_what_the_real_one_refuses() {
    let script = |property: &str, prelude: &str| {
        format!(
            "{prelude}$cim_1 = New-CimInstance -ClientOnly -ClassName 'MSFT_X' -Property @{{{property}}}\n\
             $InvokeParams = @{{Name = 'X'; Method = 'Set'; Property = @{{inst = $cim_1}}; ModuleName = 'M'}}\n"
        )
    };
    let cred = "$cred_1 = New-PsCredential -User 'u' -Password 'p'\n";
    for (property, prelude) in [
        ("a = $null", ""),
        ("a = @()", ""),
        ("a = @($null)", ""),
        ("a = @{b = 1}", ""),
        ("a = $cred_1", cred),
        ("a = @(1, 'x')", ""),
        ("a = @(1, 3000000000)", ""),
        ("a = @(@('x'), @('y'))", ""),
        ("a = [object[]]@()", ""),
    ] {
        let err = read_invocation(&script(property, prelude)).unwrap_err();
        assert!(err.contains("New-CimInstance"), "{property}: {err}");
        assert!(err.contains("'a'"), "{property}: {err}");
    }
    for property in [
        "a = 'x'",
        "a = @('x', 'y')",
        "a = @('x', $null)",
        "a = [string[]]@()",
        "a = [uint32[]]@(1, 3000000000)",
        "a = [CimInstance[]]@()",
        "a = [object[]]@('x')",
        "a = [DateTime]'2024-01-02T03:04:05Z'",
    ] {
        assert!(read_invocation(&script(property, "")).is_ok(), "{property}");
    }
}
