//! The DSC engine driven the way the main loop drives it: scripts in the
//! shape of docs/behavior.md §7 through `handle_with_env`, a temporary
//! state file and call log per test.

use std::collections::HashMap;
use std::path::PathBuf;

use pwshlib_sim::dsc::handle_with_env;
use pwshlib_sim::faults::{COLLISION_MESSAGE, LOGON_FAILURE_MESSAGE, MALFORMED_STDOUT};
use pwshlib_sim::outcome::Outcome;
use serde_json::{json, Value as Json};

const PREAMBLE: &str = r#"$script:ErrorActionPreference = 'Stop'
$script:WarningPreference = 'SilentlyContinue'
function New-PsCredential {
  param($User, $Password)
  $InvokeParams = @{Name = 'Decoy'; Method = 'Set'}
  New-Object System.Management.Automation.PSCredential($User, (ConvertTo-SecureString $Password -AsPlainText -Force))
}
$Response = @{indesiredstate = $false; rebootrequired = $false; errormessage = ''}
"#;

const POSTSCRIPT: &str = r#"
try {
  $Result = Invoke-DscResource @InvokeParams
} catch {
  $Response.errormessage = $_.Exception.Message
}
$Result | ConvertTo-Json -Compress
"#;

const MODULE: &str = "@{ModuleName = 'C:/puppet/lib/puppet_x/pwshlibfixturedsc/dsc_resources/PwshlibFixtureDsc/PwshlibFixtureDsc.psd1'; RequiredVersion = '1.0.0'}";

/// A script as the provider builds it: `variables` are the credential and
/// CIM lines, `properties` the body of the Property hashtable.
fn script(variables: &str, resource: &str, method: &str, properties: &str) -> String {
    format!(
        "{PREAMBLE}{variables}\n$InvokeParams = @{{Name = '{resource}'; Method = '{method}'; Property = @{{{properties}}}; ModuleName = {MODULE}}}\n{POSTSCRIPT}"
    )
}

struct Sim {
    _dir: tempfile::TempDir,
    state: PathBuf,
    log: PathBuf,
    env: HashMap<String, String>,
}

impl Sim {
    fn new() -> Sim {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let log = dir.path().join("calls.jsonl");
        let mut env = HashMap::new();
        env.insert("PWSHLIB_SIM_STATE".to_owned(), state.display().to_string());
        env.insert("PWSHLIB_SIM_LOG".to_owned(), log.display().to_string());
        Sim {
            _dir: dir,
            state,
            log,
            env,
        }
    }

    fn with_state(self, doc: &Json) -> Sim {
        std::fs::write(&self.state, doc.to_string()).unwrap();
        self
    }

    fn set_env(&mut self, name: &str, value: &str) {
        self.env.insert(name.to_owned(), value.to_owned());
    }

    fn outcome(&self, code: &str) -> Option<Outcome> {
        let env = self.env.clone();
        handle_with_env(code, 5_000, &move |name| env.get(name).cloned())
    }

    /// The result JSON of a DSC call that answered normally.
    fn json(&self, code: &str) -> Json {
        match self.outcome(code) {
            Some(outcome) => reply_json(outcome),
            None => panic!("not recognised as a DSC invocation"),
        }
    }

    fn get(&self, properties: &str) -> Json {
        self.json(&script("", "FixtureFile", "Get", properties))
    }

    fn set(&self, properties: &str) -> Json {
        self.json(&script("", "FixtureFile", "Set", properties))
    }

    fn test(&self, properties: &str) -> Json {
        self.json(&script("", "FixtureFile", "Test", properties))
    }

    /// The result JSON of a Test of `resource` after `variables`.
    fn test_of(&self, variables: &str, resource: &str, properties: &str) -> Json {
        self.json(&script(variables, resource, "Test", properties))
    }

    fn log(&self) -> Vec<Json> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn state(&self) -> Json {
        serde_json::from_str(&std::fs::read_to_string(&self.state).unwrap()).unwrap()
    }
}

fn reply_json(outcome: Outcome) -> Json {
    match outcome {
        Outcome::Reply {
            stdout: Some(stdout),
            errormessage: None,
            exitcode: 0,
            ..
        } => {
            assert!(
                stdout.ends_with('\n') && stdout.trim_end().lines().count() == 1,
                "{stdout:?}"
            );
            serde_json::from_str(stdout.trim_end()).unwrap()
        }
        Outcome::Sleep { then, .. } => reply_json(*then),
        other => panic!("expected a result on stdout, got {}", describe(&other)),
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Reply {
            stdout,
            errormessage,
            exitcode,
            ..
        } => format!("Reply(stdout {stdout:?}, errormessage {errormessage:?}, exit {exitcode})"),
        Outcome::Sleep { millis, then, .. } => format!("Sleep({millis}, {})", describe(then)),
        Outcome::HangForever => "HangForever".to_owned(),
        Outcome::Crash => "Crash".to_owned(),
    }
}

fn script_error(outcome: Option<Outcome>) -> String {
    match outcome {
        Some(Outcome::Reply {
            stdout: None,
            errormessage: Some(message),
            ..
        }) => message,
        Some(other) => panic!("expected a script error, got {}", describe(&other)),
        None => panic!("expected a script error, got None"),
    }
}

const PATH_A: &str = r"destinationpath = 'C:\Temp\A.txt'";

// Recognising scripts

#[test]
fn code_that_is_not_a_dsc_invocation_is_left_to_echo_mode() {
    let sim = Sim::new();
    assert!(sim.outcome("Write-Output 'hello'").is_none());
    assert!(sim.outcome("$x = @{Name = 'a'}\n$x").is_none());
    assert!(sim.outcome("").is_none());
    // A helper function that mentions $InvokeParams does not count.
    assert!(sim.outcome(PREAMBLE).is_none());
    assert!(sim.log().is_empty());
}

/// A Get of PATH_A with `edit` applied to its text: refused as not
/// parsing, before anything is played. The message, for more checks.
fn refused_as_not_parsing(edit: impl Fn(String) -> String) -> String {
    let sim = Sim::new();
    let message = script_error(sim.outcome(&edit(script("", "FixtureFile", "Get", PATH_A))));
    assert!(message.contains("does not parse"), "{message}");
    assert!(sim.log().is_empty());
    message
}

#[test]
fn a_dsc_script_that_does_not_parse_is_rejected() {
    refused_as_not_parsing(|code| code.replace("Property = @{", "Property = @{ ("));
}

/// A NUL before `$InvokeParams` used to pass the host's parse
/// check and then hide the call from the engine ("not a DSC call"). The one
/// check (`pslint`) refuses it, here as in the main loop.
#[test]
fn a_nul_before_invoke_params_is_rejected_as_not_parsing() {
    let message = refused_as_not_parsing(|code| code.replace("$InvokeParams", "\0$InvokeParams"));
    assert!(message.contains("NUL"), "{message}");
    let sim = Sim::new();
    // Inside a string literal a NUL is text, as PowerShell reads it.
    let in_string = script(
        "",
        "FixtureFile",
        "Get",
        "destinationpath = 'C:\\Temp\\A\0.txt'",
    );
    assert!(sim.json(&in_string).is_object());
}

#[test]
fn values_outside_the_subset_are_errors_not_guesses() {
    let sim = Sim::new();
    // Each Get's properties, and what its error must name.
    for (properties, named) in [
        ("destinationpath = Get-Date", "Get-Date"),
        ("destinationpath = 1 + 2", "1 + 2"),
        ("credential = $cred_missing", "$cred_missing"),
        ("a = 1; A = 2", "Duplicate keys"),
    ] {
        let message = script_error(sim.outcome(&script("", "FixtureFile", "Get", properties)));
        assert!(message.contains(named), "{properties}: {message}");
    }
    let message = script_error(sim.outcome(&script("", "FixtureFile", "Frobnicate", PATH_A)));
    assert!(message.contains("Method"), "{message}");
    let message =
        script_error(sim.outcome(&script("", "FixtureFile", "Get", "when = [DateTime]'soon'")));
    assert!(message.contains("DateTime"), "{message}");
}

// Get, Set, Test

#[test]
fn get_of_a_missing_resource_is_absent_and_learns_the_keys() {
    let sim = Sim::new();
    let result = sim.get(PATH_A);
    assert_eq!(
        result,
        json!({"destinationpath": r"C:\Temp\A.txt", "Ensure": "Absent"})
    );
    assert_eq!(
        sim.state()["keys"],
        json!({"FixtureFile": ["destinationpath"]})
    );
    let log = sim.log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["method"], "Get");
    assert_eq!(log[0]["resource"], "FixtureFile");
    assert_eq!(
        log[0]["properties"],
        json!({"destinationpath": r"C:\Temp\A.txt"})
    );
    assert_eq!(log[0]["module"]["RequiredVersion"], "1.0.0");
    assert_eq!(log[0]["run_as_user"], Json::Null);
    assert_eq!(log[0]["fault"], Json::Null);
    assert_eq!(log[0]["pid"], json!(std::process::id()));
}

#[test]
fn set_then_get_keeps_the_stored_casing_and_finds_keys_without_case() {
    let sim = Sim::new();
    sim.get(PATH_A);
    let set = sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'; contents = 'Hello World'; attributes = @('Hidden', 'ReadOnly'); force = $true");
    assert_eq!(
        set,
        json!({"indesiredstate": true, "rebootrequired": false, "errormessage": ""})
    );
    let got = sim.get(r"destinationpath = 'c:\temp\a.TXT'");
    assert_eq!(
        got,
        json!({
            "destinationpath": r"C:\Temp\A.txt",
            "ensure": "Present",
            "contents": "Hello World",
            "attributes": ["Hidden", "ReadOnly"],
            "force": true
        })
    );
    // A later Set with other casing: the value takes the new casing, the
    // property keeps its stored name.
    sim.set(r"DestinationPath = 'c:\temp\a.txt'; Contents = 'HELLO world'");
    let got = sim.get(r"destinationpath = 'C:\TEMP\A.TXT'");
    assert_eq!(got["contents"], "HELLO world");
    assert!(got.get("Contents").is_none());
    assert_eq!(got["destinationpath"], r"c:\temp\a.txt");
    assert_eq!(
        sim.state()["resources"]["FixtureFile"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn found_resources_without_ensure_come_back_present() {
    let sim = Sim::new();
    sim.get(PATH_A);
    sim.set(r"destinationpath = 'C:\Temp\A.txt'; contents = 'x'");
    assert_eq!(sim.get(PATH_A)["Ensure"], "Present");
}

#[test]
fn set_absent_removes_the_resource() {
    let sim = Sim::new();
    sim.get(PATH_A);
    sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'; contents = 'x'");
    sim.set(r"destinationpath = 'C:\temp\a.txt'; ensure = 'absent'");
    assert_eq!(sim.get(PATH_A)["Ensure"], "Absent");
    assert_eq!(sim.state()["resources"]["FixtureFile"], json!([]));
}

#[test]
fn resources_are_told_apart_by_all_their_keys() {
    let sim = Sim::new();
    let get = |key: &str, value: &str| {
        sim.json(&script(
            "",
            "FixtureRegistry",
            "Get",
            &format!("key = '{key}'; valuename = '{value}'"),
        ))
    };
    let set = |key: &str, value: &str, data: &str| {
        sim.json(&script(
            "",
            "FixtureRegistry",
            "Set",
            &format!(
                "key = '{key}'; valuename = '{value}'; ensure = 'Present'; valuedata = @('{data}')"
            ),
        ))
    };
    get(r"HKLM:\Software\A", "One");
    set(r"HKLM:\Software\A", "One", "1");
    set(r"HKLM:\Software\A", "Two", "2");
    assert_eq!(get(r"hklm:\software\a", "one")["valuedata"], json!(["1"]));
    assert_eq!(get(r"HKLM:\Software\A", "TWO")["valuedata"], json!(["2"]));
    assert_eq!(get(r"HKLM:\Software\B", "One")["Ensure"], "Absent");
}

#[test]
fn test_compares_like_dsc() {
    let sim = Sim::new();
    sim.get(PATH_A);
    sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'; contents = 'Hello'; attributes = @('Hidden', 'ReadOnly'); size = 5");
    let in_sync = |props: &str| sim.test(props)["indesiredstate"].as_bool().unwrap();
    assert!(in_sync(
        r"destinationpath = 'c:\temp\a.txt'; ensure = 'present'; contents = 'HELLO'"
    ));
    assert!(in_sync(
        r"destinationpath = 'C:\Temp\A.txt'; attributes = @('readonly', 'hidden')"
    ));
    assert!(in_sync(r"destinationpath = 'C:\Temp\A.txt'; size = '5'"));
    assert!(!in_sync(
        r"destinationpath = 'C:\Temp\A.txt'; contents = 'Goodbye'"
    ));
    assert!(!in_sync(
        r"destinationpath = 'C:\Temp\A.txt'; attributes = @('Hidden')"
    ));
    assert!(!in_sync(
        r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Absent'"
    ));
    assert!(!in_sync(
        r"destinationpath = 'C:\Temp\Missing.txt'; ensure = 'Present'"
    ));
    assert!(in_sync(
        r"destinationpath = 'C:\Temp\Missing.txt'; ensure = 'Absent'"
    ));
    assert_eq!(
        sim.test(PATH_A),
        json!({"indesiredstate": true, "errormessage": ""})
    );
}

#[test]
fn declared_keys_allow_set_before_any_get_and_unknown_keys_are_an_error() {
    let sim = Sim::new().with_state(&json!({"keys": {"fixturefile": ["DestinationPath"]}}));
    sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'");
    assert_eq!(sim.get(PATH_A)["ensure"], "Present");
    assert_eq!(
        sim.state()["keys"],
        json!({"fixturefile": ["DestinationPath"]})
    );

    let fresh = Sim::new();
    let result = fresh.json(&script("", "FixtureUser", "Set", "username = 'bob'"));
    let message = result["errormessage"].as_str().unwrap();
    assert!(
        message.contains("key properties of FixtureUser are unknown"),
        "{message}"
    );
    assert_eq!(result["indesiredstate"], false);
    let result = fresh.test_of("", "FixtureUser", "username = 'bob'");
    assert!(result["errormessage"].as_str().unwrap().contains("unknown"));
}

#[test]
fn types_listed_in_no_ensure_never_gain_ensure() {
    let sim = Sim::new().with_state(&json!({"no_ensure": ["FixtureService"]}));
    let get = || sim.json(&script("", "FixtureService", "Get", "name = 'Spooler'"));
    assert_eq!(get(), json!({"name": "Spooler"}));
    sim.json(&script(
        "",
        "FixtureService",
        "Set",
        "name = 'Spooler'; state = 'Running'",
    ));
    assert_eq!(get(), json!({"name": "Spooler", "state": "Running"}));
}

#[test]
fn read_only_values_can_be_seeded_in_the_state_file() {
    let sim = Sim::new().with_state(&json!({
        "keys": {"FixtureFile": ["DestinationPath"]},
        "resources": {"FixtureFile": [
            {"DestinationPath": r"C:\Temp\A.txt", "Ensure": "Present", "Checksum": "abc", "Contents": ""}
        ]}
    }));
    assert_eq!(
        sim.get(PATH_A),
        json!({"DestinationPath": r"C:\Temp\A.txt", "Ensure": "Present", "Checksum": "abc", "Contents": null})
    );
}

#[test]
fn empty_and_typed_empty_arrays() {
    let sim = Sim::new();
    sim.get(PATH_A);
    sim.set(r"destinationpath = 'C:\Temp\A.txt'; attributes = [string[]]@(); tags = @(); one = @('x'); nested = @(@('a', 'b'), @('c'))");
    let stored = &sim.state()["resources"]["FixtureFile"][0];
    assert_eq!(stored["attributes"], json!([]));
    assert_eq!(stored["tags"], json!([]));
    assert_eq!(stored["one"], json!(["x"]));
    assert_eq!(stored["nested"], json!([["a", "b"], ["c"]]));
    let got = sim.get(PATH_A);
    assert_eq!(got["attributes"], Json::Null);
    assert_eq!(got["tags"], Json::Null);
    assert!(
        sim.test(r"destinationpath = 'C:\Temp\A.txt'; attributes = [string[]]@()")
            ["indesiredstate"]
            .as_bool()
            .unwrap()
    );
    assert!(
        !sim.test(r"destinationpath = 'C:\Temp\A.txt'; one = [string[]]@()")["indesiredstate"]
            .as_bool()
            .unwrap()
    );
}

#[test]
fn scalar_literals() {
    let sim = Sim::new();
    sim.get(PATH_A);
    sim.set(
        r"destinationpath = 'C:\Temp\A.txt'; n = 42; neg = -7; big = 4294967295; f = 1.5; hex = 0x10; yes = $true; no = $false; nothing = $null; cast = [uint32]3; 'quoted key' = 'v'; h = @{inner = 'x'; 'two words' = 2}",
    );
    let got = sim.get(PATH_A);
    assert_eq!(got["n"], 42);
    assert_eq!(got["neg"], -7);
    assert_eq!(got["big"], 4294967295u64);
    assert_eq!(got["f"], 1.5);
    assert_eq!(got["hex"], 16);
    assert_eq!(got["yes"], true);
    assert_eq!(got["no"], false);
    assert_eq!(got["nothing"], Json::Null);
    assert_eq!(got["cast"], 3);
    assert_eq!(got["quoted key"], "v");
    assert_eq!(got["h"], json!({"inner": "x", "two words": 2}));
}

#[test]
fn quotes_of_every_kind_survive() {
    let sim = Sim::new();
    sim.get(PATH_A);
    // The provider doubles ', U+2018, U+2019, U+201A and U+201B.
    sim.set("destinationpath = 'C:\\Temp\\A.txt'; contents = 'it''s \u{2018}\u{2018}a\u{2019}\u{2019} \u{201A}\u{201A}b\u{201B}\u{201B} \"q\" $x `n @'");
    assert_eq!(
        sim.get(PATH_A)["contents"],
        "it's \u{2018}a\u{2019} \u{201A}b\u{201B} \"q\" $x `n @"
    );
}

#[test]
fn multiline_hashtables_and_here_strings() {
    let sim = Sim::new();
    let code = format!(
        "{PREAMBLE}$InvokeParams = @{{\n  Name = 'FixtureFile'\n  Method = 'Get'\n  Property = @{{\n    destinationpath = @'\nC:\\Temp\\A.txt\n'@\n  }}\n  ModuleName = 'PwshlibFixtureDsc'\n}}\n{POSTSCRIPT}"
    );
    assert_eq!(sim.json(&code)["destinationpath"], r"C:\Temp\A.txt");
    assert_eq!(sim.log()[0]["module"], "PwshlibFixtureDsc");
}

#[test]
fn datetimes_are_iso8601_and_compare_as_instants() {
    let sim = Sim::new();
    let schedule =
        |method: &str, props: &str| sim.json(&script("", "FixtureSchedule", method, props));
    schedule("Get", "name = 'Nightly'");
    schedule(
        "Set",
        "name = 'Nightly'; ensure = 'Present'; starttime = [DateTime]'2024-01-02T03:04:05+02:00'",
    );
    assert_eq!(
        schedule("Get", "name = 'Nightly'")["starttime"],
        "2024-01-02T01:04:05.0000000Z"
    );
    assert!(schedule(
        "Test",
        "name = 'Nightly'; starttime = [DateTime]'2024-01-02T01:04:05Z'"
    )["indesiredstate"]
        .as_bool()
        .unwrap());
    assert!(!schedule(
        "Test",
        "name = 'Nightly'; starttime = [DateTime]'2024-01-02T03:04:05Z'"
    )["indesiredstate"]
        .as_bool()
        .unwrap());
}

#[test]
fn credentials_arrive_intact_and_come_back_in_the_5_1_shape() {
    let sim = Sim::new();
    let password = "p''ss\u{2019}\u{2019}w\"ord";
    let variables = format!(
        "$cred_3f2a = New-PsCredential -User 'CONTOSO\\Admin' -Password 'runas''secret'\n$cred_9b1c = New-PsCredential -User 'bob' -Password '{password}'"
    );
    let user =
        |method: &str, props: &str| sim.json(&script(&variables, "FixtureUser", method, props));
    user("Get", "username = 'bob'; psdscrunascredential = $cred_3f2a");
    user(
        "Set",
        "username = 'bob'; ensure = 'Present'; password = $cred_9b1c; psdscrunascredential = $cred_3f2a",
    );
    let got = user("Get", "username = 'BOB'; psdscrunascredential = $cred_3f2a");
    assert_eq!(
        got,
        json!({"username": "bob", "ensure": "Present", "password": {
            "UserName": "bob", "Password": "p'ss\u{2019}w\"ord", "cim_instance_type": "MSFT_Credential"
        }})
    );
    // Keys never include the run-as credential, which is never stored.
    assert_eq!(sim.state()["keys"]["FixtureUser"], json!(["username"]));
    let stored = &sim.state()["resources"]["FixtureUser"][0];
    assert_eq!(
        stored["password"],
        json!({"user": "bob", "password": "p'ss\u{2019}w\"ord"})
    );
    assert!(stored.get("psdscrunascredential").is_none());
    // The log shows secrets in the clear.
    let log = sim.log();
    assert_eq!(log[1]["run_as_user"], r"CONTOSO\Admin");
    assert_eq!(
        log[1]["properties"]["psdscrunascredential"]["password"],
        "runas'secret"
    );
    assert_eq!(
        log[1]["properties"]["password"]["password"],
        "p'ss\u{2019}w\"ord"
    );
    // Test checks the password too.
    assert!(
        user("Test", "username = 'bob'; password = $cred_9b1c")["indesiredstate"]
            .as_bool()
            .unwrap()
    );
    let other = "$cred_1 = New-PsCredential -User 'bob' -Password 'P''SS\u{2019}\u{2019}W\"ORD'";
    let result = sim.test_of(other, "FixtureUser", "username = 'bob'; password = $cred_1");
    assert_eq!(result["indesiredstate"], false);
}

#[test]
fn cim_instances_nest_and_compare_without_order() {
    let sim = Sim::new();
    let variables = "$cim_a1 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureAuthentication' -Property @{anonymous = $true; basic = $false}\n\
         $cim_b2 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureBindingInformation' -Property @{protocol = 'https'; port = 443; certificatesubjects = @('CN=a', 'CN=b'); authentication = $cim_a1}\n\
         $cim_c3 = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureBindingInformation' -Property @{'protocol' = 'http'; 'port' = 80}";
    let site =
        |method: &str, props: &str| sim.json(&script(variables, "FixtureWebsite", method, props));
    site("Get", "name = 'Default'");
    site(
        "Set",
        "name = 'Default'; ensure = 'Present'; bindinginfo = [CimInstance[]]@($cim_b2, $cim_c3)",
    );
    let got = site("Get", "name = 'default'");
    assert_eq!(
        got["bindinginfo"],
        json!([
            {
                "protocol": "https",
                "port": 443,
                "certificatesubjects": ["CN=a", "CN=b"],
                "authentication": {"anonymous": true, "basic": false, "cim_instance_type": "MSFT_FixtureAuthentication"},
                "cim_instance_type": "MSFT_FixtureBindingInformation"
            },
            {"protocol": "http", "port": 80, "cim_instance_type": "MSFT_FixtureBindingInformation"}
        ])
    );
    let reordered = "name = 'Default'; bindinginfo = [CimInstance[]]@($cim_c3, $cim_b2)";
    assert!(site("Test", reordered)["indesiredstate"].as_bool().unwrap());
    let changed = "$cim_x = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureBindingInformation' -Property @{protocol = 'http'; port = 8080}";
    let bindings = "name = 'Default'; bindinginfo = [CimInstance[]]@($cim_x)";
    let result = sim.test_of(changed, "FixtureWebsite", bindings);
    assert_eq!(result["indesiredstate"], false);
}

#[test]
fn a_cim_instance_that_cannot_be_built_is_reported() {
    let sim = Sim::new();
    let variables = "$cim_a1 = New-CimInstance -ClientOnly -ClassName 'MSFT_X' -Property 'oops'";
    let message = script_error(sim.outcome(&script(
        variables,
        "FixtureWebsite",
        "Get",
        "name = 'a'; b = $cim_a1",
    )));
    assert!(
        message.contains("-Property must be a hashtable"),
        "{message}"
    );
}

#[test]
fn without_a_state_file_the_state_lives_in_the_process() {
    let mut sim = Sim::new();
    sim.env.remove("PWSHLIB_SIM_STATE");
    let resource = "InProcessOnlyResource";
    sim.json(&script("", resource, "Get", "id = 'k'"));
    sim.json(&script("", resource, "Set", "id = 'K'; value = 'v'"));
    assert_eq!(
        sim.json(&script("", resource, "Get", "id = 'k'"))["value"],
        "v"
    );
    assert!(!sim.state.exists());
}

#[test]
fn a_state_file_that_is_not_json_fails_the_call_cleanly() {
    let sim = Sim::new();
    std::fs::write(&sim.state, "{not json").unwrap();
    let result = sim.get(PATH_A);
    let message = result["errormessage"].as_str().unwrap();
    assert!(message.contains("not valid JSON"), "{message}");
    assert_eq!(std::fs::read_to_string(&sim.state).unwrap(), "{not json");
}

// Faults

#[test]
fn latency_delays_every_dsc_call() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_LATENCY_MS", "250");
    match sim
        .outcome(&script("", "FixtureFile", "Get", PATH_A))
        .unwrap()
    {
        Outcome::Sleep { millis, then, .. } => {
            assert_eq!(millis, 250);
            assert_eq!(reply_json(*then)["Ensure"], "Absent");
        }
        other => panic!("{}", describe(&other)),
    }
}

#[test]
fn hang_sleeps_past_the_timeout_for_the_selected_resource_only() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_HANG_RESOURCE", r"FixtureFile:C:\Temp\B.txt");
    assert_eq!(sim.get(PATH_A)["Ensure"], "Absent");
    match sim
        .outcome(&script(
            "",
            "FixtureFile",
            "Get",
            r"destinationpath = 'c:\temp\b.txt'",
        ))
        .unwrap()
    {
        Outcome::Sleep { millis, .. } => assert!(millis > 5_000),
        other => panic!("{}", describe(&other)),
    }
    sim.set_env("PWSHLIB_SIM_HANG_RESOURCE", "");
    sim.set_env("PWSHLIB_SIM_HANG_FOREVER_RESOURCE", "Set/FixtureFile");
    assert!(matches!(
        sim.outcome(&script("", "FixtureFile", "Set", PATH_A)),
        Some(Outcome::HangForever)
    ));
    assert_eq!(
        sim.get(PATH_A)["Ensure"],
        "Absent",
        "a hung Set changes nothing"
    );
    assert_eq!(sim.log()[2]["fault"], "hang_forever");
}

#[test]
fn crash_on_the_nth_call_once_even_across_restarts() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_CRASH_ON_CALL", "3");
    let code = script("", "FixtureFile", "Get", PATH_A);
    assert!(matches!(sim.outcome(&code), Some(Outcome::Reply { .. })));
    assert!(matches!(sim.outcome(&code), Some(Outcome::Reply { .. })));
    assert!(matches!(sim.outcome(&code), Some(Outcome::Crash)));
    // The counter is in the state file, so a fresh host does not crash again.
    assert_eq!(sim.state()["counters"]["crash_calls"], 3);
    assert!(matches!(sim.outcome(&code), Some(Outcome::Reply { .. })));
    assert_eq!(sim.log()[2]["fault"], "crash");
}

#[test]
fn crash_resource_counts_only_matching_calls() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_CRASH_RESOURCE", r"FixtureFile:C:\Temp\B.txt");
    sim.get(PATH_A);
    sim.get(PATH_A);
    let b = script(
        "",
        "FixtureFile",
        "Get",
        r"destinationpath = 'C:\Temp\B.txt'",
    );
    assert!(matches!(sim.outcome(&b), Some(Outcome::Crash)));
    assert!(matches!(sim.outcome(&b), Some(Outcome::Reply { .. })));
}

#[test]
fn collisions_n_times_then_success() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_COLLISIONS", "2");
    let expected = json!({"indesiredstate": false, "rebootrequired": false, "errormessage": COLLISION_MESSAGE,
        "errorcategory": "ResourceBusy", "errorcodes": [-2_147_467_259]});
    assert_eq!(sim.get(PATH_A), expected);
    assert_eq!(sim.get(PATH_A), expected);
    assert_eq!(sim.get(PATH_A)["Ensure"], "Absent");
    let faults: Vec<Json> = sim.log().iter().map(|l| l["fault"].clone()).collect();
    assert_eq!(faults, [json!("collision"), json!("collision"), Json::Null]);
    let set = sim.set(PATH_A);
    assert_eq!(set["errormessage"], "");
}

#[test]
fn collisions_can_target_one_resource_and_come_from_the_state_file() {
    let sim = Sim::new().with_state(
        &json!({"faults": {"collisions": 1, "collisions_resource": "Set/FixtureFile"}}),
    );
    assert_eq!(sim.get(PATH_A)["Ensure"], "Absent");
    let set = sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'");
    assert_eq!(set["errormessage"], COLLISION_MESSAGE);
    assert_eq!(set["errorcategory"], "ResourceBusy");
    assert_eq!(
        sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'")["errormessage"],
        ""
    );
    assert_eq!(sim.state()["counters"]["collisions_served"], 1);
}

#[test]
fn logon_failure_for_the_named_run_as_user() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_LOGON_FAILURE_USER", "svc_denied");
    let variables = "$cred_1 = New-PsCredential -User 'CONTOSO\\svc_denied' -Password 'x'\n$cred_2 = New-PsCredential -User 'CONTOSO\\svc_ok' -Password 'x'";
    let denied = sim.json(&script(
        variables,
        "FixtureFile",
        "Get",
        &format!("{PATH_A}; psdscrunascredential = $cred_1"),
    ));
    assert_eq!(
        denied,
        json!({"indesiredstate": false, "rebootrequired": false, "errormessage": LOGON_FAILURE_MESSAGE,
            "errorcategory": "NotSpecified", "errorcodes": [-2_147_023_511]})
    );
    let allowed = sim.json(&script(
        variables,
        "FixtureFile",
        "Get",
        &format!("{PATH_A}; psdscrunascredential = $cred_2"),
    ));
    assert_eq!(allowed["Ensure"], "Absent");
    assert_eq!(
        sim.get(PATH_A)["Ensure"],
        "Absent",
        "no run-as credential, no logon"
    );
    let run_as = format!("{PATH_A}; psdscrunascredential = $cred_1");
    let test = sim.test_of(variables, "FixtureFile", &run_as);
    assert_eq!(
        test,
        json!({"indesiredstate": false, "errormessage": LOGON_FAILURE_MESSAGE,
            "errorcategory": "NotSpecified", "errorcodes": [-2_147_023_511]})
    );
    // A German Windows words it in German; the code is the same.
    sim.set_env("PWSHLIB_SIM_LOCALIZED", "1");
    let localized = sim.json(&script(
        variables,
        "FixtureFile",
        "Get",
        &format!("{PATH_A}; psdscrunascredential = $cred_1"),
    ));
    assert!(localized["errormessage"]
        .as_str()
        .unwrap()
        .starts_with("Anmeldung fehlgeschlagen"));
    assert_eq!(localized["errorcodes"], json!([-2_147_023_511]));
}

#[test]
fn malformed_json_for_the_selected_resource() {
    let mut sim = Sim::new();
    sim.set_env(
        "PWSHLIB_SIM_MALFORMED_JSON",
        r"FixtureFile:DestinationPath=C:\Temp\B.txt",
    );
    assert_eq!(sim.get(PATH_A)["Ensure"], "Absent");
    match sim
        .outcome(&script(
            "",
            "FixtureFile",
            "Get",
            r"destinationpath = 'C:\Temp\B.txt'",
        ))
        .unwrap()
    {
        Outcome::Reply {
            stdout: Some(stdout),
            errormessage: None,
            ..
        } => {
            assert_eq!(stdout.trim_end(), MALFORMED_STDOUT);
            assert!(serde_json::from_str::<Json>(&stdout).is_err());
        }
        other => panic!("{}", describe(&other)),
    }
    sim.set_env("PWSHLIB_SIM_MALFORMED_JSON", "all");
    assert!(matches!(
        sim.outcome(&script("", "FixtureFile", "Test", PATH_A)),
        Some(Outcome::Reply { stdout: Some(s), .. }) if s.trim_end() == MALFORMED_STDOUT
    ));
}

#[test]
fn reboot_required_on_set() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_REBOOT_REQUIRED", "true");
    sim.get(PATH_A);
    assert_eq!(
        sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'"),
        json!({"indesiredstate": true, "rebootrequired": true, "errormessage": ""})
    );
    sim.set_env("PWSHLIB_SIM_REBOOT_REQUIRED", "FixtureUser");
    assert_eq!(
        sim.set(r"destinationpath = 'C:\Temp\A.txt'; ensure = 'Present'")["rebootrequired"],
        false
    );
}

#[test]
fn a_bad_fault_setting_is_reported_in_the_result() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_COLLISIONS", "lots");
    let message = sim.get(PATH_A)["errormessage"].as_str().unwrap().to_owned();
    assert!(message.contains("PWSHLIB_SIM_COLLISIONS"), "{message}");
}

#[test]
fn two_engines_sharing_a_state_file_do_not_lose_writes() {
    let sim = Sim::new().with_state(&json!({"keys": {"FixtureFile": ["destinationpath"]}}));
    let env = sim.env.clone();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let env = env.clone();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let code = script(
                        "",
                        "FixtureFile",
                        "Set",
                        &format!("destinationpath = 'C:\\{t}\\{i}'; ensure = 'Present'"),
                    );
                    let outcome = handle_with_env(&code, 5_000, &|name| env.get(name).cloned());
                    assert!(matches!(
                        outcome,
                        Some(Outcome::Reply {
                            errormessage: None,
                            ..
                        })
                    ));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(
        sim.state()["resources"]["FixtureFile"]
            .as_array()
            .unwrap()
            .len(),
        40
    );
    assert_eq!(sim.log().len(), 40);
}

/// Playing PowerShell 7, a call with a run-as credential
/// fails with the prelude's message, which names the resource and says
/// why; without one, or playing 5.1, it runs.
#[test]
fn powershell_7_refuses_a_run_as_credential_naming_the_resource() {
    let mut sim = Sim::new();
    let variables = "$cred_1 = New-PsCredential -User 'CONTOSO\\Admin' -Password 'runas-secret'";
    let get = |sim: &Sim, props: &str| sim.json(&script(variables, "FixtureUser", "Get", props));
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.4.6");
    let refused = get(&sim, "username = 'bob'; psdscrunascredential = $cred_1");
    assert_eq!(
        refused["errormessage"],
        "The DSC resource 'FixtureUser' cannot run as PsDscRunAsCredential on PowerShell 7.4.6: \
         Invoke-DscResource in PowerShell 7 (PSDesiredStateConfiguration 2.x) does not support PsDscRunAsCredential. \
         Remove dsc_psdscrunascredential, or run this resource with Windows PowerShell 5.1."
    );
    assert!(!refused.to_string().contains("runas-secret"));
    assert_eq!(sim.log()[0]["fault"], "run_as_on_powershell_7");
    let plain = get(&sim, "username = 'bob'");
    assert_eq!(plain["username"], "bob");
    sim.set_env("PWSHLIB_SIM_PSVERSION", "5.1.17763.1");
    let on_5_1 = get(&sim, "username = 'bob'; psdscrunascredential = $cred_1");
    assert_eq!(on_5_1["username"], "bob");
}

/// A class-based resource's embedded instances come from
/// the prelude's New-PwshlibEmbeddedInstance(Array). Playing PowerShell 7
/// they are hashtables that PowerShell converts to the nested class (so a
/// `$null` member is fine, and a credential is a PSCredential); playing 5.1
/// they are CIM instances, which New-CimInstance's rules apply to.
#[test]
fn a_class_based_resources_embedded_instances_on_each_edition() {
    let mut sim = Sim::new();
    let variables = "$cim_1 = New-PwshlibEmbeddedInstance -ClassName 'MSFT_Credential' -Property @{UserName = 'svc'; Password = 'p''w'}\n\
         $cim_2 = New-PwshlibEmbeddedInstance -ClassName 'RealOption' -Property @{Key = 'a'; Mode = 'Slow'; Login = $cim_1}\n\
         $cim_3 = New-PwshlibEmbeddedInstance -ClassName 'RealOption' -Property @{Key = 'b'; Mode = $null}\n\
         $cim_4 = New-PwshlibEmbeddedInstanceArray -Instances @($cim_2, $cim_3)";
    let pool = |sim: &Sim, method: &str| {
        sim.outcome(&script(
            variables,
            "RealPool",
            method,
            "name = 'p'; options = $cim_4",
        ))
    };
    // 5.1: New-CimInstance cannot type the $null member.
    let refused = script_error(pool(&sim, "Set"));
    assert!(
        refused.contains("property 'Mode' of RealOption"),
        "{refused}"
    );
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.6.9");
    // A Get first: the simulator learns the key properties from it.
    sim.json(&script("", "RealPool", "Get", "name = 'p'"));
    let set = reply_json(pool(&sim, "Set").unwrap());
    assert_eq!(set["errormessage"], "", "{set}");
    let state = sim.state();
    assert_eq!(
        state["resources"]["RealPool"][0]["options"],
        json!([
            {"Key": "a", "Mode": "Slow", "Login": {"user": "svc", "password": "p'w"}, "cim_instance_type": "RealOption"},
            {"Key": "b", "Mode": null, "cim_instance_type": "RealOption"}
        ]),
        "{state}"
    );
}

#[test]
fn the_call_log_tells_direct_calls_from_invoke_dsc_resource_calls() {
    // The prelude calls the resource directly unless the script
    // says -ThroughInvokeDscResource (PWSHLIB_DSC_DIRECT=0) or, on Windows
    // PowerShell 5.1, the call runs as PsDscRunAsCredential.
    let sim = Sim::new();
    let direct = format!(
        "{PREAMBLE}$InvokeParams = @{{Name = 'FixtureFile'; Method = 'Get'; Property = @{{{PATH_A}}}; ModuleName = {MODULE}}}\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams\n"
    );
    sim.json(&direct);
    let through = direct.replace(
        "-InvokeParams $InvokeParams\n",
        "-InvokeParams $InvokeParams -ThroughInvokeDscResource\n",
    );
    sim.json(&through);
    let variables = "$cred_1 = New-PsCredential -User 'CONTOSO\\Admin' -Password 'runas''secret'";
    let run_as = format!("{PATH_A}; psdscrunascredential = $cred_1");
    sim.test_of(variables, "FixtureFile", &run_as);
    let kinds: Vec<Json> = sim.log().iter().map(|line| line["kind"].clone()).collect();
    assert_eq!(
        kinds,
        vec![
            json!("direct"),
            json!("invoke_dsc_resource"),
            json!("invoke_dsc_resource")
        ]
    );
}

#[test]
fn a_51_host_that_is_not_system_marks_direct_calls_and_routes_on_request() {
    // As another account than SYSTEM, a direct
    // call's answer carries the identity record first; -LcmUnlessSystem
    // sends the call through Invoke-DscResource, which writes the machine
    // PSModulePath (and, unelevated, cannot).
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_USER", "CONTOSO\\admin");
    let call = |how: &str| {
        format!(
            "{PREAMBLE}$InvokeParams = @{{Name = 'FixtureFile'; Method = 'Get'; Property = @{{{PATH_A}}}; ModuleName = {MODULE}}}\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams{how} -VendoredPath 'C:/vendored'\n"
        )
    };
    let stdout = |outcome: Option<Outcome>| match outcome {
        Some(Outcome::Reply {
            stdout: Some(text), ..
        }) => text,
        _ => panic!("expected a reply"),
    };
    let direct = stdout(sim.outcome(&call("")));
    let lines: Vec<&str> = direct.lines().collect();
    assert_eq!(lines.len(), 2, "{direct}");
    assert_eq!(
        serde_json::from_str::<Json>(lines[0]).unwrap(),
        json!({"pwshlib_streams": [{"kind": "identity", "text": "CONTOSO\\admin"}]})
    );
    let routed = stdout(sim.outcome(&call(" -LcmUnlessSystem")));
    assert_eq!(routed.lines().count(), 1, "{routed}");
    let log = sim.log();
    let seen: Vec<(Json, Json)> = log
        .iter()
        .map(|line| (line["kind"].clone(), line["machine_module_path"].clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (json!("direct"), json!(false)),
            (json!("invoke_dsc_resource"), json!(true))
        ]
    );
    sim.set_env("PWSHLIB_SIM_ELEVATED", "0");
    let refused = sim.json(&call(" -LcmUnlessSystem"));
    assert_eq!(
        refused["errormessage"],
        json!("Cannot add C:\\vendored to the machine-level PSModulePath, where the LCM finds the module of a call through Invoke-DscResource: Requested registry access is not allowed. Such a call needs an elevated run, as the LCM does.")
    );
    assert_eq!(stdout(sim.outcome(&call(""))).lines().count(), 2);
    // As SYSTEM, -LcmUnlessSystem leaves the call direct and unmarked.
    sim.set_env("PWSHLIB_SIM_USER", "NT AUTHORITY\\SYSTEM");
    assert!(sim
        .json(&call(" -LcmUnlessSystem"))
        .get("errormessage")
        .is_none());
    assert_eq!(sim.log().last().unwrap()["kind"], json!("direct"));
}

#[test]
fn on_powershell_7_a_plain_call_is_direct() {
    // PowerShell 7 needs no PSDesiredStateConfiguration for a resource in
    // PowerShell files: the call is direct.
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.6.9");
    sim.get(PATH_A);
    let kinds: Vec<Json> = sim.log().iter().map(|line| line["kind"].clone()).collect();
    assert_eq!(kinds, vec![json!("direct")]);
}

#[test]
fn a_get_handed_the_desired_state_reports_only_the_keys_of_a_missing_instance() {
    // A Get carries the desired values, which a resource does
    // not report back for an instance it did not find.
    let sim = Sim::new().with_state(&json!({"keys": {"FixtureFile": ["DestinationPath"]}}));
    let get = script(
        "",
        "FixtureFile",
        "Get",
        &format!("{PATH_A}; ensure = 'Present'; contents = 'hi'"),
    );
    assert_eq!(
        sim.json(&get),
        json!({"destinationpath": r"C:\Temp\A.txt", "Ensure": "Absent"})
    );
    sim.set(&format!("{PATH_A}; contents = 'stored'"));
    assert_eq!(
        sim.json(&get),
        json!({"destinationpath": r"C:\Temp\A.txt", "contents": "stored", "Ensure": "Present"})
    );
}

#[test]
fn a_type_whose_get_returns_this_echoes_what_it_was_handed_flagged_on_every_route() {
    let sim = Sim::new().with_state(&json!({
        "keys": {"FixtureClassResource": ["Name"]},
        "get_returns_this": ["FixtureClassResource"],
    }));
    let class_module = "@{ModuleName = 'PwshlibFixtureClass'; RequiredVersion = '1.0.0'}";
    let call = |method: &str, properties: &str, how: &str| {
        format!(
            "{PREAMBLE}$InvokeParams = @{{Name = 'FixtureClassResource'; Method = '{method}'; Property = @{{{properties}}}; ModuleName = {class_module}}}\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams{how}\n"
        )
    };
    sim.json(&call("Set", "name = 'a'; value = 'stored'", ""));
    let wanted = "name = 'a'; value = 'wanted'";
    assert_eq!(
        sim.json(&call("Get", wanted, "")),
        json!({"name": "a", "value": "wanted", "Ensure": "Present", "pwshlib_get_returned_this": true})
    );
    // Through Invoke-DscResource the class's syntax tree says so.
    assert_eq!(
        sim.json(&call("Get", wanted, " -ThroughInvokeDscResource")),
        json!({"name": "a", "value": "wanted", "Ensure": "Present", "pwshlib_get_returned_this": true})
    );
    // Its Test reads the system.
    assert_eq!(
        sim.json(&call("Test", wanted, ""))["indesiredstate"],
        json!(false)
    );
    // A MOF resource (its ModuleName a .psd1) is never flagged.
    let sim = Sim::new().with_state(&json!({
        "keys": {"FixtureFile": ["DestinationPath"]},
        "get_returns_this": ["FixtureFile"],
    }));
    let get = script(
        "",
        "FixtureFile",
        "Get",
        &format!("{PATH_A}; contents = 'x'"),
    );
    assert!(sim.json(&get).get("pwshlib_get_returned_this").is_none());
}

/// The stdout lines of a DSC call that answered, each read as JSON.
fn reply_lines(outcome: Option<Outcome>) -> Vec<Json> {
    match outcome {
        Some(Outcome::Reply {
            stdout: Some(stdout),
            exitcode: 0,
            ..
        }) => stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
        Some(other) => panic!("expected a result on stdout, got {}", describe(&other)),
        None => panic!("not recognised as a DSC invocation"),
    }
}

/// A script-based resource that writes a non-terminating
/// error fails its call playing Windows PowerShell 5.1 (the LCM's message,
/// the error after it) and succeeds playing 7; either way the error comes
/// on the streams line before the result. A Set still changes the state
/// (the resource went on), as under the LCM.
#[test]
fn a_non_terminating_error_fails_the_call_on_5_1_only() {
    let mut sim = Sim::new();
    sim.set_env("PWSHLIB_SIM_NONTERMINATING_ERROR", "FixtureFile");
    let streams = json!({"pwshlib_streams": [{"kind": "error", "text": "pwshlib-sim: a non-terminating error"}]});
    let get = reply_lines(sim.outcome(&script(
        "",
        "FixtureFile",
        "Get",
        "destinationpath = 'C:\\a'",
    )));
    assert_eq!(get[0], streams);
    assert_eq!(
        get[1]["errormessage"],
        "The PowerShell DSC resource 'FixtureFile' threw one or more non-terminating errors while running \
         the Get-TargetResource functionality: pwshlib-sim: a non-terminating error"
    );
    let set = reply_lines(sim.outcome(&script(
        "",
        "FixtureFile",
        "Set",
        "destinationpath = 'C:\\a'; contents = 'x'",
    )));
    assert!(set[1]["errormessage"]
        .as_str()
        .unwrap()
        .contains("while running the Set-TargetResource functionality"));
    assert_eq!(sim.state()["resources"]["FixtureFile"][0]["contents"], "x");
    assert_eq!(sim.log()[1]["fault"], "nonterminating_error");
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.6.9");
    let get = reply_lines(sim.outcome(&script(
        "",
        "FixtureFile",
        "Get",
        "destinationpath = 'C:\\a'",
    )));
    assert_eq!(get[0], streams);
    assert_eq!(get[1]["contents"], "x", "{}", get[1]);
    // A class-based resource's Write-Error reaches no stream.
    let class_based = script("", "FixtureFile", "Get", "destinationpath = 'C:\\a'").replace(
        MODULE,
        "@{ModuleName = 'PwshlibFixtureDsc'; RequiredVersion = '1.0.0'}",
    );
    sim.set_env("PWSHLIB_SIM_PSVERSION", "");
    assert_eq!(reply_lines(sim.outcome(&class_based)).len(), 1);
}

/// A Test-TargetResource that returns a string, no
/// boolean, fails playing 5.1 and reads as [bool] of it (true) playing 7.
#[test]
fn a_test_without_one_boolean_fails_on_5_1_only() {
    let mut sim = Sim::new();
    // A Get first: the simulator learns the key properties from it.
    sim.get("destinationpath = 'C:\\a'");
    sim.set("destinationpath = 'C:\\a'; contents = 'x'");
    sim.set_env("PWSHLIB_SIM_TEST_OUTPUT", "Test/FixtureFile");
    let on_5_1 = sim.test("destinationpath = 'C:\\a'; contents = 'other'");
    assert_eq!(
        on_5_1,
        json!({"indesiredstate": false, "errormessage": "The DSC resource 'FixtureFile' returned 1 value(s) from \
               Test-TargetResource (String), not one boolean: Windows PowerShell 5.1 takes exactly one $true or $false, as its LCM did."})
    );
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.6.9");
    let on_7 = sim.test("destinationpath = 'C:\\a'; contents = 'other'");
    assert_eq!(on_7, json!({"indesiredstate": true, "errormessage": ""}));
    assert_eq!(sim.get("destinationpath = 'C:\\a'")["contents"], "x");
}

/// A Get whose resource read its strings with
/// Get-Content. Before PowerShell 7.2 ConvertTo-Json writes each as an
/// object with its note properties, unless the prelude copies them
/// (ConvertTo-PwshlibPlainString defined for the call); from 7.2 on, a
/// plain string either way.
#[test]
fn strings_with_ets_members_are_objects_before_7_2_unless_the_prelude_copies_them() {
    let mut sim = Sim::new();
    sim.get("destinationpath = 'C:\\a'");
    sim.set("destinationpath = 'C:\\a'; contents = 'line one'");
    sim.set_env("PWSHLIB_SIM_ETS_STRINGS", "Get/FixtureFile");
    let without = sim.get("destinationpath = 'C:\\a'");
    assert_eq!(without["contents"]["value"], "line one", "{without}");
    assert_eq!(without["contents"]["PSChildName"], "content.txt");
    assert_eq!(without["contents"]["ReadCount"], 1);
    let copying =
        "function ConvertTo-PwshlibPlainString {\n    param([string] $Text)\n    $Text\n}";
    let with = sim.json(&script(
        copying,
        "FixtureFile",
        "Get",
        "destinationpath = 'C:\\a'",
    ));
    assert_eq!(with["contents"], "line one", "{with}");
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.1.7");
    assert!(sim.get("destinationpath = 'C:\\a'")["contents"].is_object());
    sim.set_env("PWSHLIB_SIM_PSVERSION", "7.2.0");
    assert_eq!(sim.get("destinationpath = 'C:\\a'")["contents"], "line one");
}
