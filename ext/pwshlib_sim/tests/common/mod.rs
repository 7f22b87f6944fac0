//! The manager's side of the transport, for tests that run the real
//! `pwshlib-sim` binary: endpoint names, connecting (retrying until the host
//! listens), and a guard against a host that never answers.
//!
//! Unix: a socket file in the test's temporary directory. Windows: a named
//! pipe `\\.\pipe\pwshlib-sim-test-<pid>-<name>-<n>`, opened with
//! `CreateFileW` as the manager will.

#![allow(dead_code)] // each test file uses its own part of this module

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

#[cfg(unix)]
pub type Stream = std::os::unix::net::UnixStream;
#[cfg(windows)]
pub type Stream = std::fs::File;

/// How long a test waits for a host to listen, answer or exit.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A fresh endpoint for a host named `name` (unique within the test run).
#[cfg(unix)]
pub fn endpoint(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.sock"))
}

/// A fresh endpoint for a host named `name` (unique within the test run).
#[cfg(windows)]
pub fn endpoint(dir: &Path, name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // The directory name is random: it keeps runs apart.
    let run = dir.file_name().unwrap().to_string_lossy();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    PathBuf::from(format!(
        r"\\.\pipe\pwshlib-sim-test-{}-{run}-{name}-{n}",
        std::process::id()
    ))
}

/// The host's command line, as the manager builds it (without -ParentPid).
pub fn host_command(endpoint: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pwshlib-sim"));
    command
        .args(["-NoProfile", "-File", "host.ps1", "-PipePath"])
        .arg(endpoint)
        .env_remove("PWSHLIB_SIM_STATE")
        .env_remove("PWSHLIB_SIM_LOG");
    command
}

/// Connects once.
#[cfg(unix)]
pub fn connect_once(endpoint: &Path) -> io::Result<Stream> {
    Stream::connect(endpoint)
}

/// A path as the NUL-terminated UTF-16 that Win32 calls take.
#[cfg(windows)]
pub fn wide(path: &Path) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    path.as_os_str()
        .encode_wide()
        .chain(std::iter::once(0))
        .collect()
}

/// Connects once.
#[cfg(windows)]
pub fn connect_once(endpoint: &Path) -> io::Result<Stream> {
    use std::os::windows::io::{FromRawHandle, OwnedHandle};
    use windows_sys::Win32::Foundation::{GENERIC_READ, GENERIC_WRITE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Storage::FileSystem::{CreateFileW, OPEN_EXISTING};

    let name = wide(endpoint);
    // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the
    // call; null security attributes and template handle are allowed.
    let handle = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_READ | GENERIC_WRITE,
            0,
            std::ptr::null(),
            OPEN_EXISTING,
            0,
            std::ptr::null_mut(),
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid handle CreateFileW just returned, owned by nobody else.
    Ok(Stream::from(unsafe {
        OwnedHandle::from_raw_handle(handle)
    }))
}

/// True for the errors that mean "nobody listens there (yet)".
#[cfg(unix)]
pub fn is_not_listening(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

/// True for the errors that mean "nobody listens there (yet)":
/// `ERROR_FILE_NOT_FOUND` (no pipe of that name) or `ERROR_PIPE_BUSY` (its
/// one instance is taken).
#[cfg(windows)]
pub fn is_not_listening(error: &io::Error) -> bool {
    use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_PIPE_BUSY};
    let code = error.raw_os_error();
    code == Some(ERROR_FILE_NOT_FOUND as i32) || code == Some(ERROR_PIPE_BUSY as i32)
}

/// Connects, retrying every 20 ms while the host is not listening yet.
pub fn connect(endpoint: &Path) -> Stream {
    let started = Instant::now();
    loop {
        match connect_once(endpoint) {
            Ok(stream) => return stream,
            Err(e) if is_not_listening(&e) && started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!(
                "cannot connect to pwshlib-sim at {}: {e}",
                endpoint.display()
            ),
        }
    }
}

/// Makes sure a host that never answers cannot hang the test: on Unix each
/// read gives up after [`PATIENCE`]; on Windows (no read timeouts on a
/// synchronous pipe) the host is terminated after `PATIENCE` × 3, which ends
/// the blocked read with EOF.
#[cfg(unix)]
pub fn guard(stream: &Stream, _child: &Child) {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
}

#[cfg(windows)]
pub fn guard(_stream: &Stream, child: &Child) {
    use std::os::windows::io::{AsHandle, AsRawHandle};
    use windows_sys::Win32::Foundation::WAIT_TIMEOUT;
    use windows_sys::Win32::System::Threading::{TerminateProcess, WaitForSingleObject};

    let process = child.as_handle().try_clone_to_owned().unwrap();
    let limit =
        u32::try_from((PATIENCE * 3).as_millis()).expect("the patience fits in a u32 of ms");
    std::thread::spawn(move || {
        // SAFETY: `process` is a valid process handle owned by this closure.
        if unsafe { WaitForSingleObject(process.as_raw_handle(), limit) } == WAIT_TIMEOUT {
            eprintln!("pwshlib-sim did not finish in time: terminating it");
            // SAFETY: as above; the handle was duplicated with the child's
            // full access, which includes PROCESS_TERMINATE.
            unsafe { TerminateProcess(process.as_raw_handle(), 1) };
        }
    });
}

/// Waits for `child` to exit, for at most [`PATIENCE`].
pub fn wait_for_exit(child: &mut Child) -> Option<ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Whether the endpoint is gone: Unix, no socket file; Windows, opening the
/// pipe fails with `ERROR_FILE_NOT_FOUND`.
#[cfg(unix)]
pub fn endpoint_is_gone(endpoint: &Path) -> bool {
    !endpoint.exists()
}

#[cfg(windows)]
pub fn endpoint_is_gone(endpoint: &Path) -> bool {
    use windows_sys::Win32::Foundation::ERROR_FILE_NOT_FOUND;
    match connect_once(endpoint) {
        Ok(_) => false,
        Err(e) => e.raw_os_error() == Some(ERROR_FILE_NOT_FOUND as i32),
    }
}
