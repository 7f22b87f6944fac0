//! `Pwsh::Manager`: one long-lived PowerShell host process per manager,
//! reached over a Unix socket with the protocol of docs/protocol.md.
//!
//! All state is owned Rust data (the child process, the socket, paths); no
//! Ruby value is kept. Every wait on the host (connecting, a request, the
//! exit handshake) runs without the GVL; an interrupt shuts the socket down,
//! which leaves the manager cleanly dead (host killed and reaped). The Ruby
//! side (lib/pwsh.rb) caches instances per key and registers the at_exit
//! hook that calls `shutdown_all`.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use magnus::{
    function, method, prelude::*, scan_args::scan_args, value::ReprValue, Error, RArray, RHash,
    RString, Ruby, Value,
};
use parking_lot::Mutex;
use pwshlib_core::protocol::{self, ExecuteRequest, ExecuteResult, FrameError, Message};

use crate::error::{BindingError, BindingResult};
use crate::gvl::{without_gvl, Released};

/// How long the manager waits for a result beyond the request's timeout
/// before it declares the host hung (docs/protocol.md).
const READ_GRACE: Duration = Duration::from_secs(1);
/// How long a host gets to leave after `exit` before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
const CONNECT_RETRY: Duration = Duration::from_millis(50);

/// Every manager that has not been dropped, for `shutdown_all`.
static REGISTRY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// A running host: the process and our end of its socket.
struct Host {
    child: Child,
    stream: std::os::unix::net::UnixStream,
    socket_path: PathBuf,
    /// The process that started the host. After a fork the child inherits
    /// the manager but must leave the parent's host alone.
    owner_pid: u32,
}

impl Host {
    fn is_foreign(&self) -> bool {
        self.owner_pid != std::process::id()
    }

    /// Kills (if needed) and reaps the process, and removes the socket file.
    /// In a forked child it only closes the inherited descriptor: shutting
    /// the socket down would cut the parent's connection.
    fn destroy(mut self) {
        if self.is_foreign() {
            return;
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket_path);
    }

    /// Asks the host to leave, waits a little, then makes sure.
    fn exit_gracefully(mut self) {
        if self.is_foreign() {
            return;
        }
        let _ = protocol::write_message(&mut self.stream, &Message::Exit);
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let deadline = Instant::now() + EXIT_GRACE;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
        self.destroy();
    }

    /// True once the process is gone (or, after a fork, is not ours).
    fn has_exited(&mut self) -> bool {
        self.is_foreign() || !matches!(self.child.try_wait(), Ok(None))
    }
}

/// The state behind one Ruby `Pwsh::Manager`. `host` is `None` once the
/// host has exited, died or been killed: the manager is then dead for good.
struct Shared {
    host: Mutex<Option<Host>>,
    pid: u32,
    socket_path: PathBuf,
    /// The command, for `inspect`.
    description: String,
}

impl Shared {
    fn kill(&self) {
        if let Some(host) = self.host.lock().take() {
            host.destroy();
        }
    }

    fn exit(&self) {
        if let Some(host) = self.host.lock().take() {
            host.exit_gracefully();
        }
    }

    fn alive(&self) -> bool {
        // A call in progress holds the lock: the host is alive as far as
        // anyone can tell.
        let Some(mut guard) = self.host.try_lock() else {
            return true;
        };
        let exited = match guard.as_mut() {
            Some(host) => host.has_exited(),
            None => return false,
        };
        if exited {
            if let Some(host) = guard.take() {
                host.destroy();
            }
        }
        !exited
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(host) = self.host.get_mut().take() {
            host.destroy();
        }
    }
}

/// The Ruby object: a handle on the shared state.
#[magnus::wrap(class = "Pwsh::Manager", free_immediately, size)]
struct Manager {
    shared: Arc<Shared>,
}

/// Interrupt plumbing for one blocking call: the unblocking function sets
/// `cancelled` and shuts down whatever socket the call is using. It may run
/// in a signal handler, so it only does an atomic store, a lock-free
/// `OnceLock::get` and the shutdown(2) syscall.
#[derive(Default)]
struct Cancel {
    cancelled: AtomicBool,
    stream: std::sync::OnceLock<std::os::unix::net::UnixStream>,
}

impl Cancel {
    fn unblock(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(stream) = self.stream.get() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Publishes (a duplicate of) the socket for `unblock`; false if the call
    /// was already cancelled. Set before the flag is checked, so either this
    /// sees the flag or `unblock` sees the socket.
    fn watch(&self, stream: &std::os::unix::net::UnixStream) -> bool {
        if let Ok(clone) = stream.try_clone() {
            let _ = self.stream.set(clone);
        }
        !self.is_cancelled()
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// A socket with one overall deadline for every read and write.
struct Deadlined<'a> {
    stream: &'a mut std::os::unix::net::UnixStream,
    deadline: Instant,
}

impl Deadlined<'_> {
    fn remaining(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::ErrorKind::TimedOut.into())
        } else {
            Ok(left)
        }
    }
}

fn timed_out(error: io::Error) -> io::Error {
    match error.kind() {
        io::ErrorKind::WouldBlock => io::ErrorKind::TimedOut.into(),
        _ => error,
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.remaining()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf).map_err(timed_out)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.remaining()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// What `spawn` needs, copied out of Ruby.
struct SpawnRequest {
    /// The command for messages and `inspect`.
    description: String,
    cmd: String,
    args: Vec<String>,
    host_script: String,
    debug: bool,
    pipe_timeout: Duration,
}

fn socket_path_for_new_host() -> PathBuf {
    std::env::temp_dir().join(format!(
        "pwshlib-{}-{}.sock",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Starts the host (no shell: an argument vector) and connects, retrying
/// until `pipe_timeout`; on failure the process is killed and reaped.
fn spawn_host(request: &SpawnRequest, cancel: &Cancel) -> Result<Host, String> {
    let socket_path = socket_path_for_new_host();
    let mut command = Command::new(&request.cmd);
    command
        .args(&request.args)
        .arg("-File")
        .arg(&request.host_script)
        .arg("-PipePath")
        .arg(&socket_path)
        .arg("-ParentPid")
        .arg(std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(if request.debug {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
    // Its own process group: a Ctrl-C meant for Ruby reaches the manager as
    // an interrupt, and the manager decides the host's fate.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| {
        format!(
            "Failed to start the PowerShell host {:?}: {e}. {}",
            request.cmd,
            crate_hint()
        )
    })?;
    let fail = |mut child: Child, message: String| -> String {
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&socket_path);
        message
    };
    let started = Instant::now();
    let deadline = started + request.pipe_timeout;
    let stream = loop {
        if cancel.is_cancelled() {
            return Err(fail(
                child,
                "interrupted while starting the PowerShell host".into(),
            ));
        }
        match std::os::unix::net::UnixStream::connect(&socket_path) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(fail(
                        child,
                        format!(
                            "The PowerShell host {:?} exited ({status}) before opening its socket {}",
                            request.cmd,
                            socket_path.display()
                        ),
                    ));
                }
                std::thread::sleep(CONNECT_RETRY);
            }
            Err(e) => {
                let pid = child.id();
                return Err(fail(
                    child,
                    format!(
                        "Failure waiting for the PowerShell host (pid {pid}, {:?}) to open its socket {} within the pipe_timeout of {:.1} s ({e}); the process was killed",
                        request.cmd,
                        socket_path.display(),
                        request.pipe_timeout.as_secs_f64()
                    ),
                ));
            }
        }
    };
    if !cancel.watch(&stream) {
        return Err(fail(
            child,
            "interrupted while starting the PowerShell host".into(),
        ));
    }
    let mut stream = stream;
    // The handshake shares the pipe_timeout budget, with a floor so that a
    // host that connected at the last moment still gets to say hello.
    let hello_deadline = deadline.max(Instant::now() + Duration::from_secs(1));
    let hello = protocol::read_message(&mut Deadlined {
        stream: &mut stream,
        deadline: hello_deadline,
    });
    match hello {
        Ok(Some(Message::Hello { protocol: 1, .. })) => Ok(Host {
            child,
            stream,
            socket_path,
            owner_pid: std::process::id(),
        }),
        Ok(Some(Message::Hello { protocol, .. })) => Err(fail(
            child,
            format!(
                "The PowerShell host speaks protocol version {protocol}; this pwshlib speaks {}",
                protocol::PROTOCOL_VERSION
            ),
        )),
        Ok(other) => Err(fail(
            child,
            format!("The PowerShell host did not greet with hello: {other:?}"),
        )),
        Err(e) => Err(fail(
            child,
            format!("The PowerShell host handshake failed: {e}"),
        )),
    }
}

fn crate_hint() -> &'static str {
    "Set PWSHLIB_POWERSHELL to the PowerShell executable to use."
}

/// Sends one request and waits for its result, at most timeout + grace.
/// Every failure becomes an error result; the host is destroyed when it can
/// no longer be trusted (broken pipe, hang, protocol error).
fn run_request(shared: &Shared, request: &ExecuteRequest, cancel: &Cancel) -> ExecuteResult {
    let mut guard = shared.host.lock();
    let Some(host) = guard.as_mut() else {
        return ExecuteResult::failure(
            "The PowerShell host is not running (it exited or died); call Pwsh::Manager.instance for a new one",
        );
    };
    if host.is_foreign() {
        return ExecuteResult::failure(
            "This manager's PowerShell host belongs to the parent process (the manager was inherited through fork); call Pwsh::Manager.instance for a new one",
        );
    }
    if !cancel.watch(&host.stream) {
        return ExecuteResult::failure("interrupted");
    }
    let deadline = Instant::now() + Duration::from_millis(request.timeout_ms) + READ_GRACE;
    let message = Message::Execute(request.clone());
    let mut channel = Deadlined {
        stream: &mut host.stream,
        deadline,
    };
    let outcome = protocol::write_message(&mut channel, &message)
        .and_then(|()| protocol::read_message(&mut channel));
    let failure = match outcome {
        Ok(Some(Message::Result(result))) => return result,
        _ if cancel.is_cancelled() => "The call was interrupted; the PowerShell host was killed".to_string(),
        Ok(Some(Message::Error { message })) => {
            format!("The PowerShell host rejected the request: {message}")
        }
        Ok(Some(other)) => format!("The PowerShell host sent an unexpected message: {other:?}"),
        Ok(None) => dead_host_message(host),
        Err(FrameError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => format!(
            "The PowerShell host stopped responding: no result within {} ms (the timeout of {} ms plus {} ms grace); it was killed",
            request.timeout_ms + READ_GRACE.as_millis() as u64,
            request.timeout_ms,
            READ_GRACE.as_millis()
        ),
        Err(FrameError::Io(_)) => dead_host_message(host),
        Err(e) => format!("The PowerShell host sent a malformed reply ({e}); it was killed"),
    };
    if let Some(host) = guard.take() {
        host.destroy();
    }
    ExecuteResult::failure(failure)
}

fn dead_host_message(host: &mut Host) -> String {
    // Give a dying process a moment, so the message can say how it ended.
    for _ in 0..20 {
        if let Ok(Some(status)) = host.child.try_wait() {
            return format!("The PowerShell host died during the call ({status})");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    "The PowerShell host closed the connection during the call".to_string()
}

impl Manager {
    /// `Pwsh::Manager.spawn(cmd, args, host_script, debug, pipe_timeout)`:
    /// the native constructor behind `Pwsh::Manager.instance`.
    fn spawn(
        cmd: String,
        args: RArray,
        host_script: String,
        debug: bool,
        pipe_timeout: f64,
    ) -> BindingResult<Manager> {
        let args: Vec<String> = args.to_vec()?;
        let pipe_timeout = if pipe_timeout.is_finite() && pipe_timeout > 0.0 {
            Duration::from_secs_f64(pipe_timeout.min(86_400.0))
        } else {
            Duration::from_millis(1)
        };
        let request = SpawnRequest {
            description: cmd.clone(),
            cmd,
            args,
            host_script,
            debug,
            pipe_timeout,
        }
        .validated()?;
        let cancel = Cancel::default();
        let spawned = match without_gvl(|| spawn_host(&request, &cancel), || cancel.unblock()) {
            Released::Done(result) => result,
            Released::Panicked(message) => return Err(internal(message)),
            Released::Raised(error, result) => {
                if let Some(Ok(host)) = result {
                    host.destroy();
                }
                return Err(error.into());
            }
        };
        let host = spawned.map_err(pwshlib_core::Error::Host)?;
        let shared = Arc::new(Shared {
            pid: host.child.id(),
            socket_path: host.socket_path.clone(),
            description: request.description,
            host: Mutex::new(Some(host)),
        });
        let mut registry = REGISTRY.lock();
        registry.retain(|weak| weak.strong_count() > 0);
        registry.push(Arc::downgrade(&shared));
        Ok(Manager { shared })
    }

    fn execute(ruby: &Ruby, rb_self: &Self, args: &[Value]) -> BindingResult<RHash> {
        let args =
            scan_args::<(RString,), (Option<Value>, Option<Value>, Option<Value>), (), (), (), ()>(
                args,
            )?;
        let (code,) = args.required;
        let (timeout, working_dir, env_vars) = args.optional;
        let code = owned_string(code);
        let timeout_ms = optional_timeout(timeout)?;
        let working_dir = match working_dir.filter(|v| !v.is_nil()) {
            Some(dir) => Some(owned_string(RString::try_convert(dir)?)),
            None => None,
        };
        let env_vars: Vec<String> = match env_vars.filter(|v| !v.is_nil()) {
            Some(list) => RArray::try_convert(list)?
                .into_iter()
                .map(|item| RString::try_convert(item).map(owned_string))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let request = ExecuteRequest::new(code, timeout_ms, working_dir, &env_vars);
        let shared = Arc::clone(&rb_self.shared);
        let cancel = Cancel::default();
        let result = match without_gvl(
            || run_request(&shared, &request, &cancel),
            || cancel.unblock(),
        ) {
            Released::Done(result) => result,
            Released::Panicked(message) => {
                shared.kill();
                return Err(internal(message));
            }
            Released::Raised(error, _) => {
                // Interrupted: whatever the host was doing, it is no longer
                // in step with us. Leave the manager cleanly dead.
                shared.kill();
                return Err(error.into());
            }
        };
        if cancel.is_cancelled() {
            shared.kill();
        }
        result_to_ruby(ruby, &result)
    }

    fn is_alive(&self) -> bool {
        self.shared.alive()
    }

    /// Tells the host to exit and reaps it; a no-op on a dead manager.
    fn exit(&self) -> BindingResult<()> {
        let shared = Arc::clone(&self.shared);
        match without_gvl(|| shared.exit(), || {}) {
            Released::Done(()) => Ok(()),
            Released::Panicked(message) => Err(internal(message)),
            Released::Raised(error, _) => {
                shared.kill();
                Err(error.into())
            }
        }
    }

    fn pid(&self) -> u32 {
        self.shared.pid
    }

    fn socket_path(&self) -> String {
        self.shared.socket_path.display().to_string()
    }

    fn inspect(&self) -> String {
        format!(
            "#<Pwsh::Manager pid={} {} {}>",
            self.shared.pid,
            self.shared.description,
            if self.shared.alive() { "alive" } else { "dead" }
        )
    }

    /// Every live host exits and is reaped (the at_exit hook).
    fn shutdown_all() -> BindingResult<()> {
        let managers: Vec<Arc<Shared>> = REGISTRY
            .lock()
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        match without_gvl(
            || {
                // Ask them all first, then wait: hosts leave in parallel.
                let hosts: Vec<Host> = managers
                    .iter()
                    .filter_map(|shared| shared.host.lock().take())
                    .collect();
                let mut leaving = Vec::new();
                for mut host in hosts.into_iter().filter(|host| !host.is_foreign()) {
                    let _ = protocol::write_message(&mut host.stream, &Message::Exit);
                    let _ = host.stream.shutdown(std::net::Shutdown::Write);
                    leaving.push(host);
                }
                for host in leaving {
                    host.exit_gracefully();
                }
            },
            || {},
        ) {
            Released::Done(()) => Ok(()),
            Released::Panicked(message) => Err(internal(message)),
            Released::Raised(error, _) => Err(error.into()),
        }
    }
}

impl SpawnRequest {
    fn validated(self) -> Result<Self, BindingError> {
        if self.cmd.is_empty() {
            return Err(pwshlib_core::Error::Host(format!(
                "No PowerShell executable given. {}",
                crate_hint()
            ))
            .into());
        }
        if !Path::new(&self.host_script).is_file() {
            return Err(pwshlib_core::Error::Host(format!(
                "The host script {} does not exist",
                self.host_script
            ))
            .into());
        }
        Ok(self)
    }
}

/// Code and paths of any encoding arrive as UTF-8 (invalid bytes replaced).
fn owned_string(text: RString) -> String {
    match text.to_string() {
        Ok(s) => s,
        // SAFETY: the bytes are copied into an owned String before any other
        // Ruby code can run.
        Err(_) => unsafe { text.to_string_lossy().into_owned() },
    }
}

/// nil → default; Integer or Float milliseconds, truncated; negative → floor.
fn optional_timeout(value: Option<Value>) -> BindingResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_nil()) else {
        return Ok(None);
    };
    let millis = f64::try_convert(value)?;
    if !millis.is_finite() || millis < 0.0 {
        return Ok(Some(protocol::MIN_TIMEOUT_MS));
    }
    Ok(Some(millis.min(u64::MAX as f64) as u64))
}

fn result_to_ruby(ruby: &Ruby, result: &ExecuteResult) -> BindingResult<RHash> {
    let hash = ruby.hash_new();
    let optional = |text: &Option<String>| -> Value {
        match text {
            Some(text) => ruby.str_new(text).as_value(),
            None => ruby.qnil().as_value(),
        }
    };
    hash.aset(ruby.to_symbol("exitcode"), result.exitcode)?;
    hash.aset(ruby.to_symbol("stdout"), optional(&result.stdout))?;
    hash.aset(ruby.to_symbol("stderr"), ruby.str_new(&result.stderr))?;
    hash.aset(
        ruby.to_symbol("errormessage"),
        optional(&result.errormessage),
    )?;
    hash.aset(
        ruby.to_symbol("native_stdout"),
        optional(&result.native_stdout),
    )?;
    Ok(hash)
}

fn internal(message: String) -> BindingError {
    pwshlib_core::Error::Host(format!("pwshlib internal error: {message}")).into()
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let pwsh = ruby.define_module("Pwsh")?;
    let class = pwsh.define_class("Manager", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("spawn", function!(Manager::spawn, 5))?;
    class.define_singleton_method("shutdown_all", function!(Manager::shutdown_all, 0))?;
    class.define_method("execute", method!(Manager::execute, -1))?;
    class.define_method("alive?", method!(Manager::is_alive, 0))?;
    class.define_method("exit", method!(Manager::exit, 0))?;
    class.define_method("pid", method!(Manager::pid, 0))?;
    class.define_method("socket_path", method!(Manager::socket_path, 0))?;
    class.define_method("inspect", method!(Manager::inspect, 0))?;
    Ok(())
}
