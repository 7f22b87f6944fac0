//! `pwshlib-sim`: a stand-in for PowerShell running lib/templates/host.ps1.
//!
//! It takes the host's command line (`<pwsh args…> -File <host.ps1>
//! -PipePath <endpoint> -ParentPid <pid>`), listens on the endpoint (a Unix
//! socket, or a named pipe on Windows: `endpoint.rs`), and speaks
//! docs/protocol.md: hello, then execute → result until exit or EOF.
//! Every script must parse as PowerShell (tree-sitter-powershell). DSC
//! invocations go to the DSC engine (`dsc/`); anything else to echo mode
//! (`echo.rs`, see README.md).
//!
//! `pwshlib-sim --parse-tree < script.ps1` prints the syntax tree (a debugging aid).

mod echo;
mod endpoint;
mod environment;

use pwshlib_sim::prelude::{self, Session};
use pwshlib_sim::syntax::parse;
use pwshlib_sim::{dsc, outcome};

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use environment::EnvironmentSnapshot;
use outcome::Outcome;
use pwshlib_transport::protocol::{self, ExecuteRequest, ExecuteResult, Message};

struct Args {
    pipe_path: PathBuf,
    parent_pid: Option<u32>,
    /// The `-ParentPid` as given (even with `--ignore-parent`): the one
    /// client the endpoint accepts, as host.ps1 does.
    client_pid: Option<u32>,
    /// `--never-listen`: a host that starts but never opens its endpoint,
    /// for the manager's pipe_timeout (README.md).
    never_listen: bool,
    /// `--tell-endpoint <file>`: write the `-PipePath` value to `file`, then
    /// never listen: a started "host" whose endpoint a test then serves
    /// from another process (an impostor, for the manager's peer check).
    tell_endpoint: Option<PathBuf>,
    /// `--record <file>`: append every message received, one per line (a
    /// test artefact: it holds the code in the clear).
    record: Option<PathBuf>,
}

/// Finds `-PipePath` and `-ParentPid` (PowerShell parameter names are
/// case-insensitive), `--never-listen` and `--ignore-parent`; every other argument belongs to
/// pwsh and is ignored.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut pipe_path, mut parent_pid) = (None, None);
    let (mut never_listen, mut ignore_parent) = (false, false);
    let (mut tell_endpoint, mut record) = (None, None);
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg == "--never-listen" {
            never_listen = true;
        } else if arg == "--tell-endpoint" {
            tell_endpoint = args.next().map(PathBuf::from);
            never_listen = true;
        } else if arg == "--record" {
            record = args.next().map(PathBuf::from);
        } else if arg == "--ignore-parent" {
            ignore_parent = true;
        } else if arg.eq_ignore_ascii_case("-PipePath") {
            pipe_path = args.next().map(PathBuf::from);
        } else if arg.eq_ignore_ascii_case("-ParentPid") {
            let pid = args.next().unwrap_or_default();
            parent_pid = Some(pid.parse().map_err(|_| format!("bad -ParentPid {pid:?}"))?);
        }
    }
    let pipe_path = pipe_path.ok_or("missing -PipePath <endpoint>")?;
    Ok(Args {
        pipe_path,
        // `--ignore-parent`: no parent watch, to test what else ends a host.
        parent_pid: parent_pid.filter(|_| !ignore_parent),
        client_pid: parent_pid.filter(|&pid| pid > 0),
        never_listen,
        tell_endpoint,
        record,
    })
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--parse-tree") {
        let mut code = String::new();
        let _ = std::io::stdin().read_to_string(&mut code);
        match parse(&code) {
            Ok(tree) => println!("{}", tree.root_node().to_sexp()),
            Err(e) => println!("{e}"),
        }
        return;
    }
    let args = match parse_args(argv.into_iter()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("pwshlib-sim: {e}");
            std::process::exit(2);
        }
    };
    play_the_edition_named_by(std::env::args().next().as_deref());
    // As host.ps1: the environment at start, put back before every call.
    EnvironmentSnapshot::take();
    std::process::exit(serve(&args));
}

/// Started as `pwsh` (a link named so, as a test puts PowerShell 7 beside
/// Windows PowerShell), the host plays PowerShell 7 unless
/// PWSHLIB_SIM_PSVERSION says otherwise; under any other name, as before,
/// what that variable says (5.1 when unset). Set before anything reads the
/// environment, while the process has one thread.
fn play_the_edition_named_by(argv0: Option<&str>) {
    let Some(program) = argv0.map(Path::new).and_then(Path::file_stem) else {
        return;
    };
    let named_pwsh = program.eq_ignore_ascii_case("pwsh");
    if named_pwsh && std::env::var_os(dsc::PSVERSION_VARIABLE).is_none() {
        std::env::set_var(dsc::PSVERSION_VARIABLE, dsc::PLAYED_CORE_VERSION);
    }
}

/// Serves one connection; returns the process exit code.
fn serve(args: &Args) -> i32 {
    if let Some(file) = &args.tell_endpoint {
        // Whole or not at all: written aside, then renamed into place.
        let aside = file.with_extension("partial");
        let told = std::fs::write(&aside, args.pipe_path.as_os_str().as_encoded_bytes())
            .and_then(|()| std::fs::rename(&aside, file));
        if let Err(e) = told {
            eprintln!("pwshlib-sim: cannot tell the endpoint: {e}");
            return 2;
        }
    }
    if args.never_listen {
        if let Some(pid) = args.parent_pid.filter(|&pid| pid > 0) {
            endpoint::watch_parent(pid, args.pipe_path.clone());
        }
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let listener = match endpoint::Listener::bind(&args.pipe_path) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!(
                "pwshlib-sim: cannot listen on {}: {e}",
                args.pipe_path.display()
            );
            return 2;
        }
    };
    // As in host.ps1, a -ParentPid of 0 means nobody to watch.
    if let Some(pid) = args.parent_pid.filter(|&pid| pid > 0) {
        endpoint::watch_parent(pid, args.pipe_path.clone());
    }
    let code = match listener.accept(args.client_pid) {
        Ok(connection) => converse(connection, args.record.as_deref()),
        Err(e) => {
            eprintln!("pwshlib-sim: accept failed: {e}");
            2
        }
    };
    endpoint::clean_up(&args.pipe_path);
    code
}

/// Set (to anything) to play a host from before preludes: its hello offers
/// none and it ignores a request's `prelude` field, as an older host.ps1
/// would (README.md).
const OLD_HOST_ENV: &str = "PWSHLIB_SIM_NO_PRELUDE";

/// Set (to anything) to play a host that holds preludes but binds no
/// secrets: its hello offers none, and it ignores a request's `secrets`
/// (README.md), so the manager sends their inline form.
const NO_SECRETS_ENV: &str = "PWSHLIB_SIM_NO_SECRETS";

/// Set (to anything) to play a host that holds preludes and binds secrets
/// but takes no DSC call as data: its hello offers no `dsc`.
const NO_DSC_ENV: &str = "PWSHLIB_SIM_NO_DSC";

/// Hello, then requests until exit or EOF.
fn converse(mut stream: impl Read + Write, record: Option<&Path>) -> i32 {
    let offers_preludes = std::env::var_os(OLD_HOST_ENV).is_none();
    let binds_secrets = offers_preludes && std::env::var_os(NO_SECRETS_ENV).is_none();
    let offers_dsc = binds_secrets && std::env::var_os(NO_DSC_ENV).is_none();
    let hello = Message::Hello {
        protocol: protocol::PROTOCOL_VERSION,
        pid: std::process::id(),
        host: format!("pwshlib-sim {}", env!("CARGO_PKG_VERSION")),
        prelude: if offers_preludes {
            protocol::PRELUDE_VERSION
        } else {
            0
        },
        secrets: if binds_secrets {
            protocol::SECRETS_VERSION
        } else {
            0
        },
        assembly: None,
        dsc: if offers_dsc { protocol::DSC_VERSION } else { 0 },
    };
    if protocol::write_message(&mut stream, &hello).is_err() {
        return 1;
    }
    let mut session = Session::default();
    loop {
        let received = protocol::read_message(&mut stream);
        if let (Some(file), Ok(Some(message))) = (record, &received) {
            use std::io::Write as _;
            if let Ok(mut log) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
            {
                let _ = writeln!(log, "{message:?}");
            }
        }
        let reply = match received {
            Ok(None) | Ok(Some(Message::Exit)) => return 0,
            Ok(Some(Message::Execute(mut request))) => {
                if !offers_preludes {
                    request.prelude = None;
                }
                if !binds_secrets {
                    request.secrets.clear();
                }
                let id = request.id;
                let (result, answer_twice) = match admit_dsc(&mut request, offers_dsc) {
                    Ok(()) => execute(&request, &mut session),
                    Err(message) => (ExecuteResult::failure(message), false),
                };
                let reply = Message::Result(ExecuteResult {
                    id: Some(id),
                    ..result
                });
                if answer_twice && protocol::write_message(&mut stream, &reply).is_err() {
                    return 1;
                }
                reply
            }
            Ok(Some(other)) => {
                let message =
                    format!("protocol error: unexpected message from the manager: {other:?}");
                let _ = protocol::write_message(&mut stream, &Message::Error { message });
                return 3;
            }
            Err(e) if e.is_malformed() => {
                let message = protocol::FrameError::to_string(&e);
                let message = format!("protocol error: {message}");
                let _ = protocol::write_message(&mut stream, &Message::Error { message });
                return 3;
            }
            Err(_) => return 1,
        };
        if protocol::write_message(&mut stream, &reply).is_err() {
            return 1;
        }
    }
}

/// A DSC call as data (docs/protocol.md, "DSC calls as data") is played
/// from the data itself (`dsc::handle_data`), not from its code. As the
/// real host: only with a prelude, and never when the hello did not offer
/// it (an older host knows no `dsc` and runs the code).
fn admit_dsc(request: &mut ExecuteRequest, offers_dsc: bool) -> Result<(), String> {
    if request.dsc.is_none() {
        return Ok(());
    }
    if !offers_dsc {
        request.dsc = None;
        return Ok(());
    }
    if request.prelude.is_none() {
        return Err("protocol error: a DSC call as data needs a prelude".into());
    }
    Ok(())
}

/// The fault that makes the host answer one request twice (the manager must
/// not take the second copy for the next request's result). Read during the
/// call, so a request's own `env` can set it for that request alone.
const DOUBLE_REPLY_ENV: &str = "PWSHLIB_SIM_DOUBLE_REPLY";

/// Runs one request with its working directory and environment applied for
/// this call only, as the real host does. Also says whether the
/// double-reply fault applies to it.
/// A request that names a prelude runs after its functions are defined
/// (`prelude.rs`); the result then names it too.
fn execute(request: &ExecuteRequest, session: &mut Session) -> (ExecuteResult, bool) {
    let deadline = Instant::now() + Duration::from_millis(request.timeout_ms);
    let admitted = match session.admit(request) {
        Ok(admitted) => admitted,
        Err(message) => return (ExecuteResult::failure(message), false),
    };
    let (mut result, answer_twice) = run_code(request, &admitted.functions, deadline);
    result.prelude = admitted.prelude;
    (result, answer_twice)
}

fn run_code(
    request: &ExecuteRequest,
    functions: &[String],
    deadline: Instant,
) -> (ExecuteResult, bool) {
    if let Some(dir) = &request.working_dir {
        if !Path::new(dir).is_dir() {
            return (
                ExecuteResult::failure(protocol::missing_working_dir_message(dir)),
                false,
            );
        }
    }
    let tree = match &request.dsc {
        Some(_) => None,
        None => match parse(&request.code) {
            Ok(tree) => Some(tree),
            Err(e) => return (ExecuteResult::failure(e), false),
        },
    };
    if let Some(tree) = &tree {
        if let Some(message) = prelude::undefined_prelude_call(&request.code, tree, functions) {
            return (ExecuteResult::failure(message), false);
        }
    }
    EnvironmentSnapshot::restore();
    let saved = match CallScope::enter(request) {
        Ok(saved) => saved,
        Err(message) => return (ExecuteResult::failure(message), false),
    };
    let outcome = match (&request.dsc, &tree) {
        (Some(data), _) => dsc::handle_data(data, request.timeout_ms, &request.secrets, functions),
        (None, Some(tree)) => dsc::handle_bound(
            &request.code,
            tree,
            request.timeout_ms,
            &request.secrets,
            functions,
        )
        .unwrap_or_else(|| echo::handle(&request.code, tree, functions)),
        // A request without dsc was parsed above.
        (None, None) => Outcome::error("pwshlib-sim: nothing to run".to_owned()),
    };
    let result = carry_out(outcome, deadline, request.timeout_ms);
    let answer_twice = std::env::var(DOUBLE_REPLY_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true"));
    drop(saved);
    if request.prelude.is_some() && result.exitcode == 0 {
        EnvironmentSnapshot::keep(request.env.iter().map(|(name, _)| name.as_str()));
    }
    (result, answer_twice)
}

fn carry_out(outcome: Outcome, deadline: Instant, timeout_ms: u64) -> ExecuteResult {
    match outcome {
        Outcome::Reply {
            stdout,
            stderr,
            exitcode,
            errormessage,
        } => ExecuteResult {
            id: None,
            exitcode,
            stdout,
            stderr,
            stderr_items: None,
            errormessage,
            native_stdout: None,
            prelude: None,
        },
        Outcome::Sleep {
            millis,
            then,
            written,
        } => {
            let now = Instant::now();
            let wake = now + Duration::from_millis(millis);
            if wake > deadline {
                // What the script had written when its sleeping reached the
                // deadline, as host.ps1 returns it with the timeout.
                let left_ms = u64::try_from(deadline.saturating_duration_since(now).as_millis())
                    .unwrap_or(u64::MAX);
                let before = written.into_iter().rev().find(|w| w.after_ms <= left_ms);
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                let failure = ExecuteResult::failure(protocol::timeout_message(timeout_ms));
                return match before {
                    Some(before) => ExecuteResult {
                        stdout: before.stdout,
                        stderr: before.stderr,
                        ..failure
                    },
                    None => failure,
                };
            }
            std::thread::sleep(Duration::from_millis(millis));
            carry_out(*then, deadline, timeout_ms)
        }
        Outcome::HangForever => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        // Like `Stop-Process -Id $PID`: gone without a word (and without
        // cleaning up the socket file: the manager must cope; a named pipe
        // goes with the process).
        Outcome::Crash => std::process::exit(137),
    }
}

/// The request's working directory for this call; restored on drop. The
/// request's environment is applied as host.ps1 applies it, and left for
/// the restore before the next call.
struct CallScope {
    dir: Option<PathBuf>,
}

impl CallScope {
    /// Fails (an error result; the host lives on) on an env entry .NET
    /// would refuse: an empty name, or a name or value that cannot be set
    /// (`=` in the name, NUL). Entries are set in order, so a name given
    /// twice takes its last value (as host.ps1 and pwshlib 2.x).
    fn enter(request: &ExecuteRequest) -> Result<Self, String> {
        for (name, value) in &request.env {
            if name.is_empty() || name.contains(['\0', '=']) || value.contains('\0') {
                return Err(format!(
                    "The environment variable '{name}' could not be set: the name or the value is not valid"
                ));
            }
            // An empty value removes the variable, as .NET does.
            if value.is_empty() {
                std::env::remove_var(name);
            } else {
                std::env::set_var(name, value);
            }
        }
        let dir = request.working_dir.as_ref().and_then(|dir| {
            let previous = std::env::current_dir().ok()?;
            std::env::set_current_dir(dir).ok()?;
            Some(previous)
        });
        Ok(CallScope { dir })
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::env::set_current_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_command_line_is_understood() {
        let argv = [
            "-NoProfile",
            "-NonInteractive",
            "-NoLogo",
            "-ExecutionPolicy",
            "Bypass",
            "-File",
            "/x/host.ps1",
            "-pipepath",
            "/tmp/a b.sock",
            "-ParentPid",
            "42",
        ];
        let args = parse_args(argv.iter().map(|s| s.to_string())).unwrap();
        assert_eq!(args.pipe_path, PathBuf::from("/tmp/a b.sock"));
        assert_eq!(args.parent_pid, Some(42));
        assert!(parse_args(["-File".to_string()].into_iter()).is_err());
    }

    #[test]
    fn unparsable_scripts_are_refused() {
        let error = parse("Write-Output 'unterminated").unwrap_err();
        assert!(error.contains("does not parse as PowerShell"), "{error}");
        assert!(parse("Write-Output 'fine'").is_ok());
    }

    /// The main loop's one parse refuses a NUL before
    /// `$InvokeParams` (it used to let it through to echo mode, as "not a
    /// DSC call"), with the message the DSC engine gives.
    #[test]
    fn a_nul_before_invoke_params_is_refused_by_the_main_loop() {
        let code = "$a = 1\n\0$InvokeParams = @{Name = 'FixtureFile'; Method = 'Get'; Property = @{}; ModuleName = 'M'}\nInvoke-DscResource @InvokeParams";
        let request = ExecuteRequest::new(code.to_owned(), Some(5_000), None, &[] as &[&str]);
        let deadline = Instant::now() + Duration::from_secs(5);
        let (result, _) = run_code(&request, &[], deadline);
        assert_eq!(result.exitcode, 1);
        assert_eq!(result.stdout, None);
        let message = result.errormessage.unwrap_or_default();
        assert_eq!(
            message,
            "pwshlib-sim: the script does not parse as PowerShell (NUL character at line 2, column 1)"
        );
        assert_eq!(
            Some(message),
            match dsc::handle_with_env(code, 5_000, &|_| None) {
                Some(Outcome::Reply { errormessage, .. }) => errormessage,
                other => panic!("{other:?}"),
            }
        );
    }
}
