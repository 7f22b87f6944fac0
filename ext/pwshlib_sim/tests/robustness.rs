//! No input makes the DSC engine panic: every failure is a reply.

use proptest::prelude::*;
use pwshlib_sim::dsc::handle_with_env;
use pwshlib_sim::outcome::Outcome;

const VALID: &str = "$cred_1 = New-PsCredential -User 'CONTOSO\\bob' -Password 'p''w'\n\
$cim_1 = New-CimInstance -ClientOnly -ClassName 'MSFT_Inner' -Property @{'Key' = 'a'; n = 5}\n\
$InvokeParams = @{Name = 'FixtureFile'; Method = 'Get'; Property = @{destinationpath = 'C:\\x'; ensure = 'Present'; values = @('a', 'b'); empty = [string[]]@(); when = [DateTime]'2024-01-02T03:04:05Z'; credential = $cred_1; items = [CimInstance[]]@($cim_1)}; ModuleName = @{ModuleName = 'M'; RequiredVersion = '1.0'}}\n\
Invoke-DscResource @InvokeParams\n";

fn run(code: &str) -> Option<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json").display().to_string();
    let env = move |name: &str| (name == "PWSHLIB_SIM_STATE").then(|| state.clone());
    handle_with_env(code, 1_000, &env)
}

#[test]
fn the_reference_script_is_a_get() {
    match run(VALID) {
        Some(Outcome::Reply {
            stdout: Some(stdout),
            errormessage: None,
            ..
        }) => {
            assert!(
                stdout.contains("\"destinationpath\":\"C:\\\\x\""),
                "{stdout}"
            )
        }
        _ => panic!("the reference script must succeed"),
    }
}

#[test]
fn deep_nesting_is_refused_or_read_without_overflowing_the_stack() {
    for depth in [50, 5_000] {
        let value = format!("{}'x'{}", "@(".repeat(depth), ")".repeat(depth));
        let code =
            format!("$InvokeParams = @{{Name = 'R'; Method = 'Get'; Property = @{{k = {value}}}}}");
        let outcome = run(&code);
        if depth == 50 {
            assert!(matches!(
                outcome,
                Some(Outcome::Reply {
                    stdout: Some(_),
                    ..
                })
            ));
        } else {
            assert!(matches!(
                outcome,
                Some(Outcome::Reply { stdout: None, errormessage: Some(ref m), .. }) if m.contains("too deeply")
            ));
        }
    }
    let unbalanced = format!("$InvokeParams = {}", "@{a = ".repeat(20_000));
    // Not even an assignment any more: left to the main loop's parse check.
    assert!(run(&unbalanced).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn mutated_scripts_never_panic(at in 0usize..VALID.len(), insert in "[$@(){};,=' \\[\\]a-zA-Z0-9\n\u{2019}\"-]{0,12}", cut in any::<bool>()) {
        let mut code = VALID.to_owned();
        let mut at = at;
        while !code.is_char_boundary(at) { at -= 1; }
        if cut { code.truncate(at); } else { code.insert_str(at, &insert); }
        let _ = run(&code);
    }

    #[test]
    fn arbitrary_text_never_panics(code in "\\PC{0,200}") {
        let _ = run(&format!("$InvokeParams = {code}"));
        let _ = run(&code);
    }
}
