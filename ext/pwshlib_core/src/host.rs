//! The manager's side of a PowerShell host: starting the process, connecting
//! to the endpoint it serves, the hello handshake, one request at a time
//! under a deadline, cancellation, and leaving (docs/protocol.md).
//!
//! The endpoint is a Unix socket on Unix (`host/unix.rs`) and a named pipe
//! on Windows (`host/windows.rs`); this file is the same on both.
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

use std::io::{self, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::protocol::{self, ExecuteRequest, ExecuteResult, FrameError, Message, PreludeRef};

#[cfg(unix)]
#[path = "host/unix.rs"]
mod transport;
#[cfg(windows)]
#[path = "host/windows.rs"]
mod transport;

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
const CONNECT_RETRY: Duration = Duration::from_millis(50);

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
    /// Starts the host (no shell: an argument vector) and connects, retrying
    /// until `pipe_timeout`; on any failure the process is killed and reaped.
    /// A wake through `cancel` ends the start as interrupted.
    pub fn spawn(options: &SpawnOptions, cancel: &Cancel) -> Result<Host, HostFailure> {
        match Host::start_spawn(options)?.wait(cancel) {
            Spawned::Done(result) => result,
            Spawned::Woken(mut spawning) => Err(spawning
                .starting
                .fail("interrupted while starting the PowerShell host")),
        }
    }

    /// Starts the host process; [`Spawning::wait`] then connects and waits
    /// for its hello.
    pub fn start_spawn(options: &SpawnOptions) -> Result<Spawning, HostFailure> {
        let endpoint = transport::new_endpoint().map_err(|e| {
            HostFailure(format!(
                "Failed to make a private place for the PowerShell host's {}: {e}",
                transport::ENDPOINT_KIND
            ))
        })?;
        let mut command = Command::new(&options.program);
        command
            .args(&options.args)
            .arg("-File")
            .arg(&options.host_script)
            .arg("-PipePath")
            .arg(&endpoint)
            .arg("-ParentPid")
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if options.show_host_errors {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        transport::detach_from_our_interrupts(&mut command);
        let child =
            retry_transient_start(|| command.spawn(), transport::is_transient_start_failure)
                .map_err(|e| {
                    transport::remove_endpoint(&endpoint);
                    HostFailure(format!(
                        "Failed to start the PowerShell host {:?}: {e}. {}",
                        options.program, SET_OVERRIDE_HINT
                    ))
                })?;
        let guard = ProcessGuard::new(&child);
        Ok(Spawning {
            starting: Starting {
                child: Some(child),
                endpoint,
            },
            guard,
            program: options.program.clone(),
            host_script: options.host_script.clone(),
            pipe_timeout: options.pipe_timeout,
            deadline: Instant::now() + options.pipe_timeout,
            connection: None,
            hello_deadline: None,
            hello: Vec::new(),
        })
    }

    /// The prelude mechanism the host offered (0: none, an older host).
    pub fn prelude_version(&self) -> u32 {
        self.prelude_version
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

    /// Runs `request.code` after `prelude`'s functions are defined; as
    /// [`Host::start_call_with_prelude`] then [`Host::wait_call`], a wake
    /// ending the call as interrupted.
    pub fn execute_with_prelude(
        &mut self,
        prelude: Prelude<'_>,
        request: ExecuteRequest,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        let call = self.start_call_with_prelude(prelude, request)?;
        self.finish_call(call, cancel)
    }

    /// Prepares a request whose code runs after `prelude`'s functions are
    /// defined. A host that offers preludes gets the prelude's text once per
    /// session (with the first such request) and afterwards only its id; an
    /// older host gets the whole script, prelude first, as one plain request.
    pub fn start_call_with_prelude(
        &mut self,
        prelude: Prelude<'_>,
        mut request: ExecuteRequest,
    ) -> Result<Call, HostFailure> {
        if self.prelude_version < protocol::PRELUDE_VERSION {
            request.code.insert_str(0, prelude.code);
            request.prelude = None;
            return self.start_call(&request);
        }
        let held = self.installed_prelude.as_deref() == Some(prelude.id);
        request.prelude = Some(PreludeRef {
            id: prelude.id.to_owned(),
            code: (!held).then(|| prelude.code.to_owned()),
        });
        let mut call = self.start_call(&request)?;
        call.prelude_id = Some(prelude.id.to_owned());
        Ok(call)
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

    /// Sends one request and waits for its result, at most timeout + grace;
    /// as [`Host::start_call`] then [`Host::wait_call`], a wake ending the
    /// call as interrupted. `Err` means the host can no longer be trusted:
    /// the caller must destroy it and report the message as the call's error.
    pub fn execute(
        &mut self,
        request: &ExecuteRequest,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        let call = self.start_call(request)?;
        self.finish_call(call, cancel)
    }

    fn finish_call(
        &mut self,
        mut call: Call,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        match self.wait_call(&mut call, cancel) {
            Waited::Finished(result) => result,
            Waited::Woken => Err(HostFailure(INTERRUPTED.into())),
        }
    }

    /// Gives the request its id and frames it; nothing is sent yet. Its
    /// deadline (timeout + grace) starts now. `Err`: as for `execute`.
    pub fn start_call(&mut self, request: &ExecuteRequest) -> Result<Call, HostFailure> {
        if self.is_foreign() {
            return Err(HostFailure(
                "This manager's PowerShell host belongs to the parent process (the manager was inherited through fork); call Pwsh::Manager.instance for a new one".into(),
            ));
        }
        let deadline = Instant::now() + Duration::from_millis(request.timeout_ms) + READ_GRACE;
        self.last_request_id += 1;
        let id = self.last_request_id;
        let frame = protocol::encode(&Message::Execute(ExecuteRequest {
            id,
            ..request.clone()
        }))
        .map_err(|e| {
            HostFailure(format!(
                "The request could not be sent to the PowerShell host ({e})"
            ))
        })?;
        Ok(Call {
            id,
            timeout_ms: request.timeout_ms,
            deadline,
            frame,
            written: 0,
            reply: Vec::new(),
            prelude_id: None,
        })
    }

    /// Sends what the host does not have yet of `call`'s request and waits
    /// for its reply until the call's deadline, or until woken.
    pub fn wait_call(&mut self, call: &mut Call, cancel: &Cancel) -> Waited {
        let outcome = exchange(&mut self.connection, call, cancel);
        if matches!(outcome, Err(FrameError::Io(_))) && cancel.is_woken() {
            // Whatever the i/o error was, it recurs when resumed if real.
            return Waited::Woken;
        }
        let (sent, received) = (call.written as u64, call.reply.len() as u64);
        self.wire.requests += 1;
        self.wire.bytes_sent += sent;
        self.wire.bytes_received += received;
        self.wire.last_sent = sent;
        self.wire.last_received = received;
        let id = call.id;
        let failure = match outcome {
            Ok(Some(Message::Result(result))) if result.id == Some(id) => {
                if let Some(prelude_id) = call.prelude_id.take() {
                    // Only the host's word counts: a prelude it could not
                    // define (or has lost) is sent again with the next request.
                    self.installed_prelude =
                        (result.prelude.as_deref() == Some(prelude_id.as_str())).then_some(prelude_id);
                }
                return Waited::Finished(Ok(result));
            }
            // A reply left over from an earlier request (a host that answered
            // twice), or one that answers nothing we asked: from here on no
            // reply can be trusted to be this request's, so the host goes.
            Ok(Some(Message::Result(result))) => format!(
                "The PowerShell host broke the protocol: the reply to request {id} carried {}; it was killed",
                match result.id {
                    Some(other) => format!("the id of request {other}"),
                    None => "no request id".to_string(),
                }
            ),
            Ok(Some(Message::Error { message })) => {
                format!("The PowerShell host rejected the request: {message}")
            }
            Ok(Some(other)) => {
                format!("The PowerShell host sent an unexpected message: {other:?}")
            }
            Err(FrameError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => format!(
                "The PowerShell host stopped responding: no result within {} ms (the timeout of {} ms plus {READ_GRACE_MS} ms grace); it was killed",
                call.timeout_ms + READ_GRACE_MS,
                call.timeout_ms,
            ),
            Ok(None) | Err(FrameError::Io(_)) => {
                self.lost = true;
                self.dead_host_message()
            }
            Err(e) => format!("The PowerShell host sent a malformed reply ({e}); it was killed"),
        };
        Waited::Finished(Err(HostFailure(failure)))
    }

    fn dead_host_message(&mut self) -> String {
        // Give a dying process a moment, so the message can say how it ended.
        for _ in 0..20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return format!("The PowerShell host died during the call ({status})");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        "The PowerShell host closed the connection during the call".to_string()
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

/// A host being started: the process runs; the connection and the hello
/// may still be outstanding. A wait woken through its [`Cancel`] hands it
/// back to be resumed; dropping it kills the process.
pub struct Spawning {
    starting: Starting,
    guard: ProcessGuard,
    program: String,
    host_script: String,
    pipe_timeout: Duration,
    deadline: Instant,
    connection: Option<Connection>,
    /// Set once connected: the handshake's own deadline.
    hello_deadline: Option<Instant>,
    /// The bytes of the hello received so far (replayed when resumed).
    hello: Vec<u8>,
}

/// How a [`Spawning::wait`] ended.
pub enum Spawned {
    Done(Result<Host, HostFailure>),
    Woken(Spawning),
}

impl Spawning {
    /// Connects (retrying until pipe_timeout) and reads the hello.
    pub fn wait(mut self, cancel: &Cancel) -> Spawned {
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => match self.connect(cancel) {
                Connected::Yes(connection) => connection,
                Connected::Woken => return Spawned::Woken(self),
                Connected::Failed(message) => {
                    return Spawned::Done(Err(self.starting.fail(message)))
                }
            },
        };
        self.greet(connection, cancel)
    }

    /// Connects to the endpoint, retrying until the pipe_timeout, and checks
    /// that the other end is the host we started.
    fn connect(&mut self, cancel: &Cancel) -> Connected {
        let endpoint = self.starting.endpoint.clone();
        let kind = transport::ENDPOINT_KIND;
        loop {
            if cancel.is_woken() {
                return Connected::Woken;
            }
            match Connection::connect(&endpoint) {
                Ok(connection) => {
                    // Before anything is read or sent: the other end
                    // must be the host we started (or its child).
                    return match connection.check_peer(self.starting.pid()) {
                        Ok(()) => Connected::Yes(connection),
                        Err(problem) => Connected::Failed(format!(
                            "Refused the PowerShell host's {kind} {endpoint}: {problem}"
                        )),
                    };
                }
                Err(_) if Instant::now() < self.deadline => {
                    if let Some(status) = self.starting.exit_status() {
                        if status.code() == Some(CONSTRAINED_LANGUAGE_EXIT) {
                            return Connected::Failed(constrained_language_message(
                                &self.program,
                                &self.host_script,
                            ));
                        }
                        return Connected::Failed(format!(
                            "The PowerShell host {:?} exited ({status}) before opening its {kind} {endpoint}",
                            self.program
                        ));
                    }
                    cancel.pause(CONNECT_RETRY);
                }
                Err(e) => {
                    return Connected::Failed(format!(
                        "Failure waiting for the PowerShell host (pid {}, {:?}) to open its {kind} {endpoint} within the pipe_timeout of {:.1} s ({e}); the process was killed",
                        self.starting.pid(),
                        self.program,
                        self.pipe_timeout.as_secs_f64()
                    ));
                }
            }
        }
    }

    /// Reads the hello (resumable: the bytes so far are kept) and, when it
    /// is one this pwshlib speaks, hands over the host.
    fn greet(mut self, mut connection: Connection, cancel: &Cancel) -> Spawned {
        // The handshake shares the pipe_timeout budget, with a floor so that
        // a host that connected at the last moment still gets to say hello.
        let hello_deadline = *self
            .hello_deadline
            .get_or_insert_with(|| self.deadline.max(Instant::now() + Duration::from_secs(1)));
        let hello = protocol::read_message(&mut Replay::new(
            &mut self.hello,
            Deadlined::new(&mut connection, hello_deadline, cancel),
        ));
        if matches!(hello, Err(FrameError::Io(_))) && cancel.is_woken() {
            self.connection = Some(connection);
            return Spawned::Woken(self);
        }
        match prelude_version_of(hello) {
            Ok(prelude_version) => Spawned::Done(Ok(self.into_host(connection, prelude_version))),
            Err(problem) => Spawned::Done(Err(self.starting.fail(problem))),
        }
    }

    fn into_host(mut self, connection: Connection, prelude_version: u32) -> Host {
        Host {
            child: self
                .starting
                .child
                .take()
                .expect("the child is kept until success"),
            connection,
            endpoint: self.starting.endpoint.clone(),
            _guard: self.guard,
            owner_pid: std::process::id(),
            last_request_id: 0,
            prelude_version,
            installed_prelude: None,
            wire: WireStats::default(),
            lost: false,
        }
    }
}

/// How [`Spawning::connect`] ended.
enum Connected {
    Yes(Connection),
    Woken,
    /// Why the start failed (the process is then killed).
    Failed(String),
}

/// The prelude version a hello offers, or why the host cannot be used.
fn prelude_version_of(hello: Result<Option<Message>, FrameError>) -> Result<u32, String> {
    match hello {
        Ok(Some(Message::Hello {
            protocol: protocol::PROTOCOL_VERSION,
            prelude,
            ..
        })) => Ok(prelude),
        Ok(Some(Message::Hello { protocol, .. })) => Err(format!(
            "The PowerShell host speaks protocol version {protocol}; this pwshlib speaks {}",
            protocol::PROTOCOL_VERSION
        )),
        Ok(other) => Err(format!(
            "The PowerShell host did not greet with hello: {other:?}"
        )),
        Err(e) => Err(format!("The PowerShell host handshake failed: {e}")),
    }
}

/// A request on its way: sent (perhaps only in part) and waiting for its
/// reply. A wait woken through its [`Cancel`] leaves everything here, so
/// that [`Host::wait_call`] can go on where it stopped.
pub struct Call {
    id: u64,
    timeout_ms: u64,
    deadline: Instant,
    /// The whole request frame, and how much of it the host has.
    frame: Vec<u8>,
    written: usize,
    /// Every byte of the reply received so far (replayed when resumed).
    reply: Vec<u8>,
    /// The prelude the request carried, if any: the result says whether the
    /// host now holds it.
    prelude_id: Option<String>,
}

/// How a [`Host::wait_call`] ended.
pub enum Waited {
    /// The call is over. `Err`: the host can no longer be trusted; the
    /// caller must destroy it and report the message as the call's error.
    Finished(Result<ExecuteResult, HostFailure>),
    /// Woken through the [`Cancel`] before the reply was whole: the call is
    /// still in flight; wait on it again or destroy the host.
    Woken,
}

const INTERRUPTED: &str = "The call was interrupted; the PowerShell host was killed";

/// host.ps1's exit code when PowerShell runs it in a language mode other
/// than FullLanguage (AppLocker or WDAC enforcing): it cannot compile its
/// C# host there (`Add-Type` is refused), so it leaves before listening.
pub const CONSTRAINED_LANGUAGE_EXIT: i32 = 86;

/// What to do when host.ps1 ran in constrained language mode.
fn constrained_language_message(program: &str, host_script: &str) -> String {
    format!(
        "The PowerShell host {program:?} cannot run: PowerShell runs {host_script} in constrained language mode (an AppLocker or WDAC policy is enforced), where it cannot compile its C# host. Allow that script to run in full language mode (an AppLocker or WDAC rule for it), or sign it with a certificate the policy trusts"
    )
}

/// Told with every failure to find or start PowerShell.
pub const SET_OVERRIDE_HINT: &str = "Set PWSHLIB_POWERSHELL to the PowerShell executable to use.";

/// A host process between spawn and hello: on failure it is killed, reaped
/// and its endpoint removed.
struct Starting {
    child: Option<Child>,
    endpoint: String,
}

impl Starting {
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    fn fail(&mut self, message: impl Into<String>) -> HostFailure {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        transport::remove_endpoint(&self.endpoint);
        HostFailure(message.into())
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.fail("abandoned");
        }
    }
}

/// A connection with one overall deadline for every read and write, cut
/// short when the call's [`Cancel`] wakes it.
struct Deadlined<'a> {
    connection: &'a mut Connection,
    deadline: Instant,
    cancel: &'a Cancel,
}

impl<'a> Deadlined<'a> {
    fn new(connection: &'a mut Connection, deadline: Instant, cancel: &'a Cancel) -> Self {
        Deadlined {
            connection,
            deadline,
            cancel,
        }
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.connection.read(buf, self.deadline, self.cancel)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.connection.write(buf, self.deadline, self.cancel)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How often a start that failed for a reason of the moment is tried in
/// all, and the pause before each retry.
const START_ATTEMPTS: u32 = 3;
const START_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Runs `start`, again after a pause while it fails with an error that
/// `is_transient` accepts, up to [`START_ATTEMPTS`] times in all.
fn retry_transient_start<T>(
    mut start: impl FnMut() -> io::Result<T>,
    is_transient: impl Fn(&io::Error) -> bool,
) -> io::Result<T> {
    let mut attempt = 1;
    loop {
        match start() {
            Err(error) if attempt < START_ATTEMPTS && is_transient(&error) => {
                attempt += 1;
                std::thread::sleep(START_RETRY_PAUSE);
            }
            outcome => return outcome,
        }
    }
}

/// The time left before `deadline`, or `TimedOut` once it has passed.
fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::ErrorKind::TimedOut.into())
    } else {
        Ok(left)
    }
}

/// The error a woken wait gives. Not `ErrorKind::Interrupted`: std's
/// `read_exact` retries those, which would spin on a woken call.
fn woken_error() -> io::Error {
    io::Error::other("the wait for the PowerShell host was woken")
}

/// Writes the rest of `call`'s request, then reads its reply: the bytes
/// already received are replayed first, so a resumed wait parses the reply
/// from its start (wake-ups are rare; parsing again is cheap).
fn exchange(
    connection: &mut Connection,
    call: &mut Call,
    cancel: &Cancel,
) -> Result<Option<Message>, FrameError> {
    let mut channel = Deadlined::new(connection, call.deadline, cancel);
    while call.written < call.frame.len() {
        let written = channel
            .write(&call.frame[call.written..])
            .map_err(FrameError::Io)?;
        if written == 0 {
            return Err(FrameError::Io(io::ErrorKind::WriteZero.into()));
        }
        call.written += written;
    }
    protocol::read_message(&mut Replay::new(&mut call.reply, channel))
}

/// Reads `recorded` first, then the live channel, recording what that
/// gives: a frame parser run over it again after a wake sees the same bytes.
struct Replay<'a, R> {
    recorded: &'a mut Vec<u8>,
    replayed: usize,
    live: R,
}

impl<'a, R: Read> Replay<'a, R> {
    fn new(recorded: &'a mut Vec<u8>, live: R) -> Self {
        Replay {
            recorded,
            replayed: 0,
            live,
        }
    }
}

impl<R: Read> Read for Replay<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let old = &self.recorded[self.replayed..];
        if !old.is_empty() {
            let count = old.len().min(buf.len());
            buf[..count].copy_from_slice(&old[..count]);
            self.replayed += count;
            return Ok(count);
        }
        let count = self.live.read(buf)?;
        self.recorded.extend_from_slice(&buf[..count]);
        self.replayed += count;
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transient() -> io::Error {
        io::Error::other("of the moment")
    }

    fn is_transient(error: &io::Error) -> bool {
        error.to_string() == "of the moment"
    }

    /// Runs `retry_transient_start` over `outcomes`, one per attempt;
    /// gives its outcome and how many attempts it made.
    fn start_with(outcomes: Vec<io::Result<u32>>) -> (io::Result<u32>, usize) {
        let mut outcomes = outcomes.into_iter();
        let mut attempts = 0;
        let outcome = retry_transient_start(
            || {
                attempts += 1;
                outcomes.next().expect("no more attempts than outcomes")
            },
            is_transient,
        );
        (outcome, attempts)
    }

    #[test]
    fn a_transient_start_failure_is_retried_until_a_start_succeeds() {
        let (outcome, attempts) = start_with(vec![Err(transient()), Err(transient()), Ok(7)]);
        assert_eq!(outcome.unwrap(), 7);
        assert_eq!(attempts, 3);
    }

    #[test]
    fn transient_failures_end_after_the_last_attempt_with_the_last_error() {
        let (outcome, attempts) =
            start_with(vec![Err(transient()), Err(transient()), Err(transient())]);
        assert!(is_transient(&outcome.unwrap_err()));
        assert_eq!(attempts, START_ATTEMPTS as usize);
    }

    #[test]
    fn any_other_failure_is_not_retried() {
        let (outcome, attempts) = start_with(vec![Err(io::ErrorKind::NotFound.into())]);
        assert_eq!(outcome.unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(attempts, 1);
    }

    #[cfg(windows)]
    #[test]
    fn windows_internal_error_is_transient_and_not_found_is_not() {
        assert!(transport::is_transient_start_failure(
            &io::Error::from_raw_os_error(1359)
        ));
        assert!(!transport::is_transient_start_failure(
            &io::Error::from_raw_os_error(2)
        ));
    }
}
