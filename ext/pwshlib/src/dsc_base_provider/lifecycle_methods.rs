//! The session's steps: the native methods the Ruby spine
//! (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb) calls, each
//! one way, from Ruby into Rust. Each converts its arguments, runs one step
//! of `pwshlib_core::lifecycle` over the provider's state, and converts the
//! answer; none calls a provider method. They are private, and named with a
//! leading underscore: the overridable methods are the spine's.

use magnus::{
    method, prelude::*, typed_data::Obj, Error, IntoValue, RArray, RClass, RHash, Ruby,
    Value as RValue,
};
use pwshlib_core::cache::Identity;
use pwshlib_core::lifecycle::{self, GetStep, Insync, InsyncStep, Known, Unconvertible};
use pwshlib_core::{Map, TypeDef, Value};

use super::session::{insync_from_ruby, Session};
use super::{call_steps, change_steps, DscBaseProvider};
use crate::convert::{
    from_ruby, hash_arg, hash_entries, hash_entry, map_to_ruby, names, static_symbol, to_ruby,
};
use crate::error::{BindingError, BindingResult};

/// Defines the steps, private, with their arities.
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_private_method("_canonical_as_given", method!(canonical_as_given, 2))?;
    class.define_private_method("_system_wanted", method!(system_wanted, 2))?;
    class.define_private_method("_canonicalize_one", method!(canonicalize_one, 3))?;
    class.define_private_method("_canonicalized_all", method!(canonicalized_all, 2))?;
    class.define_private_method("_known_system", method!(known_system, 2))?;
    class.define_private_method("_note_get_failed", method!(note_get_failed, 2))?;
    class.define_private_method("_get_begins", method!(get_begins, 1))?;
    class.define_private_method("_get_known", method!(get_known, 2))?;
    class.define_private_method("_get_query", method!(get_query, 2))?;
    class.define_private_method("_get_props", method!(get_props, 2))?;
    class.define_private_method("_get_result", method!(get_result, 3))?;
    class.define_private_method("_set_begins", method!(change_steps::set_begins, 1))?;
    class.define_private_method("_set_plan", method!(change_steps::set_plan, 4))?;
    class.define_private_method("_set_failure", method!(change_steps::set_failure, 2))?;
    class.define_private_method("_log_change", method!(change_steps::log_change, 4))?;
    class.define_private_method("_delete_should", method!(change_steps::delete_should, 2))?;
    class.define_private_method("_set_call", method!(change_steps::set_call, 3))?;
    class.define_private_method("_set_result", method!(change_steps::set_result, 4))?;
    class.define_private_method("_test_call", method!(change_steps::test_call, 3))?;
    class.define_private_method("_test_result", method!(change_steps::test_result, 3))?;
    class.define_private_method("_insync", method!(insync::<false>, 6))?;
    class.define_private_method("_insync_tested", method!(insync::<true>, 6))?;
    class.define_private_method(
        "_load_path_wanted?",
        method!(call_steps::load_path_wanted, 0),
    )?;
    class.define_private_method("_use_load_path", method!(call_steps::use_load_path, 1))?;
    class.define_private_method("_dsc_call", method!(call_steps::dsc_call, 4))?;
    class.define_private_method("_dsc_outcome", method!(call_steps::dsc_outcome, 3))?;
    class.define_private_method("_dsc_failed", method!(call_steps::dsc_failed, 3))?;
    class.define_private_method("_collision_wait", method!(call_steps::collision_wait, 3))?;
    class.define_private_method("_retrying", method!(call_steps::retrying, 3))?;
    class.define_private_method("_show_script", method!(call_steps::show_script, 3))?;
    Ok(())
}

pub(super) fn nil(ruby: &Ruby) -> RValue {
    ruby.qnil().as_value()
}

pub(super) fn insync_to_ruby(ruby: &Ruby, answer: &Insync) -> BindingResult<RValue> {
    Ok(match answer {
        Insync::UseDefault => nil(ruby),
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

/// A resource's hash (the desired state). A value that cannot go to
/// PowerShell fails this resource only: the error names the resource in
/// front of the attribute path, and Puppet reports it against the resource
/// and goes on with the others.
pub(super) fn resource_arg(
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
        .and_then(|hash| hash.get(static_symbol(ruby, &names::NAME)))
        .and_then(|name| from_ruby(ruby, name, "name").ok())
        .unwrap_or(Value::Nil)
}

pub(super) fn option_value_to_ruby(ruby: &Ruby, value: Option<Value>) -> BindingResult<RValue> {
    match value {
        Some(value) => to_ruby(ruby, &value),
        None => Ok(nil(ruby)),
    }
}

pub(super) fn option_hash_arg(
    ruby: &Ruby,
    value: RValue,
    what: &str,
) -> BindingResult<Option<Map>> {
    if value.is_nil() {
        Ok(None)
    } else {
        hash_arg(ruby, value, what).map(Some)
    }
}

/// A DSC call's answer handed back by the spine: nil (the call failed) or
/// its data.
pub(super) fn option_result_arg(ruby: &Ruby, value: RValue) -> BindingResult<Option<Value>> {
    if value.is_nil() {
        Ok(None)
    } else {
        from_ruby(ruby, value, "result").map(Some)
    }
}

/// The identity of a resource hash from its namevars alone, None when it
/// is not a hash or one does not convert.
fn identity_in(ruby: &Ruby, typedef: &TypeDef, resource: RValue) -> Option<Identity> {
    let hash = RHash::from_value(resource)?;
    let mut readable = true;
    let identity = Identity::from_lookup(typedef.identity_namevars(), |name| {
        let found = hash_entry(ruby, hash, name);
        readable &= found.is_ok();
        found.ok().flatten().map(std::borrow::Cow::Owned)
    });
    readable.then_some(identity)
}

/// `_canonical_as_given(context, resources)`: whether every resource of a
/// `canonicalize` call comes back as given (each canonicalized earlier in
/// this run), read from their namevars alone. A run's work on a type may
/// begin here: the run is observed first.
fn canonical_as_given(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
) -> BindingResult<bool> {
    let provider = Session::at_run_entry(ruby, rb_self, context)?;
    let given = lifecycle::canonical_as_given(&provider, resources.len(), |index, name| {
        let hash = resources
            .entry::<RValue>(index as isize)
            .ok()
            .and_then(RHash::from_value)
            .ok_or(Unconvertible)?;
        hash_entry(ruby, hash, name).map_err(|_| Unconvertible)
    })?;
    Ok(given.iter().all(|known| *known))
}

/// `_system_wanted(context, resource)`: whether `canonicalize` reads the
/// system for this resource (not canonicalized earlier, not absent).
fn system_wanted(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
) -> BindingResult<bool> {
    let provider = Session::new(ruby, rb_self, context)?;
    let Some(identity) = identity_in(ruby, &provider.typedef, resource) else {
        return Ok(false);
    };
    let ensure = RHash::from_value(resource)
        .and_then(|hash| hash_entry(ruby, hash, "dsc_ensure").ok())
        .flatten();
    // A resource holding a value that cannot go to PowerShell is not read:
    // `_canonicalize_one` returns it as given (and says why at debug).
    Ok(
        lifecycle::system_wanted(&provider, &identity, ensure.as_ref())
            && hash_arg(ruby, resource, "resource").is_ok(),
    )
}

/// `_canonicalize_one(context, resource, system)`: the resource as
/// canonicalize returns it; the very hash given when nothing changes. A
/// resource holding a value that cannot go to PowerShell comes back as
/// given (canonicalize runs while Puppet builds the catalog, where an
/// exception would abort every resource): its insync?/set raise the error.
fn canonicalize_one(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
    system: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let map = match hash_arg(ruby, resource, "resource") {
        Ok(map) => map,
        Err(BindingError::Core(error)) => {
            provider.debug_message(&format!(
                "{}: not canonicalized: {error}",
                resource_label(&provider.typedef, &title_in(ruby, resource))
            ))?;
            return Ok(resource);
        }
        Err(ruby_error) => return Err(ruby_error),
    };
    let system = option_hash_arg(ruby, system, "system").ok().flatten();
    let (canonical, changed) = lifecycle::canonicalize_one(&provider, map, system)?;
    if changed {
        Ok(map_to_ruby(ruby, &canonical)?.as_value())
    } else {
        Ok(resource)
    }
}

/// `_canonicalized_all(context, resources)`: the debug line after a
/// `canonicalize` call, converted only when debug messages are kept.
fn canonicalized_all(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    if !provider.keeps_debug() {
        return Ok(());
    }
    let mut maps = Vec::with_capacity(resources.len());
    for resource in resources.into_iter() {
        if let Ok(map) = hash_arg(ruby, resource, "resource") {
            maps.push(map);
        }
    }
    lifecycle::canonicalized_all(&provider, &maps)
}

/// `_known_system(context, resource)`: the run's Get result of the
/// resource, `false` when its Get failed, nil when none was made.
fn known_system(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let Some(identity) = identity_in(ruby, &provider.typedef, resource) else {
        return Ok(nil(ruby));
    };
    Ok(match lifecycle::known_system(&provider, &identity) {
        Known::Read(map) => map_to_ruby(ruby, &map)?.as_value(),
        Known::Failed => false.into_value_with(ruby),
        Known::Unknown => nil(ruby),
    })
}

/// `_note_get_failed(context, resource)`.
fn note_get_failed(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    let resource = hash_arg(ruby, resource, "resource")?;
    lifecycle::note_get_failed(&provider, &resource);
    Ok(())
}

/// `_get_begins(context)`: a run's work on a type may begin here.
fn get_begins(ruby: &Ruby, rb_self: Obj<DscBaseProvider>, context: RValue) -> BindingResult<()> {
    let provider = Session::at_run_entry(ruby, rb_self, context)?;
    lifecycle::get_begins(&provider)
}

/// `_get_known(context, name)`: the answer for a name known without a
/// call (the run's Get result, or the title alone after a failed Get);
/// nil when `invoke_get_method` is due with `_get_query`'s hash.
fn get_known(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    get_step_part::<false>(ruby, rb_self, context, name)
}

/// `_get_query(context, name)`: the hash `invoke_get_method` is called
/// with (nil when the answer is known).
fn get_query(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    get_step_part::<true>(ruby, rb_self, context, name)
}

fn get_step_part<const QUERY: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    match (lifecycle::get_step(&provider, &name), QUERY) {
        (GetStep::Answer(map), false) | (GetStep::Query(map), true) => {
            Ok(map_to_ruby(ruby, &map)?.as_value())
        }
        _ => Ok(nil(ruby)),
    }
}

/// `_get_props(context, name_hash)`: what a Get sends.
fn get_props(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
) -> BindingResult<RHash> {
    let provider = Session::new(ruby, rb_self, context)?;
    let given = RHash::from_value(name_hash);
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let props = lifecycle::get_props(&provider, &name_hash)?;
    // The props are entries of name_hash, unchanged: each passed as the
    // value name_hash holds (as pwshlib 2.x selected them), not a copy.
    let out = ruby.hash_new();
    for (key, value) in props.iter() {
        let key = to_ruby(ruby, key)?;
        let value = match given.and_then(|hash| hash.get(key)) {
            Some(held) => held,
            None => to_ruby(ruby, value)?,
        };
        out.aset(key, value)?;
    }
    Ok(out)
}

/// `_get_result(context, name_hash, data)`: the Puppet hash of a Get's
/// answer, nil when there is none.
fn get_result(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
    data: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let data = option_result_arg(ruby, data)?;
    match lifecycle::get_result(&provider, &name_hash, data)? {
        Some(map) => Ok(map_to_ruby(ruby, &map)?.as_value()),
        None => Ok(nil(ruby)),
    }
}

/// `_insync(context, name, property, is_hash, should_hash, nil)`: the
/// answer, or `:test` when the resource's Test is due first; then
/// `_insync_tested(…, test)` with `invoke_test_method`'s answer (`TESTED`).
// The Resource API's five arguments of `insync?`, and the Test's answer.
#[allow(clippy::too_many_arguments)]
fn insync<const TESTED: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    property_name: RValue,
    is_hash: RValue,
    should_hash: RValue,
    test: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let property = match from_ruby(ruby, property_name, "property_name")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    if !TESTED {
        // The Resource API asks once per property with the same two whole
        // hashes: the core answers from the few entries it reads when it can.
        let in_brief = lifecycle::insync_in_brief(
            &provider,
            &name,
            &property,
            |wanted| hash_entries(ruby, RHash::from_value(should_hash)?, wanted),
            |wanted| {
                if is_hash.is_nil() {
                    return Some(None);
                }
                hash_entries(ruby, RHash::from_value(is_hash)?, wanted).map(Some)
            },
        )?;
        if let Some(answer) = in_brief {
            return insync_to_ruby(ruby, &answer);
        }
    }
    let is_hash = option_hash_arg(ruby, is_hash, "is_hash")?;
    let should_hash = resource_arg(ruby, &provider.typedef, &name, should_hash, "should_hash")?;
    let test = TESTED.then(|| insync_from_ruby(ruby, test));
    let step = lifecycle::insync_step(
        &provider,
        &name,
        &property,
        is_hash.as_ref(),
        &should_hash,
        test.as_ref(),
    )?;
    match step {
        InsyncStep::Answer(answer) => insync_to_ruby(ruby, &answer),
        InsyncStep::Test => Ok(static_symbol(ruby, &names::TEST)),
    }
}
