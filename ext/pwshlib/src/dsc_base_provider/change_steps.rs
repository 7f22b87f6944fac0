//! The session's steps of a change: `set`'s plan and failure, the debug
//! line of `create`/`update`/`delete`, and the first and last steps of
//! `invoke_set_method` and `invoke_test_method` (`lifecycle_methods`
//! registers them).

use magnus::{
    method, prelude::*, typed_data::Obj, Error, RArray, RClass, RHash, RString, Ruby,
    Value as RValue,
};
use pwshlib_core::lifecycle;
use pwshlib_core::redact;
use pwshlib_core::Map;

use super::session::Session;
use super::step_args::{insync_to_ruby, option_hash_arg, option_result_arg, resource_arg};
use super::DscBaseProvider;
use crate::convert::{from_ruby, hash_arg, map_to_ruby, symbol};
use crate::error::BindingResult;

/// Defines the steps of `set` and of a Set or Test call, private, with
/// their arities.
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_private_method("_set_begins", method!(set_begins, 1))?;
    class.define_private_method("_set_plan", method!(set_plan, 4))?;
    class.define_private_method("_set_failure", method!(set_failure, 2))?;
    class.define_private_method("_log_change", method!(log_change, 4))?;
    class.define_private_method("_delete_should", method!(delete_should, 2))?;
    class.define_private_method("_set_call", method!(set_call, 3))?;
    class.define_private_method("_set_result", method!(set_result, 4))?;
    class.define_private_method("_test_call", method!(test_call, 3))?;
    class.define_private_method("_test_result", method!(test_result, 3))?;
    Ok(())
}

/// `_set_begins(context)`: a run's work on a type may begin here.
pub(super) fn set_begins(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
) -> BindingResult<()> {
    Session::at_run_entry(ruby, rb_self, context)?;
    Ok(())
}

/// `_set_plan(context, name, is, should)`: `[action, should, refusal]`: the
/// method (`:create`, `:update`, `:delete`), the desired state to pass
/// (`should`, or the title's hash when there is none), and the message
/// that fails the resource instead when its Get failed (nil otherwise).
pub(super) fn set_plan(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    is: RValue,
    should: RValue,
) -> BindingResult<RArray> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name_value = from_ruby(ruby, name, "name")?;
    let (should_map, should) = if should.is_nil() {
        let map = lifecycle::name_hash_of(&name_value);
        let hash = map_to_ruby(ruby, &map)?.as_value();
        (map, hash)
    } else {
        let map = resource_arg(ruby, &provider.typedef, &name_value, should, "should")?;
        (map, should)
    };
    let is = option_hash_arg(ruby, is, "is")?;
    let action = lifecycle::set_action(&provider.typedef, is.as_ref(), &should_map);
    let refusal = lifecycle::set_refused_after_failed_get(&provider, &name_value, &should_map)?;
    let plan = ruby.ary_new_capa(3);
    plan.push(symbol(ruby, action.method_name()))?;
    plan.push(should)?;
    plan.push(refusal)?;
    Ok(plan)
}

/// `_set_failure(name, should)`: the message that fails the resource after
/// its Set failed (reported already), taken; nil when it did not fail.
pub(super) fn set_failure(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    name: RValue,
    should: RValue,
) -> BindingResult<Option<&'static str>> {
    let name = from_ruby(ruby, name, "name")?;
    let should = from_ruby(ruby, should, "should")?;
    Ok(rb_self
        .run
        .borrow_mut()
        .with_lifecycle(|lifecycle| lifecycle::take_set_failure(lifecycle, &name, &should))
        .flatten())
}

/// `_log_change(context, verb, name, should)`: `Creating 'x' with {…}`
/// (`should` nil: the title alone), at debug.
pub(super) fn log_change(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    verb: RString,
    name: RValue,
    should: RValue,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    if !provider.keeps_debug() {
        return Ok(());
    }
    let verb = verb.to_string()?;
    let name_value = from_ruby(ruby, name, "name")?;
    let title = lifecycle::title_text(&name_value);
    let message = if should.is_nil() {
        format!("{verb} '{title}'")
    } else {
        let should = resource_arg(ruby, &provider.typedef, &name_value, should, "should")?;
        let shown = redact::shown_resource(&provider.typedef, &should);
        format!("{verb} '{title}' with {shown}")
    };
    provider.debug_message(&message)
}

/// `_delete_should(context, name)`: what `delete` sets.
pub(super) fn delete_should(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RHash> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    map_to_ruby(ruby, &lifecycle::delete_should(&provider, &name)?)
}

pub(super) fn pair_to_ruby(ruby: &Ruby, (first, second): (Map, Map)) -> BindingResult<RArray> {
    let pair = ruby.ary_new_capa(2);
    pair.push(map_to_ruby(ruby, &first)?)?;
    pair.push(map_to_ruby(ruby, &second)?)?;
    Ok(pair)
}

/// `_set_call(context, name, should)`: `[name_hash, props]` of the Set.
pub(super) fn set_call(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RArray> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let should = resource_arg(ruby, &provider.typedef, &name, should, "should")?;
    pair_to_ruby(ruby, lifecycle::set_call(&provider, &name, &should)?)
}

/// `_set_result(context, name, name_hash, data)`: true when the Set asked
/// for a reboot.
pub(super) fn set_result(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    name_hash: RValue,
    data: RValue,
) -> BindingResult<bool> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let data = option_result_arg(ruby, data)?;
    lifecycle::set_result(&provider, &name, &name_hash, data.as_ref())
}

/// `_test_call(context, name, should)`: `[name_hash, props]` of the Test.
pub(super) fn test_call(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RArray> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let should = hash_arg(ruby, should, "should")?;
    pair_to_ruby(ruby, lifecycle::test_call(&provider, &name, &should)?)
}

/// `_test_result(context, name_hash, data)`: `invoke_test_method`'s answer.
pub(super) fn test_result(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
    data: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let data = option_result_arg(ruby, data)?;
    insync_to_ruby(
        ruby,
        &lifecycle::test_result(&provider, &name_hash, data.as_ref()),
    )
}
