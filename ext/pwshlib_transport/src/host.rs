//! The manager's side of a PowerShell host: starting the process, connecting
//! to the endpoint it serves, the hello handshake, one request at a time
//! under a deadline, cancellation, and leaving (docs/protocol.md).
//!
//! The endpoint is a Unix socket on Unix (`host/unix.rs`) and a named pipe
//! on Windows (`host/windows.rs`); the rest is the same on both, one file
//! per job: this one holds the running [`Host`] and how it leaves,
//! `host/spawn.rs` starting it (up to the hello), `host/call.rs` one
//! request and its reply, `host/channel.rs` the deadline and the replay
//! every wait reads through.
//! Nothing here blocks without a deadline, and every wait can be woken
//! through a [`Cancel`], whose [`Cancel::unblock`] is safe to call from
//! another thread or a signal handler (Ruby's unblocking function). A wake
//! only ends the wait: the connection stays intact and the call (or the
//! start) can be resumed where it stopped, because Ruby wakes us for every
//! signal it handles (a SIGCHLD from any child, a trap), not only for
//! interrupts. Whether to resume or give up is the caller's decision.
//!
//! Nothing here knows Ruby: the binding (`ext/pwshlib/src/manager.rs`) holds
//! the GVL plumbing, the registry of managers and the conversions.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::protocol::{self, Message};

mod assembly_cache;
#[cfg(windows)]
mod cache_security;
#[cfg(any(windows, test))]
mod cache_trust;
mod call;
mod channel;
mod spawn;

#[cfg(unix)]
#[path = "host/unix.rs"]
mod transport;
#[cfg(windows)]
#[path = "host/windows.rs"]
mod transport;

pub use assembly_cache::{assembly_cache_dir, ASSEMBLY_CACHE_ENV};
pub use call::{Call, Waited};
use channel::Deadlined;
pub use spawn::{
    Spawned, Spawning, CODE_INTEGRITY_EXIT, CONSTRAINED_LANGUAGE_EXIT, SET_OVERRIDE_HINT,
};
pub use transport::Cancel;
use transport::{Connection, ProcessGuard};

/// Where Windows named pipes live; the host's pipe is this plus
/// `pwshlib-<pid>-<uuid>`, and host.ps1 strips it again for .NET.
pub const WINDOWS_PIPE_PREFIX: &str = r"\\.\pipe\";

/// How long the manager waits for a result beyond the request's timeout
/// before it declares the host hung.
pub const READ_GRACE: Duration = Duration::from_millis(READ_GRACE_MS);
/// [`READ_GRACE`] in milliseconds, as messages and timeouts count.
pub const READ_GRACE_MS: u64 = 1_000;
/// How long a host gets to leave after `exit` before it is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// What starting a host needs: all owned data, copied out of the caller.
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    /// The PowerShell executable (or a stand-in such as pwshlib-sim).
    pub program: String,
    /// Its arguments before `-File host.ps1 …`.
    pub args: Vec<String>,
    pub host_script: String,
    /// Let the host's stderr through to ours (else it goes to the null device).
    pub show_host_errors: bool,
    /// How long the host may take to open its endpoint and say hello.
    pub pipe_timeout: Duration,
    /// Where host.ps1 keeps its compiled assembly (`-AssemblyCache`; see
    /// [`assembly_cache_dir`]); `None`: it compiles at every start.
    pub assembly_cache: Option<String>,
}

/// Why a host could not be started or can no longer be trusted. The message
/// says what happened; the host (if any) has already been killed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFailure(pub String);

impl std::fmt::Display for HostFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostFailure {}

/// A running host: the process and our end of its endpoint.
pub struct Host {
    child: Child,
    connection: Connection,
    endpoint: String,
    /// Keeps the host (and anything it starts) from outliving us where the
    /// platform can promise that (a kill-on-close job object on Windows).
    _guard: ProcessGuard,
    /// The process that started the host. After a fork the child inherits
    /// the host but must leave the parent's host alone.
    owner_pid: u32,
    /// The id of the last request sent; each result must carry it back.
    last_request_id: u64,
    /// The prelude mechanism the host offered in its hello (0: none).
    prelude_version: u32,
    /// The secret binding the host offered in its hello (0: none).
    secrets_version: u32,
    /// The DSC data form the host offered in its hello (0: none).
    dsc_version: u32,
    /// How the host got its compiled C#, as its hello said (None: it did
    /// not say).
    assembly: Option<String>,
    /// The prelude this host session holds, by id: set when a result says
    /// its code ran with it. A new host (after a crash, a kill or a restart)
    /// starts with none, so it is sent the prelude again.
    installed_prelude: Option<String>,
    wire: WireStats,
    /// Set when a call found the host dead: the connection ended or broke
    /// (not a timeout, not a protocol fault).
    lost: bool,
}

/// A prelude a request may run with: functions a host defines once per
/// session (docs/protocol.md, "Preludes").
#[derive(Clone, Copy, Debug)]
pub struct Prelude<'a> {
    pub id: &'a str,
    /// Only defines functions; ends with a newline.
    pub code: &'a str,
}

/// What crossed the connection, frames included (length prefixes too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireStats {
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The request and the reply of the latest call.
    pub last_sent: u64,
    pub last_received: u64,
}

impl Host {
    /// The prelude mechanism the host offered (0: none, an older host).
    pub fn prelude_version(&self) -> u32 {
        self.prelude_version
    }

    /// The secret binding the host offered (0: none, an older host).
    pub fn secrets_version(&self) -> u32 {
        self.secrets_version
    }

    /// The DSC data form the host offered (0: none, an older host).
    pub fn dsc_version(&self) -> u32 {
        self.dsc_version
    }

    /// How the host got its compiled C# ("compiled", "cached"), if it said.
    pub fn assembly(&self) -> Option<&str> {
        self.assembly.as_deref()
    }

    /// The id of the prelude this host session holds, if any.
    pub fn installed_prelude(&self) -> Option<&str> {
        self.installed_prelude.as_deref()
    }

    pub fn wire_stats(&self) -> WireStats {
        self.wire
    }

    /// True once a call found the host dead (it died, or the connection
    /// ended or broke, during the call).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The socket path or pipe name the host serves.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// True in a forked child: the host belongs to the parent.
    pub fn is_foreign(&self) -> bool {
        self.owner_pid != std::process::id()
    }

    /// True once the process is gone (or, after a fork, is not ours).
    pub fn has_exited(&mut self) -> bool {
        self.is_foreign() || !matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills (if needed) and reaps the process, and removes the endpoint.
    /// In a forked child it only closes the inherited descriptor: shutting
    /// the connection down would cut the parent's.
    pub fn destroy(mut self) {
        if self.is_foreign() {
            return;
        }
        self.connection.shutdown();
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        transport::remove_endpoint(&self.endpoint);
    }

    /// Asks the host to leave without waiting: many hosts can then leave in
    /// parallel before each is [`Host::finish_exit`]ed.
    pub fn begin_exit(&mut self) {
        if self.is_foreign() {
            return;
        }
        let cancel = Cancel::default();
        let mut channel =
            Deadlined::new(&mut self.connection, Instant::now() + EXIT_GRACE, &cancel);
        let _ = protocol::write_message(&mut channel, &Message::Exit);
        self.connection.shutdown_write();
    }

    /// Waits up to [`EXIT_GRACE`] for a host told to leave, then makes sure.
    /// The exit status if it left by itself; `None` if it had to be killed
    /// (or belongs to the parent of a fork).
    pub fn finish_exit(mut self) -> Option<ExitStatus> {
        if self.is_foreign() {
            return None;
        }
        let deadline = Instant::now() + EXIT_GRACE;
        let mut left = None;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Ok(status) => {
                    left = status;
                    break;
                }
                Err(_) => break,
            }
        }
        self.destroy();
        left
    }

    /// Asks the host to leave, waits a little, then makes sure; as
    /// [`Host::finish_exit`].
    pub fn exit_gracefully(mut self) -> Option<ExitStatus> {
        self.begin_exit();
        self.finish_exit()
    }
}
