//! Every read or write of Puppet's and the Resource API's non-public state
//! (instance variables, undocumented methods), in one place. Each one is
//! either a shortcut with a public fallback (a shape that is gone costs a
//! method call, never a wrong answer) or a correction the public API cannot
//! make; `spec/unit/private_state_spec.rb` fails on every root where a shape
//! relied on here is gone.
//!
//! Checked on: Puppet 7.23.0 with Resource API 1.8.16 (Debian 12), Puppet
//! 8.10.0 with Resource API 1.9.0 (Debian 13), OpenVox 9.0.0-rc1 with
//! Resource API 2.0.1 (Debian 14, forky).

use magnus::{prelude::*, RArray, RClass, RHash, RModule, Ruby, Value as RValue};

use crate::convert::{id, names, static_symbol, symbol};

/// What `Puppet.lookup(:loaders) { nil }` answers, read where Puppet keeps
/// it. Puppet's bindings are a thread-local stack of immutable levels, each
/// holding the merged bindings of those below (`Puppet::Context::Stack`,
/// `@context` → `@stack` → `value` → `@bindings`), so the top level's hash
/// answers as `lookup` does, with one Ruby call (the thread-local's `value`)
/// instead of the five of `Puppet.lookup`. None when the layout is not that,
/// or the binding is still a Proc (which `lookup` calls and memoizes): the
/// caller asks `Puppet.lookup` then.
pub(super) fn loaders_binding(ruby: &Ruby, puppet: RValue) -> Option<RValue> {
    let puppet = RModule::from_value(puppet)?;
    let context: RValue = puppet.ivar_get(id(ruby, &names::IVAR_CONTEXT)).ok()?;
    let stack: RValue = magnus::RObject::from_value(context)?
        .ivar_get(id(ruby, &names::IVAR_STACK))
        .ok()?;
    let top: RValue = stack.funcall(id(ruby, &names::VALUE), ()).ok()?;
    let bindings: RHash = magnus::RObject::from_value(top)?
        .ivar_get(id(ruby, &names::IVAR_BINDINGS))
        .ok()?;
    match bindings.get(static_symbol(ruby, &names::LOADERS)) {
        None => Some(ruby.qnil().as_value()),
        Some(value) if value.is_kind_of(ruby.class_proc()) => None,
        Some(value) => Some(value),
    }
}

/// `Puppet::Util::Log.destinations`: its `@destinations`, read without a
/// method call on every entry call; the method when that is not a Hash.
pub(super) fn log_destinations(ruby: &Ruby, log: RValue) -> Option<RHash> {
    let direct = RClass::from_value(log)
        .and_then(|log| {
            log.ivar_get::<_, RValue>(id(ruby, &names::IVAR_DESTINATIONS))
                .ok()
        })
        .and_then(RHash::from_value);
    match direct {
        Some(destinations) => Some(destinations),
        None => RHash::from_value(
            log.funcall::<_, _, RValue>(id(ruby, &names::DESTINATIONS), ())
                .ok()?,
        ),
    }
}

/// What `Puppet::Util::Log.level` answers (`@levels[@loglevel]`), read from
/// the two instance variables behind it, without a method call on every
/// entry call. None when they are not an Array and an index into it: the
/// caller calls `level` then.
pub(super) fn log_level_read_directly(ruby: &Ruby, log: RValue) -> Option<RValue> {
    let log = RClass::from_value(log)?;
    let levels: RValue = log.ivar_get(id(ruby, &names::IVAR_LEVELS)).ok()?;
    let index: RValue = log.ivar_get(id(ruby, &names::IVAR_LOGLEVEL)).ok()?;
    let index = magnus::Integer::from_value(index)?.to_i64().ok()?;
    let level: RValue = RArray::from_value(levels)?
        .entry(isize::try_from(index).ok()?)
        .ok()?;
    magnus::Symbol::from_value(level).map(|_| level)
}

/// Empties the Resource API's cache of `get` results for the type
/// `type_name`, where there is one (Resource API 2.0 and later: the type
/// class's `rsapi_provider_get_cache`, a `ProviderGetCache`).
///
/// Resource API 2.0 keeps that cache on the type class and never empties
/// it: "a new cache per resource provider on each Puppet run" holds only
/// while each run makes its type classes anew. In a process that applies
/// catalogs one after another (a daemonized agent, or a second
/// `Puppet::Configurer` run) the second run takes the first run's current
/// state from it without calling `get`, and drift is never corrected. The
/// provider already knows when a run begins (`run::observe_run`): a new
/// run, or the first call of a provider that has cached nothing yet, empties
/// the type's cache too. Resource API 1.x has no such method: nothing to do.
pub(super) fn forget_resource_api_get_cache(
    ruby: &Ruby,
    type_name: &str,
) -> Result<(), magnus::Error> {
    let Some(type_class) = puppet_type(ruby, type_name) else {
        return Ok(());
    };
    let method = static_symbol(ruby, &names::RSAPI_PROVIDER_GET_CACHE);
    if !type_class.funcall::<_, _, bool>(id(ruby, &names::RESPOND_TO_P), (method,))? {
        return Ok(());
    }
    let cache: RValue = type_class.funcall(id(ruby, &names::RSAPI_PROVIDER_GET_CACHE), ())?;
    let _: RValue = cache.funcall(id(ruby, &names::CLEAR), ())?;
    Ok(())
}

/// `Puppet::Type.type(name)`, the type class, if Puppet has it loaded.
fn puppet_type(ruby: &Ruby, type_name: &str) -> Option<RValue> {
    let puppet_type: RValue = ruby
        .class_object()
        .funcall(id(ruby, &names::CONST_GET), ("Puppet::Type",))
        .ok()?;
    let found: RValue = puppet_type
        .funcall(id(ruby, &names::TYPE), (symbol(ruby, type_name),))
        .ok()?;
    (!found.is_nil()).then_some(found)
}
