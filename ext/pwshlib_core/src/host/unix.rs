//! The host transport on Unix: a Unix socket in the temporary directory.
//!
//! Deadlines are socket timeouts recomputed before every read and write. A
//! read or write waits in slices of at most [`WAKE_SLICE`], checking the
//! call's [`Cancel`] between slices: a wake only sets a flag (an atomic
//! store is async-signal-safe) and must leave the connection intact, since
//! Ruby wakes us for every signal it handles, and the call goes on after
//! most of them.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{remaining, woken_error};

/// The longest a read or write blocks before it checks for a wake: the
/// delay between an interrupt and the wait ending.
const WAKE_SLICE: Duration = Duration::from_millis(50);

/// How messages name the endpoint.
pub const ENDPOINT_KIND: &str = "socket";

/// A fresh socket path: the PID for whoever cleans up after a crash, a
/// random part so that nobody can guess it ahead of the host.
pub fn new_endpoint_name() -> String {
    std::env::temp_dir()
        .join(format!(
            "pwshlib-{}-{}.sock",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ))
        .display()
        .to_string()
}

/// The host's socket file; it normally removes it itself, but not when it
/// was killed.
pub fn remove_endpoint(endpoint: &str) {
    let _ = std::fs::remove_file(endpoint);
}

/// Its own process group: a Ctrl-C meant for Ruby reaches the manager as an
/// interrupt, and the manager decides the host's fate.
pub fn detach_from_our_interrupts(command: &mut Command) {
    std::os::unix::process::CommandExt::process_group(command, 0);
}

/// On Unix the host watches its parent PID itself (`-ParentPid`); nothing
/// more to hold.
pub struct ProcessGuard;

impl ProcessGuard {
    pub fn new(_child: &Child) -> Self {
        ProcessGuard
    }
}

pub struct Connection {
    stream: UnixStream,
}

impl Connection {
    /// One attempt; the caller retries until its pipe_timeout.
    pub fn connect(endpoint: &str) -> io::Result<Connection> {
        UnixStream::connect(endpoint).map(|stream| Connection { stream })
    }

    pub fn read(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        cancel: &Cancel,
    ) -> io::Result<usize> {
        loop {
            if cancel.is_woken() {
                return Err(woken_error());
            }
            self.stream
                .set_read_timeout(Some(remaining(deadline)?.min(WAKE_SLICE)))?;
            match self.stream.read(buf) {
                Err(e) if is_slice_over(&e) => continue,
                other => return other,
            }
        }
    }

    pub fn write(&mut self, buf: &[u8], deadline: Instant, cancel: &Cancel) -> io::Result<usize> {
        loop {
            if cancel.is_woken() {
                return Err(woken_error());
            }
            self.stream
                .set_write_timeout(Some(remaining(deadline)?.min(WAKE_SLICE)))?;
            match self.stream.write(buf) {
                Err(e) if is_slice_over(&e) => continue,
                other => return other,
            }
        }
    }

    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Tells the host no more requests come (it sees EOF).
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

/// A socket timeout (or a signal: EINTR) ended the slice; the deadline and
/// the wake flag decide what comes next.
fn is_slice_over(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Interrupt plumbing for one blocking call. [`Cancel::unblock`] may run in
/// a signal handler, so it only does an atomic store; waits see it within
/// [`WAKE_SLICE`].
#[derive(Default)]
pub struct Cancel {
    woken: AtomicBool,
}

impl Cancel {
    /// Wakes the wait; the connection is left as it is.
    pub fn unblock(&self) {
        self.woken.store(true, Ordering::SeqCst);
    }

    /// Clears a wake, before the next wait (with Ruby's GVL held, before the
    /// unblocking function is installed, so no wake is lost).
    pub fn rearm(&self) {
        self.woken.store(false, Ordering::SeqCst);
    }

    pub fn is_woken(&self) -> bool {
        self.woken.load(Ordering::SeqCst)
    }

    /// Sleeps between connection attempts (short: the flag is checked after).
    pub fn pause(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}
