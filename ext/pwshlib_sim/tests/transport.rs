//! The host's side of the transport (docs/protocol.md, "Transport") with the
//! real `pwshlib-sim` binary: a Unix socket, or a named pipe on Windows.
//! What the endpoint leaves behind, who may serve it, hang-ups, and the
//! parent watch.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use pwshlib_transport::protocol::{self, ExecuteRequest, Message};

/// Starts a host on `endpoint`, with `-ParentPid` if given.
fn spawn(endpoint: &Path, parent: Option<u32>) -> Child {
    let mut command = common::host_command(endpoint);
    if let Some(pid) = parent {
        command.args(["-ParentPid", &pid.to_string()]);
    }
    command.stderr(Stdio::piped()).spawn().unwrap()
}

/// Connects and reads the hello.
fn greet(endpoint: &Path, child: &Child) -> common::Stream {
    let mut stream = common::connect(endpoint);
    common::guard(&stream, child);
    match protocol::read_message(&mut stream).unwrap() {
        Some(Message::Hello {
            protocol: protocol::PROTOCOL_VERSION,
            pid,
            host,
            prelude,
            secrets,
            ..
        }) => {
            assert_eq!(prelude, protocol::PRELUDE_VERSION);
            assert_eq!(secrets, protocol::SECRETS_VERSION);
            assert_eq!(pid, child.id());
            assert!(host.starts_with("pwshlib-sim "), "{host}");
        }
        other => panic!("expected hello, got {other:?}"),
    }
    stream
}

fn exit_code(child: &mut Child) -> Option<i32> {
    if let Some(status) = common::wait_for_exit(child) {
        return status.code();
    }
    let _ = child.kill();
    panic!("pwshlib-sim did not exit");
}

/// The host exited with 0 and took its endpoint with it.
fn assert_left_cleanly(child: &mut Child, endpoint: &Path) {
    assert_eq!(exit_code(child), Some(0));
    assert!(common::endpoint_is_gone(endpoint));
}

fn stderr_of(mut child: Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn echo(stream: &mut common::Stream, code: &str) -> Option<Message> {
    let request = ExecuteRequest::new(code.to_owned(), Some(5_000), None, &[] as &[&str]);
    protocol::write_message(stream, &Message::Execute(request)).unwrap();
    protocol::read_message(stream).unwrap()
}

#[test]
fn the_host_answers_then_leaves_on_exit_taking_its_endpoint_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "exit");
    let mut child = spawn(&endpoint, None);
    let mut stream = greet(&endpoint, &child);
    match echo(&mut stream, "Write-Output 'hi'") {
        Some(Message::Result(result)) => assert_eq!(result.stdout.as_deref(), Some("hi\n")),
        other => panic!("expected a result, got {other:?}"),
    }
    protocol::write_message(&mut stream, &Message::Exit).unwrap();
    // The host closes its end: EOF, not an error.
    assert!(matches!(protocol::read_message(&mut stream), Ok(None)));
    assert_left_cleanly(&mut child, &endpoint);
}

#[test]
fn a_client_hang_up_is_a_clean_end_of_stream() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "hangup");
    let mut child = spawn(&endpoint, None);
    let stream = greet(&endpoint, &child);
    drop(stream);
    assert_left_cleanly(&mut child, &endpoint);
    assert_eq!(stderr_of(child), "");
}

#[test]
fn a_malformed_frame_gets_an_error_frame_before_the_host_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "malformed");
    let mut child = spawn(&endpoint, None);
    let mut stream = greet(&endpoint, &child);
    stream.write_all(&[0, 0, 0, 8]).unwrap();
    stream.write_all(b"not json").unwrap();
    // The host writes the error frame and exits at once: the frame must
    // still reach the client after the host's end is closed.
    assert_eq!(exit_code(&mut child), Some(3));
    match protocol::read_message(&mut stream) {
        Ok(Some(Message::Error { message })) => {
            assert!(message.starts_with("protocol error: "), "{message}")
        }
        other => panic!("expected an error frame, got {other:?}"),
    }
    assert!(matches!(protocol::read_message(&mut stream), Ok(None)));
}

#[test]
fn a_crash_ends_the_connection_without_a_reply() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "crash");
    let mut child = spawn(&endpoint, None);
    let mut stream = greet(&endpoint, &child);
    assert!(echo(&mut stream, "Stop-Process -Id $PID").is_none());
    assert_eq!(exit_code(&mut child), Some(137));
    // A crashed host does not clean up: the socket file stays for the
    // manager to delete. A pipe goes with the process.
    if cfg!(unix) {
        assert!(endpoint.exists());
    } else {
        assert!(common::endpoint_is_gone(&endpoint));
    }
}

#[test]
fn a_second_host_cannot_serve_an_endpoint_already_served() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "taken");
    let mut first = spawn(&endpoint, None);
    // Wait until the first host listens, without connecting to it.
    let started = std::time::Instant::now();
    while !is_served(&endpoint) {
        assert!(
            started.elapsed() < common::PATIENCE,
            "the first host never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut second = spawn(&endpoint, None);
    assert_eq!(exit_code(&mut second), Some(2));
    let stderr = stderr_of(second);
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    // The first host is unharmed and still serves the endpoint.
    let mut stream = greet(&endpoint, &first);
    protocol::write_message(&mut stream, &Message::Exit).unwrap();
    assert_eq!(exit_code(&mut first), Some(0));
}

/// Whether a host listens on `endpoint` (without connecting to it).
#[cfg(unix)]
fn is_served(endpoint: &Path) -> bool {
    endpoint.exists()
}

#[cfg(windows)]
fn is_served(endpoint: &Path) -> bool {
    use windows_sys::Win32::System::Pipes::WaitNamedPipeW;
    let name = common::wide(endpoint);
    // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the
    // call. WaitNamedPipeW only waits for an instance to be free; it does
    // not connect.
    unsafe { WaitNamedPipeW(name.as_ptr(), 1) != 0 }
}

#[test]
fn the_host_leaves_when_its_parent_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    // The "parent": any process will do, another host that nobody talks to.
    let mut parent = spawn(&common::endpoint(dir.path(), "parent"), None);
    let endpoint = common::endpoint(dir.path(), "orphan");
    let mut child = spawn(&endpoint, Some(parent.id()));
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the host left while its parent was alive"
    );
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert_left_cleanly(&mut child, &endpoint);
}

#[test]
fn a_host_whose_parent_is_gone_already_leaves_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = spawn(&common::endpoint(dir.path(), "parent"), None);
    let gone = parent.id();
    parent.kill().unwrap();
    parent.wait().unwrap();
    let endpoint = common::endpoint(dir.path(), "late");
    let mut child = spawn(&endpoint, Some(gone));
    assert_left_cleanly(&mut child, &endpoint);
}

/// Only the manager (the `-ParentPid`) may connect. A
/// client that is another process of the same user gets no hello: it is hung
/// up on, and the host goes on waiting for the manager.
#[cfg(any(target_os = "linux", windows))]
#[test]
fn a_client_that_is_not_the_manager_is_refused_and_the_host_waits_on() {
    let dir = tempfile::tempdir().unwrap();
    // The "manager": a live process that is not this test.
    let mut manager = spawn(&common::endpoint(dir.path(), "manager"), None);
    let endpoint = common::endpoint(dir.path(), "guarded");
    let mut child = spawn(&endpoint, Some(manager.id()));
    let mut stream = common::connect(&endpoint);
    assert!(
        matches!(protocol::read_message(&mut stream), Ok(None) | Err(_)),
        "a foreign client was greeted"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the host left instead of waiting for its manager"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let refused = stderr_of(child);
    assert!(
        refused.contains(&format!(
            "refused a client (pid {}): only the manager (pid {})",
            std::process::id(),
            manager.id()
        )),
        "{refused}"
    );
    manager.kill().unwrap();
    manager.wait().unwrap();
}

#[test]
fn parent_pid_zero_watches_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "zero");
    let mut child = spawn(&endpoint, Some(0));
    std::thread::sleep(Duration::from_millis(600));
    assert!(child.try_wait().unwrap().is_none());
    let mut stream = greet(&endpoint, &child);
    protocol::write_message(&mut stream, &Message::Exit).unwrap();
    assert_eq!(exit_code(&mut child), Some(0));
}

/// `FILE_FLAG_FIRST_PIPE_INSTANCE`: a pipe name already served by someone
/// else, even one who allows any number of instances, is refused rather than
/// shared (a client might otherwise reach the squatter).
#[cfg(windows)]
#[test]
fn a_pipe_name_taken_by_another_server_is_refused() {
    use std::os::windows::io::{FromRawHandle, OwnedHandle};
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::Storage::FileSystem::PIPE_ACCESS_DUPLEX;
    use windows_sys::Win32::System::Pipes::{CreateNamedPipeW, PIPE_UNLIMITED_INSTANCES};

    let dir = tempfile::tempdir().unwrap();
    let endpoint = common::endpoint(dir.path(), "squatted");
    let name = common::wide(&endpoint);
    // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the
    // call; null security attributes are allowed.
    let handle = unsafe {
        CreateNamedPipeW(
            name.as_ptr(),
            PIPE_ACCESS_DUPLEX,
            0,
            PIPE_UNLIMITED_INSTANCES,
            4096,
            4096,
            0,
            std::ptr::null(),
        )
    };
    assert_ne!(
        handle,
        INVALID_HANDLE_VALUE,
        "{}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a valid handle CreateNamedPipeW just returned, owned by nobody else.
    let squatter = unsafe { OwnedHandle::from_raw_handle(handle) };
    let mut child = spawn(&endpoint, None);
    assert_eq!(exit_code(&mut child), Some(2));
    let stderr = stderr_of(child);
    // ERROR_ACCESS_DENIED, as documented for FILE_FLAG_FIRST_PIPE_INSTANCE.
    assert!(
        stderr.contains("cannot listen on") && stderr.contains("os error 5"),
        "{stderr}"
    );
    drop(squatter);
}
