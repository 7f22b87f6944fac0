//! `Pwsh::Manager`: one long-lived PowerShell host process per manager,
//! reached with the protocol of docs/protocol.md over a Unix socket or, on
//! Windows, a named pipe (`pwshlib_transport::host` does the talking).
//!
//! All state is owned Rust data (the host process and connection, names);
//! no Ruby value is kept. Every wait on the host (connecting, a request, the
//! exit handshake) runs without the GVL. Ruby's unblocking function only
//! wakes a wait: Ruby calls it for every signal it handles (a SIGCHLD from
//! any child, a trap), so the GVL is taken back, and if Ruby raises (an
//! interrupt) the manager is left cleanly dead (host killed and reaped);
//! otherwise the same call goes on waiting. lib/pwsh.rb caches instances
//! per key and registers the at_exit hook that calls `shutdown_all`.

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use magnus::{
    function, method, prelude::*, scan_args::scan_args, typed_data::Obj, value::ReprValue, Error,
    RArray, RClass, RHash, RString, Ruby, Value,
};
use parking_lot::{Mutex, MutexGuard};
use pwshlib_core::lifecycle::ExecuteOutput;
use pwshlib_core::script::Script;
use pwshlib_core::templates;
use pwshlib_transport::host::{
    Call, Cancel, Host, HostFailure, Prelude, SpawnOptions, Spawned, Spawning, Waited, WireStats,
    SET_OVERRIDE_HINT,
};
use pwshlib_transport::protocol::{self, ExecuteRequest, ExecuteResult};

use crate::convert::{id, lossy_string, names};
use crate::dsc_base_provider;
use crate::dsc_call::DscCall;
use crate::dsc_script::{request_code, text_request, RequestCode};
use crate::error::{BindingError, BindingResult};
use crate::gvl::without_gvl;
use crate::manager_values::{optional_timeout, result_to_ruby};

/// Every manager that has not been dropped, for `shutdown_all`.
static REGISTRY: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// The state behind one `Pwsh::Manager`; `host` is `None` once the host
/// exited, died or was killed (the manager is then dead for good).
struct Shared {
    host: Mutex<Option<Host>>,
    pid: u32,
    /// The socket path or pipe name the host serves.
    endpoint: String,
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
            let _ = host.exit_gracefully();
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

/// The DSC prelude (`templates::PRELUDE`) under its id.
fn dsc_prelude() -> Prelude<'static> {
    Prelude {
        id: templates::prelude_id(),
        code: templates::PRELUDE,
    }
}

/// What pwshlib 2.x put first in a dead host's `stderr`: the exception its
/// pipe raised, as Ruby inspects it (callers match it, and ruby-pwsh's own
/// spec expects it). A call on a host already gone wrote to a closed pipe;
/// a host that died during the call ended the read (a named pipe on
/// Windows says broken pipe either way).
const BROKEN_PIPE: &str = "#<Errno::EPIPE: Broken pipe>";
#[cfg(windows)]
const DIED_DURING_CALL: &str = BROKEN_PIPE;
#[cfg(not(windows))]
const DIED_DURING_CALL: &str = "#<EOFError: end of file reached>";

/// `result` with `reason` as its only stderr element (no line end: an
/// exception's inspect, as 2.x gave it).
fn lost_reason(mut result: ExecuteResult, reason: &str) -> ExecuteResult {
    result.stderr = reason.to_owned();
    result.stderr_items = Some(vec![reason.to_owned()]);
    result
}

/// The Ruby object: a handle on the shared state.
#[magnus::wrap(class = "Pwsh::Manager", free_immediately, size)]
struct Manager {
    shared: Arc<Shared>,
}

/// One request through its wake-ups: the host's lock (held from the first
/// wait to the last, so that no other thread's call can come between a
/// request and its reply), the call in flight, and the request until sent.
struct Request<'a> {
    shared: &'a Shared,
    held: Option<MutexGuard<'a, Option<Host>>>,
    call: Option<Call>,
    request: Option<ExecuteRequest>,
    prelude: Option<Prelude<'a>>,
    /// The request's code with its secrets set by literals, for a host
    /// that cannot bind them (`RequestCode::inline`).
    inline: Option<&'a str>,
    /// A DSC call sent as data: rendered as text only for a host that does
    /// not take calls as data (`RequestCode::text`).
    text: Option<&'a Script>,
}

impl Request<'_> {
    /// Waits (without the GVL) until the call is over or woken: `None` when
    /// woken, with the call still in flight. Every failure becomes an error
    /// result, and a host that can no longer be trusted is destroyed. With a
    /// prelude, the code runs after the prelude's functions are defined
    /// (once per host session where the host offers preludes).
    fn wait(&mut self, cancel: &Cancel) -> Option<ExecuteResult> {
        let shared = self.shared;
        let guard = self.held.get_or_insert_with(|| shared.host.lock());
        let Some(host) = guard.as_mut() else {
            return Some(lost_reason(
                ExecuteResult::dead_host(
                    "The PowerShell host is not running (it exited or died); call Pwsh::Manager.instance for a new one",
                ),
                BROKEN_PIPE,
            ));
        };
        if self.call.is_none() {
            let Some(mut request) = self.request.take() else {
                return Some(ExecuteResult::failure(
                    "internal error: a request was started twice",
                ));
            };
            if let Some(script) = self
                .text
                .filter(|_| host.dsc_version() < protocol::DSC_VERSION)
            {
                self.inline = text_request(script, &mut request);
            }
            let started = match self.prelude {
                Some(prelude) => host.start_call_with_prelude(prelude, request, self.inline),
                None => host.start_call(&request),
            };
            match started {
                Ok(call) => self.call = Some(call),
                Err(HostFailure(message)) => return Some(self.fail(message)),
            }
        }
        let call = self.call.as_mut()?;
        match host.wait_call(call, cancel) {
            Waited::Woken => None,
            Waited::Finished(Ok(result)) => Some(result),
            Waited::Finished(Err(HostFailure(message))) => {
                let died = host.is_lost();
                let mut result = self.fail(message);
                if died {
                    result.exitcode = protocol::DEAD_HOST_EXITCODE;
                    result = lost_reason(result, DIED_DURING_CALL);
                }
                Some(result)
            }
        }
    }

    fn fail(&mut self, message: String) -> ExecuteResult {
        self.kill();
        ExecuteResult::failure(message)
    }

    /// Destroys the host if this call has it. A call that never got the
    /// lock sent nothing, and the host may be serving another thread's call
    /// (which holds the lock through its wake-ups, needing the GVL to let
    /// go: waiting for the lock here, with the GVL, could deadlock).
    fn kill(&mut self) {
        if let Some(host) = self.held.as_mut().and_then(|guard| guard.take()) {
            host.destroy();
        }
    }
}

impl Manager {
    /// `Pwsh::Manager.spawn(cmd, args, host_script, debug, pipe_timeout)`:
    /// the native constructor behind `Pwsh::Manager.new` (and so
    /// `instance`). The manager is made an instance of the class it was
    /// called on, so that `new` on a subclass gives that subclass.
    fn spawn(
        ruby: &Ruby,
        class: RClass,
        cmd: String,
        args: RArray,
        host_script: String,
        debug: bool,
        pipe_timeout: f64,
    ) -> BindingResult<Obj<Manager>> {
        let args: Vec<String> = args.to_vec()?;
        let pipe_timeout = if pipe_timeout.is_finite() && pipe_timeout > 0.0 {
            Duration::from_secs_f64(pipe_timeout.min(86_400.0))
        } else {
            Duration::from_millis(1)
        };
        let options = validated(SpawnOptions {
            program: cmd,
            args,
            host_script,
            show_host_errors: debug,
            pipe_timeout,
            assembly_cache: pwshlib_transport::host::assembly_cache_dir(),
        })?;
        let cancel = Cancel::default();
        // As for a request (see `run`): a wake that Ruby does not turn into
        // an exception resumes the start where it was.
        let mut spawning: Option<Spawning> = None;
        let spawned = loop {
            cancel.rearm();
            let step = without_gvl(
                || match spawning.take() {
                    Some(spawning) => spawning.wait(&cancel),
                    None => match Host::start_spawn(&options) {
                        Ok(spawning) => spawning.wait(&cancel),
                        Err(failure) => Spawned::Done(Err(failure)),
                    },
                },
                // Async-signal-safe: an atomic store (and SetEvent on Windows).
                || cancel.unblock(),
            )
            .into_result(|started| {
                // A pending start is killed as it drops.
                if let Some(Spawned::Done(Ok(host))) = started {
                    host.destroy();
                }
            })?;
            match step {
                Spawned::Done(result) => break result,
                Spawned::Woken(pending) => spawning = Some(pending),
            }
        };
        let host = spawned.map_err(|HostFailure(message)| BindingError::Host(message))?;
        let shared = Arc::new(Shared {
            pid: host.pid(),
            endpoint: host.endpoint().to_owned(),
            description: options.program,
            host: Mutex::new(Some(host)),
        });
        let mut registry = REGISTRY.lock();
        registry.retain(|weak| weak.strong_count() > 0);
        registry.push(Arc::downgrade(&shared));
        drop(registry);
        Ok(ruby.obj_wrap_as(Manager { shared }, class))
    }

    /// `execute(code, timeout_ms = nil, working_dir = nil, env_vars = [])`:
    /// the code runs alone, in a session without any prelude.
    fn execute(ruby: &Ruby, rb_self: &Self, args: &[Value]) -> BindingResult<RHash> {
        let args =
            scan_args::<(RString,), (Option<Value>, Option<Value>, Option<Value>), (), (), (), ()>(
                args,
            )?;
        let (code,) = args.required;
        let (timeout, working_dir, env_vars) = args.optional;
        let code = RequestCode::plain(code);
        rb_self.run(ruby, code, timeout, working_dir, env_vars, None)
    }

    /// `execute_with_prelude(name, code, timeout_ms = nil, working_dir =
    /// nil, env_vars = [])`: the code runs after the named prelude's
    /// functions are defined. The only prelude is `'dsc'`, the helpers of
    /// the DSC invocation scripts (`templates::PRELUDE`). A host that
    /// offers preludes receives its text once per session; an older host
    /// receives it in front of every call.
    fn execute_with_prelude(ruby: &Ruby, rb_self: &Self, args: &[Value]) -> BindingResult<RHash> {
        let args = scan_args::<
            (Value, RString),
            (Option<Value>, Option<Value>, Option<Value>),
            (),
            (),
            (),
            (),
        >(args)?;
        let (name, code) = args.required;
        let (timeout, working_dir, env_vars) = args.optional;
        let name: RString = name.funcall(id(ruby, &names::TO_S), ())?;
        if name.to_string()? != templates::PRELUDE_NAME {
            return Err(BindingError::Argument(format!(
                "unknown prelude {:?}; the only one is {:?}",
                lossy_string(name),
                templates::PRELUDE_NAME
            )));
        }
        let code = RequestCode::plain(code);
        rb_self.run(
            ruby,
            code,
            timeout,
            working_dir,
            env_vars,
            Some(dsc_prelude()),
        )
    }

    /// `execute_dsc(call)`: runs one `Pwshlib::DscCall` after the DSC
    /// prelude and answers what the provider's session read of it: the
    /// result's data, or nil when the call failed (reported to the call's
    /// context; a collision leaves the call `collided?`). Its lines go as
    /// the code and its secrets in the request's `secrets`, bound by the
    /// host before the code runs (docs/protocol.md, "Secrets"); a host that
    /// cannot bind gets the inline form, the secrets set by literals. A
    /// host that offers DSC calls as data gets the call as data instead of
    /// its lines (docs/protocol.md, "DSC calls as data"). The script never
    /// becomes a Ruby String, nor the answer a Ruby Hash. A failure to
    /// reach the host raises, as `execute` does.
    fn execute_dsc(ruby: &Ruby, rb_self: &Self, call: Obj<DscCall>) -> BindingResult<Value> {
        dsc_base_provider::show_before_sending(ruby, &call, &rb_self.shared.endpoint)?;
        let script = call.script_ref();
        let (request, inline, text) =
            request_code(script).into_request(call.timeout_ms(), None, &[]);
        let prelude = script.has_prelude().then(dsc_prelude);
        let result = rb_self.wait(request, (inline, text), prelude)?;
        let output = ExecuteOutput {
            stdout: result.stdout,
            errormessage: result.errormessage,
            native_stdout: result.native_stdout,
        };
        dsc_base_provider::answer(ruby, &call, Ok(output))
    }

    fn run(
        &self,
        ruby: &Ruby,
        code: RequestCode<'_>,
        timeout: Option<Value>,
        working_dir: Option<Value>,
        env_vars: Option<Value>,
        prelude: Option<Prelude<'static>>,
    ) -> BindingResult<RHash> {
        let timeout_ms = optional_timeout(timeout)?;
        let working_dir = match working_dir.filter(|v| !v.is_nil()) {
            Some(dir) => Some(lossy_string(RString::try_convert(dir)?)),
            None => None,
        };
        let env_vars: Vec<String> = match env_vars.filter(|v| !v.is_nil()) {
            Some(list) => RArray::try_convert(list)?
                .into_iter()
                .map(|item| RString::try_convert(item).map(lossy_string))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let (request, inline, text) = code.into_request(timeout_ms, working_dir, &env_vars);
        let result = self.wait(request, (inline, text), prelude)?;
        result_to_ruby(ruby, &result)
    }

    /// Sends one request (its code's secrets and data added) and waits for
    /// its result, the GVL released.
    fn wait(
        &self,
        request: ExecuteRequest,
        (inline, text): (Option<&str>, Option<&Script>),
        prelude: Option<Prelude<'static>>,
    ) -> BindingResult<ExecuteResult> {
        let shared = Arc::clone(&self.shared);
        let cancel = Cancel::default();
        let mut pending = Request {
            shared: &shared,
            held: None,
            call: None,
            request: Some(request),
            prelude,
            inline,
            text,
        };
        let result = loop {
            // Cleared with the GVL held, before Ruby installs the unblocking
            // function: a wake from now on reaches the wait.
            cancel.rearm();
            let waited = without_gvl(
                || pending.wait(&cancel),
                // Async-signal-safe: an atomic store (and SetEvent on Windows).
                || cancel.unblock(),
            )
            // Interrupted (or a bug): whatever the host was doing, it is no
            // longer in step with us. Leave the manager cleanly dead.
            .into_result(|_| pending.kill())?;
            // None: woken for a signal that Ruby handled without raising (a
            // SIGCHLD, a trap): the same call waits on, the lock held.
            if let Some(result) = waited {
                break result;
            }
        };
        drop(pending);
        Ok(result)
    }

    /// `{requests:, bytes_sent:, bytes_received:, last_sent:, last_received:,
    /// prelude_version:, secrets_version:, dsc_version:, prelude:, host_assembly:}`: what crossed the
    /// connection (frames whole), the prelude mechanism the host offered and
    /// the id of the prelude it holds (nil when none). Zeros and nils once
    /// the host is gone.
    fn wire_stats(ruby: &Ruby, rb_self: &Self) -> BindingResult<RHash> {
        // The lock is taken without the GVL: a call that holds it through a
        // wake-up needs the GVL back before it can let go.
        let shared = &rb_self.shared;
        let (stats, (version, secrets, dsc), (installed, assembly)) = without_gvl(
            || match shared.host.lock().as_ref() {
                Some(host) => (
                    host.wire_stats(),
                    (
                        host.prelude_version(),
                        host.secrets_version(),
                        host.dsc_version(),
                    ),
                    (
                        host.installed_prelude().map(str::to_owned),
                        host.assembly().map(str::to_owned),
                    ),
                ),
                None => (WireStats::default(), (0, 0, 0), (None, None)),
            },
            || {},
        )
        .into_result(|_| {})?;
        let hash = ruby.hash_new();
        hash.aset(ruby.to_symbol("requests"), stats.requests)?;
        hash.aset(ruby.to_symbol("bytes_sent"), stats.bytes_sent)?;
        hash.aset(ruby.to_symbol("bytes_received"), stats.bytes_received)?;
        hash.aset(ruby.to_symbol("last_sent"), stats.last_sent)?;
        hash.aset(ruby.to_symbol("last_received"), stats.last_received)?;
        hash.aset(ruby.to_symbol("prelude_version"), version)?;
        hash.aset(ruby.to_symbol("secrets_version"), secrets)?;
        hash.aset(ruby.to_symbol("dsc_version"), dsc)?;
        hash.aset(ruby.to_symbol("prelude"), installed)?;
        hash.aset(ruby.to_symbol("host_assembly"), assembly)?;
        Ok(hash)
    }

    fn is_alive(&self) -> bool {
        self.shared.alive()
    }

    /// Tells the host to exit and reaps it; a no-op on a dead manager.
    fn exit(&self) -> BindingResult<()> {
        let shared = Arc::clone(&self.shared);
        without_gvl(|| shared.exit(), || {}).into_result(|_| {
            // Without the GVL: a call waiting for it may hold the lock.
            let _ = without_gvl(|| shared.kill(), || {});
        })
    }

    fn pid(&self) -> u32 {
        self.shared.pid
    }

    fn endpoint(&self) -> String {
        self.shared.endpoint.clone()
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
        without_gvl(
            || {
                // Ask them all first, then wait: hosts leave in parallel.
                let hosts: Vec<Host> = managers
                    .iter()
                    .filter_map(|shared| shared.host.lock().take())
                    .collect();
                let mut leaving = Vec::new();
                for mut host in hosts.into_iter().filter(|host| !host.is_foreign()) {
                    host.begin_exit();
                    leaving.push(host);
                }
                for host in leaving {
                    let _ = host.finish_exit();
                }
            },
            || {},
        )
        .into_result(|_| {})
    }
}

fn validated(options: SpawnOptions) -> Result<SpawnOptions, BindingError> {
    if options.program.is_empty() {
        return Err(BindingError::Host(format!(
            "No PowerShell executable given. {SET_OVERRIDE_HINT}"
        )));
    }
    if !Path::new(&options.host_script).is_file() {
        return Err(BindingError::Host(format!(
            "The host script {} does not exist",
            options.host_script
        )));
    }
    Ok(options)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let pwsh = ruby.define_module("Pwsh")?;
    let class = pwsh.define_class("Manager", ruby.class_object())?;
    // No allocator: a manager is only ever made whole, by `spawn` (which
    // lib/pwsh.rb's `new` calls), never allocated empty and filled in.
    class.undef_default_alloc_func();
    class.define_singleton_method("spawn", method!(Manager::spawn, 5))?;
    class.define_singleton_method("shutdown_all", function!(Manager::shutdown_all, 0))?;
    class.define_method("execute", method!(Manager::execute, -1))?;
    class.define_method(
        "execute_with_prelude",
        method!(Manager::execute_with_prelude, -1),
    )?;
    class.define_method("execute_dsc", method!(Manager::execute_dsc, 1))?;
    class.define_method("wire_stats", method!(Manager::wire_stats, 0))?;
    class.define_method("alive?", method!(Manager::is_alive, 0))?;
    class.define_method("exit", method!(Manager::exit, 0))?;
    class.define_method("pid", method!(Manager::pid, 0))?;
    class.define_method("endpoint", method!(Manager::endpoint, 0))?;
    // The Unix name of the endpoint, kept for callers written before the
    // named pipe.
    class.define_method("socket_path", method!(Manager::endpoint, 0))?;
    class.define_method("inspect", method!(Manager::inspect, 0))?;
    Ok(())
}
