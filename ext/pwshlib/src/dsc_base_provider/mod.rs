//! `Puppet::Provider::DscBaseProvider`: the base class of every scaffolded
//! DSC provider. This file holds the class and its per-run state; each kind
//! of method lives in its own file with its own `define(class)`:
//!
//! - `lifecycle_methods`: the Resource API entry points (`canonicalize`,
//!   `get`, `set`, `insync?`, …) and the overridable invocation methods;
//! - `helper_methods`: the pwshlib 2.x helpers (`same?`, caches, …);
//! - `script_methods`: the pwshlib 2.x script-building surface;
//! - `ruby_provider`: the provider as the core lifecycle sees it
//!   (`pwshlib_core::lifecycle::ProviderCallbacks` over Ruby dispatch);
//! - `run`: which Puppet run a call belongs to;
//! - `private_state`: every read of Puppet's and the Resource API's
//!   non-public state, with the versions it was checked on.
//!
//! The Ruby side (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb)
//! reopens the class for the pure Ruby choreography: `ps_manager`,
//! `load_path`, `retry_invoke_dsc_resource` and `get`'s optional argument.

mod helper_methods;
mod lifecycle_methods;
mod private_state;
mod ruby_provider;
mod run;
mod script_methods;

use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::sync::Arc;

use magnus::{function, method, prelude::*, Error, RClass, RModule, Ruby};
use pwshlib_core::lifecycle::{LifecycleState, COLLISION_DEFAULT_WAIT_SECONDS};
use pwshlib_core::run::RunMarker;
use pwshlib_core::TypeDef;

/// Where the collision retry wait comes from when Ruby has not set one.
const COLLISION_WAIT_ENV: &str = "PWSHLIB_COLLISION_RETRY_SECONDS";

/// The Ruby instance variable holding the resolved PowerShell command
/// (`ps_manager`'s memo, set by the Ruby side), forgotten with each new run.
const POWERSHELL_MEMO_IVAR: &str = "@powershell_command";

/// Per-run provider state. Only owned Rust data lives here; Ruby values are
/// converted on the way in.
#[derive(Default)]
pub struct ProviderState {
    /// The type definition, read once from `context.type`.
    typedef: Option<Arc<TypeDef>>,
    /// Caches and memos of the lifecycle; created with the type definition.
    lifecycle: Option<LifecycleState>,
    /// `Puppet::Type.metaparams`, read once.
    metaparams: Option<FxHashSet<String>>,
    /// A collision retry wait set from Ruby (tests), in seconds.
    collision_wait_override: Option<f64>,
    /// Ruby's load path as `load_path` returned it, read once per run.
    load_path: Option<Arc<Vec<String>>>,
    /// Module name → its vendored `dsc_resources` folder, found once per
    /// run (a search of the load path on disk) rather than once per call.
    vendored_paths: FxHashMap<String, String>,
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
    /// Values this provider has just converted for Ruby and is about to get
    /// back unchanged, unless an override changes them: the arguments of an
    /// overridable method it calls, and the result of one of its native
    /// methods (see `RubyProvider::take_handed`).
    handed_over: Vec<pwshlib_core::Value>,
    /// The hash arguments of the overridable method this provider is
    /// calling right now, lent rather than copied (see
    /// `RubyProvider::lending`): each points at a Map of the calling
    /// frame, which is suspended in that call for as long as the entry
    /// stays here, and is taken out when the call returns.
    lent_arguments: Vec<LentMap>,
}

/// A Map of a frame suspended in a Ruby call, lent to the native methods
/// that call reaches in the same Fiber (`ProviderState::lent_arguments`).
#[derive(Clone, Copy)]
pub(super) struct LentMap {
    pub(super) map: *const pwshlib_core::Map,
    /// The Fiber (of its thread) whose frame holds the map, as its VALUE
    /// bits, only compared: only its own nested calls, which end before
    /// that frame does, may borrow the map. Another thread, or another
    /// Fiber of the thread, could still hold a borrow once the lender has
    /// returned.
    pub(super) fiber: u64,
}

// SAFETY: the provider (and so this state) may move between threads with
// the Ruby object, but a lent map is only dereferenced in the Fiber, and so
// on the thread, that lent it (`RubyProvider::hash_arg` compares `fiber`),
// within the call it was lent for.
unsafe impl Send for LentMap {}

/// The running Fiber, as its VALUE bits (see [`LentMap::fiber`]).
pub(super) fn current_fiber() -> u64 {
    // SAFETY: called with the GVL held, from a method Ruby called;
    // `rb_fiber_current` only reads (or, the first time on a thread, makes)
    // the running Fiber's object.
    unsafe { rb_sys::rb_fiber_current() as u64 }
}

impl ProviderState {
    /// Forgets everything learnt in the previous run: the system is read
    /// again, and the load path is looked up again (the agent may have
    /// synced new plugins in between).
    fn start_new_run(&mut self) {
        if let Some(typedef) = self.typedef.clone() {
            self.reset_lifecycle(&typedef);
        }
        self.load_path = None;
        self.vendored_paths.clear();
    }

    /// A fresh lifecycle state for `typedef`.
    fn reset_lifecycle(&mut self, typedef: &TypeDef) {
        self.lifecycle = Some(LifecycleState::new(typedef));
        self.apply_collision_wait();
    }

    /// The lifecycle state, made for `typedef` the first time.
    fn lifecycle_for(&mut self, typedef: &TypeDef) -> &mut LifecycleState {
        if self.lifecycle.is_none() {
            self.reset_lifecycle(typedef);
        }
        self.lifecycle
            .get_or_insert_with(|| LifecycleState::new(typedef))
    }

    /// The collision retry wait: the one Ruby set, else
    /// `PWSHLIB_COLLISION_RETRY_SECONDS`, else the core's default. The one
    /// source of the wait; [`Self::apply_collision_wait`] hands it to the
    /// lifecycle.
    fn collision_wait_seconds(&self) -> f64 {
        self.collision_wait_override
            .or_else(env_collision_wait)
            .unwrap_or(COLLISION_DEFAULT_WAIT_SECONDS)
    }

    /// Sets the wait from Ruby; the running lifecycle uses it from now on.
    fn set_collision_wait_seconds(&mut self, seconds: f64) {
        self.collision_wait_override = Some(seconds);
        self.apply_collision_wait();
    }

    /// The one place the lifecycle learns the wait.
    fn apply_collision_wait(&mut self) {
        let seconds = self.collision_wait_seconds();
        if let Some(lifecycle) = self.lifecycle.as_mut() {
            lifecycle.collision_wait_seconds = seconds;
        }
    }
}

fn env_collision_wait() -> Option<f64> {
    std::env::var(COLLISION_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
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
    lifecycle_methods::define(class)?;
    helper_methods::define(class)?;
    script_methods::define(class)?;
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
