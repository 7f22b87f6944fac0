//! The provider as the core lifecycle sees it: [`RubyProvider`] implements
//! `pwshlib_core::lifecycle::ProviderCallbacks` with state access and Ruby
//! dispatch (`funcall` on self) for every overridable method and every
//! `context` call, so that subclasses, prepended modules and RSpec stubs
//! are honoured.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use magnus::{
    prelude::*, rb_sys::AsRawValue, typed_data::Obj, value::LazyId, RArray, RClass, RHash, RModule,
    RString, Ruby, Value as RValue,
};
use pwshlib_core::lifecycle::{ExecuteOutput, Insync, LifecycleState, ProviderCallbacks};
use pwshlib_core::script::{DscMethod, Script};
use pwshlib_core::templates;
use pwshlib_core::vendored;
use pwshlib_core::{Map, TypeDef, Value};
use rustc_hash::FxHashSet;

use super::run::{
    cached_constant, logon_memo, observe_run, PUPPET_CONTEXT_CLASS, PUPPET_LOG_CLASS,
};
use super::{private_state, DscBaseProvider};
use crate::convert::{
    from_ruby, frozen_literal, hash_arg, id, interned, interned_string, lossy_string,
    map_from_ruby, map_to_ruby, names, static_symbol, symbol, to_ruby,
    type_definition_from_context,
};
use crate::dsc_script::DscScript;
use crate::error::{BindingError, BindingResult};
use crate::handover::{map_to_ruby_reusing, EntryValues};

/// The provider seen from the core lifecycle: state access plus Ruby
/// dispatch for every overridable method and every `context` call.
pub(super) struct RubyProvider<'r> {
    ruby: &'r Ruby,
    provider: Obj<DscBaseProvider>,
    context: RValue,
    pub(super) typedef: Arc<TypeDef>,
    /// Whether `context.debug` keeps messages; asked once per entry call,
    /// when the first debug message is due.
    debug_enabled: Cell<Option<bool>>,
    /// The Ruby values of this entry call its callbacks may pass on as
    /// they are (`crate::handover`); on the machine stack with this struct.
    values: EntryValues,
}

impl<'r> RubyProvider<'r> {
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
        // A call nested in a running entry call of the same context (the
        // Get that canonicalize makes, through Ruby dispatch) knows the
        // answer already.
        let debug_enabled = provider.entry.borrow_mut().enter(context.as_raw());
        Ok(RubyProvider {
            ruby,
            provider,
            context,
            typedef,
            debug_enabled: Cell::new(debug_enabled),
            values: EntryValues::default(),
        })
    }

    /// `value` (an argument of the running entry call: a hash, or an array
    /// of hashes) is what later callbacks may pass on as it is.
    pub(super) fn set_received(&self, value: RValue) {
        self.values.set_received(value);
    }

    /// The hash the last `invoke_dsc_resource` of this entry call answered
    /// with, if it answered with one.
    pub(super) fn dsc_answer(&self) -> Option<RHash> {
        self.values.dsc_answer()
    }

    /// `map` for Ruby: the received hash it equals, else a new hash.
    fn ruby_hash_of(&self, map: &Map) -> BindingResult<RValue> {
        match self.values.received_equal_to(self.ruby, map) {
            Some(received) => Ok(received),
            None => Ok(map_to_ruby(self.ruby, map)?.as_value()),
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

    /// Through Ruby, so that an overridden or stubbed `load_path` decides
    /// where the vendored resources are found, as in pwshlib 2.x; read once
    /// per provider (per run), not per invocation.
    fn shared_load_path(&self) -> BindingResult<Arc<Vec<String>>> {
        let cached = self.provider.run.borrow().load_path();
        if let Some(cached) = cached {
            return Ok(cached);
        }
        let load_path: RArray = self.provider.funcall("load_path", ())?;
        let mut entries = Vec::with_capacity(load_path.len());
        for entry in load_path.into_iter() {
            let text: RString = entry.funcall("to_s", ())?;
            entries.push(text.to_string()?);
        }
        let entries = Arc::new(entries);
        self.provider
            .run
            .borrow_mut()
            .keep_load_path(entries.clone());
        Ok(entries)
    }

    /// Remembers `values`, just converted for Ruby (`Handover::hand_over`).
    pub(super) fn hand_over(&self, values: Vec<Value>) {
        self.provider.handover.hand_over(values);
    }

    /// A hash argument: the map lent by the caller when it comes back
    /// unchanged (no copy either way), else converted (`convert::hash_arg`).
    pub(super) fn hash_arg(&self, value: RValue, what: &str) -> BindingResult<Cow<'_, Map>> {
        if let Some(hash) = RHash::from_value(value) {
            if let Some(map) = self.provider.handover.lent_equal_to(self.ruby, hash) {
                return Ok(Cow::Borrowed(map));
            }
        }
        hash_arg(self.ruby, value, what).map(Cow::Owned)
    }

    fn call_context(&self, level: &str, title: Option<&Value>, message: &str) -> BindingResult<()> {
        match title {
            Some(title) => {
                let title = to_ruby(self.ruby, title)?;
                let _: RValue = self
                    .context
                    .funcall(interned(self.ruby, level), (title, message))?;
            }
            None => {
                let _: RValue = self
                    .context
                    .funcall(interned(self.ruby, level), (message,))?;
            }
        }
        Ok(())
    }
}

impl Drop for RubyProvider<'_> {
    fn drop(&mut self) {
        self.provider.entry.borrow_mut().leave();
    }
}

fn metaparams(ruby: &Ruby) -> BindingResult<FxHashSet<String>> {
    let puppet: RModule = ruby.class_object().const_get("Puppet")?;
    let type_class: RClass = puppet.const_get("Type")?;
    let names: RArray = type_class.funcall("metaparams", ())?;
    let mut set = FxHashSet::default();
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
    // The class in the object's header is PuppetContext itself only when
    // the context is a plain PuppetContext with no singleton class (no
    // stub, no method of its own): its `send_log` is then PuppetContext's,
    // found without a Method object. (A module prepended to PuppetContext
    // itself is not looked for.) Any other context is asked.
    if context.class().as_raw() != stock.as_raw() {
        let send_log: RValue = context
            .funcall("method", (symbol(ruby, "send_log"),))
            .ok()?;
        let owner: RValue = send_log.funcall("owner", ()).ok()?;
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

fn execute_output(ruby: &Ruby, result: RValue) -> BindingResult<ExecuteOutput> {
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
                None => v.funcall(interned(ruby, "to_s"), ())?,
            };
            Ok(Some(lossy_string(text)))
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
        let mut run = self.provider.run.borrow_mut();
        f(run.lifecycle_for(&self.typedef, || {
            self.provider.facts.borrow().collision_wait_seconds()
        }))
    }

    fn invoke_get_method(&self, name_hash: &Map) -> BindingResult<Option<Map>> {
        let arg = self.ruby_hash_of(name_hash)?;
        let result: RValue = self.provider.handover.lending(&[name_hash], || {
            self.provider.funcall(
                id(self.ruby, &names::INVOKE_GET_METHOD),
                (self.context, arg),
            )
        })?;
        let Some(hash) = RHash::from_value(result) else {
            return Ok(None);
        };
        match self.provider.handover.take_handed(self.ruby, result) {
            Some(Value::Hash(map)) => Ok(Some(map)),
            _ => Ok(Some(map_from_ruby(self.ruby, hash, "")?)),
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
        let name_hash_arg = self.ruby_hash_of(name_hash)?;
        // pwshlib 2.x selected the props out of name_hash: the same Strings.
        let props_arg = map_to_ruby_reusing(self.ruby, props, RHash::from_value(name_hash_arg))?;
        let method = frozen_literal(self.ruby, method.as_lowercase_str());
        let result: RValue = self.provider.handover.lending(&[name_hash, props], || {
            self.provider.funcall(
                id(self.ruby, &names::INVOKE_DSC_RESOURCE),
                (self.context, name_hash_arg, props_arg, method),
            )
        })?;
        if result.is_nil() {
            return Ok(None);
        }
        self.values.keep_dsc_answer(result);
        match self.provider.handover.take_handed(self.ruby, result) {
            Some(value) => Ok(Some(value)),
            None => Ok(Some(from_ruby(self.ruby, result, "result")?)),
        }
    }

    fn execute(&self, script: &str, timeout_ms: Option<u64>) -> BindingResult<ExecuteOutput> {
        let manager: RValue = self.provider.funcall("ps_manager", ())?;
        let result: RValue = manager.funcall("execute", (script, timeout_ms))?;
        execute_output(self.ruby, result)
    }

    /// This library's `Pwsh::Manager` takes the script as it is
    /// (`execute_dsc`): its lines, and its secrets as data for the host to
    /// bind, never a Ruby String. Any other manager gets the inline form
    /// (the secrets set by literals, as pwshlib 2.x sent them): a manager
    /// with `execute_with_prelude` only the lines of this call, any other
    /// (a pwshlib 2.x manager, a test double) the whole script through
    /// `execute`.
    fn execute_script(
        &self,
        script: &Script,
        timeout_ms: Option<u64>,
    ) -> BindingResult<ExecuteOutput> {
        let manager: RValue = self
            .provider
            .funcall(id(self.ruby, &names::PS_MANAGER), ())?;
        let result: RValue = if script.has_prelude()
            && manager.respond_to(id(self.ruby, &names::EXECUTE_DSC), false)?
        {
            let wrapped = self.ruby.obj_wrap(DscScript(script.clone()));
            manager.funcall(id(self.ruby, &names::EXECUTE_DSC), (wrapped, timeout_ms))?
        } else if script.has_prelude()
            && manager.respond_to(id(self.ruby, &names::EXECUTE_WITH_PRELUDE), false)?
        {
            manager.funcall(
                id(self.ruby, &names::EXECUTE_WITH_PRELUDE),
                (
                    frozen_literal(self.ruby, templates::PRELUDE_NAME),
                    script.inline_body(),
                    timeout_ms,
                ),
            )?
        } else {
            manager.funcall("execute", (script.text(), timeout_ms))?
        };
        execute_output(self.ruby, result)
    }

    /// The manager's endpoint (new for each host process), when it has one
    /// (a stand-in manager may not).
    fn host_session(&self) -> BindingResult<Option<String>> {
        let manager: RValue = self
            .provider
            .funcall(id(self.ruby, &names::PS_MANAGER), ())?;
        if !manager.respond_to("endpoint", false)? {
            return Ok(None);
        }
        let endpoint: Option<String> = manager.funcall("endpoint", ())?;
        Ok(endpoint)
    }

    fn load_path(&self) -> BindingResult<Vec<String>> {
        Ok(self.shared_load_path()?.as_ref().clone())
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
        let load_path = self.shared_load_path()?;
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

    fn first_in_run(&self, notice: &str) -> bool {
        let mut memo = logon_memo();
        let first = !memo.notices.iter().any(|seen| seen == notice);
        if first {
            memo.notices.push(notice.to_owned());
        }
        first
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
        error.to_string()
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
        self.provider
            .entry
            .borrow_mut()
            .remember_debug(self.context.as_raw(), enabled);
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
