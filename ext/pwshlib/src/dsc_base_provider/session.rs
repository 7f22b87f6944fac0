//! The provider's session as the core lifecycle sees it: [`Session`]
//! implements `pwshlib_core::lifecycle::Provider` with the
//! provider's state and the `context`'s log methods. It calls no provider
//! method: the overridable methods are the Ruby spine's, which calls the
//! session's steps (`lifecycle_methods`).

use std::cell::Cell;
use std::sync::Arc;

use magnus::{
    prelude::*, rb_sys::AsRawValue, typed_data::Obj, value::LazyId, RArray, RClass, RHash, RModule,
    RString, Ruby, Value as RValue,
};
use pwshlib_core::lifecycle::{ExecuteOutput, Insync, LifecycleState, Provider};
use pwshlib_core::vendored;
use pwshlib_core::{TypeDef, Value};
use rustc_hash::FxHashSet;

use super::constants::{cached_constant, PUPPET_CONTEXT_CLASS, PUPPET_LOG_CLASS};
use super::logon_memo::logon_memo;
use super::run::observe_run;
use super::{private_state, DscBaseProvider};
use crate::convert::{
    id, interned_string, lossy_string, names, static_symbol, to_ruby, type_definition_from_context,
};
use crate::error::{BindingError, BindingResult};

/// The provider's session seen from the core lifecycle, for one step.
pub(super) struct Session<'r> {
    ruby: &'r Ruby,
    provider: Obj<DscBaseProvider>,
    context: RValue,
    pub(super) typedef: Arc<TypeDef>,
    /// Whether `context.debug` keeps messages; asked once per step, when
    /// the first debug message is due.
    debug_enabled: Cell<Option<bool>>,
}

impl<'r> Session<'r> {
    pub(super) fn new(
        ruby: &'r Ruby,
        provider: Obj<DscBaseProvider>,
        context: RValue,
    ) -> BindingResult<Self> {
        let cached = provider.facts.borrow().typedef();
        let typedef = if let Some(typedef) = cached {
            typedef
        } else {
            // Read with no borrow held: this calls into Ruby.
            let typedef = Arc::new(type_definition_from_context(ruby, context)?);
            let mut facts = provider.facts.borrow_mut();
            let wait = facts.collision_wait_seconds();
            provider.run.borrow_mut().reset_lifecycle(&typedef, wait);
            facts.learn_typedef(typedef.clone());
            typedef
        };
        Ok(Session {
            ruby,
            provider,
            context,
            typedef,
            debug_enabled: Cell::new(None),
        })
    }

    /// Whether the context keeps debug messages (asked once per step).
    pub(super) fn keeps_debug(&self) -> bool {
        self.debug_enabled()
    }

    /// A debug message, when the context keeps them.
    pub(super) fn debug_message(&self, message: &str) -> BindingResult<()> {
        if self.debug_enabled() {
            self.debug(message)
        } else {
            Ok(())
        }
    }

    /// For an entry call where a run's work on a type can begin
    /// (canonicalize, get, set): the run is observed first, so that a call
    /// in a new run starts with empty caches.
    pub(super) fn at_run_entry(
        ruby: &'r Ruby,
        provider: Obj<DscBaseProvider>,
        context: RValue,
    ) -> BindingResult<Self> {
        let run_begins = observe_run(ruby, provider)?;
        let entry = Self::new(ruby, provider, context)?;
        if run_begins {
            private_state::forget_resource_api_get_cache(ruby, &entry.typedef.name)?;
        }
        Ok(entry)
    }

    /// The load path the spine gave for this run (`load_path`, which a
    /// provider may override), empty when it gave none.
    fn shared_load_path(&self) -> std::sync::Arc<Vec<String>> {
        self.provider.run.borrow().load_path().unwrap_or_default()
    }

    fn call_context(
        &self,
        level: &LazyId,
        title: Option<&Value>,
        message: &str,
    ) -> BindingResult<()> {
        match title {
            Some(title) => {
                let title = to_ruby(self.ruby, title)?;
                let _: RValue = self
                    .context
                    .funcall(id(self.ruby, level), (title, message))?;
            }
            None => {
                let _: RValue = self.context.funcall(id(self.ruby, level), (message,))?;
            }
        }
        Ok(())
    }
}

fn metaparams(ruby: &Ruby) -> BindingResult<FxHashSet<String>> {
    let puppet: RModule = ruby.class_object().const_get("Puppet")?;
    let type_class: RClass = puppet.const_get("Type")?;
    let names: RArray = type_class.funcall(id(ruby, &names::METAPARAMS), ())?;
    let mut set = FxHashSet::default();
    for name in names.into_iter() {
        let text: RString = name.funcall(id(ruby, &names::TO_S), ())?;
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
    // The class in the object's header is PuppetContext itself only when
    // the context is a plain PuppetContext with no singleton class (no
    // stub, no method of its own): its `send_log` is then PuppetContext's,
    // found without a Method object. (A module prepended to PuppetContext
    // itself is not looked for.) Any other context is asked.
    if context.class().as_raw() != stock.as_raw() {
        let send_log: RValue = context
            .funcall(
                id(ruby, &names::METHOD),
                (static_symbol(ruby, &names::SEND_LOG),),
            )
            .ok()?;
        let owner: RValue = send_log.funcall(id(ruby, &names::OWNER), ()).ok()?;
        if !owner.eql(stock).ok()? {
            return Some(false);
        }
    }
    let log = cached_constant(ruby, &PUPPET_LOG_CLASS, "Puppet::Util::Log")?;
    let level = match private_state::log_level_read_directly(ruby, log) {
        Some(level) => level,
        None => log.funcall(id(ruby, &names::LEVEL), ()).ok()?,
    };
    Some(level.as_raw() != static_symbol(ruby, &names::DEBUG).as_raw())
}

pub(super) fn execute_output(ruby: &Ruby, result: RValue) -> BindingResult<ExecuteOutput> {
    let Some(hash) = RHash::from_value(result) else {
        return Ok(ExecuteOutput::default());
    };
    Ok(ExecuteOutput {
        stdout: output_field(ruby, hash, &names::STDOUT, "stdout")?,
        errormessage: output_field(ruby, hash, &names::ERRORMESSAGE, "errormessage")?,
        native_stdout: output_field(ruby, hash, &names::NATIVE_STDOUT, "native_stdout")?,
    })
}

/// The field `name` (`key`, its Symbol) of an output hash: Symbol keys, as
/// `Pwsh::Manager#execute` answers, or String keys.
fn output_field(
    ruby: &Ruby,
    hash: RHash,
    key: &LazyId,
    name: &str,
) -> BindingResult<Option<String>> {
    let value = hash
        .get(static_symbol(ruby, key))
        .or_else(|| hash.get(interned_string(name)?));
    match value {
        Some(v) if !v.is_nil() => {
            let text = match RString::from_value(v) {
                Some(text) => text,
                None => v.funcall(id(ruby, &names::TO_S), ())?,
            };
            Ok(Some(lossy_string(text)))
        }
        _ => Ok(None),
    }
}

impl Provider for Session<'_> {
    type Error = BindingError;

    fn typedef(&self) -> BindingResult<Arc<TypeDef>> {
        Ok(self.typedef.clone())
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut LifecycleState) -> R) -> R {
        let mut run = self.provider.run.borrow_mut();
        f(run.lifecycle_for(&self.typedef, || {
            self.provider.facts.borrow().collision_wait_seconds()
        }))
    }

    /// Found once per run and module: the search looks at the disk.
    fn vendored_modules_path(
        &self,
        module_name: &str,
    ) -> BindingResult<Result<String, pwshlib_core::Error>> {
        let cached = self.provider.run.borrow().vendored_path(module_name);
        if let Some(found) = cached {
            return Ok(Ok(found));
        }
        let load_path = self.shared_load_path();
        let found = vendored::vendored_modules_path(&load_path, module_name);
        if let Ok(path) = &found {
            self.provider
                .run
                .borrow_mut()
                .keep_vendored_path(module_name, path.clone());
        }
        Ok(found)
    }

    fn is_metaparam(&self, name: &str) -> bool {
        let known = self.provider.facts.borrow().is_metaparam(name);
        if let Some(known) = known {
            return known;
        }
        // Read with no borrow held: this calls into Ruby.
        let set = metaparams(self.ruby).unwrap_or_default();
        let mut facts = self.provider.facts.borrow_mut();
        facts.learn_metaparams(set);
        facts.is_metaparam(name).unwrap_or(false)
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

    fn first_in_run(&self, notice: &str) -> bool {
        let mut memo = logon_memo();
        let first = !memo.notices.iter().any(|seen| seen == notice);
        if first {
            memo.notices.push(notice.to_owned());
        }
        first
    }

    fn debug(&self, message: &str) -> BindingResult<()> {
        self.call_context(&names::DEBUG, None, message)
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
        enabled
    }
    fn notice(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context(&names::NOTICE, title, message)
    }
    fn warning(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context(&names::WARNING, title, message)
    }
    fn err(&self, title: Option<&Value>, message: &str) -> BindingResult<()> {
        self.call_context(&names::ERR, title, message)
    }
}

pub(super) fn insync_from_ruby(ruby: &Ruby, value: RValue) -> Insync {
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
