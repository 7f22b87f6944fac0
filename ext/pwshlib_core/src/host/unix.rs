//! The host transport on Unix: a Unix socket in the temporary directory.
//!
//! Deadlines are socket timeouts recomputed before every read and write.
//! Cancelling shuts the socket down (shutdown(2) is async-signal-safe), so a
//! blocked read or write returns at once.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{cancelled_error, remaining};

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
        if cancel.is_cancelled() {
            return Err(cancelled_error());
        }
        self.stream.set_read_timeout(Some(remaining(deadline)?))?;
        self.stream.read(buf).map_err(timed_out)
    }

    pub fn write(&mut self, buf: &[u8], deadline: Instant, cancel: &Cancel) -> io::Result<usize> {
        if cancel.is_cancelled() {
            return Err(cancelled_error());
        }
        self.stream.set_write_timeout(Some(remaining(deadline)?))?;
        self.stream.write(buf).map_err(timed_out)
    }

    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Tells the host no more requests come (it sees EOF).
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

fn timed_out(error: io::Error) -> io::Error {
    match error.kind() {
        io::ErrorKind::WouldBlock => io::ErrorKind::TimedOut.into(),
        _ => error,
    }
}

/// Interrupt plumbing for one blocking call. [`Cancel::unblock`] may run in
/// a signal handler, so it only does an atomic store, a lock-free
/// `OnceLock::get` and the shutdown(2) syscall.
#[derive(Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    stream: OnceLock<UnixStream>,
}

impl Cancel {
    pub fn unblock(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(stream) = self.stream.get() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Publishes (a duplicate of) the socket for `unblock`; false if the
    /// call was already cancelled. Set before the flag is checked, so either
    /// this sees the flag or `unblock` sees the socket.
    pub fn watch(&self, connection: &Connection) -> bool {
        if let Ok(clone) = connection.stream.try_clone() {
            let _ = self.stream.set(clone);
        }
        !self.is_cancelled()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Sleeps between connection attempts (short: the flag is checked after).
    pub fn pause(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}
