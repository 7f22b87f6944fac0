//! The arguments and answers the session's steps share: a resource hash
//! (its errors naming the resource), nil, an optional hash or value, an
//! `insync?` answer.

use magnus::{prelude::*, IntoValue, RHash, Ruby, Value as RValue};
use pwshlib_core::lifecycle::{self, Insync};
use pwshlib_core::{Map, TypeDef, Value};

use crate::convert::{from_ruby, hash_arg, names, static_symbol, to_ruby};
use crate::error::{BindingError, BindingResult};

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
pub(super) fn resource_label(typedef: &TypeDef, title: &Value) -> String {
    let title = match lifecycle::title_of(title) {
        Some(Value::Str(text)) | Some(Value::Symbol(text)) => text,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    format!("{}[{title}]", typedef.name)
}

/// The title of a resource hash (its `name`), for messages.
pub(super) fn title_in(ruby: &Ruby, resource: RValue) -> Value {
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
