//! Every PowerShell file we ship (lib/templates/*.ps1, including the host
//! script that serves the protocol) must parse under tree-sitter-powershell:
//! there is no PowerShell here to run them.

use std::path::PathBuf;

fn templates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates")
}

/// Every ERROR or MISSING node, through the shared check (`pslint`).
fn syntax_problems(code: &str) -> Vec<String> {
    pwshlib_core::pslint::parse_errors(code)
}

#[test]
fn every_shipped_template_parses_clean() {
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(templates_dir()).expect("lib/templates exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("ps1") {
            continue;
        }
        let code = std::fs::read_to_string(&path).unwrap();
        let problems = syntax_problems(&code);
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            path.display(),
            problems.join("\n")
        );
        checked.push(path);
    }
    assert!(
        checked.iter().any(|p| p.ends_with("host.ps1")),
        "host.ps1 was checked: {checked:?}"
    );
}

#[test]
fn the_check_catches_broken_scripts() {
    assert!(!syntax_problems("function f { Write-Output 'x'").is_empty());
    assert!(!syntax_problems("$x = @{ a = ").is_empty());
    assert!(syntax_problems("Write-Output 'fine'").is_empty());
}

#[test]
fn the_host_script_serves_protocol_version_one() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    assert!(host.contains(&format!(
        "$script:ProtocolVersion = {}",
        pwshlib_core::protocol::PROTOCOL_VERSION
    )));
    assert!(host.contains(&format!(
        "$script:MaxFrameLength = {}",
        pwshlib_core::protocol::MAX_FRAME_LEN
    )));
    assert!(host.contains(
        &pwshlib_core::protocol::timeout_message(1).replace("(1 ms)", "($timeoutMs ms)")
    ));
    assert!(host.contains("-PipePath") || host.contains("$PipePath"));
}

/// The host offers the prelude mechanism this library speaks, keeps the
/// prelude's functions away from plain requests (a runspace of their own),
/// and names the prelude in the results of requests that ran with it.
#[test]
fn the_host_script_offers_preludes_in_a_runspace_of_their_own() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    assert!(host.contains(&format!(
        "$script:PreludeVersion = {}",
        pwshlib_core::protocol::PRELUDE_VERSION
    )));
    assert!(host.contains("prelude  = $script:PreludeVersion"));
    assert!(host.contains("$session = $script:Session"));
    assert!(host.contains("$session = Get-PreludeSession -Prelude $Request.prelude"));
    assert!(host.contains("$outcome.Result.prelude = $preludeId"));
    // Every request resets the runspace it runs in, not always the plain one.
    assert!(host.contains("$runspace = $Session.Runspace"));
    assert!(host.contains("$runspace.ResetRunspaceState()"));
    assert!(!host.contains("$script:Session.Runspace.ResetRunspaceState()"));
}

#[test]
fn on_windows_the_host_script_serves_the_pipe_the_manager_opens() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    let pattern = regex::Regex::new(r"\$pipeName = \$PipePath -replace '([^']+)', ''").unwrap();
    let strip = &pattern
        .captures(&host)
        .expect("host.ps1 derives the .NET pipe name from -PipePath")[1];
    // .NET and the regex crate read this pattern alike: anchors, escapes
    // and literals only.
    let strip = regex::Regex::new(strip).unwrap();
    let name = "pwshlib-4242-0123456789abcdef0123456789abcdef";
    let path = format!("{}{name}", pwshlib_core::host::WINDOWS_PIPE_PREFIX);
    assert_eq!(strip.replace(&path, ""), name);
    assert!(host.contains("NamedPipeServerStream -ArgumentList $pipeName"));
}

#[test]
fn the_host_script_echoes_each_request_id_in_its_result() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    let answer = regex::Regex::new(
        r"\$outcome = Invoke-Request -Request \$message\s*\n\s*\$result = \$outcome\.Result\s*\n(?:\s*#.*\n)*\s*\$result\.id = \$message\.id\s*\n\s*Write-Frame -Stream \$stream -Message \$result",
    )
    .unwrap();
    assert!(
        answer.is_match(&host),
        "host.ps1 must copy the request's id into the result it sends"
    );
}
