//! Owned [`Value`]s made into Ruby values.

use magnus::rb_sys::AsRawValue;
use magnus::{
    prelude::*, value::ReprValue, RArray, RClass, RHash, RString, Ruby, Symbol, Value as RValue,
};
use pwshlib_core::{Map, Value};

use crate::error::BindingResult;

use super::*;

/// Converts back to Ruby: Sensitive and Timestamp become the Puppet classes
/// again (Puppet must be loaded for those).
pub fn to_ruby(ruby: &Ruby, value: &Value) -> BindingResult<RValue> {
    Ok(match value {
        Value::Nil => ruby.qnil().as_value(),
        Value::Bool(true) => ruby.qtrue().as_value(),
        Value::Bool(false) => ruby.qfalse().as_value(),
        Value::Int(i) => ruby.integer_from_i64(*i).as_value(),
        Value::BigInt(text) => ruby.str_new(text).funcall(id(ruby, &names::TO_I), ())?,
        Value::Float(f) => ruby.float_from_f64(*f).as_value(),
        Value::Str(s) => ruby.str_new(s).as_value(),
        // A static symbol: interned without making a Ruby String first, as
        // `to_symbol` does (keys are attribute names, a bounded set).
        Value::Symbol(s) => symbol(ruby, s),
        Value::Array(items) => {
            let array = ruby.ary_new_capa(items.len());
            for item in items {
                array.push(to_ruby(ruby, item)?)?;
            }
            array.as_value()
        }
        Value::Hash(map) => map_to_ruby(ruby, map)?.as_value(),
        Value::Sensitive(inner) => {
            let class = puppet_class(ruby, SENSITIVE_CLASS)?;
            class.new_instance((to_ruby(ruby, inner)?,))?
        }
        Value::Timestamp(t) => {
            let class = puppet_class(ruby, TIMESTAMP_CLASS)?;
            let nanos: RValue = ruby
                .str_new(&t.nanos.to_string())
                .funcall(id(ruby, &names::TO_I), ())?;
            class.new_instance((nanos,))?
        }
    })
}

pub fn map_to_ruby(ruby: &Ruby, map: &Map) -> BindingResult<RHash> {
    let hash = ruby.hash_new();
    for (k, v) in map.iter() {
        let key = key_to_ruby(ruby, k)?;
        let value = to_ruby(ruby, v)?;
        if Symbol::from_value(key).is_some() || RString::from_value(key).is_some() {
            // SAFETY: `hash` is a new, unfrozen Hash no Ruby code has seen,
            // and a Symbol or String key is hashed and compared in C
            // (`rb_any_hash`, `rb_str_hash_cmp`, no method call), so
            // `rb_hash_aset` runs no Ruby code and raises nothing but
            // NoMemoryError, which `hash_new` itself could raise too: no
            // `rb_protect` (a setjmp) per entry, for the 14 or so entries
            // of each Get.
            unsafe { rb_sys::rb_hash_aset(hash.as_raw(), key.as_raw(), value.as_raw()) };
        } else {
            hash.aset(key, value)?;
        }
    }
    Ok(hash)
}

/// A hash key. A String key is stored as Ruby's deduplicated frozen copy
/// of it whatever is passed (`Hash#[]=` freezes String keys), so it is
/// made that way to begin with: found in Ruby's table of such strings
/// rather than made and dropped on every conversion (DSC results have
/// String keys).
fn key_to_ruby(ruby: &Ruby, key: &Value) -> BindingResult<RValue> {
    match key {
        Value::Str(text) => match interned_string(text) {
            Some(interned) => Ok(interned),
            None => to_ruby(ruby, key),
        },
        _ => to_ruby(ruby, key),
    }
}

pub fn maps_to_ruby(ruby: &Ruby, maps: &[Map]) -> BindingResult<RArray> {
    let array = ruby.ary_new_capa(maps.len());
    for map in maps {
        array.push(map_to_ruby(ruby, map)?)?;
    }
    Ok(array)
}

/// Resolves `A::B::C` from Object.
pub fn puppet_class(ruby: &Ruby, path: &str) -> BindingResult<RClass> {
    Ok(ruby
        .class_object()
        .funcall(id(ruby, &names::CONST_GET), (path,))?)
}
