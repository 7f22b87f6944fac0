//! `Puppet::Provider::DscBaseProvider`: the base class of every scaffolded
//! DSC provider.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use magnus::{
    block::Proc, function, method, prelude::*, rb_sys::AsRawValue, typed_data::Obj, value::Opaque,
    Error, IntoValue, KwArgs, RArray, RClass, RHash, RModule, RString, Ruby, TryConvert,
    Value as RValue,
};
use pwshlib_core::cache::Identity;
use pwshlib_core::canonical;
use pwshlib_core::lifecycle::{
    self, ExecuteOutput, Insync, LifecycleState, ProviderCallbacks, SetAction,
};
use pwshlib_core::munge;
use pwshlib_core::redact;
use pwshlib_core::run::{self, RunMarker};
use pwshlib_core::script::{DscMethod, Script};
use pwshlib_core::templates;
use pwshlib_core::vendored;
use pwshlib_core::{Map, TypeDef, Value};

use crate::convert::{
    from_ruby, map_from_ruby, map_to_ruby, to_ruby, type_definition_from_context,
};
use crate::error::{BindingError, BindingResult};

/// Per-run provider state. Only owned Rust data lives here; Ruby values are
/// converted on the way in.
#[derive(Default)]
pub struct ProviderState {
    /// The type definition, read once from `context.type`.
    typedef: Option<Arc<TypeDef>>,
    /// Caches and memos of the lifecycle; created with the type definition.
    lifecycle: Option<LifecycleState>,
    /// `Puppet::Type.metaparams`, read once.
    metaparams: Option<HashSet<String>>,
    /// A collision retry wait set from Ruby (tests), in seconds.
    collision_wait_seconds: Option<f64>,
    /// The PowerShell executable and its arguments, resolved once per run
    /// (a PATH search) rather than once per invocation.
    powershell: Option<(String, Vec<String>)>,
    /// Ruby's load path as `load_path` returned it, read once per run.
    load_path: Option<Arc<Vec<String>>>,
    /// Module name → its vendored `dsc_resources` folder, found once per
    /// run (a search of the load path on disk) rather than once per call.
    vendored_paths: HashMap<String, String>,
    /// The run this provider's caches belong to (see `pwshlib_core::run`).
    run_marker: Option<RunMarker>,
    /// How many entry calls of this provider are running (a Get runs
    /// `canonicalize` → `invoke_get_method` → `invoke_dsc_resource`, each
    /// through Ruby dispatch).
    entry_depth: usize,
    /// Whether the outermost running entry call's context keeps debug
    /// messages, with that context's identity (its VALUE bits): the nested
    /// calls of the same context need not ask Ruby again. Only compared,
    /// never used as a Ruby value, and only while the outer call (whose
    /// frame holds the context) runs: cleared when `entry_depth` is back
    /// to zero.
    entry_debug: Option<(u64, bool)>,
}

impl ProviderState {
    /// Forgets everything learnt in the previous run: the system is read
    /// again, and the load path and PowerShell are looked up again (the
    /// agent may have synced new plugins in between).
    fn start_new_run(&mut self) {
        if let Some(typedef) = &self.typedef {
            let mut lifecycle = LifecycleState::new(typedef);
            if let Some(wait) = self.collision_wait_seconds.or_else(env_collision_wait) {
                lifecycle.collision_wait_seconds = wait;
            }
            self.lifecycle = Some(lifecycle);
        }
        self.load_path = None;
        self.vendored_paths.clear();
        self.powershell = None;
    }
}

#[derive(Default)]
#[magnus::wrap(class = "Puppet::Provider::DscBaseProvider", free_immediately, size)]
pub struct DscBaseProvider {
    state: RefCell<ProviderState>,
}

impl DscBaseProvider {
    /// Ruby `initialize`: takes no arguments, like pwshlib 2.x, so that
    /// `described_class.new` and Resource API instantiation both work.
    fn initialize(&self) {
        *self.state.borrow_mut() = ProviderState::default();
    }
}

/// Defines the class under `Puppet::Provider` once Puppet is loaded. The
/// Ruby loader calls it after `require 'puppet'`; defining it twice is a
/// no-op.
fn define_dsc_base_provider(ruby: &Ruby) -> Result<bool, Error> {
    let puppet: RModule = ruby.class_object().const_get("Puppet")?;
    let provider: RClass = puppet.const_get("Provider")?;
    if provider
        .const_get::<_, magnus::Value>("DscBaseProvider")
        .is_ok()
    {
        return Ok(false);
    }
    let class = provider.define_class("DscBaseProvider", ruby.class_object())?;
    class.define_alloc_func::<DscBaseProvider>();
    class.define_method("initialize", method!(DscBaseProvider::initialize, 0))?;
    define_lifecycle_methods(class)?;
    define_script_methods(class)?;
    Ok(true)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let pwshlib = ruby.define_module("Pwshlib")?;
    pwshlib.define_module_function(
        "define_dsc_base_provider",
        function!(define_dsc_base_provider, 0),
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Lifecycle: the Resource API entry points, the invocation of DSC, the caches
// and the pwshlib 2.x helpers. The logic is in `pwshlib_core::lifecycle`;
// this block only converts values and reaches the overridable methods
// through Ruby dispatch (`funcall` on self).
// ---------------------------------------------------------------------------

const COLLISION_WAIT_ENV: &str = "PWSHLIB_COLLISION_RETRY_SECONDS";

/// The (user, password) pairs that failed to log on in this run. A
/// credential is not tied to a type, and there is one provider instance per
/// type, so the memo is shared by all of them; it belongs to the run whose
/// marker it carries.
#[derive(Default)]
struct LogonMemo {
    run_marker: Option<RunMarker>,
    failures: Vec<(String, String)>,
}

static LOGON_FAILURES: std::sync::Mutex<LogonMemo> = std::sync::Mutex::new(LogonMemo {
    run_marker: None,
    failures: Vec::new(),
});

fn logon_memo() -> std::sync::MutexGuard<'static, LogonMemo> {
    LOGON_FAILURES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The object id of a Ruby object (never reused by Ruby, unlike addresses).
fn object_id(value: RValue) -> Option<u64> {
    value.funcall::<_, _, u64>("object_id", ()).ok()
}

// Constants the provider reads on every entry call, looked up once they
// exist (a path lookup walks a module per segment).
static PUPPET_MODULE: OnceLock<Opaque<RValue>> = OnceLock::new();
static PUPPET_LOG_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();
static PUPPET_REPORT_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();
static PUPPET_CONTEXT_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();

/// The constant at `path`, from `cell` once it has been found. Classes and
/// modules bound to constants live as long as the process; each one cached
/// is registered with the GC as well (which also pins it), so the handle in
/// the static stays valid. Not found: None, and nothing is cached, so a
/// later call looks again (Puppet loads parts of itself on first use).
fn cached_constant(
    ruby: &Ruby,
    cell: &'static OnceLock<Opaque<RValue>>,
    path: &str,
) -> Option<RValue> {
    if let Some(value) = cell.get() {
        return Some(ruby.get_inner(*value));
    }
    let value: RValue = ruby.class_object().funcall("const_get", (path,)).ok()?;
    ruby.gc_register_mark_object(value);
    let _ = cell.set(Opaque::from(value));
    Some(value)
}

/// `{ nil }`, made once: the block of `Puppet.lookup(:loaders) { nil }`.
fn nil_block(ruby: &Ruby) -> Proc {
    static NIL_BLOCK: OnceLock<Opaque<Proc>> = OnceLock::new();
    if let Some(block) = NIL_BLOCK.get() {
        return ruby.get_inner(*block);
    }
    let block = ruby.proc_from_fn(|ruby, _args, _block| Ok(ruby.qnil().as_value()));
    // Registered, so the static handle keeps it (and its closure) alive.
    ruby.gc_register_mark_object(block);
    let _ = NIL_BLOCK.set(Opaque::from(block));
    block
}

/// The report and loaders Puppet has in view now (`pwshlib_core::run`
/// explains the choice). Either is None outside a Puppet run.
fn current_run_marker(ruby: &Ruby) -> RunMarker {
    let report = cached_constant(ruby, &PUPPET_REPORT_CLASS, "Puppet::Transaction::Report")
        .and_then(|report_class| {
            let log = cached_constant(ruby, &PUPPET_LOG_CLASS, "Puppet::Util::Log")?;
            let destinations =
                RHash::from_value(log.funcall::<_, _, RValue>("destinations", ()).ok()?)?;
            let report_class = RClass::from_value(report_class)?;
            let mut found = None;
            destinations
                .foreach(|destination: RValue, _handler: RValue| {
                    if destination.is_kind_of(report_class) {
                        found = Some(destination);
                        return Ok(magnus::r_hash::ForEach::Stop);
                    }
                    Ok(magnus::r_hash::ForEach::Continue)
                })
                .ok()?;
            found.and_then(object_id)
        });
    let loaders = cached_constant(ruby, &PUPPET_MODULE, "Puppet").and_then(|puppet| {
        // `Puppet.lookup(:loaders) { nil }`: nil rather than an error when
        // nothing is bound (outside a run).
        let loaders: RValue = puppet
            .funcall_with_block("lookup", (ruby.sym_new("loaders"),), nil_block(ruby))
            .ok()?;
        (!loaders.is_nil()).then_some(loaders).and_then(object_id)
    });
    RunMarker { report, loaders }
}

/// Called where a run's work on a type can begin (canonicalize, get, set):
/// a provider call in a new run starts with empty caches, and the first one
/// in the run empties the logon-failure memo.
fn observe_run(ruby: &Ruby, provider: &DscBaseProvider) {
    let now = current_run_marker(ruby);
    {
        let mut memo = logon_memo();
        if run::is_new_run(memo.run_marker, now) {
            memo.failures.clear();
        }
        memo.run_marker = Some(now);
    }
    let mut state = provider.state.borrow_mut();
    if run::is_new_run(state.run_marker, now) {
        state.start_new_run();
    }
    state.run_marker = Some(now);
}

fn define_lifecycle_methods(class: RClass) -> Result<(), Error> {
    class.define_method("canonicalize", method!(rb_canonicalize, 2))?;
    class.define_method("get", method!(rb_get, -1))?;
    class.define_method("set", method!(rb_set, 2))?;
    class.define_method("insync?", method!(rb_insync, 5))?;
    class.define_method("create", method!(rb_create, 3))?;
    class.define_method("update", method!(rb_update, 3))?;
    class.define_method("delete", method!(rb_delete, 2))?;
    class.define_method("invoke_get_method", method!(rb_invoke_get_method, 2))?;
    class.define_method(
        "invoke_get_method_for_canonicalize",
        method!(rb_invoke_get_method_for_canonicalize, 2),
    )?;
    class.define_method("invoke_set_method", method!(rb_invoke_set_method, 3))?;
    class.define_method("invoke_test_method", method!(rb_invoke_test_method, 3))?;
    class.define_method("invoke_dsc_resource", method!(rb_invoke_dsc_resource, 4))?;
    class.define_method("ps_manager", method!(rb_ps_manager, 0))?;
    class.define_method("cached_test_results", method!(rb_cached_test_results, 0))?;
    class.define_method("fetch_cached_hashes", method!(rb_fetch_cached_hashes, 2))?;
    class.define_method("same?", method!(rb_same, 2))?;
    class.define_method("values_equal?", method!(rb_values_equal, 2))?;
    class.define_method("recursively_downcase", method!(rb_recursively_downcase, 1))?;
    class.define_method("recursively_sort", method!(rb_recursively_sort, 1))?;
    class.define_method("downcase_hash_keys!", method!(rb_downcase_hash_keys, 1))?;
    class.define_method("munge_cim_instances!", method!(rb_munge_cim_instances, 1))?;
    class.define_method(
        "stringify_nil_attributes",
        method!(rb_stringify_nil_attributes, 2),
    )?;
    class.define_method("logon_failed_already?", method!(rb_logon_failed_already, 1))?;
    class.define_singleton_method(
        "forget_logon_failures",
        function!(rb_forget_logon_failures, 0),
    )?;
    class.define_method("specify_dsc_timeout", method!(rb_specify_dsc_timeout, 1))?;
    class.define_method(
        "retry_invoke_dsc_resource",
        method!(rb_retry_invoke_dsc_resource, 4),
    )?;
    class.define_method(
        "collision_retry_seconds",
        method!(rb_collision_retry_seconds, 0),
    )?;
    class.define_method(
        "collision_retry_seconds=",
        method!(rb_set_collision_retry_seconds, 1),
    )?;
    Ok(())
}

fn env_collision_wait() -> Option<f64> {
    std::env::var(COLLISION_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// The provider seen from the core lifecycle: state access plus Ruby
/// dispatch for every overridable method and every `context` call.
struct RubyProvider<'r> {
    ruby: &'r Ruby,
    provider: Obj<DscBaseProvider>,
    context: RValue,
    typedef: Arc<TypeDef>,
    /// Whether `context.debug` keeps messages; asked once per entry call,
    /// when the first debug message is due.
    debug_enabled: std::cell::Cell<Option<bool>>,
}

impl<'r> RubyProvider<'r> {
    fn new(ruby: &'r Ruby, provider: Obj<DscBaseProvider>, context: RValue) -> BindingResult<Self> {
        let cached = provider.state.borrow().typedef.clone();
        let typedef = match cached {
            Some(typedef) => typedef,
            None => {
                // Read with no borrow held: this calls into Ruby.
                let typedef = Arc::new(type_definition_from_context(ruby, context)?);
                let mut state = provider.state.borrow_mut();
                let mut lifecycle = LifecycleState::new(&typedef);
                if let Some(wait) = state.collision_wait_seconds.or_else(env_collision_wait) {
                    lifecycle.collision_wait_seconds = wait;
                }
                state.lifecycle = Some(lifecycle);
                state.typedef = Some(typedef.clone());
                typedef
            }
        };
        // A call nested in a running entry call of the same context (the
        // Get that canonicalize makes, through Ruby dispatch) knows the
        // answer already.
        let debug_enabled = {
            let mut state = provider.state.borrow_mut();
            state.entry_depth += 1;
            state
                .entry_debug
                .filter(|(context_bits, _)| *context_bits == context.as_raw())
                .map(|(_, enabled)| enabled)
        };
        Ok(RubyProvider {
            ruby,
            provider,
            context,
            typedef,
            debug_enabled: std::cell::Cell::new(debug_enabled),
        })
    }

    /// Through Ruby, so that an overridden or stubbed `load_path` decides
    /// where the vendored resources are found, as in pwshlib 2.x; read once
    /// per provider (per run), not per invocation.
    fn shared_load_path(&self) -> BindingResult<Arc<Vec<String>>> {
        if let Some(cached) = self.provider.state.borrow().load_path.clone() {
            return Ok(cached);
        }
        let load_path: RArray = self.provider.funcall("load_path", ())?;
        let mut entries = Vec::with_capacity(load_path.len());
        for entry in load_path.into_iter() {
            let text: RString = entry.funcall("to_s", ())?;
            entries.push(text.to_string()?);
        }
        let entries = Arc::new(entries);
        self.provider.state.borrow_mut().load_path = Some(entries.clone());
        Ok(entries)
    }

    fn call_context(&self, level: &str, title: Option<&Value>, message: &str) -> BindingResult<()> {
        match title {
            Some(title) => {
                let title = to_ruby(self.ruby, title)?;
                let _: RValue = self.context.funcall(level, (title, message))?;
            }
            None => {
                let _: RValue = self.context.funcall(level, (message,))?;
            }
        }
        Ok(())
    }
}

impl Drop for RubyProvider<'_> {
    fn drop(&mut self) {
        let mut state = self.provider.state.borrow_mut();
        state.entry_depth = state.entry_depth.saturating_sub(1);
        if state.entry_depth == 0 {
            state.entry_debug = None;
        }
    }
}

fn metaparams(ruby: &Ruby) -> BindingResult<HashSet<String>> {
    let puppet: RModule = ruby.class_object().const_get("Puppet")?;
    let type_class: RClass = puppet.const_get("Type")?;
    let names: RArray = type_class.funcall("metaparams", ())?;
    let mut set = HashSet::new();
    for name in names.into_iter() {
        let text: RString = name.funcall("to_s", ())?;
        set.insert(text.to_string()?);
    }
    Ok(set)
}

/// `Some(true)` when `context` is a stock PuppetContext (its `send_log` is
/// PuppetContext's own) and Puppet's log level is above debug; `None` when
/// that cannot be told (then messages are built, as before).
fn puppet_drops_debug(ruby: &Ruby, context: RValue) -> Option<bool> {
    let stock = cached_constant(
        ruby,
        &PUPPET_CONTEXT_CLASS,
        "Puppet::ResourceApi::PuppetContext",
    )?;
    let send_log: RValue = context
        .funcall("method", (ruby.sym_new("send_log"),))
        .ok()?;
    let owner: RValue = send_log.funcall("owner", ()).ok()?;
    if !owner.eql(stock).ok()? {
        return Some(false);
    }
    let log = cached_constant(ruby, &PUPPET_LOG_CLASS, "Puppet::Util::Log")?;
    let level: RValue = log.funcall("level", ()).ok()?;
    Some(!level.equal(ruby.sym_new("debug")).ok()?)
}

/// The manager method that runs a script body after a prelude.
const EXECUTE_WITH_PRELUDE: &str = "execute_with_prelude";

fn execute_output(ruby: &Ruby, result: RValue) -> BindingResult<ExecuteOutput> {
    let Some(hash) = RHash::from_value(result) else {
        return Ok(ExecuteOutput::default());
    };
    Ok(ExecuteOutput {
        stdout: output_field(ruby, hash, "stdout")?,
        errormessage: output_field(ruby, hash, "errormessage")?,
    })
}

fn output_field(ruby: &Ruby, hash: RHash, name: &str) -> BindingResult<Option<String>> {
    let value = hash
        .get(ruby.sym_new(name))
        .or_else(|| hash.get(ruby.str_new(name)));
    match value {
        Some(v) if !v.is_nil() => {
            let text: RString = v.funcall("to_s", ())?;
            // SAFETY: copied into an owned String before any further Ruby call.
            Ok(Some(
                unsafe { text.as_str() }
                    .map(str::to_owned)
                    .unwrap_or_else(|_| unsafe { text.to_string_lossy().into_owned() }),
            ))
        }
        _ => Ok(None),
    }
}

impl ProviderCallbacks for RubyProvider<'_> {
    type Error = BindingError;

    fn typedef(&self) -> BindingResult<Arc<TypeDef>> {
        Ok(self.typedef.clone())
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut LifecycleState) -> R) -> R {
        let mut state = self.provider.state.borrow_mut();
        let typedef = self.typedef.clone();
        f(state
            .lifecycle
            .get_or_insert_with(|| LifecycleState::new(&typedef)))
    }

    fn invoke_get_method(&self, name_hash: &Map) -> BindingResult<Option<Map>> {
        let arg = map_to_ruby(self.ruby, name_hash)?;
        let result: RValue = self
            .provider
            .funcall("invoke_get_method", (self.context, arg))?;
        match RHash::from_value(result) {
            Some(hash) => Ok(Some(map_from_ruby(self.ruby, hash, "")?)),
            None => Ok(None),
        }
    }

    fn invoke_set_method(&self, name: &Value, should: &Map) -> BindingResult<()> {
        let name = to_ruby(self.ruby, name)?;
        let should = map_to_ruby(self.ruby, should)?;
        let _: RValue = self
            .provider
            .funcall("invoke_set_method", (self.context, name, should))?;
        Ok(())
    }

    fn invoke_test_method(&self, name: &Value, should: &Map) -> BindingResult<Insync> {
        let name = to_ruby(self.ruby, name)?;
        let should = map_to_ruby(self.ruby, should)?;
        let result: RValue = self
            .provider
            .funcall("invoke_test_method", (self.context, name, should))?;
        Ok(insync_from_ruby(self.ruby, result))
    }

    fn invoke_dsc_resource(
        &self,
        name_hash: &Map,
        props: &Map,
        method: DscMethod,
    ) -> BindingResult<Option<Value>> {
        let name_hash = map_to_ruby(self.ruby, name_hash)?;
        let props = map_to_ruby(self.ruby, props)?;
        let method = method.as_str().to_lowercase();
        let result: RValue = self.provider.funcall(
            "invoke_dsc_resource",
            (self.context, name_hash, props, method),
        )?;
        if result.is_nil() {
            return Ok(None);
        }
        Ok(Some(from_ruby(self.ruby, result, "result")?))
    }

    fn execute(&self, script: &str, timeout_ms: Option<u64>) -> BindingResult<ExecuteOutput> {
        let manager: RValue = self.provider.funcall("ps_manager", ())?;
        let result: RValue = manager.funcall("execute", (script, timeout_ms))?;
        execute_output(self.ruby, result)
    }

    /// A manager that knows the DSC prelude (this library's `Pwsh::Manager`)
    /// gets only the lines of this call; any other (a pwshlib 2.x manager,
    /// a test double) gets the whole script through `execute`.
    fn execute_script(
        &self,
        script: &Script,
        timeout_ms: Option<u64>,
    ) -> BindingResult<ExecuteOutput> {
        let manager: RValue = self.provider.funcall("ps_manager", ())?;
        let takes_prelude =
            script.has_prelude() && manager.respond_to(EXECUTE_WITH_PRELUDE, false)?;
        let result: RValue = if takes_prelude {
            manager.funcall(
                EXECUTE_WITH_PRELUDE,
                (templates::PRELUDE_NAME, script.body(), timeout_ms),
            )?
        } else {
            manager.funcall("execute", (script.text(), timeout_ms))?
        };
        execute_output(self.ruby, result)
    }

    fn load_path(&self) -> BindingResult<Vec<String>> {
        Ok(self.shared_load_path()?.as_ref().clone())
    }

    /// Found once per run and module: the search looks at the disk.
    fn vendored_modules_path(
        &self,
        module_name: &str,
    ) -> BindingResult<Result<String, pwshlib_core::Error>> {
        if let Some(found) = self.provider.state.borrow().vendored_paths.get(module_name) {
            return Ok(Ok(found.clone()));
        }
        let load_path = self.shared_load_path()?;
        let found = vendored::vendored_modules_path(&load_path, module_name);
        if let Ok(path) = &found {
            self.provider
                .state
                .borrow_mut()
                .vendored_paths
                .insert(module_name.to_owned(), path.clone());
        }
        Ok(found)
    }

    fn is_metaparam(&self, name: &str) -> bool {
        let known = self.provider.state.borrow().metaparams.is_some();
        if !known {
            let set = metaparams(self.ruby).unwrap_or_default();
            self.provider.state.borrow_mut().metaparams = Some(set);
        }
        self.provider
            .state
            .borrow()
            .metaparams
            .as_ref()
            .is_some_and(|set| set.contains(name))
    }

    fn logon_failed_already(&self, pair: &(String, String)) -> bool {
        logon_memo().failures.contains(pair)
    }

    fn remember_logon_failure(&self, pair: (String, String)) {
        let mut memo = logon_memo();
        if !memo.failures.contains(&pair) {
            memo.failures.push(pair);
        }
    }

    fn sleep(&self, seconds: f64) -> BindingResult<()> {
        // Kernel#sleep on self: releases the VM lock and can be stubbed.
        let _: RValue = self.provider.funcall("sleep", (seconds,))?;
        Ok(())
    }

    fn describe_error(&self, error: &BindingError) -> String {
        match error {
            BindingError::Core(e) => e.to_string(),
            BindingError::Ruby(e) => e.to_string(),
        }
    }

    fn debug(&self, message: &str) -> BindingResult<()> {
        self.call_context("debug", None, message)
    }

    /// A stock `Puppet::ResourceApi::PuppetContext` hands debug messages to
    /// Puppet's log, which drops them below its level; there is no point in
    /// building them then. Any other context (one that records messages, a
    /// subclass with its own `send_log`) gets them all.
    fn debug_enabled(&self) -> bool {
        if let Some(known) = self.debug_enabled.get() {
            return known;
        }
        let enabled = puppet_drops_debug(self.ruby, self.context) != Some(true);
        self.debug_enabled.set(Some(enabled));
        let mut state = self.provider.state.borrow_mut();
        if state.entry_debug.is_none() {
            state.entry_debug = Some((self.context.as_raw(), enabled));
        }
        enabled
    }
    fn notice(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context("notice", title, message)
    }
    fn warning(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context("warning", title, message)
    }
    fn err(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context("err", title, message)
    }
}

fn insync_from_ruby(ruby: &Ruby, value: RValue) -> Insync {
    if value.is_kind_of(ruby.class_true_class()) {
        return Insync::InSync;
    }
    if value.is_kind_of(ruby.class_false_class()) {
        return Insync::OutOfSync(None);
    }
    if let Some(array) = RArray::from_value(value) {
        let message = array
            .entry::<RValue>(1)
            .ok()
            .and_then(RString::from_value)
            .and_then(|s| s.to_string().ok());
        return Insync::OutOfSync(Some(message.unwrap_or_default()));
    }
    Insync::UseDefault
}

fn insync_to_ruby(ruby: &Ruby, answer: &Insync) -> BindingResult<RValue> {
    Ok(match answer {
        Insync::UseDefault => ruby.qnil().as_value(),
        Insync::InSync => true.into_value_with(ruby),
        Insync::OutOfSync(None) => false.into_value_with(ruby),
        Insync::OutOfSync(Some(message)) => {
            let array = ruby.ary_new_capa(2);
            array.push(false)?;
            array.push(message.as_str())?;
            array.as_value()
        }
    })
}

fn hash_arg(ruby: &Ruby, value: RValue, what: &str) -> BindingResult<Map> {
    match from_ruby(ruby, value, "")? {
        Value::Hash(map) => Ok(map),
        Value::Nil => Ok(Map::new()),
        other => Err(pwshlib_core::Error::InvalidValue {
            attribute: what.to_owned(),
            message: format!("expected a hash, got {other}"),
        }
        .into()),
    }
}

/// A resource's hash (the desired state). A value that cannot go to
/// PowerShell fails this resource only: the error names the resource in
/// front of the attribute path, and Puppet reports it against the resource
/// and goes on with the others.
fn resource_arg(
    ruby: &Ruby,
    typedef: &TypeDef,
    title: &Value,
    value: RValue,
    what: &str,
) -> BindingResult<Map> {
    hash_arg(ruby, value, what).map_err(|error| match error {
        BindingError::Core(source) => BindingError::Core(pwshlib_core::Error::InResource {
            resource: resource_label(typedef, title),
            source: Box::new(source),
        }),
        ruby_error => ruby_error,
    })
}

/// `dsc_foo[title]`, as Puppet names a resource.
fn resource_label(typedef: &TypeDef, title: &Value) -> String {
    let title = match lifecycle::title_of(title) {
        Some(Value::Str(text)) | Some(Value::Symbol(text)) => text,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    format!("{}[{title}]", typedef.name)
}

/// The title of a resource hash (its `name`), for messages.
fn title_in(ruby: &Ruby, resource: RValue) -> Value {
    RHash::from_value(resource)
        .and_then(|hash| hash.get(ruby.sym_new("name")))
        .and_then(|name| from_ruby(ruby, name, "name").ok())
        .unwrap_or(Value::Nil)
}

fn maps_to_ruby(ruby: &Ruby, maps: &[Map]) -> BindingResult<RArray> {
    let array = ruby.ary_new_capa(maps.len());
    for map in maps {
        array.push(map_to_ruby(ruby, map)?)?;
    }
    Ok(array)
}

fn option_map_to_ruby(ruby: &Ruby, map: Option<Map>) -> BindingResult<RValue> {
    match map {
        Some(map) => Ok(map_to_ruby(ruby, &map)?.as_value()),
        None => Ok(ruby.qnil().as_value()),
    }
}

fn rb_canonicalize(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
) -> BindingResult<RArray> {
    observe_run(ruby, &rb_self);
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let given: Vec<RValue> = resources.into_iter().collect();
    // The Resource API canonicalizes each resource three times in a run: as
    // it is made, as the target state of the transaction, and once more the
    // Get result (its strict check). A resource canonicalized earlier in
    // this run comes back unchanged (`lifecycle::canonicalize`); found by
    // its namevars alone, it is returned as given, with no conversion either
    // way. Only when debug messages are kept does it take the full path,
    // which logs every resource it returns.
    let already_canonical: Vec<bool> = if provider.debug_enabled() {
        vec![false; given.len()]
    } else {
        let namevars = provider.with_state(|s| s.canonicalized.namevars().to_vec());
        given
            .iter()
            .map(|resource| {
                identity_of_ruby(ruby, *resource, &namevars).is_some_and(|id| {
                    provider.with_state(|s| s.canonicalized.get_identity(&id).is_some())
                })
            })
            .collect()
    };
    if already_canonical.iter().all(|known| *known) {
        return Ok(ruby.ary_from_iter(given));
    }
    // Canonicalize runs while Puppet builds the catalog, where an exception
    // would abort every resource. A resource holding a value that cannot go
    // to PowerShell is returned as given; its insync?/set raise the error,
    // which fails that resource alone.
    let mut maps = Vec::with_capacity(given.len());
    let mut unconvertible = Vec::new();
    for (index, resource) in given.iter().enumerate() {
        if already_canonical[index] {
            continue;
        }
        match hash_arg(ruby, *resource, "resource") {
            Ok(map) => maps.push(map),
            Err(BindingError::Core(error)) => {
                provider.debug(&format!(
                    "{}: not canonicalized: {error}",
                    resource_label(&provider.typedef, &title_in(ruby, *resource))
                ))?;
                unconvertible.push(index);
            }
            Err(ruby_error) => return Err(ruby_error),
        }
    }
    let mut canonical = lifecycle::canonicalize(&provider, maps)?.into_iter();
    let out = ruby.ary_new_capa(given.len());
    for (index, resource) in given.into_iter().enumerate() {
        if already_canonical[index] || unconvertible.contains(&index) {
            out.push(resource)?;
        } else if let Some(map) = canonical.next() {
            out.push(map_to_ruby(ruby, &map)?)?;
        }
    }
    Ok(out)
}

/// The identity of a resource hash from its namevars alone (the rest is not
/// converted); None when it is not a hash or a namevar cannot be converted
/// (the full conversion then reports it).
fn identity_of_ruby(ruby: &Ruby, resource: RValue, namevars: &[String]) -> Option<Identity> {
    let hash = RHash::from_value(resource)?;
    let mut failed = false;
    let identity = Identity::from_lookup(namevars, |name| {
        // As `Map::get_named`: a Symbol or a String key.
        let value = hash
            .get(ruby.sym_new(name))
            .or_else(|| hash.get(ruby.str_new(name)))?;
        match from_ruby(ruby, value, name) {
            Ok(value) => Some(Cow::Owned(value)),
            Err(_) => {
                failed = true;
                None
            }
        }
    });
    (!failed).then_some(identity)
}

fn rb_get(ruby: &Ruby, rb_self: Obj<DscBaseProvider>, args: &[RValue]) -> BindingResult<RArray> {
    let (context, names) = match args {
        [context] => (*context, None),
        [context, names] => (*context, Some(*names)),
        _ => {
            return Err(magnus::Error::new(
                ruby.exception_arg_error(),
                format!(
                    "wrong number of arguments (given {}, expected 1..2)",
                    args.len()
                ),
            )
            .into())
        }
    };
    observe_run(ruby, &rb_self);
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let names = match names {
        Some(names) if !names.is_nil() => match from_ruby(ruby, names, "names")? {
            Value::Array(items) => Some(items),
            other => Some(vec![other]),
        },
        _ => None,
    };
    let results = lifecycle::get(&provider, names)?;
    maps_to_ruby(ruby, &results)
}

fn rb_insync(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    property_name: RValue,
    is_hash: RValue,
    should_hash: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let property = match from_ruby(ruby, property_name, "property_name")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    if let Some((is_hash, should_hash)) =
        insync_arguments_in_brief(ruby, &provider, &name, &property, is_hash, should_hash)
    {
        let answer =
            lifecycle::insync(&provider, &name, &property, is_hash.as_ref(), &should_hash)?;
        return insync_to_ruby(ruby, &answer);
    }
    let is_hash = if is_hash.is_nil() {
        None
    } else {
        Some(hash_arg(ruby, is_hash, "is_hash")?)
    };
    let should_hash = resource_arg(ruby, &provider.typedef, &name, should_hash, "should_hash")?;
    let answer = lifecycle::insync(&provider, &name, &property, is_hash.as_ref(), &should_hash)?;
    insync_to_ruby(ruby, &answer)
}

/// The attributes `lifecycle::insync` reads, for a comparison by property
/// (`validation_mode` other than `resource`) of a resource canonicalized in
/// this run: from the desired state the namevars, `validation_mode` and the
/// property, from the current state the property. The Resource API asks
/// once per property with the same two whole hashes; converting only these
/// is most of the cost saved. None: convert the whole hashes, as before (a
/// Test is due, the resource is unknown, which is also where a value that
/// cannot go to PowerShell is reported, or a needed value does not convert).
fn insync_arguments_in_brief(
    ruby: &Ruby,
    provider: &RubyProvider,
    name: &Value,
    property: &str,
    is_hash: RValue,
    should_hash: RValue,
) -> Option<(Option<Map>, Map)> {
    let should_hash = RHash::from_value(should_hash)?;
    let namevars = provider.with_state(|s| s.canonicalized.namevars().to_vec());
    let should = ruby_hash_entries(ruby, should_hash, |key| {
        key == property
            || key == "validation_mode"
            || key == "title"
            || namevars.iter().any(|n| n == key)
    })?;
    let resource_mode = matches!(
        should.get_named("validation_mode"),
        Some(Value::Str(mode)) | Some(Value::Symbol(mode)) if mode.eq_ignore_ascii_case("resource")
    );
    if resource_mode {
        return None;
    }
    let identity = lifecycle::invocation_identity(&namevars, name, &should);
    if !provider.with_state(|s| s.canonicalized.get_identity(&identity).is_some()) {
        return None;
    }
    let is = if is_hash.is_nil() {
        None
    } else {
        Some(ruby_hash_entries(
            ruby,
            RHash::from_value(is_hash)?,
            |key| key == property,
        )?)
    };
    Some((is, should))
}

/// The entries of a Ruby hash whose key (a Symbol or a String, as
/// `Map::get_named` finds either) is `wanted`, converted; the others are
/// passed over unconverted. None when a wanted entry does not convert.
fn ruby_hash_entries(ruby: &Ruby, hash: RHash, wanted: impl Fn(&str) -> bool) -> Option<Map> {
    let mut entries = Map::new();
    let mut failed = false;
    hash.foreach(|key: RValue, value: RValue| {
        let name = if let Some(symbol) = magnus::Symbol::from_value(key) {
            symbol.name().ok()
        } else {
            RString::from_value(key).and_then(|text| text.to_string().ok().map(Cow::Owned))
        };
        if let Some(name) = name.filter(|name| wanted(name)) {
            match (from_ruby(ruby, key, ""), from_ruby(ruby, value, &name)) {
                (Ok(key), Ok(value)) => entries.0.push((key, value)),
                _ => {
                    failed = true;
                    return Ok(magnus::r_hash::ForEach::Stop);
                }
            }
        }
        Ok(magnus::r_hash::ForEach::Continue)
    })
    .ok()?;
    (!failed).then_some(entries)
}

/// `set(context, changes)`: each change runs inside
/// `context.creating/updating/deleting(name) { create/update/delete }`.
fn rb_set(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    changes: RHash,
) -> BindingResult<RValue> {
    observe_run(ruby, &rb_self);
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let mut pairs: Vec<(RValue, RValue)> = Vec::with_capacity(changes.len());
    changes.foreach(|name: RValue, change: RValue| {
        pairs.push((name, change));
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    for (name, change) in pairs {
        let change_hash = RHash::from_value(change);
        let field = |key: &str| -> Option<RValue> {
            change_hash
                .and_then(|h| h.get(ruby.sym_new(key)))
                .filter(|v| !v.is_nil())
        };
        let should_rb = field("should");
        let is_rb = match field("is") {
            Some(is) => Some(is),
            None => {
                // No current state given: ask get (through Ruby dispatch).
                let names = ruby.ary_new_capa(1);
                names.push(name)?;
                let found: RArray = rb_self.funcall("get", (context, names))?;
                found.into_iter().next()
            }
        };
        let name_value = from_ruby(ruby, name, "name")?;
        let should = match should_rb {
            Some(v) => resource_arg(ruby, &provider.typedef, &name_value, v, "should")?,
            None => lifecycle::name_hash_of(&name_value),
        };
        let is = match is_rb {
            Some(v) => Some(hash_arg(ruby, v, "is")?),
            None => None,
        };
        let action = lifecycle::set_action(&provider.typedef, is.as_ref(), &should);
        let should_rb = match should_rb {
            Some(v) => v,
            None => map_to_ruby(ruby, &should)?.as_value(),
        };
        let mut identity = lifecycle::name_hash_of(&name_value);
        for (k, v) in should.iter() {
            if let Some(n) = k.key_name() {
                if identity.get_named(n).is_none() {
                    identity.insert_symbol(n, v.clone());
                }
            }
        }
        // The Get of this resource failed (and was reported): no blind Set.
        let get_failed = lifecycle::get_failed(&provider, &identity).then(|| {
            let title = lifecycle::title_of(&name_value);
            lifecycle::get_failed_message(&provider.typedef, title.as_ref())
        });
        run_in_context_block(ruby, rb_self, context, name, should_rb, action, get_failed)?;
    }
    Ok(ruby.qnil().as_value())
}

/// Calls `context.<creating|updating|deleting>(name) { self.<create|update|delete>(…) }`
/// with a native block. The block captures the provider, context, name and
/// should as Opaque handles; they stay reachable from this frame's arguments
/// (on the machine stack, which Ruby's GC scans) for as long as the block can
/// run, because the context calls it before `funcall_with_block` returns.
fn run_in_context_block(
    ruby: &Ruby,
    provider: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
    action: SetAction,
    get_failed: Option<String>,
) -> BindingResult<()> {
    let captured = (
        Opaque::from(provider.as_value()),
        Opaque::from(context),
        Opaque::from(name),
        Opaque::from(should),
    );
    let block: Proc = ruby.proc_from_fn(move |ruby, _args, _block| -> Result<RValue, Error> {
        let provider = ruby.get_inner(captured.0);
        let context = ruby.get_inner(captured.1);
        let name = ruby.get_inner(captured.2);
        let should = ruby.get_inner(captured.3);
        if let Some(message) = &get_failed {
            // Raised inside the block, so that the Resource API marks the
            // resource failed, as for a failed Set; the run goes on.
            let puppet: RModule = ruby.class_object().const_get("Puppet")?;
            let error: magnus::ExceptionClass = puppet.const_get("Error")?;
            return Err(Error::new(error, message.clone()));
        }
        let result: RValue = match action {
            SetAction::Delete => provider.funcall("delete", (context, name))?,
            other => provider.funcall(other.method_name(), (context, name, should))?,
        };
        raise_if_set_failed(ruby, provider, name, should)?;
        Ok(result)
    });
    // The title as the Resource API gave it (a name hash for types with
    // several namevars), as pwshlib 2.x passed it.
    let _: RValue = context.funcall_with_block(action.context_method(), (name,), block)?;
    Ok(())
}

/// After a failed Set (already reported through `context.err`), raise so
/// that the Resource API marks this resource as failed; the run goes on.
fn raise_if_set_failed(
    ruby: &Ruby,
    provider: RValue,
    name: RValue,
    should: RValue,
) -> Result<(), Error> {
    let Ok(provider) = Obj::<DscBaseProvider>::try_convert(provider) else {
        return Ok(());
    };
    let to_err = |e: BindingError| magnus::error::IntoError::into_error(e, ruby);
    let name = from_ruby(ruby, name, "name").map_err(to_err)?;
    let should = match from_ruby(ruby, should, "should").map_err(to_err)? {
        Value::Hash(map) => map,
        _ => Map::new(),
    };
    let mut key = lifecycle::name_hash_of(&name);
    for (k, v) in should.iter() {
        if let Some(n) = k.key_name() {
            if key.get_named(n).is_none() {
                key.insert_symbol(n, v.clone());
            }
        }
    }
    let failed = provider
        .state
        .borrow_mut()
        .lifecycle
        .as_mut()
        .and_then(|l| l.failed_sets.remove(&key))
        .is_some();
    if failed {
        let puppet: RModule = ruby.class_object().const_get("Puppet")?;
        let error: magnus::ExceptionClass = puppet.const_get("Error")?;
        return Err(Error::new(
            error,
            "Invoke-DscResource Set did not succeed; see the error above",
        ));
    }
    Ok(())
}

fn rb_create(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    set_with_log(ruby, rb_self, context, name, should, "Creating")
}

fn rb_update(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    set_with_log(ruby, rb_self, context, name, should, "Updating")
}

/// `create` and `update` differ only in what they log: both Set `should`.
fn set_with_log(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
    verb: &str,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name_value = from_ruby(ruby, name, "name")?;
    let should_map = resource_arg(ruby, &provider.typedef, &name_value, should, "should")?;
    provider.debug(&format!(
        "{verb} '{}' with {}",
        lifecycle::title_text(&name_value),
        redact::shown_resource(&provider.typedef, &should_map)
    ))?;
    // Through Ruby, and its answer (the DSC result hash) returned, as in
    // pwshlib 2.x: subclasses check `rebootrequired` on it.
    Ok(rb_self.funcall("invoke_set_method", (context, name, should))?)
}

fn rb_delete(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name_value = from_ruby(ruby, name, "name")?;
    provider.debug(&format!(
        "Deleting '{}'",
        lifecycle::title_text(&name_value)
    ))?;
    let should = lifecycle::delete_should(&provider, &name_value)?;
    let should = map_to_ruby(ruby, &should)?;
    Ok(rb_self.funcall("invoke_set_method", (context, name, should))?)
}

fn rb_invoke_get_method(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let result = lifecycle::invoke_get_method(&provider, &name_hash)?;
    option_map_to_ruby(ruby, result)
}

fn rb_invoke_get_method_for_canonicalize(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let resource = hash_arg(ruby, resource, "resource")?;
    let result = lifecycle::get_for_canonicalize(&provider, &resource)?;
    option_map_to_ruby(ruby, result)
}

fn rb_invoke_set_method(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let should = hash_arg(ruby, should, "should")?;
    match lifecycle::invoke_set_method(&provider, &name, &should)? {
        Some(result) => to_ruby(ruby, &result),
        None => Ok(ruby.qnil().as_value()),
    }
}

fn rb_invoke_test_method(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let should = hash_arg(ruby, should, "should")?;
    let answer = lifecycle::invoke_test_method(&provider, &name, &should)?;
    insync_to_ruby(ruby, &answer)
}

fn parse_method(ruby: &Ruby, method: RValue) -> BindingResult<DscMethod> {
    let text = match from_ruby(ruby, method, "method")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    match text.to_lowercase().as_str() {
        "get" => Ok(DscMethod::Get),
        "set" => Ok(DscMethod::Set),
        "test" => Ok(DscMethod::Test),
        _ => Err(pwshlib_core::Error::InvalidValue {
            attribute: "method".into(),
            message: format!("'{text}' is not one of get, set, test"),
        }
        .into()),
    }
}

fn rb_invoke_dsc_resource(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
    props: RValue,
    method: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let props = hash_arg(ruby, props, "props")?;
    let method = parse_method(ruby, method)?;
    match lifecycle::invoke_dsc_resource(&provider, &name_hash, &props, method)? {
        Some(value) => to_ruby(ruby, &value),
        None => Ok(ruby.qnil().as_value()),
    }
}

/// `Pwsh::Manager.instance(pwsh_path, pwsh_args, debug: …)`, or the Windows
/// PowerShell path and args on Windows, all through Ruby.
fn rb_ps_manager(ruby: &Ruby, rb_self: Obj<DscBaseProvider>) -> BindingResult<RValue> {
    // Looked up on every call, never cached: a caller may replace
    // `Pwsh::Manager` (RSpec's stub_const, a test double), and a class cached
    // from an earlier lookup would keep handing out the old one.
    let pwsh: RModule = ruby.class_object().const_get("Pwsh")?;
    let manager: RClass = pwsh.const_get("Manager")?;
    let cached = rb_self.state.borrow().powershell.clone();
    let (path, args) = match cached {
        Some(resolved) => resolved,
        None => {
            let (path, args) = powershell_executable(ruby, pwsh, manager)?;
            // Without a PowerShell, `instance` raises the error that says
            // what was searched; nothing is cached, so a later call looks again.
            let (Some(path), Some(args)) = (
                Option::<String>::try_convert(path)?,
                Option::<Vec<String>>::try_convert(args)?,
            ) else {
                return Ok(manager.funcall("instance", (path, args, debug_options(ruby)?))?);
            };
            rb_self.state.borrow_mut().powershell = Some((path.clone(), args.clone()));
            (path, args)
        }
    };
    Ok(manager.funcall("instance", (path, args, debug_options(ruby)?))?)
}

/// `Pwsh::Manager.powershell_path/args` on Windows, `pwsh_path/args` elsewhere.
fn powershell_executable(
    ruby: &Ruby,
    pwsh: RModule,
    manager: RClass,
) -> BindingResult<(RValue, RValue)> {
    let on_windows: bool = match pwsh.const_get::<_, RModule>("Util") {
        Ok(util) => util.funcall::<_, _, RValue>("on_windows?", ())?.to_bool(),
        Err(_) => ruby.eval::<RValue>("Gem.win_platform?")?.to_bool(),
    };
    let (path_method, args_method) = if on_windows {
        ("powershell_path", "powershell_args")
    } else {
        ("pwsh_path", "pwsh_args")
    };
    Ok((
        manager.funcall(path_method, ())?,
        manager.funcall(args_method, ())?,
    ))
}

/// `debug: true` while Puppet logs at debug level (the host then echoes more).
fn debug_options(ruby: &Ruby) -> BindingResult<KwArgs> {
    let log = cached_constant(ruby, &PUPPET_LOG_CLASS, "Puppet::Util::Log");
    let debug = match log {
        Some(log) => log
            .funcall::<_, _, RValue>("level", ())?
            .equal(ruby.sym_new("debug"))?,
        None => false,
    };
    let options = ruby.hash_new();
    options.aset(ruby.sym_new("debug"), debug)?;
    Ok(KwArgs(options))
}

fn rb_cached_test_results(ruby: &Ruby, rb_self: Obj<DscBaseProvider>) -> BindingResult<RArray> {
    let entries: Vec<Map> = rb_self
        .state
        .borrow()
        .lifecycle
        .as_ref()
        .map(|l| {
            l.test_results
                .values()
                .map(|(name, result)| {
                    let mut entry = name.clone();
                    entry.insert_symbol(
                        "in_desired_state",
                        result.map(Value::Bool).unwrap_or(Value::Nil),
                    );
                    entry
                })
                .collect()
        })
        .unwrap_or_default();
    maps_to_ruby(ruby, &entries)
}

/// 2.x `fetch_cached_hashes`: the cached hashes that agree with any of
/// `hashes` on every key they share.
fn rb_fetch_cached_hashes(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    cache: RArray,
    hashes: RValue,
) -> BindingResult<RArray> {
    let wanted: Vec<Map> = match from_ruby(ruby, hashes, "hashes")? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::Hash(m) => Some(m),
                _ => None,
            })
            .collect(),
        Value::Hash(m) => vec![m],
        _ => Vec::new(),
    };
    let found = ruby.ary_new();
    for item in cache.into_iter() {
        let Value::Hash(candidate) = from_ruby(ruby, item, "cache")? else {
            continue;
        };
        let matches = wanted.iter().any(|w| {
            w.iter().all(|(k, v)| match candidate.get(k) {
                Some(c) => c == v,
                None => true,
            })
        });
        if matches {
            found.push(item)?;
        }
    }
    Ok(found)
}

fn rb_same(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    a: RValue,
    b: RValue,
) -> BindingResult<bool> {
    Ok(canonical::same(
        &from_ruby(ruby, a, "value1")?,
        &from_ruby(ruby, b, "value2")?,
    ))
}

fn rb_values_equal(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    a: RValue,
    b: RValue,
) -> BindingResult<bool> {
    Ok(canonical::values_equal(
        &from_ruby(ruby, a, "is")?,
        &from_ruby(ruby, b, "should")?,
    ))
}

fn rb_recursively_downcase(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    to_ruby(
        ruby,
        &canonical::recursively_downcase(&from_ruby(ruby, value, "value")?),
    )
}

fn rb_recursively_sort(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    to_ruby(
        ruby,
        &canonical::recursively_sort(&from_ruby(ruby, value, "value")?),
    )
}

/// Replaces the contents of a Ruby Hash or Array in place, for the `!`
/// helpers.
fn replace_in_place(ruby: &Ruby, target: RValue, value: &Value) -> BindingResult<RValue> {
    let fresh = to_ruby(ruby, value)?;
    if RHash::from_value(target).is_some() || RArray::from_value(target).is_some() {
        let _: RValue = target.funcall("replace", (fresh,))?;
        Ok(target)
    } else {
        Ok(fresh)
    }
}

fn rb_downcase_hash_keys(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    let mut converted = from_ruby(ruby, value, "value")?;
    munge::downcase_hash_keys(&mut converted);
    replace_in_place(ruby, value, &converted)
}

fn rb_munge_cim_instances(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    let mut converted = from_ruby(ruby, value, "value")?;
    munge::munge_cim_instances(&mut converted);
    replace_in_place(ruby, value, &converted)
}

fn rb_stringify_nil_attributes(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    data: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let mut map = hash_arg(ruby, data, "data")?;
    munge::stringify_nil_attributes(&provider.typedef, &mut map);
    replace_in_place(ruby, data, &Value::Hash(map))
}

fn rb_logon_failed_already(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    credential: RValue,
) -> BindingResult<bool> {
    let _ = rb_self;
    let credential = from_ruby(ruby, credential, "credential")?;
    Ok(lifecycle::logon_key(&credential).is_some_and(|pair| logon_memo().failures.contains(&pair)))
}

/// `DscBaseProvider.forget_logon_failures`: starts a new run's memo (tests).
fn rb_forget_logon_failures() {
    logon_memo().failures.clear();
}

fn rb_specify_dsc_timeout(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    name_hash: RValue,
) -> BindingResult<Option<u64>> {
    let _ = rb_self;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    Ok(lifecycle::specify_dsc_timeout(&name_hash))
}

/// 2.x `retry_invoke_dsc_resource(context, max_retry_count, wait, matcher) { json }`:
/// notices, waits, and yields for a fresh JSON result until it has no
/// error, or the error no longer matches, or the retries run out.
fn rb_retry_invoke_dsc_resource(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    max_retry_count: u32,
    retry_wait_interval_secs: f64,
    error_matcher: RValue,
) -> BindingResult<RValue> {
    let block = ruby.block_proc()?;
    for attempt in 1..=max_retry_count {
        let _: RValue = context.funcall(
            "notice",
            (format!("Sleeping for {retry_wait_interval_secs} seconds."),),
        )?;
        let _: RValue = rb_self.funcall("sleep", (retry_wait_interval_secs,))?;
        let _: RValue = context.funcall(
            "notice",
            (format!("Retrying: attempt {attempt} of {max_retry_count}."),),
        )?;
        let output: RValue = block.call(())?;
        let text: RString = output.funcall("to_s", ())?;
        let data = munge::parse_json(&text.to_string()?)
            .map_err(|e| pwshlib_core::Error::Invocation(format!("invalid JSON on retry: {e}")))?;
        let error = data
            .as_map()
            .and_then(|m| m.get_named("errormessage"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if error.is_empty() {
            return to_ruby(ruby, &data);
        }
        let _: RValue = context.funcall(
            "notice",
            (format!("Attempt {attempt} of {max_retry_count} failed."),),
        )?;
        let matched: RValue = error_matcher.funcall("match?", (error.as_str(),))?;
        if !matched.to_bool() || attempt == max_retry_count {
            let _: RValue = context.funcall("err", (error.as_str(),))?;
            return Ok(ruby.qnil().as_value());
        }
    }
    Ok(ruby.qnil().as_value())
}

fn rb_collision_retry_seconds(rb_self: Obj<DscBaseProvider>) -> f64 {
    let state = rb_self.state.borrow();
    state
        .lifecycle
        .as_ref()
        .map(|l| l.collision_wait_seconds)
        .or(state.collision_wait_seconds)
        .or_else(env_collision_wait)
        .unwrap_or(lifecycle::COLLISION_DEFAULT_WAIT_SECONDS)
}

fn rb_set_collision_retry_seconds(rb_self: Obj<DscBaseProvider>, seconds: f64) -> f64 {
    let mut state = rb_self.state.borrow_mut();
    state.collision_wait_seconds = Some(seconds);
    if let Some(l) = state.lifecycle.as_mut() {
        l.collision_wait_seconds = seconds;
    }
    seconds
}

// ---------------------------------------------------------------------------
// Script building: the pwshlib 2.x method surface over `pwshlib_core::script`.
//
// Methods that hand a script (or part of one) to Ruby return the "marked
// text" form (`Script::marked`): the real script with each secret literal
// bracketed by a block comment holding a per-process random token. It is
// valid PowerShell; `remove_secret_identifiers` turns it into the real text
// and `redact_secrets` into the log text, as in pwshlib 2.x. The provider's
// own lifecycle uses `Script::text()`/`Script::redacted()` directly.
// ---------------------------------------------------------------------------

mod script_methods {
    use magnus::{method, prelude::*, Error, RArray, RClass, RString, Ruby, Value as RValue};
    use pwshlib_core::literal::{escape_quotes as core_escape_quotes, format_value};
    use pwshlib_core::script::{
        self as core_script, DscMethod, InvocableResource, Script, ScriptParts,
    };
    use pwshlib_core::{vendored, TypeDef, Value};

    use crate::convert::{from_ruby, to_ruby, type_definition_from_context};
    use crate::error::BindingResult;

    fn invalid(attribute: &str, message: impl Into<String>) -> pwshlib_core::Error {
        pwshlib_core::Error::InvalidValue {
            attribute: attribute.to_owned(),
            message: message.into(),
        }
    }

    fn text_argument(ruby: &Ruby, value: RValue, what: &str) -> BindingResult<String> {
        match from_ruby(ruby, value, what)? {
            Value::Str(s) | Value::Symbol(s) => Ok(s),
            other => Err(invalid(what, format!("expected a String, got {other}")).into()),
        }
    }

    fn invocable_from_ruby(ruby: &Ruby, resource: RValue) -> BindingResult<InvocableResource> {
        let value = from_ruby(ruby, resource, "resource")?;
        Ok(InvocableResource::from_value(&value)?)
    }

    fn parts_from_ruby(ruby: &Ruby, resource: RValue) -> BindingResult<ScriptParts> {
        let resource = invocable_from_ruby(ruby, resource)?;
        Ok(ScriptParts::build(
            &resource,
            &mut core_script::random_variable_name,
        )?)
    }

    fn marked(ruby: &Ruby, script: &Script) -> BindingResult<RString> {
        Ok(ruby.str_new(&script.marked()?))
    }

    fn symbols(ruby: &Ruby, names: Vec<&str>) -> RArray {
        ruby.ary_from_iter(names.into_iter().map(|n| ruby.sym_new(n)))
    }

    fn typedef(ruby: &Ruby, context: RValue) -> BindingResult<TypeDef> {
        type_definition_from_context(ruby, context)
    }

    /// `invocable_resource(should, context, method)`: the 2.x resource hash
    /// (`dscmeta_*`, `dsc_invoke_method`, `vendored_modules_path`,
    /// `parameters`) for a Get, Set or Test of `should`.
    fn invocable_resource(
        ruby: &Ruby,
        rb_self: RValue,
        should: RValue,
        context: RValue,
        dsc_method: RValue,
    ) -> BindingResult<RValue> {
        let typedef = typedef(ruby, context)?;
        let method_text = text_argument(ruby, dsc_method, "method")?;
        let method = DscMethod::parse(&method_text)
            .ok_or_else(|| invalid("method", format!("unknown DSC method {method_text:?}")))?;
        let should = match from_ruby(ruby, should, "")? {
            Value::Hash(map) => map,
            other => return Err(invalid("should", format!("expected a Hash, got {other}")).into()),
        };
        let needs_path = typedef.is_class_based() || typedef.module_version.is_some();
        let path = if needs_path {
            // Through Ruby, so that a subclass or a spec can override it.
            let path: RValue =
                rb_self.funcall("vendored_modules_path", (typedef.module_name.as_str(),))?;
            text_argument(ruby, path, "vendored_modules_path")?
        } else {
            String::new()
        };
        let resource = InvocableResource::new(&typedef, &should, method, &path)?;
        to_ruby(ruby, &resource.to_value())
    }

    /// `ps_script_content(resource)`: the whole script for an invocable
    /// resource hash, in the marked text form.
    fn ps_script_content(
        ruby: &Ruby,
        _rb_self: RValue,
        resource: RValue,
    ) -> BindingResult<RString> {
        let resource = invocable_from_ruby(ruby, resource)?;
        marked(ruby, &core_script::build_script(&resource)?)
    }

    /// `format(value)`: any Puppet value as a PowerShell literal, in the
    /// marked text form when it holds Sensitive values.
    fn format(ruby: &Ruby, _rb_self: RValue, value: RValue) -> BindingResult<RString> {
        let value = from_ruby(ruby, value, "value")?;
        marked(ruby, &Script::from_tracked(format_value(&value)?))
    }

    /// `unwrap(value)`: the value with every Sensitive wrapper removed, at any
    /// depth (no 2.x `#PuppetSensitive` suffix: secrets are tracked by position).
    fn unwrap(ruby: &Ruby, _rb_self: RValue, value: RValue) -> BindingResult<RValue> {
        let value = from_ruby(ruby, value, "value")?;
        to_ruby(ruby, &value.unwrap_sensitive())
    }

    /// `escape_quotes(text)`: doubles every PowerShell single-quote character
    /// (U+0027 and U+2018..U+201B).
    fn escape_quotes(ruby: &Ruby, _rb_self: RValue, text: RValue) -> BindingResult<RString> {
        Ok(ruby.str_new(&core_escape_quotes(&text_argument(ruby, text, "text")?)))
    }

    /// `redact_secrets(text)`: the log rendering of marked text (each secret
    /// replaced by a redaction marker); text without markers is returned as is.
    fn redact_secrets(ruby: &Ruby, _rb_self: RValue, text: RValue) -> BindingResult<RString> {
        let text = text_argument(ruby, text, "text")?;
        Ok(ruby.str_new(&Script::from_marked(&text).redacted()))
    }

    /// `remove_secret_identifiers(text)`: the real script text of marked
    /// text (the secret markers removed), ready for PowerShell.
    fn remove_secret_identifiers(
        ruby: &Ruby,
        _rb_self: RValue,
        text: RValue,
    ) -> BindingResult<RString> {
        let text = text_argument(ruby, text, "text")?;
        Ok(ruby.str_new(Script::from_marked(&text).text()))
    }

    /// `vendored_modules_path(module_name)`: the module's vendored
    /// `dsc_resources` folder, searched along `load_path`; raises naming the
    /// module and the folders searched when it is missing.
    fn vendored_modules_path(
        ruby: &Ruby,
        rb_self: RValue,
        module_name: RValue,
    ) -> BindingResult<RString> {
        let module_name = text_argument(ruby, module_name, "module_name")?;
        let entries: RValue = rb_self.funcall("load_path", ())?;
        let load_path = match from_ruby(ruby, entries, "load_path")? {
            Value::Array(items) => items
                .into_iter()
                .filter_map(|item| match item {
                    Value::Str(s) | Value::Symbol(s) => Some(s),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            other => {
                return Err(invalid("load_path", format!("expected an Array, got {other}")).into())
            }
        };
        Ok(ruby.str_new(&vendored::vendored_modules_path(&load_path, &module_name)?))
    }

    /// `load_path`: Ruby's `$LOAD_PATH`, where the vendored resources are sought.
    fn load_path(ruby: &Ruby, _rb_self: RValue) -> Result<RValue, Error> {
        ruby.eval("$LOAD_PATH")
    }

    /// `puppetize_name(name)`: lowercase, `[^a-z0-9_]` → `_`, `a` before a leading digit.
    fn puppetize_name(ruby: &Ruby, _rb_self: RValue, name: RValue) -> BindingResult<RString> {
        Ok(ruby.str_new(&vendored::puppetize_name(&text_argument(
            ruby, name, "name",
        )?)))
    }

    /// `random_variable_name`: a fresh PowerShell variable name (`var_` + a simple UUID).
    fn random_variable_name(ruby: &Ruby, _rb_self: RValue) -> RString {
        ruby.str_new(&core_script::random_variable_name("var_"))
    }

    /// `munge_psmodulepath(resource)`: the PSModulePath block of a
    /// Class-based resource's script (empty for others). Thin entry: the
    /// script builder emits it.
    fn munge_psmodulepath(
        ruby: &Ruby,
        _rb_self: RValue,
        resource: RValue,
    ) -> BindingResult<RString> {
        Ok(ruby.str_new(&parts_from_ruby(ruby, resource)?.module_path))
    }

    /// `prepare_credentials(resource)`: the `New-PsCredential` lines (marked
    /// text). Thin entry: variable names are fresh on every call, so combine
    /// sections only through `ps_script_content`.
    fn prepare_credentials(
        ruby: &Ruby,
        _rb_self: RValue,
        resource: RValue,
    ) -> BindingResult<RString> {
        let parts = parts_from_ruby(ruby, resource)?;
        marked(ruby, &Script::from_tracked(parts.credentials))
    }

    /// `prepare_cim_instances(resource)`: the `New-CimInstance` lines, nested
    /// instances first (marked text; fresh variable names on every call).
    fn prepare_cim_instances(
        ruby: &Ruby,
        _rb_self: RValue,
        resource: RValue,
    ) -> BindingResult<RString> {
        let parts = parts_from_ruby(ruby, resource)?;
        marked(ruby, &Script::from_tracked(parts.cim_instances))
    }

    /// `invoke_params(resource)`: the `$InvokeParams = @{…}` line (marked
    /// text; fresh variable names on every call).
    fn invoke_params(ruby: &Ruby, _rb_self: RValue, resource: RValue) -> BindingResult<RString> {
        let parts = parts_from_ruby(ruby, resource)?;
        marked(ruby, &Script::from_tracked(parts.invoke_params))
    }

    /// `mandatory_get_attributes(context)`: the attributes DSC needs for Get.
    fn mandatory_get_attributes(
        ruby: &Ruby,
        _rb_self: RValue,
        context: RValue,
    ) -> BindingResult<RArray> {
        Ok(symbols(
            ruby,
            typedef(ruby, context)?.mandatory_get_attributes(),
        ))
    }

    /// `mandatory_set_attributes(context)`: the attributes DSC needs for Set.
    fn mandatory_set_attributes(
        ruby: &Ruby,
        _rb_self: RValue,
        context: RValue,
    ) -> BindingResult<RArray> {
        Ok(symbols(
            ruby,
            typedef(ruby, context)?.mandatory_set_attributes(),
        ))
    }

    /// `namevar_attributes(context)`: the attributes with `behaviour: :namevar`.
    fn namevar_attributes(ruby: &Ruby, _rb_self: RValue, context: RValue) -> BindingResult<RArray> {
        Ok(symbols(ruby, typedef(ruby, context)?.namevar_attributes()))
    }

    /// `parameter_attributes(context)`: the attributes with `behaviour: :parameter`.
    fn parameter_attributes(
        ruby: &Ruby,
        _rb_self: RValue,
        context: RValue,
    ) -> BindingResult<RArray> {
        Ok(symbols(
            ruby,
            typedef(ruby, context)?.parameter_attributes(),
        ))
    }

    /// `enum_attributes(context)`: the attributes whose type is an Enum.
    fn enum_attributes(ruby: &Ruby, _rb_self: RValue, context: RValue) -> BindingResult<RArray> {
        Ok(symbols(ruby, typedef(ruby, context)?.enum_attributes()))
    }

    /// `enum_values(context, attribute)`: the allowed values of an Enum
    /// attribute; empty for other or unknown attributes.
    fn enum_values(
        ruby: &Ruby,
        _rb_self: RValue,
        context: RValue,
        attribute: RValue,
    ) -> BindingResult<RArray> {
        let typedef = typedef(ruby, context)?;
        let attribute = text_argument(ruby, attribute, "attribute")?;
        let values = typedef
            .attribute(&attribute)
            .and_then(|a| a.enum_values.clone())
            .unwrap_or_default();
        Ok(ruby.ary_from_iter(values.iter().map(|v| ruby.str_new(v))))
    }

    pub(super) fn define(class: RClass) -> Result<(), Error> {
        class.define_method("invocable_resource", method!(invocable_resource, 3))?;
        class.define_method("ps_script_content", method!(ps_script_content, 1))?;
        class.define_method("format", method!(format, 1))?;
        class.define_method("unwrap", method!(unwrap, 1))?;
        class.define_method("escape_quotes", method!(escape_quotes, 1))?;
        class.define_method("redact_secrets", method!(redact_secrets, 1))?;
        class.define_method(
            "remove_secret_identifiers",
            method!(remove_secret_identifiers, 1),
        )?;
        class.define_method("vendored_modules_path", method!(vendored_modules_path, 1))?;
        class.define_method("load_path", method!(load_path, 0))?;
        class.define_method("puppetize_name", method!(puppetize_name, 1))?;
        class.define_method("random_variable_name", method!(random_variable_name, 0))?;
        class.define_method("munge_psmodulepath", method!(munge_psmodulepath, 1))?;
        class.define_method("prepare_credentials", method!(prepare_credentials, 1))?;
        class.define_method("prepare_cim_instances", method!(prepare_cim_instances, 1))?;
        class.define_method("invoke_params", method!(invoke_params, 1))?;
        class.define_method(
            "mandatory_get_attributes",
            method!(mandatory_get_attributes, 1),
        )?;
        class.define_method(
            "mandatory_set_attributes",
            method!(mandatory_set_attributes, 1),
        )?;
        class.define_method("namevar_attributes", method!(namevar_attributes, 1))?;
        class.define_method("parameter_attributes", method!(parameter_attributes, 1))?;
        class.define_method("enum_attributes", method!(enum_attributes, 1))?;
        class.define_method("enum_values", method!(enum_values, 2))?;
        Ok(())
    }
}

/// Defines the script-building methods (pwshlib 2.x names and arities).
fn define_script_methods(class: RClass) -> Result<(), Error> {
    script_methods::define(class)
}
