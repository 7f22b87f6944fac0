//! Whether a Ruby value converts to exactly a given [`Value`], told without
//! converting (no allocation): the check every mechanism of this module
//! makes before it passes a value on, so that a value Ruby code changed in
//! place, or made anew, is converted as usual. A false answer is always
//! safe (the caller converts); only a true one must be exact.

use magnus::{
    prelude::*, r_hash::ForEach, rb_sys::AsRawValue, Float, Integer, RArray, RHash, RString, Ruby,
    Symbol, Value as RValue,
};
use pwshlib_core::{Map, Value};

use crate::convert::symbol_name_string;

/// Whether `from_ruby(value)` would give exactly `expected`. False whenever
/// that cannot be told cheaply (Sensitive, Timestamp, a big integer, a
/// String in another encoding).
pub fn ruby_matches(ruby: &Ruby, value: RValue, expected: &Value) -> bool {
    match expected {
        Value::Nil => value.is_nil(),
        Value::Bool(true) => value.as_raw() == ruby.qtrue().as_raw(),
        Value::Bool(false) => value.as_raw() == ruby.qfalse().as_raw(),
        Value::Str(text) => {
            RString::from_value(value).is_some_and(|string| text_is(ruby, string, text))
        }
        // A Symbol is unique to its name: the same object, whether it was
        // interned here or made by Ruby.
        Value::Symbol(name) => {
            Symbol::from_value(value).is_some_and(|symbol| symbol_is_named(ruby, symbol, name))
        }
        Value::Int(number) => {
            Integer::from_value(value).is_some_and(|integer| integer.to_i64().ok() == Some(*number))
        }
        Value::Float(number) => Float::from_value(value)
            .is_some_and(|float| float.to_f64().to_bits() == number.to_bits()),
        Value::Array(items) => RArray::from_value(value).is_some_and(|array| {
            array.len() == items.len()
                && items.iter().enumerate().all(|(index, item)| {
                    match array.entry::<RValue>(index as isize) {
                        Ok(entry) => ruby_matches(ruby, entry, item),
                        Err(_) => false,
                    }
                })
        }),
        Value::Hash(map) => {
            RHash::from_value(value).is_some_and(|hash| ruby_matches_map(ruby, hash, map))
        }
        Value::BigInt(_) | Value::Sensitive(_) | Value::Timestamp(_) => false,
    }
}

/// [`ruby_matches`] for a hash: the same entries in the same order.
pub fn ruby_matches_map(ruby: &Ruby, hash: RHash, expected: &Map) -> bool {
    if hash.len() != expected.len() {
        return false;
    }
    let mut entries = expected.iter();
    let mut all_match = true;
    let walked = hash.foreach(|key: RValue, value: RValue| {
        all_match = entries
            .next()
            .is_some_and(|(k, v)| ruby_matches(ruby, key, k) && ruby_matches(ruby, value, v));
        Ok(if all_match {
            ForEach::Continue
        } else {
            ForEach::Stop
        })
    });
    walked.is_ok() && all_match
}

/// Whether `from_ruby(symbol)` is `Value::Symbol(name)`, read from Ruby's
/// own name String of the Symbol (`rb_sym2str`: no allocation, no lookup)
/// rather than by interning `name` to compare IDs (a Symbol is unique to
/// its name and encoding). The name converts as is when it is UTF-8, or
/// ASCII in an ASCII encoding; anything else answers false, which is safe.
fn symbol_is_named(ruby: &Ruby, symbol: Symbol, name: &str) -> bool {
    symbol_name_string(symbol).is_some_and(|text| text_is(ruby, text, name))
}

/// Whether a String converts to exactly `expected`, told from its bytes
/// and encoding without converting: the bytes are `expected`'s, and they
/// are read as they are (UTF-8, or ASCII in an ASCII encoding). Anything
/// else answers false, which is safe.
pub(super) fn text_is(ruby: &Ruby, text: RString, expected: &str) -> bool {
    let encoding = text.enc_get();
    let read_as_is = encoding == ruby.utf8_encindex()
        || (expected.is_ascii()
            && (encoding == ruby.usascii_encindex() || encoding == ruby.ascii8bit_encindex()));
    // SAFETY: the borrowed bytes are compared and dropped before any other
    // Ruby call, so the String cannot change or be collected meanwhile.
    read_as_is && unsafe { text.as_slice() } == expected.as_bytes()
}
