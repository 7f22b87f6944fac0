//! A manager process killed outright (no at_exit, no destructors) leaves no
//! host behind: on Unix the host watches its `-ParentPid`; on Windows the
//! kill-on-close job object the transport puts the host in dies with the
//! manager's process.
//!
//! What the host itself started is not the host: it survives (as with
//! pwshlib 2.x, where an installer a DSC resource launched outlived the run).
//!
//! Its own `main` (harness = false): the test runs this binary again as the
//! "manager", which starts a host, has it start a process, prints both PIDs
//! and aborts mid-call; then it waits for the host to be gone.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pwshlib_transport::host::{Cancel, Host, SpawnOptions};
use pwshlib_transport::protocol::ExecuteRequest;

const AS_MANAGER: &str = "--as-abandoning-manager";

fn main() {
    if std::env::args().any(|arg| arg == AS_MANAGER) {
        start_a_host_and_die();
    }
    let mut manager = Command::new(std::env::current_exe().unwrap())
        .arg(AS_MANAGER)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the manager process starts");
    let mut line = String::new();
    BufReader::new(manager.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pids: Vec<u32> = line
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    let &[host_pid, started_pid] = pids.as_slice() else {
        panic!("the manager printed {line:?}");
    };
    let endpoint = line
        .trim_end()
        .split_once(" endpoint ")
        .map(|(_, endpoint)| std::path::PathBuf::from(endpoint))
        .expect("the manager printed its endpoint");
    let status = manager.wait().unwrap();
    assert!(!status.success(), "the manager was meant to abort");

    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(host_pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let host_outlived = process_alive(host_pid);
    // On Unix the host, seeing its manager gone, removes its socket and the
    // private directory the manager made for it: nothing is left in $TMPDIR.
    let socket_dir = endpoint.parent().map(std::path::Path::to_path_buf);
    if cfg!(unix) {
        while socket_dir.as_ref().is_some_and(|dir| dir.exists()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let socket_dir_left = cfg!(unix) && socket_dir.as_ref().is_some_and(|dir| dir.exists());
    let started_survived = process_alive(started_pid);
    kill(host_pid);
    kill(started_pid);
    assert!(!host_outlived, "the host {host_pid} outlived its manager");
    assert!(!socket_dir_left, "{} was left behind", endpoint.display());
    assert!(
        started_survived,
        "the process {started_pid} that the host started was killed with it"
    );
    println!(
        "test abandoned_host ... ok (host {host_pid} went with its manager; process {started_pid} it started did not)"
    );
}

fn start_a_host_and_die() -> ! {
    let options = SpawnOptions {
        program: env!("CARGO_BIN_EXE_pwshlib-sim").to_string(),
        // On Windows the host must go with the job object alone, so it is
        // told not to watch its parent; on Unix the parent watch is the way.
        args: if cfg!(windows) {
            vec!["-NoProfile".into(), "--ignore-parent".into()]
        } else {
            vec!["-NoProfile".into()]
        },
        host_script: "host.ps1".into(),
        // Not our stderr: a host that outlived us would hold the test
        // runner's pipe open.
        show_host_errors: false,
        pipe_timeout: Duration::from_secs(20),
        assembly_cache: None,
    };
    let mut host = Host::spawn(&options, &Cancel::default()).expect("the simulator starts");
    // A process of the host's own: another simulator that just waits.
    let start = ExecuteRequest::new(
        format!(
            "Start-Process -FilePath '{}' -ArgumentList '--never-listen -PipePath unused'",
            env!("CARGO_BIN_EXE_pwshlib-sim")
        ),
        Some(10_000),
        None,
        &[] as &[&str],
    );
    let started = host
        .execute(&start, &Cancel::default())
        .expect("the host starts a process");
    let started_pid = started.stdout.unwrap_or_default();
    let mut out = std::io::stdout();
    writeln!(
        out,
        "host {} started {} endpoint {}",
        host.pid(),
        started_pid.trim(),
        host.endpoint()
    )
    .unwrap();
    out.flush().unwrap();
    // Die in the middle of a call the host never finishes: a host that is
    // waiting for a request would leave on the end of the stream anyway.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(500));
        // No destructor runs: the host is neither told to exit nor killed.
        std::process::abort();
    });
    let hang = ExecuteRequest::new(
        "Write-Output 'busy' #pwshlib-sim:hang".into(),
        Some(600_000),
        None,
        &[] as &[&str],
    );
    let _ = host.execute(&hang, &Cancel::default());
    unreachable!("the hung call returned");
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    // A zombie has no cmdline; once reparented it is reaped by init anyway.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| !cmdline.is_empty())
}

#[cfg(unix)]
fn kill(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}

#[cfg(windows)]
fn kill(pid: u32) {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: plain values in; the handle is checked, used once and closed.
    unsafe {
        let process = OpenProcess(PROCESS_TERMINATE, 0, pid);
        if !process.is_null() {
            TerminateProcess(process, 1);
            CloseHandle(process);
        }
    }
}

#[cfg(windows)]
fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess takes plain values; a null handle means no such
    // process (or none we may see).
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return false;
    }
    let mut code = 0u32;
    // SAFETY: `process` is a valid handle we own, closed right after.
    unsafe {
        let known = GetExitCodeProcess(process, &mut code) != 0;
        CloseHandle(process);
        known && code == STILL_ACTIVE as u32
    }
}
