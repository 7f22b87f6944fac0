//! The host script (lib/templates/host.ps1) and the C# it compiles
//! (PwshlibHost*.cs), which serves the protocol, checked as text against the
//! codec's constants. That every shipped template parses is checked with the
//! templates (`ext/pwshlib_core/tests/shipped_templates.rs`).

use std::path::PathBuf;

use pwshlib_transport::host::WINDOWS_PIPE_PREFIX;
use pwshlib_transport::protocol;

fn templates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates")
}

/// The host's C# (host.ps1 compiles it with Add-Type), which serves the
/// protocol: every PwshlibHost*.cs file (host_script_semantics.rs checks
/// that host.ps1 joins them all).
fn host_source() -> String {
    let mut names: Vec<_> = std::fs::read_dir(templates_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("PwshlibHost") && name.ends_with(".cs"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| std::fs::read_to_string(templates_dir().join(name)).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_host_script_serves_protocol_version_one() {
    let host = std::fs::read_to_string(templates_dir().join("host.ps1")).unwrap();
    let source = host_source();
    assert!(source.contains(&format!(
        "private const int ProtocolVersion = {};",
        protocol::PROTOCOL_VERSION
    )));
    assert!(source.contains(&format!(
        "private const int MaxFrameLength = {};",
        protocol::MAX_FRAME_LEN
    )));
    assert!(source.contains(&protocol::timeout_message(1).replace(
        "(1 ms)",
        "(\" + timeoutMs.ToString(CultureInfo.InvariantCulture) + \" ms)"
    )));
    assert!(host.contains("$PipePath"));
    assert!(host.contains("$HostLoop.Serve($stream, "));
}

/// The host offers the prelude mechanism this library speaks, keeps the
/// prelude's functions away from plain requests (a runspace of their own),
/// and names the prelude in the results of requests that ran with it.
#[test]
fn the_host_script_offers_preludes_in_a_runspace_of_their_own() {
    let source = host_source();
    assert!(source.contains(&format!(
        "private const int PreludeVersion = {};",
        protocol::PRELUDE_VERSION
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
    assert!(source.contains("ResetInBackground(outcome.Slot, outcome);"));
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
    let path = format!("{WINDOWS_PIPE_PREFIX}{name}");
    assert_eq!(strip.replace(&path, ""), name);
    assert!(host.contains("NamedPipeServerStream -ArgumentList $pipeName"));
}

#[test]
fn the_host_script_echoes_each_request_id_in_its_result() {
    let source = host_source();
    let answer = regex::Regex::new(
        r#"Outcome outcome = InvokeRequest\(message\);\s*\n(?:\s*//.*\n)*\s*outcome\.Result\.Add\(Field\("id", Get\(message, "id"\)\)\);\s*\n\s*BeforeReply\(outcome\);\s*\n\s*WriteFrame\(outcome\.Result\);"#,
    )
    .unwrap();
    assert!(
        answer.is_match(&source),
        "the host must copy the request's id into the result it sends"
    );
}
