//! Ruby values ⇄ owned [`pwshlib_core::Value`]s. Everything that crosses into
//! Rust is copied out here, so no Ruby object is ever held in Rust heap data.

use std::cell::RefCell;

use magnus::rb_sys::{AsRawValue, FromRawValue};

use magnus::{
    prelude::*, r_hash::ForEach, value::Id, value::LazyId, value::OpaqueId, value::ReprValue,
    Float, Integer, IntoValue, RArray, RClass, RHash, RString, Ruby, Symbol, Value as RValue,
};
use pwshlib_core::{Map, Timestamp, TypeDef, Value};
use rustc_hash::FxHashMap;

use crate::error::{BindingError, BindingResult};

const SENSITIVE_CLASS: &str = "Puppet::Pops::Types::PSensitiveType::Sensitive";
const TIMESTAMP_CLASS: &str = "Puppet::Pops::Time::Timestamp";

/// Ends the attribute path of a value inside a Sensitive one: the keys
/// below it are secret, so the path names no more of them.
const INSIDE_SENSITIVE: &str = " (inside a Sensitive value)";

/// How many names [`interned`] remembers: attribute names and the method
/// names the binding calls are a bounded set; beyond this (Symbols as
/// values, say) names are interned each time, as Ruby would.
const INTERNED_NAMES_KEPT: usize = 4096;

thread_local! {
    static INTERNED_NAMES: RefCell<FxHashMap<String, OpaqueId>> = RefCell::default();
}

/// `name` as a Ruby ID (a Symbol key, a method to call). Ruby's own
/// interning hashes the name into its symbol table each time, which was a
/// tenth of the provider's cost per in-sync resource; a name seen before is
/// found here instead. An interned (static) Symbol is never collected, so
/// its ID stays valid for the life of the process.
pub fn interned(ruby: &Ruby, name: &str) -> OpaqueId {
    INTERNED_NAMES.with(|names| {
        if let Some(id) = names.borrow().get(name) {
            return *id;
        }
        let id = OpaqueId::from(ruby.intern(name));
        let mut names = names.borrow_mut();
        if names.len() < INTERNED_NAMES_KEPT {
            names.insert(name.to_owned(), id);
        }
        id
    })
}

/// `name` as a Ruby Symbol ([`interned`]).
pub fn symbol(ruby: &Ruby, name: &str) -> RValue {
    interned(ruby, name).into_value_with(ruby)
}

/// Every method name and Symbol the binding names in its code: the one way
/// to name one (`id(ruby, &names::X)`, `static_symbol(ruby, &names::X)`).
/// Each is interned once for the process: a `LazyId` is a `OnceLock`, read
/// without the hashing and comparing of [`interned`]'s table, which was the
/// largest self cost of the binding per in-sync resource (perf). Names that
/// come from data (attribute keys) go through [`symbol`].
pub mod names {
    use magnus::value::LazyId;

    pub static CLEAR: LazyId = LazyId::new("clear");
    pub static CONST_GET: LazyId = LazyId::new("const_get");
    pub static DEFINITION: LazyId = LazyId::new("definition");
    pub static DESTINATIONS: LazyId = LazyId::new("destinations");
    pub static LOAD_PATH: LazyId = LazyId::new("load_path");
    pub static LOOKUP: LazyId = LazyId::new("lookup");
    pub static METAPARAMS: LazyId = LazyId::new("metaparams");
    pub static METHOD: LazyId = LazyId::new("method");
    pub static NSECS: LazyId = LazyId::new("nsecs");
    pub static OWNER: LazyId = LazyId::new("owner");
    pub static REPLACE: LazyId = LazyId::new("replace");
    pub static RESPOND_TO_P: LazyId = LazyId::new("respond_to?");
    pub static RSAPI_PROVIDER_GET_CACHE: LazyId = LazyId::new("rsapi_provider_get_cache");
    pub static SEND_LOG: LazyId = LazyId::new("send_log");
    pub static TO_I: LazyId = LazyId::new("to_i");
    pub static TO_S: LazyId = LazyId::new("to_s");
    pub static TYPE: LazyId = LazyId::new("type");
    pub static UNWRAP: LazyId = LazyId::new("unwrap");
    pub static VENDORED_MODULES_PATH: LazyId = LazyId::new("vendored_modules_path");
    pub static NOTICE: LazyId = LazyId::new("notice");
    pub static WARNING: LazyId = LazyId::new("warning");
    pub static ERR: LazyId = LazyId::new("err");
    pub static NAME: LazyId = LazyId::new("name");
    pub static TEST: LazyId = LazyId::new("test");
    pub static STDOUT: LazyId = LazyId::new("stdout");
    pub static ERRORMESSAGE: LazyId = LazyId::new("errormessage");
    pub static NATIVE_STDOUT: LazyId = LazyId::new("native_stdout");
    pub static LEVEL: LazyId = LazyId::new("level");
    pub static DEBUG: LazyId = LazyId::new("debug");
    pub static LOADERS: LazyId = LazyId::new("loaders");
    pub static VALUE: LazyId = LazyId::new("value");
    pub static IVAR_CONTEXT: LazyId = LazyId::new("@context");
    pub static IVAR_STACK: LazyId = LazyId::new("@stack");
    pub static IVAR_BINDINGS: LazyId = LazyId::new("@bindings");
    pub static IVAR_LEVELS: LazyId = LazyId::new("@levels");
    pub static IVAR_DESTINATIONS: LazyId = LazyId::new("@destinations");
    pub static IVAR_LOGLEVEL: LazyId = LazyId::new("@loglevel");
}

/// A name of [`names`] as an ID (a method to call, an ivar).
pub fn id(ruby: &Ruby, name: &LazyId) -> Id {
    LazyId::get_inner_with(name, ruby)
}

/// A name of [`names`] as a Symbol (a hash key).
pub fn static_symbol(ruby: &Ruby, name: &LazyId) -> RValue {
    id(ruby, name).into_value_with(ruby)
}

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

/// Ruby's deduplicated frozen String of `text` (as a String hash key is
/// stored), found in Ruby's table of such strings, made only the first
/// time. None for a text too long for a C long.
pub fn interned_string(text: &str) -> Option<RValue> {
    let length = std::os::raw::c_long::try_from(text.len()).ok()?;
    // SAFETY: `rb_enc_interned_str` copies `length` bytes from the pointer,
    // which `text` keeps valid for the call, as UTF-8 (valid: it is a Rust
    // str). Like `rb_utf8_str_new` behind `Ruby::str_new`, it only
    // allocates; it returns a live String VALUE that Ruby's table keeps.
    Some(unsafe {
        RValue::from_raw(rb_sys::rb_enc_interned_str(
            text.as_ptr().cast(),
            length,
            rb_sys::rb_utf8_encoding(),
        ))
    })
}

pub fn maps_to_ruby(ruby: &Ruby, maps: &[Map]) -> BindingResult<RArray> {
    let array = ruby.ary_new_capa(maps.len());
    for map in maps {
        array.push(map_to_ruby(ruby, map)?)?;
    }
    Ok(array)
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

/// Resolves `A::B::C` from Object.
pub fn puppet_class(ruby: &Ruby, path: &str) -> BindingResult<RClass> {
    Ok(ruby
        .class_object()
        .funcall(id(ruby, &names::CONST_GET), (path,))?)
}

/// Reads `context.type.definition` into a [`TypeDef`].
pub fn type_definition_from_context(ruby: &Ruby, context: RValue) -> BindingResult<TypeDef> {
    let type_definition: RValue = context.funcall(id(ruby, &names::TYPE), ())?;
    let definition: RValue = type_definition.funcall(id(ruby, &names::DEFINITION), ())?;
    let definition = from_ruby(ruby, definition, "definition")?;
    Ok(TypeDef::from_definition(&definition)?)
}
