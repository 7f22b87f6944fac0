//! Starting a host: the process (an argument vector, no shell), the
//! connection to the endpoint it opens, retried until the pipe_timeout, and
//! its hello. Every failure kills and reaps the process and removes the
//! endpoint; a wake hands the start back to be resumed.

use std::io;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::assembly_cache::{as_the_host_sees, host_source_key, remove_unsound};
use super::channel::{Deadlined, Replay};
use super::transport::{self, Connection, ProcessGuard};
use super::{Cancel, Host, HostFailure, SpawnOptions, WireStats};
use crate::protocol::{self, FrameError, Message};

/// The pause between attempts to connect to an endpoint not open yet:
/// short, since every host start waits for it (on average half of it) on
/// a fresh host's first call, and an attempt costs one failed
/// connect and one look at the process's status, some tens of
/// microseconds: a start of half a second makes a few hundred.
const CONNECT_RETRY: Duration = Duration::from_millis(2);

/// .NET runtime settings the host process starts with, as environment
/// variables, unless the user's environment sets them already (either
/// spelling: `DOTNET_` wins over `COMPlus_` in the runtime's own lookup).
/// host.ps1 removes the ones given here (`-RuntimeVariables`) from its
/// environment before its snapshot, so no call and no program a resource
/// starts sees them. Windows PowerShell 5.1 (the .NET Framework) reads
/// none of them.
///
/// `DOTNET_TieredPGO=0`: a host lives for one agent run, a few hundred
/// calls, and dynamic PGO's instrumented tier delays the optimized code of
/// the hot paths past that (docs/performance.md, "The runtime's settings":
/// on pwsh 7.6.9 a fresh host's in-sync Get 0.3 ms faster, its first call
/// 60 ms).
pub fn runtime_settings(is_set: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    /// Each setting: its name, its older spelling, the value.
    const SETTINGS: [(&str, &str, &str); 1] = [("DOTNET_TieredPGO", "COMPlus_TieredPGO", "0")];
    SETTINGS
        .iter()
        .filter(|(name, older, _)| !is_set(name) && !is_set(older))
        .map(|(name, _, value)| (*name, *value))
        .collect()
}

/// `-AssemblyCache <dir> -HostSourceKey <key>`, after the damaged files of
/// that key are removed (assembly_cache.rs says why the manager does
/// this); nothing when there is no cache or no key (the host compiles in
/// memory).
fn assembly_cache_args(options: &SpawnOptions) -> Vec<String> {
    let Some(dir) = &options.assembly_cache else {
        return Vec::new();
    };
    let Some(key) = Path::new(&options.host_script)
        .parent()
        .and_then(host_source_key)
    else {
        return Vec::new();
    };
    remove_unsound(&as_the_host_sees(Path::new(dir)), &key);
    vec![
        "-AssemblyCache".to_owned(),
        dir.clone(),
        "-HostSourceKey".to_owned(),
        key,
    ]
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
            .args(assembly_cache_args(options))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if options.show_host_errors {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let settings = runtime_settings(|name| std::env::var_os(name).is_some());
        if !settings.is_empty() {
            let names: Vec<&str> = settings.iter().map(|(name, _)| *name).collect();
            command
                .envs(settings.iter().copied())
                .arg("-RuntimeVariables")
                .arg(names.join(","));
        }
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
                        if status.code() == Some(CODE_INTEGRITY_EXIT) {
                            return Connected::Failed(code_integrity_message(&self.program));
                        }
                        return Connected::Failed(format!(
                            "The PowerShell host {:?} exited ({status}) before opening its {kind} {endpoint}",
                            self.program
                        ));
                    }
                    cancel.pause(CONNECT_RETRY);
                }
                Err(e) => {
                    // Opens with pwshlib 2.x's words, which callers match.
                    return Connected::Failed(format!(
                        "Failure waiting for PowerShell process {} to start pipe server ({:?} was to open its {kind} {endpoint} within the pipe_timeout of {} s: {e}); the process was killed",
                        self.starting.pid(),
                        self.program,
                        seconds(self.pipe_timeout)
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
        match versions_of(hello) {
            Ok(versions) => Spawned::Done(Ok(self.into_host(connection, versions))),
            Err(problem) => Spawned::Done(Err(self.starting.fail(problem))),
        }
    }

    fn into_host(
        mut self,
        connection: Connection,
        (prelude_version, secrets_version, dsc_version, assembly): Versions,
    ) -> Host {
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
            secrets_version,
            dsc_version,
            assembly,
            installed_prelude: None,
            wire: WireStats::default(),
            lost: false,
        }
    }
}

/// A pipe_timeout as said in a message: one decimal, or as many as it
/// takes for one below 0.1 s (0.01, not 0.0).
fn seconds(timeout: Duration) -> String {
    let secs = timeout.as_secs_f64();
    if secs >= 0.1 {
        format!("{secs:.1}")
    } else {
        format!("{secs}")
    }
}

/// How [`Spawning::connect`] ended.
enum Connected {
    Yes(Connection),
    Woken,
    /// Why the start failed (the process is then killed).
    Failed(String),
}

/// The prelude, secret binding and DSC data versions a hello offers, and
/// how the host got its assembly.
type Versions = (u32, u32, u32, Option<String>);

/// The prelude and secret binding versions a hello offers, or why the
/// host cannot be used.
fn versions_of(hello: Result<Option<Message>, FrameError>) -> Result<Versions, String> {
    match hello {
        Ok(Some(Message::Hello {
            protocol: protocol::PROTOCOL_VERSION,
            prelude,
            secrets,
            assembly,
            dsc,
            ..
        })) => Ok((prelude, secrets, dsc, assembly)),
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

/// host.ps1's exit code when its compiled C# host may not load because an
/// application control policy enforces code integrity (WDAC: PowerShell's
/// `SystemPolicy.GetSystemLockdownPolicy()` says `Enforce`).
pub const CODE_INTEGRITY_EXIT: i32 = 87;

/// What to do when the policy refused the host's compiled assembly.
fn code_integrity_message(program: &str) -> String {
    format!(
        "The PowerShell host {program:?} cannot run: an application control policy (WDAC) enforces code integrity and refuses the assembly pwshlib's host compiles at run time (its C# host, loaded from memory). Allow dynamic code for PowerShell in the policy, or run the agent where the policy allows it"
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
    fn a_pipe_timeout_below_a_tenth_keeps_its_digits() {
        assert_eq!(seconds(Duration::from_secs(1)), "1.0");
        assert_eq!(seconds(Duration::from_millis(10)), "0.01");
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

    #[test]
    fn the_host_starts_without_dynamic_pgo_unless_the_user_chose() {
        assert_eq!(runtime_settings(|_| false), vec![("DOTNET_TieredPGO", "0")]);
        assert!(runtime_settings(|name| name == "DOTNET_TieredPGO").is_empty());
        assert!(runtime_settings(|name| name == "COMPlus_TieredPGO").is_empty());
        assert_eq!(
            runtime_settings(|name| name == "DOTNET_TieredCompilation"),
            vec![("DOTNET_TieredPGO", "0")]
        );
    }
}
