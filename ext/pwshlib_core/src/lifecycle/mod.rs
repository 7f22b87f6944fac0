//! The provider lifecycle (docs/behavior.md §3 and §4 "Errors") as pure Rust
//! steps over a [`Provider`] (the provider's session: its state,
//! type and messages). The overridable methods (`canonicalize`, `get`,
//! `invoke_get_method`, …, `invoke_dsc_resource`, `ps_manager`) are plain
//! Ruby (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb): each
//! calls these steps one way, and no step calls a provider method.
//!
//! One job a file:
//! - this file: the session trait, the per-run state, and how a title and
//!   the desired state merge into the attributes (and identity) of a call;
//! - `resource_api`: the steps of `canonicalize`, `get`, `insync?` and
//!   `invoke_get_method`;
//! - `change`: the steps of `set` and of `invoke_set_method` and
//!   `invoke_test_method`;
//! - `in_brief`: the answers a binding may give from part of a resource,
//!   before converting it whole (a resource canonical as given, `insync?`
//!   from the attributes it reads);
//! - `judged_by_test`: when a Get cannot report what property mode
//!   compares, so that the resource's Test judges it, and what the change
//!   message then says;
//! - `invocation`: one `Invoke-DscResource` call: its script, timeout,
//!   run-as credential, output checks and collision waits;
//! - `export`: the step of `get` without names (the resource's Export),
//!   each instance a Get result;
//! - `redaction`: what a message may show of the values it quotes;
//! - `spine` (tests only): the Ruby spine's choreography in Rust, so that the
//!   unit tests drive the steps as the provider does.

use rustc_hash::FxHashSet;
use std::borrow::Cow;
use std::sync::Arc;

use crate::cache::{Identity, IdentityCache, PackedMap};
use crate::error::Error;
use crate::script::{DscMethod, Script};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

mod change;
mod dsc_failure;
mod export;
mod in_brief;
mod invocation;
mod judged_by_test;
mod redaction;
mod resource_api;

pub use change::{
    delete_should, get_failed_message, set_action, set_call, set_refused_after_failed_get,
    set_result, take_set_failure, test_call, test_result, SetAction,
};
pub use export::{
    cannot_list_message, export_result, name_hash_of_instance, EXPORT_INSTANCES, EXPORT_REFUSAL,
    TITLE_SEPARATOR,
};
pub use in_brief::{canonical_as_given, insync_in_brief, Unconvertible};
pub use invocation::{
    collision_wait, dsc_call, dsc_outcome, logon_key, retrying, show_script, specify_dsc_timeout,
    DscCall, Outcome,
};
pub use judged_by_test::{JudgedByTest, CUSTOM_INSYNC_TRIGGER, TEST_SAYS_NOT_IN_DESIRED_STATE};
pub use redaction::{mirror_sensitivity, scrub_with_known_secrets};
pub use resource_api::{
    attributes_passed_to_get, canonicalize_one, canonicalized_all, get_begins, get_failed,
    get_props, get_result, get_step, insync_step, known_system, note_get_failed, retrieving,
    system_wanted, GetStep, InsyncStep, Known,
};

pub const COLLISION_MESSAGE: &str =
    "The Invoke-DscResource cmdlet is in progress and must return before Invoke-DscResource can be invoked";
pub const COLLISION_MAX_RETRIES: u32 = 5;
pub const COLLISION_DEFAULT_WAIT_SECONDS: f64 = 60.0;
/// The member of a Get result the prelude adds when a class-based
/// resource's `Get()` returned the instance it was called on
/// (`Invoke-PwshlibDirect`; docs/behavior.md §3 "insync?").
pub const GET_RETURNED_THIS: &str = "pwshlib_get_returned_this";
pub const NOT_IN_DESIRED_STATE: &str =
    "DSC reports that this resource is not in the desired state; treating all properties as out-of-sync";

/// What the manager's `execute` returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecuteOutput {
    pub stdout: Option<String>,
    pub errormessage: Option<String>,
    /// What the call wrote to the console (`[Console]::WriteLine`, native
    /// programs), which the host keeps out of `stdout` for DSC calls: shown
    /// at debug.
    pub native_stdout: Option<String>,
}

/// The answer of `insync?`: nil, `true`, or `false` / `[false, message]`.
#[derive(Debug, Clone, PartialEq)]
pub enum Insync {
    /// `nil`: Puppet compares the values itself.
    UseDefault,
    /// `true`.
    InSync,
    /// `false` without a message, or `[false, message]`, which Puppet shows
    /// as the change.
    OutOfSync(Option<String>),
}

/// Owned per-run provider state.
#[derive(Debug)]
pub struct LifecycleState {
    /// Munged Get results: the system state.
    pub query_results: IdentityCache<PackedMap>,
    /// Canonicalized desired state, kept apart from the system state.
    pub canonicalized: IdentityCache<PackedMap>,
    /// One Test per resource: Some(in desired state), or None when it failed.
    pub test_results: IdentityCache<(Map, Option<bool>)>,
    /// (resource, property) pairs answered `[false, msg]`, whose corrective
    /// second `insync?` call gets nil.
    pub insync_reported: FxHashSet<(Identity, String)>,
    /// Resources whose last Set failed.
    pub failed_sets: IdentityCache<String>,
    /// Resources whose Get failed in this run: no further PowerShell call
    /// is made for them, and their Set is marked failed.
    pub failed_gets: IdentityCache<()>,
    /// Resources whose Get cannot report the state property mode compares
    /// (`return $this`, a property left out, Reasons while every property
    /// agrees): their Test judges them, as `validation_mode => resource`.
    pub judged_by_test: IdentityCache<JudgedByTest>,
    pub collision_wait_seconds: f64,
}

impl LifecycleState {
    pub fn new(typedef: &TypeDef) -> Self {
        let namevars = typedef.identity_namevars().to_vec();
        LifecycleState {
            query_results: IdentityCache::new(namevars.clone()),
            canonicalized: IdentityCache::new(namevars.clone()),
            test_results: IdentityCache::new(namevars.clone()),
            insync_reported: FxHashSet::default(),
            failed_sets: IdentityCache::new(namevars.clone()),
            failed_gets: IdentityCache::new(namevars.clone()),
            judged_by_test: IdentityCache::new(namevars),
            collision_wait_seconds: COLLISION_DEFAULT_WAIT_SECONDS,
        }
    }

    /// Forgets everything known about a resource's system state (after Set).
    pub fn forget(&mut self, hash: &Map) {
        let id = self.query_results.identity(hash);
        self.query_results.remove(hash);
        self.test_results.remove(hash);
        self.judged_by_test.remove(hash);
        self.insync_reported.retain(|(i, _)| !id.matches(i));
    }
}

/// Builds and logs a debug message only when debug messages are kept.
fn debug_lazy<P: Provider>(provider: &P, message: impl FnOnce() -> String) -> Result<(), P::Error> {
    if provider.debug_enabled() {
        provider.debug(&message())
    } else {
        Ok(())
    }
}

/// The provider's session as the lifecycle's steps see it: its state, its
/// type, and where messages go. No method here calls a provider method:
/// the overridable methods are the Ruby spine's
/// (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb), which
/// calls the steps of this module one way, in order.
///
/// Rule for implementors: `with_state` must not call back into the
/// provider, and no state borrow is held across a call of another method.
pub trait Provider {
    type Error: From<Error>;

    fn typedef(&self) -> Result<Arc<TypeDef>, Self::Error>;
    fn with_state<R>(&self, f: impl FnOnce(&mut LifecycleState) -> R) -> R;

    /// The module's vendored `dsc_resources` folder. The binding remembers
    /// it for the run, so that a catalog of thousands of resources does not
    /// look at the disk for each call.
    fn vendored_modules_path(
        &self,
        module_name: &str,
    ) -> Result<Result<String, Error>, Self::Error>;
    /// Builds the script of one call. The outer error is the host's, the
    /// inner one is reported against the resource.
    fn build_script(
        &self,
        typedef: &TypeDef,
        props: &Map,
        method: DscMethod,
    ) -> Result<Result<Script, Error>, Self::Error> {
        // As `script::script_for`: Class-based resources and MOF resources
        // with a version name their vendored folder; others need none.
        let path = if typedef.is_class_based() || typedef.module_version.is_some() {
            match self.vendored_modules_path(&typedef.module_name)? {
                Ok(path) => path,
                Err(e) => return Ok(Err(e)),
            }
        } else {
            String::new()
        };
        Ok(
            crate::script::InvocableResource::new(typedef, props, method, &path)
                .and_then(|resource| crate::script::build_script(&resource)),
        )
    }
    fn is_metaparam(&self, name: &str) -> bool;
    /// Whether this (user, password) failed to log on earlier in the run.
    /// The binding keeps one memo for the process, shared by its provider
    /// instances (one per type), since a credential is not tied to a type.
    fn logon_failed_already(&self, pair: &(String, String)) -> bool;
    fn remember_logon_failure(&self, pair: (String, String));
    /// True the first time `notice` is asked for in this run, false after:
    /// for a warning about the run rather than a resource. The binding
    /// keeps these with the logon memo.
    fn first_in_run(&self, notice: &str) -> bool;

    fn debug(&self, message: &str) -> Result<(), Self::Error>;
    /// False when debug messages would be dropped anyway, so that they are
    /// not built (the script dump alone is the whole script per call).
    fn debug_enabled(&self) -> bool {
        true
    }
    fn notice(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
    fn warning(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
    fn err(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
}

/// The title to name a resource by: the `name` of a hash, or the value.
pub fn title_of(value: &Value) -> Option<Value> {
    match value {
        Value::Hash(map) => map.get_named("name").cloned().or(Some(value.clone())),
        Value::Nil => None,
        other => Some(other.clone()),
    }
}

/// A title for a debug line: a String bare (`Creating 'r0'`, not
/// `Creating '"r0"'`), anything else as Puppet would print it.
pub fn title_text(name: &Value) -> String {
    match title_of(name) {
        Some(Value::Str(s)) | Some(Value::Symbol(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn title_of_map(map: &Map) -> Option<Value> {
    map.get_named("name").filter(|v| !v.is_nil()).cloned()
}

/// A title (String or namevar hash) as a hash.
pub fn name_hash_of(name: &Value) -> Map {
    match name {
        Value::Hash(map) => map.clone(),
        other => Map(vec![(Value::sym("name"), other.clone())]),
    }
}

fn dsc_props(map: &Map) -> Map {
    map.iter()
        .filter(|(k, _)| k.key_name().is_some_and(|n| n.starts_with("dsc_")))
        .cloned()
        .collect()
}

/// The identity of [`invocation_name_hash`]`(name, should)`, without
/// building that hash: an attribute comes from the title's hash (a String
/// title is `name`), or else from the desired state. The one merge of a
/// title with the desired state into a lookup key: the caches of the run
/// and the binding key resources by it.
pub fn invocation_identity(namevars: &[String], name: &Value, should: &Map) -> Identity {
    Identity::from_lookup(namevars, |attribute| {
        let from_name = match name {
            Value::Hash(map) => map.get_named(attribute),
            other if attribute == "name" => Some(other),
            _ => None,
        };
        from_name
            .or_else(|| should.get_named(attribute))
            .map(Cow::Borrowed)
    })
}

/// The name hash a Set/Test call runs under: the title merged with the
/// desired state, so the credential and timeout of the resource apply.
pub fn invocation_name_hash(name: &Value, should: &Map) -> Map {
    with_attributes_of(name_hash_of(name), should)
}

/// `hash` with every attribute of `more` that it lacks: what the title
/// says wins over the rest.
fn with_attributes_of(mut hash: Map, more: &Map) -> Map {
    for (key, value) in more.iter() {
        if let Some(name) = key.key_name() {
            if hash.get_named(name).is_none() {
                hash.insert_symbol(name, value.clone());
            }
        }
    }
    hash
}

#[cfg(test)]
mod export_tests;
#[cfg(test)]
mod get_input_tests;
#[cfg(test)]
mod judged_by_test_tests;
#[cfg(test)]
mod spine;
#[cfg(test)]
pub(crate) use spine::{
    canonicalize, get, insync, invoke_dsc_resource, invoke_get_method, invoke_set_method, Spine,
};
#[cfg(test)]
mod rotation_tests;
#[cfg(test)]
mod secret_tests;
#[cfg(test)]
mod tests;
