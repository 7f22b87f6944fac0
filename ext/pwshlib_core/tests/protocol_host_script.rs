//! Every PowerShell file we ship (lib/templates/*.ps1, including the host
//! script) must parse under tree-sitter-powershell: there is no PowerShell
//! here to run them. The host's C# (PwshlibHost.cs), which serves the
//! protocol, is checked as text against the codec's constants.

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

/// The host's C# (host.ps1 compiles it with Add-Type), which serves the
/// protocol.
fn host_source() -> String {
    std::fs::read_to_string(templates_dir().join("PwshlibHost.cs")).unwrap()
}

#[test]
fn the_host_script_serves_protocol_version_one() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    let source = host_source();
    assert!(source.contains(&format!(
        "private const int ProtocolVersion = {};",
        pwshlib_core::protocol::PROTOCOL_VERSION
    )));
    assert!(source.contains(&format!(
        "private const int MaxFrameLength = {};",
        pwshlib_core::protocol::MAX_FRAME_LEN
    )));
    assert!(
        source.contains(&pwshlib_core::protocol::timeout_message(1).replace(
            "(1 ms)",
            "(\" + timeoutMs.ToString(CultureInfo.InvariantCulture) + \" ms)"
        ))
    );
    assert!(host.contains("$PipePath"));
    assert!(host.contains("$script:HostLoop.Serve($stream, "));
}

/// The host offers the prelude mechanism this library speaks, keeps the
/// prelude's functions away from plain requests (a runspace of their own),
/// and names the prelude in the results of requests that ran with it.
#[test]
fn the_host_script_offers_preludes_in_a_runspace_of_their_own() {
    let source = host_source();
    assert!(source.contains(&format!(
        "private const int PreludeVersion = {};",
        pwshlib_core::protocol::PRELUDE_VERSION
    )));
    assert!(source.contains("hello.Add(Field(\"prelude\", PreludeVersion));"));
    // Plain requests in their slot, prelude requests in the two of theirs.
    assert!(source.contains(
        "slot = prelude != null ? GetPreludeSlot(prelude) : Acquire(plainSlots, ref plainNext);"
    ));
    assert!(source.contains("Slot slot = preludeSlots[preludeNext];"));
    assert!(source.contains("outcome.Result.Add(Field(\"prelude\", Text(Get(prelude, \"id\"))));"));
    // Every call's session is reset after its reply, the slot it ran in, not
    // always the plain one.
    assert!(source.contains("outcome.Ran = session;"));
    assert!(source.contains("outcome.Slot = slot;"));
    assert!(source.contains("ResetInBackground(outcome.Slot);"));
    assert!(source.contains("Clean(slot.Session);"));
    assert!(source.contains("session.Runspace.ResetRunspaceState();"));
    assert_eq!(source.matches("ResetRunspaceState();").count(), 1);
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
    let source = host_source();
    let answer = regex::Regex::new(
        r#"Outcome outcome = InvokeRequest\(message\);\s*\n(?:\s*//.*\n)*\s*outcome\.Result\.Add\(Field\("id", Get\(message, "id"\)\)\);\s*\n\s*WriteFrame\(outcome\.Result\);"#,
    )
    .unwrap();
    assert!(
        answer.is_match(&source),
        "the host must copy the request's id into the result it sends"
    );
}
