//! The provider object's state (its session), split by how long each part
//! lives, each with private fields: what it learns once ([`ProviderFacts`])
//! and what a run caches ([`RunCaches`]). Only owned Rust data lives here;
//! Ruby values are converted on the way in.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use pwshlib_core::lifecycle::{LifecycleState, COLLISION_DEFAULT_WAIT_SECONDS};
use pwshlib_core::run::{self, RunMarker};
use pwshlib_core::TypeDef;

/// Where the collision retry wait comes from when Ruby has not set one.
const COLLISION_WAIT_ENV: &str = "PWSHLIB_COLLISION_RETRY_SECONDS";

/// What the provider learns once and keeps for its life: no run changes it.
#[derive(Default)]
pub(super) struct ProviderFacts {
    /// The type definition, read once from `context.type`.
    typedef: Option<Arc<TypeDef>>,
    /// `Puppet::Type.metaparams`, read once.
    metaparams: Option<FxHashSet<String>>,
    /// A collision retry wait set from Ruby (tests), in seconds.
    collision_wait_override: Option<f64>,
}

impl ProviderFacts {
    pub(super) fn typedef(&self) -> Option<Arc<TypeDef>> {
        self.typedef.clone()
    }

    pub(super) fn learn_typedef(&mut self, typedef: Arc<TypeDef>) {
        self.typedef = Some(typedef);
    }

    /// Whether `name` is a metaparameter; None until they are learnt.
    pub(super) fn is_metaparam(&self, name: &str) -> Option<bool> {
        self.metaparams.as_ref().map(|set| set.contains(name))
    }

    pub(super) fn learn_metaparams(&mut self, names: FxHashSet<String>) {
        self.metaparams = Some(names);
    }

    /// The collision retry wait: the one Ruby set, else
    /// `PWSHLIB_COLLISION_RETRY_SECONDS`, else the core's default. The one
    /// source of the wait; [`RunCaches`] hands it to the lifecycle.
    pub(super) fn collision_wait_seconds(&self) -> f64 {
        self.collision_wait_override
            .or_else(env_collision_wait)
            .unwrap_or(COLLISION_DEFAULT_WAIT_SECONDS)
    }

    pub(super) fn set_collision_wait_seconds(&mut self, seconds: f64) {
        self.collision_wait_override = Some(seconds);
    }
}

fn env_collision_wait() -> Option<f64> {
    std::env::var(COLLISION_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// What one Puppet run caches, all forgotten when the next run begins: the
/// system is read again, and the load path is looked up again (the agent
/// may have synced new plugins in between).
#[derive(Default)]
pub(super) struct RunCaches {
    /// The run these caches belong to (see `pwshlib_core::run`).
    run_marker: Option<RunMarker>,
    /// Caches and memos of the lifecycle; made with the type definition.
    lifecycle: Option<LifecycleState>,
    /// Ruby's load path as `load_path` returned it, read once per run.
    load_path: Option<Arc<Vec<String>>>,
    /// Module name → its vendored `dsc_resources` folder, found once per
    /// run (a search of the load path on disk) rather than once per call.
    vendored_paths: FxHashMap<String, String>,
}

/// Whether a call observed by [`RunCaches::observe`] is in a new run, and
/// whether it is the provider's first call ever.
pub(super) struct Observed {
    pub(super) new_run: bool,
    pub(super) first_call: bool,
}

impl RunCaches {
    /// The run the caches belong to, if any call was observed.
    pub(super) fn run_marker(&self) -> Option<RunMarker> {
        self.run_marker
    }

    /// Notes that a call belongs to the run `now`: the caches are emptied
    /// when that is a new run (the lifecycle made afresh for `typedef`
    /// with the collision wait `wait`, when the type is known).
    pub(super) fn observe(
        &mut self,
        now: RunMarker,
        typedef: Option<&TypeDef>,
        wait: impl FnOnce() -> f64,
    ) -> Observed {
        let first_call = self.run_marker.is_none();
        let new_run = run::is_new_run(self.run_marker, now);
        if new_run {
            if let Some(typedef) = typedef {
                self.reset_lifecycle(typedef, wait());
            }
            self.load_path = None;
            self.vendored_paths.clear();
        }
        self.run_marker = Some(now);
        Observed {
            new_run,
            first_call,
        }
    }

    /// A fresh lifecycle state for `typedef`, waiting `wait` seconds on a
    /// collision.
    pub(super) fn reset_lifecycle(&mut self, typedef: &TypeDef, wait: f64) {
        self.lifecycle = Some(lifecycle_state(typedef, wait));
    }

    /// The lifecycle state, made for `typedef` the first time (`wait`
    /// asked only then: it may read the environment).
    pub(super) fn lifecycle_for(
        &mut self,
        typedef: &TypeDef,
        wait: impl FnOnce() -> f64,
    ) -> &mut LifecycleState {
        self.lifecycle
            .get_or_insert_with(|| lifecycle_state(typedef, wait()))
    }

    /// The lifecycle state, when a lifecycle call has made one.
    pub(super) fn lifecycle(&self) -> Option<&LifecycleState> {
        self.lifecycle.as_ref()
    }

    /// The running lifecycle uses this wait from now on.
    pub(super) fn apply_collision_wait(&mut self, wait: f64) {
        if let Some(lifecycle) = self.lifecycle.as_mut() {
            lifecycle.collision_wait_seconds = wait;
        }
    }

    /// Applies `f` to the lifecycle state, when a lifecycle call has made
    /// one.
    pub(super) fn with_lifecycle<R>(
        &mut self,
        f: impl FnOnce(&mut LifecycleState) -> R,
    ) -> Option<R> {
        self.lifecycle.as_mut().map(f)
    }

    pub(super) fn load_path(&self) -> Option<Arc<Vec<String>>> {
        self.load_path.clone()
    }

    pub(super) fn keep_load_path(&mut self, load_path: Arc<Vec<String>>) {
        self.load_path = Some(load_path);
    }

    pub(super) fn vendored_path(&self, module_name: &str) -> Option<String> {
        self.vendored_paths.get(module_name).cloned()
    }

    pub(super) fn keep_vendored_path(&mut self, module_name: &str, path: String) {
        self.vendored_paths.insert(module_name.to_owned(), path);
    }
}

fn lifecycle_state(typedef: &TypeDef, wait: f64) -> LifecycleState {
    let mut lifecycle = LifecycleState::new(typedef);
    lifecycle.collision_wait_seconds = wait;
    lifecycle
}
