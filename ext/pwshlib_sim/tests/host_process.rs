//! The DSC engine behind the real `pwshlib-sim` binary and protocol: faults
//! that involve the process (timeouts, crashes, restarts) end to end, over
//! the platform's transport (a Unix socket, or a named pipe on Windows).

mod common;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use pwshlib_transport::protocol::{self, ExecuteRequest, ExecuteResult, Message};
use serde_json::Value as Json;

struct Host {
    child: Child,
    stream: common::Stream,
}

impl Host {
    fn start(dir: &Path, name: &str, env: &[(&str, &Path)]) -> Host {
        let endpoint = common::endpoint(dir, name);
        let mut command = common::host_command(&endpoint);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().unwrap();
        let mut stream = common::connect(&endpoint);
        common::guard(&stream, &child);
        assert!(matches!(
            protocol::read_message(&mut stream).unwrap(),
            Some(Message::Hello {
                protocol: protocol::PROTOCOL_VERSION,
                ..
            })
        ));
        Host { child, stream }
    }

    /// Sends one execute; None when the host went away without answering.
    fn execute(&mut self, code: &str, timeout_ms: u64, env: &[&str]) -> Option<ExecuteResult> {
        let request = ExecuteRequest::new(code.to_owned(), Some(timeout_ms), None, env);
        protocol::write_message(&mut self.stream, &Message::Execute(request)).ok()?;
        match protocol::read_message(&mut self.stream) {
            Ok(Some(Message::Result(result))) => Some(result),
            _ => None,
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = protocol::write_message(&mut self.stream, &Message::Exit);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(path: &str) -> String {
    format!(
        "$InvokeParams = @{{Name = 'FixtureFile'; Method = 'Get'; Property = @{{destinationpath = '{path}'}}; ModuleName = 'PwshlibFixtureDsc'}}\nInvoke-DscResource @InvokeParams"
    )
}

fn result_json(result: &ExecuteResult) -> Json {
    assert_eq!(result.errormessage, None, "{result:?}");
    serde_json::from_str(result.stdout.as_deref().unwrap().trim_end()).unwrap()
}

fn paths() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let log = dir.path().join("calls.jsonl");
    (dir, state, log)
}

#[test]
fn a_hang_ends_in_the_hosts_timeout_reply_and_the_host_stays_usable() {
    let (dir, state, _) = paths();
    let mut host = Host::start(dir.path(), "hang", &[("PWSHLIB_SIM_STATE", &state)]);
    let started = Instant::now();
    let hung = host
        .execute(
            &get("C:\\b"),
            300,
            &["PWSHLIB_SIM_HANG_RESOURCE=FixtureFile:C:\\b"],
        )
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        hung.errormessage.as_deref(),
        Some(protocol::timeout_message(300).as_str())
    );
    // The request's env applied to that call only.
    let fine = host.execute(&get("C:\\b"), 300, &[]).unwrap();
    assert_eq!(result_json(&fine)["Ensure"], "Absent");
}

#[test]
fn a_crash_kills_the_host_once_and_a_restarted_host_carries_on() {
    let (dir, state, log) = paths();
    let env = [
        ("PWSHLIB_SIM_STATE", state.as_path()),
        ("PWSHLIB_SIM_LOG", log.as_path()),
    ];
    let crash = ["PWSHLIB_SIM_CRASH_ON_CALL=2"];
    let mut first = Host::start(dir.path(), "first", &env);
    assert!(first.execute(&get("C:\\a"), 5_000, &crash).is_some());
    assert!(first.execute(&get("C:\\a"), 5_000, &crash).is_none());
    let status = first.child.wait().unwrap();
    assert_eq!(status.code(), Some(137));

    let mut second = Host::start(dir.path(), "second", &env);
    let answer = second.execute(&get("C:\\a"), 5_000, &crash).unwrap();
    assert_eq!(result_json(&answer)["Ensure"], "Absent");
    let lines: Vec<Json> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["fault"], "crash");
    assert_ne!(lines[0]["pid"], lines[2]["pid"]);
}

#[test]
fn latency_within_the_timeout_is_only_slower() {
    let (dir, state, _) = paths();
    let mut host = Host::start(dir.path(), "slow", &[("PWSHLIB_SIM_STATE", &state)]);
    let started = Instant::now();
    let answer = host
        .execute(&get("C:\\a"), 5_000, &["PWSHLIB_SIM_LATENCY_MS=200"])
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(result_json(&answer)["Ensure"], "Absent");
}
