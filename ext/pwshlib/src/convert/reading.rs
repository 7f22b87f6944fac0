//! Ruby values copied out into owned [`Value`]s: whole, or a hash's few
//! entries.

use magnus::rb_sys::{AsRawValue, FromRawValue};
use magnus::{
    r_hash::ForEach, value::ReprValue, Float, Integer, RArray, RHash, RString, Ruby, Symbol,
    Value as RValue,
};
use pwshlib_core::{Map, Timestamp, Value};

use crate::error::{BindingError, BindingResult};

use super::*;

/// Converts a Ruby value. `attribute` names where it came from, so that an
/// unsupported value yields an error that names the attribute.
pub fn from_ruby(ruby: &Ruby, value: RValue, attribute: &str) -> BindingResult<Value> {
    from_ruby_at(ruby, value, &Place::root(attribute))
}

/// Where a value being converted sits (`dsc_x.key.sub`), kept as borrowed
/// pieces and spelled out only for an error: a conversion that succeeds,
/// which is nearly every one, makes no path string per hash entry.
#[derive(Clone, Copy)]
struct Place<'a> {
    parent: Option<&'a Place<'a>>,
    step: Step<'a>,
}

#[derive(Clone, Copy)]
enum Step<'a> {
    /// The path the caller gave.
    Root(&'a str),
    /// A hash member, by its key's name.
    Member(&'a str),
    /// Into a Sensitive value: the keys beneath are not named.
    IntoSensitive,
}

impl<'a> Place<'a> {
    fn root(path: &'a str) -> Place<'a> {
        Place {
            parent: None,
            step: Step::Root(path),
        }
    }

    fn member(&'a self, name: &'a str) -> Place<'a> {
        Place {
            parent: Some(self),
            step: Step::Member(name),
        }
    }

    fn within_sensitive(&'a self) -> Place<'a> {
        Place {
            parent: Some(self),
            step: Step::IntoSensitive,
        }
    }

    fn path(&self) -> String {
        let above = self.parent.map(Place::path).unwrap_or_default();
        match self.step {
            Step::Root(path) => path.to_owned(),
            Step::Member(_) | Step::IntoSensitive if above.ends_with(INSIDE_SENSITIVE) => above,
            Step::Member(name) if above.is_empty() => name.to_owned(),
            Step::Member(name) => format!("{above}.{name}"),
            Step::IntoSensitive => format!("{above}{INSIDE_SENSITIVE}"),
        }
    }
}

fn from_ruby_at(ruby: &Ruby, value: RValue, place: &Place) -> BindingResult<Value> {
    if value.is_nil() {
        return Ok(Value::Nil);
    }
    // true and false are immediates: one comparison each, where asking for
    // the class walked its ancestors (`rb_obj_is_kind_of`) for every value.
    if value.as_raw() == ruby.qtrue().as_raw() {
        return Ok(Value::Bool(true));
    }
    if value.as_raw() == ruby.qfalse().as_raw() {
        return Ok(Value::Bool(false));
    }
    if let Some(text) = RString::from_value(value) {
        return Ok(Value::Str(lossy_string(text)));
    }
    if let Some(symbol) = Symbol::from_value(value) {
        if let Some(name) = symbol_name_string(symbol).and_then(ascii_text) {
            return Ok(Value::Symbol(name));
        }
        return Ok(Value::Symbol(symbol.name()?.into_owned()));
    }
    if let Some(integer) = Integer::from_value(value) {
        return Ok(match integer.to_i64() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(integer_text(ruby, integer)?),
        });
    }
    if let Some(float) = Float::from_value(value) {
        return Ok(Value::Float(float.to_f64()));
    }
    if let Some(array) = RArray::from_value(value) {
        let mut items = Vec::with_capacity(array.len());
        for item in array.into_iter() {
            items.push(from_ruby_at(ruby, item, place)?);
        }
        return Ok(Value::Array(items));
    }
    if let Some(hash) = RHash::from_value(value) {
        return Ok(Value::Hash(map_from_ruby_at(ruby, hash, place)?));
    }
    let class_name = class_name(value);
    match class_name.as_str() {
        SENSITIVE_CLASS => {
            let inner: RValue = value.funcall(id(ruby, &names::UNWRAP), ())?;
            Ok(Value::Sensitive(Box::new(from_ruby_at(
                ruby,
                inner,
                &place.within_sensitive(),
            )?)))
        }
        TIMESTAMP_CLASS => {
            let nanos: Integer = value.funcall(id(ruby, &names::NSECS), ())?;
            let nanos: i128 = integer_text(ruby, nanos)?.parse().map_err(|_| {
                pwshlib_core::Error::InvalidValue {
                    attribute: place.path(),
                    message: "the Timestamp is out of range".into(),
                }
            })?;
            Ok(Value::Timestamp(Timestamp::from_nanos(nanos)))
        }
        _ => Err(pwshlib_core::Error::InvalidValue {
            attribute: place.path(),
            message: format!("a value of class {class_name} cannot be passed to PowerShell"),
        }
        .into()),
    }
}

fn map_from_ruby_at(ruby: &Ruby, hash: RHash, place: &Place) -> BindingResult<Map> {
    let mut pairs = Vec::with_capacity(hash.len());
    let mut failure: Option<BindingError> = None;
    hash.foreach(|key: RValue, value: RValue| {
        let converted_key = match from_ruby_at(ruby, key, place) {
            Ok(k) => k,
            Err(e) => {
                failure = Some(e);
                return Ok(ForEach::Stop);
            }
        };
        let converted = match converted_key.key_name() {
            Some(name) => from_ruby_at(ruby, value, &place.member(name)),
            None => from_ruby_at(ruby, value, place),
        };
        match converted {
            Ok(v) => pairs.push((converted_key, v)),
            Err(e) => {
                failure = Some(e);
                return Ok(ForEach::Stop);
            }
        }
        Ok(ForEach::Continue)
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(Map(pairs)),
    }
}

/// A Ruby String as an owned Rust one: strings in any encoding arrive as
/// UTF-8; bytes that are not text in their own encoding are replaced rather
/// than rejected, as Ruby's `scrub` does. The one lossy conversion of the
/// binding (values, code, paths, host output).
pub fn lossy_string(text: RString) -> String {
    if let Some(ascii) = ascii_text(text) {
        return ascii;
    }
    match text.to_string() {
        Ok(s) => s,
        // SAFETY: the slice is copied into an owned String before any other
        // Ruby call can run, so the RString cannot be mutated or collected
        // while it is borrowed.
        Err(_) => unsafe { text.to_string_lossy().into_owned() },
    }
}

/// The text of a String that is ASCII in an ASCII-compatible encoding,
/// copied without a UTF-8 check: Ruby knows that of a String (its code
/// range, found once and kept with it), and most values and every
/// attribute name are such. None: any other String, converted as before.
fn ascii_text(text: RString) -> Option<String> {
    // SAFETY: `rb_enc_str_asciionly_p` only reads the String (and records
    // the code range it finds in the String's flags).
    let ascii_only = unsafe { rb_sys::rb_enc_str_asciionly_p(text.as_raw()) } != 0;
    if !ascii_only {
        return None;
    }
    // SAFETY: the bytes are copied before any other Ruby call; ASCII bytes
    // are UTF-8.
    Some(unsafe { String::from_utf8_unchecked(text.as_slice().to_vec()) })
}

/// `f` of the name of a hash key (a Symbol or a String), None for another
/// key. An ASCII name is lent from Ruby's own String, not copied.
fn with_key_name<R>(key: RValue, f: impl FnOnce(&str) -> R) -> Option<R> {
    let text = match Symbol::from_value(key) {
        Some(symbol) => symbol_name_string(symbol)?,
        None => RString::from_value(key)?,
    };
    // SAFETY: `rb_enc_str_asciionly_p` only reads the String.
    if unsafe { rb_sys::rb_enc_str_asciionly_p(text.as_raw()) } != 0 {
        // SAFETY: ASCII bytes are UTF-8; `f` is Rust code that makes no
        // Ruby call while it borrows them, so the String cannot change or
        // be collected meanwhile (the caller holds the key).
        let name = unsafe { std::str::from_utf8_unchecked(text.as_slice()) };
        return Some(f(name));
    }
    let name = match Symbol::from_value(key) {
        Some(symbol) => symbol.name().ok()?.into_owned(),
        None => text.to_string().ok()?,
    };
    Some(f(&name))
}

/// A Symbol's own frozen name String (`rb_sym2str`: no copy).
pub(crate) fn symbol_name_string(symbol: Symbol) -> Option<RString> {
    // SAFETY: `rb_sym2str` returns the Symbol's name String, live as long
    // as the Symbol, which the caller holds.
    RString::from_value(unsafe { RValue::from_raw(rb_sys::rb_sym2str(symbol.as_raw())) })
}

fn integer_text(ruby: &Ruby, integer: Integer) -> BindingResult<String> {
    let text: RString = integer.funcall(id(ruby, &names::TO_S), ())?;
    Ok(text.to_string()?)
}

/// The name of the class of a value that is none of the plain kinds (a
/// Sensitive, a Timestamp, or one to refuse): `Class#inspect`, its name, or
/// `#<Class:…>` for an anonymous one. Safe, unlike `classname`, which lends
/// the name's bytes.
fn class_name(value: RValue) -> String {
    value.class().inspect()
}

/// A hash argument (nil is an empty one), converted; `what` names it in
/// the error for anything else.
pub fn hash_arg(ruby: &Ruby, value: RValue, what: &str) -> BindingResult<Map> {
    match from_ruby(ruby, value, "")? {
        Value::Hash(map) => Ok(map),
        Value::Nil => Ok(Map::new()),
        other => Err(pwshlib_core::Error::InvalidValue {
            attribute: what.to_owned(),
            message: format!("expected a hash, got {other}"),
        }
        .into()),
    }
}

/// The value under `name` of a hash (a Symbol or a String key, as
/// `Map::get_named` finds either; a String key is looked up as Ruby's
/// shared frozen copy of the name: no new String per lookup), converted.
/// `Ok(None)`: no such entry.
pub fn hash_entry(ruby: &Ruby, hash: RHash, name: &str) -> BindingResult<Option<Value>> {
    let value = hash
        .get(symbol(ruby, name))
        .or_else(|| hash.get(interned_string(name)?));
    value.map(|value| from_ruby(ruby, value, name)).transpose()
}

/// The entries of a Ruby hash whose key (a Symbol or a String, as
/// `Map::get_named` finds either) is one of `wanted`, converted; the others
/// are passed over unconverted. None when a wanted entry does not convert.
///
/// A Symbol is unique to its name (`rb_intern` of a name that has a
/// dynamic Symbol pins that one), so a Symbol key is matched by comparing
/// it with the wanted names' Symbols, made once per call, without reading
/// its name: the Resource API's hashes hold a dozen Symbol keys each, and
/// it asks once per property. Only the bits are kept, to compare, never
/// used as objects.
pub fn hash_entries(ruby: &Ruby, hash: RHash, wanted: &[&str]) -> Option<Map> {
    let wanted_symbols: Vec<u64> = wanted
        .iter()
        .map(|name| symbol(ruby, name).as_raw())
        .collect();
    let mut entries = Map::new();
    let mut failed = false;
    hash.foreach(|key: RValue, value: RValue| {
        let found = if Symbol::from_value(key).is_some() {
            wanted_symbols
                .iter()
                .position(|raw| *raw == key.as_raw())
                .map(|index| (Value::Symbol(wanted[index].to_owned()), wanted[index]))
        } else {
            with_key_name(key, |name| wanted.iter().find(|w| **w == name).copied())
                .flatten()
                .and_then(|name| Some((from_ruby(ruby, key, "").ok()?, name)))
        };
        let Some((converted_key, name)) = found else {
            return Ok(ForEach::Continue);
        };
        if let Ok(converted) = from_ruby(ruby, value, name) {
            entries.0.push((converted_key, converted));
            Ok(ForEach::Continue)
        } else {
            failed = true;
            Ok(ForEach::Stop)
        }
    })
    .ok()?;
    (!failed).then_some(entries)
}
