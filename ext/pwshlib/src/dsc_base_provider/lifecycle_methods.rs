//! The Resource API entry points (`canonicalize`, `get`, `set`, `insync?`,
//! `create`/`update`/`delete`) and the overridable invocation methods
//! (`invoke_get_method`, …, `invoke_dsc_resource`). The logic is in
//! `pwshlib_core::lifecycle`; these only convert values and reach the
//! overridable methods through Ruby dispatch (`funcall` on self).

use magnus::{
    block::Proc, method, prelude::*, typed_data::Obj, value::Opaque, Error, IntoValue, RArray,
    RClass, RHash, Ruby, TryConvert, Value as RValue,
};
use pwshlib_core::lifecycle::{self, Insync, ProviderCallbacks, SetAction, Unconvertible};
use pwshlib_core::redact;
use pwshlib_core::script::DscMethod;
use pwshlib_core::{Map, TypeDef, Value};

use super::ruby_provider::RubyProvider;
use super::DscBaseProvider;
use crate::convert::{from_ruby, hash_arg, hash_entries, hash_entry, map_to_ruby, symbol, to_ruby};
use crate::error::{self, BindingError, BindingResult};
use crate::handover::{map_to_ruby_reusing, ruby_matches_map, Donors};

/// Defines the entry points (Resource API and pwshlib 2.x names and
/// arities). `get`'s optional argument is handled in Ruby, which calls the
/// private `_get`.
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_method("canonicalize", method!(rb_canonicalize, 2))?;
    class.define_method("_get", method!(rb_get, 2))?;
    class.define_method("set", method!(rb_set, 2))?;
    class.define_method("insync?", method!(rb_insync, 5))?;
    class.define_method("create", method!(rb_create_or_update::<false>, 3))?;
    class.define_method("update", method!(rb_create_or_update::<true>, 3))?;
    class.define_method("delete", method!(rb_delete, 2))?;
    class.define_method("invoke_get_method", method!(rb_invoke_get::<false>, 2))?;
    class.define_method(
        "invoke_get_method_for_canonicalize",
        method!(rb_invoke_get::<true>, 2),
    )?;
    class.define_method(
        "invoke_set_method",
        method!(rb_invoke_set_or_test::<false>, 3),
    )?;
    class.define_method(
        "invoke_test_method",
        method!(rb_invoke_set_or_test::<true>, 3),
    )?;
    class.define_method("invoke_dsc_resource", method!(rb_invoke_dsc_resource, 4))?;
    Ok(())
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
        .and_then(|hash| hash.get(symbol(ruby, "name")))
        .and_then(|name| from_ruby(ruby, name, "name").ok())
        .unwrap_or(Value::Nil)
}

fn option_value_to_ruby(ruby: &Ruby, value: Option<Value>) -> BindingResult<RValue> {
    match value {
        Some(value) => to_ruby(ruby, &value),
        None => Ok(ruby.qnil().as_value()),
    }
}

fn rb_canonicalize(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
) -> BindingResult<RArray> {
    let provider = RubyProvider::at_run_entry(ruby, rb_self, context)?;
    provider.set_received(resources.as_value());
    // The resources are read from the array by index whenever needed, not
    // copied into a Vec: a Ruby value is only safe on the stack (or in an
    // object the collector marks), and the array holds them for us.
    let count = resources.len();
    let given = |index: usize| -> Result<RValue, Error> { resources.entry(index as isize) };
    // The Resource API canonicalizes each resource three times in a run: as
    // it is made, as the target state of the transaction, and once more the
    // Get result (its strict check). Which come back as given is the core's
    // decision, from their namevars alone: no conversion either way.
    let already_canonical = lifecycle::canonical_as_given(&provider, count, |index, name| {
        let hash = given(index)
            .ok()
            .and_then(RHash::from_value)
            .ok_or(Unconvertible)?;
        hash_entry(ruby, hash, name).map_err(|_| Unconvertible)
    })?;
    // Every resource comes back as given: the given array is the answer,
    // as a provider that changes nothing returns it (the Resource API asks
    // with a new one-resource array each time and reads its first entry).
    if already_canonical.iter().all(|known| *known) {
        return Ok(resources);
    }
    // Canonicalize runs while Puppet builds the catalog, where an exception
    // would abort every resource. A resource holding a value that cannot go
    // to PowerShell is returned as given; its insync?/set raise the error,
    // which fails that resource alone.
    let mut maps = Vec::with_capacity(count);
    let mut converted = vec![false; count];
    for index in 0..count {
        if already_canonical[index] {
            continue;
        }
        let resource = given(index)?;
        match hash_arg(ruby, resource, "resource") {
            Ok(map) => {
                maps.push(map);
                converted[index] = true;
            }
            Err(BindingError::Core(error)) => {
                provider.debug(&format!(
                    "{}: not canonicalized: {error}",
                    resource_label(&provider.typedef, &title_in(ruby, resource))
                ))?;
            }
            Err(ruby_error) => return Err(ruby_error),
        }
    }
    // Each converted resource's answer: None when it is canonical as given
    // (the manifest has the system's case), so the given hash is the
    // answer, as a provider that changes nothing returns it, and no copy is
    // made.
    let mut canonical = lifecycle::canonicalize(&provider, maps)?.into_iter();
    let mut answers: Vec<Option<Map>> = Vec::with_capacity(count);
    for (index, was_converted) in converted.iter().enumerate() {
        let next = if *was_converted {
            canonical.next()
        } else {
            None
        };
        let answer = match next {
            Some(map) => {
                let unchanged = RHash::from_value(given(index)?)
                    .is_some_and(|hash| ruby_matches_map(ruby, hash, &map));
                (!unchanged).then_some(map)
            }
            None => None,
        };
        answers.push(answer);
    }
    if answers.iter().all(Option::is_none) {
        return Ok(resources);
    }
    let out = ruby.ary_new_capa(count);
    for (index, answer) in answers.iter().enumerate() {
        match answer {
            Some(map) => out.push(map_to_ruby(ruby, map)?)?,
            None => out.push(given(index)?)?,
        }
    }
    Ok(out)
}

/// `_get(context, names)`: the Ruby `get(context, names = nil)` calls it.
fn rb_get(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    names: RValue,
) -> BindingResult<RArray> {
    let provider = RubyProvider::at_run_entry(ruby, rb_self, context)?;
    let queries = RArray::from_value(names);
    let names = if names.is_nil() {
        None
    } else {
        match from_ruby(ruby, names, "names")? {
            Value::Array(items) => Some(items),
            other => Some(vec![other]),
        }
    };
    let results = lifecycle::get(&provider, names)?;
    // One result per name, in order. A result's title and namevars equal to
    // those Puppet asked with (its name hash) are passed back as the very
    // Strings it gave, as pwshlib 2.x passed `name` back, rather than as new
    // ones: fewer objects that the run keeps (Puppet holds each result).
    let out = ruby.ary_new_capa(results.len());
    for (index, result) in results.iter().enumerate() {
        let query = queries
            .and_then(|queries| queries.entry::<RValue>(index as isize).ok())
            .and_then(RHash::from_value);
        out.push(map_to_ruby_reusing(ruby, result, query)?)?;
    }
    Ok(out)
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
    let is_hash = if is_hash.is_nil() {
        None
    } else {
        Some(hash_arg(ruby, is_hash, "is_hash")?)
    };
    let should_hash = resource_arg(ruby, &provider.typedef, &name, should_hash, "should_hash")?;
    let answer = lifecycle::insync(&provider, &name, &property, is_hash.as_ref(), &should_hash)?;
    insync_to_ruby(ruby, &answer)
}

/// `set(context, changes)`: each change runs inside
/// `context.creating/updating/deleting(name) { create/update/delete }`.
fn rb_set(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    changes: RHash,
) -> BindingResult<RValue> {
    let provider = RubyProvider::at_run_entry(ruby, rb_self, context)?;
    let mut pairs: Vec<(RValue, RValue)> = Vec::with_capacity(changes.len());
    changes.foreach(|name: RValue, change: RValue| {
        pairs.push((name, change));
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    for (name, change) in pairs {
        let change_hash = RHash::from_value(change);
        let field = |key: &str| -> Option<RValue> {
            change_hash
                .and_then(|h| h.get(symbol(ruby, key)))
                .filter(|v| !v.is_nil())
        };
        let should_rb = field("should");
        let is_rb = if let Some(is) = field("is") {
            Some(is)
        } else {
            // No current state given: ask get (through Ruby dispatch).
            let names = ruby.ary_new_capa(1);
            names.push(name)?;
            let found: RArray = rb_self.funcall("get", (context, names))?;
            found.into_iter().next()
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
        // The Get of this resource failed (and was reported): no blind Set.
        let get_failed = lifecycle::set_refused_after_failed_get(&provider, &name_value, &should)?;
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
            return Err(error::to_exception(
                ruby,
                BindingError::resource_failed(message.clone()),
            ));
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
    let to_err = |e: BindingError| error::to_exception(ruby, e);
    let name = from_ruby(ruby, name, "name").map_err(to_err)?;
    let should = from_ruby(ruby, should, "should").map_err(to_err)?;
    let failure = provider
        .run
        .borrow_mut()
        .with_lifecycle(|lifecycle| lifecycle::take_set_failure(lifecycle, &name, &should))
        .flatten();
    match failure {
        Some(message) => Err(error::to_exception(
            ruby,
            BindingError::resource_failed(message.to_owned()),
        )),
        None => Ok(()),
    }
}

/// `create(context, name, should)` and `update(…)` (`UPDATE`) differ only
/// in what they log: both Set `should`.
fn rb_create_or_update<const UPDATE: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    let verb = if UPDATE { "Updating" } else { "Creating" };
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

/// `invoke_get_method(context, name_hash)`, or with `FOR_CANONICALIZE`
/// `invoke_get_method_for_canonicalize(context, resource)`.
fn rb_invoke_get<const FOR_CANONICALIZE: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    query: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    provider.set_received(query);
    let result = if FOR_CANONICALIZE {
        let resource = provider.hash_arg(query, "resource")?;
        lifecycle::get_for_canonicalize(&provider, &resource)?
    } else {
        let name_hash = provider.hash_arg(query, "name_hash")?;
        lifecycle::invoke_get_method(&provider, &name_hash)?
    };
    let Some(result) = result else {
        return Ok(ruby.qnil().as_value());
    };
    // pwshlib 2.x returned the DSC answer's own hash, re-keyed, with
    // `name` from name_hash: the result holds those very Strings where it
    // holds their text unchanged. (A result found cached has no answer.)
    let mut donors = Donors::get_result(provider.dsc_answer(), RHash::from_value(query))?;
    let converted = donors.convert(ruby, &result)?.as_value();
    provider.hand_over(vec![Value::Hash(result)]);
    Ok(converted)
}

/// `invoke_set_method(context, name, should)`, or with `TEST`
/// `invoke_test_method(context, name, should)`.
fn rb_invoke_set_or_test<const TEST: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    should: RValue,
) -> BindingResult<RValue> {
    let provider = RubyProvider::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let should = hash_arg(ruby, should, "should")?;
    if TEST {
        let answer = lifecycle::invoke_test_method(&provider, &name, &should)?;
        return insync_to_ruby(ruby, &answer);
    }
    option_value_to_ruby(
        ruby,
        lifecycle::invoke_set_method(&provider, &name, &should)?,
    )
}

/// `get`, `Get`, `GET`, … (a String or a Symbol), as `DscMethod::parse` reads it.
fn dsc_method_arg(ruby: &Ruby, method: RValue) -> BindingResult<DscMethod> {
    let text = match from_ruby(ruby, method, "method")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    DscMethod::parse(&text).ok_or_else(|| {
        pwshlib_core::Error::InvalidValue {
            attribute: "method".into(),
            message: format!("'{text}' is not one of get, set, test"),
        }
        .into()
    })
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
    let name_hash = provider.hash_arg(name_hash, "name_hash")?;
    let props = provider.hash_arg(props, "props")?;
    let method = dsc_method_arg(ruby, method)?;
    let Some(result) = lifecycle::invoke_dsc_resource(&provider, &name_hash, &props, method)?
    else {
        return Ok(ruby.qnil().as_value());
    };
    let converted = to_ruby(ruby, &result)?;
    provider.hand_over(vec![result]);
    Ok(converted)
}
