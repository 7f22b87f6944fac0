//! Ruby values ⇄ owned [`pwshlib_core::Value`]s. Everything that crosses into
//! Rust is copied out here, so no Ruby object is ever held in Rust heap data.

use std::cell::RefCell;

use magnus::rb_sys::{AsRawValue, FromRawValue};

use magnus::{
    prelude::*, r_hash::ForEach, value::Id, value::LazyId, value::Opaque, value::OpaqueId,
    value::ReprValue, Float, Integer, IntoValue, RArray, RClass, RHash, RString, Ruby, Symbol,
    Value as RValue,
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

thread_local! {
    static FROZEN_LITERALS: RefCell<FxHashMap<&'static str, Opaque<RString>>> = RefCell::default();
}

/// A frozen Ruby String of a literal the binding passes on every call (a
/// DSC method name, the prelude's name), made once: a frozen string
/// literal is what pwshlib 2.x passed too. Each is registered with the GC,
/// which keeps it for the life of the process; there are a handful.
pub fn frozen_literal(ruby: &Ruby, text: &'static str) -> RString {
    FROZEN_LITERALS.with(|literals| {
        if let Some(found) = literals.borrow().get(text) {
            return ruby.get_inner(*found);
        }
        let string = ruby.str_new(text);
        string.freeze();
        ruby.gc_register_mark_object(string);
        literals.borrow_mut().insert(text, Opaque::from(string));
        string
    })
}

/// `name` as a Ruby Symbol ([`interned`]).
pub fn symbol(ruby: &Ruby, name: &str) -> RValue {
    interned(ruby, name).into_value_with(ruby)
}

/// The method names and Symbols the binding passes on every entry call,
/// each interned once for the process: a `LazyId` is a `OnceLock`, read
/// without the hashing and comparing of [`interned`]'s table, which was
/// the largest self cost of the binding per in-sync resource (perf).
pub mod names {
    use magnus::value::LazyId;

    pub static INVOKE_GET_METHOD: LazyId = LazyId::new("invoke_get_method");
    pub static INVOKE_DSC_RESOURCE: LazyId = LazyId::new("invoke_dsc_resource");
    pub static PS_MANAGER: LazyId = LazyId::new("ps_manager");
    pub static EXECUTE_WITH_PRELUDE: LazyId = LazyId::new("execute_with_prelude");
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

/// Converts a hash; nested values are attributed to `parent.key` (or `key`
/// at the top level, which is how resource hashes name their attributes).
pub fn map_from_ruby(ruby: &Ruby, hash: RHash, parent: &str) -> BindingResult<Map> {
    map_from_ruby_at(ruby, hash, &Place::root(parent))
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
            Err(_) => Value::BigInt(integer_text(integer)?),
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
    let class_name = unsafe_free_class_name(value);
    match class_name.as_str() {
        SENSITIVE_CLASS => {
            let inner: RValue = value.funcall("unwrap", ())?;
            Ok(Value::Sensitive(Box::new(from_ruby_at(
                ruby,
                inner,
                &place.within_sensitive(),
            )?)))
        }
        TIMESTAMP_CLASS => {
            let nanos: Integer = value.funcall("nsecs", ())?;
            let nanos: i128 =
                integer_text(nanos)?
                    .parse()
                    .map_err(|_| pwshlib_core::Error::InvalidValue {
                        attribute: place.path(),
                        message: "the Timestamp is out of range".into(),
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

/// Whether `from_ruby(value)` would give exactly `expected`, found without
/// converting (no allocation): the binding hands a value it has just made
/// in Ruby back to itself this way, across an overridable method that did
/// not change it. False whenever that cannot be told cheaply (Sensitive,
/// Timestamp, a big integer, a String in another encoding): the caller then
/// converts, so a false answer is always safe.
pub fn ruby_matches(ruby: &Ruby, value: RValue, expected: &Value) -> bool {
    match expected {
        Value::Nil => value.is_nil(),
        Value::Bool(true) => value.as_raw() == ruby.qtrue().as_raw(),
        Value::Bool(false) => value.as_raw() == ruby.qfalse().as_raw(),
        // SAFETY: the borrowed str is compared and dropped before any other
        // Ruby call, so the String cannot change or be collected meanwhile.
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
fn text_is(ruby: &Ruby, text: RString, expected: &str) -> bool {
    let encoding = text.enc_get();
    let read_as_is = encoding == ruby.utf8_encindex()
        || (expected.is_ascii()
            && (encoding == ruby.usascii_encindex() || encoding == ruby.ascii8bit_encindex()));
    // SAFETY: the borrowed bytes are compared and dropped before any other
    // Ruby call, so the String cannot change or be collected meanwhile.
    read_as_is && unsafe { text.as_slice() } == expected.as_bytes()
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
pub fn with_key_name<R>(key: RValue, f: impl FnOnce(&str) -> R) -> Option<R> {
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
fn symbol_name_string(symbol: Symbol) -> Option<RString> {
    // SAFETY: `rb_sym2str` returns the Symbol's name String, live as long
    // as the Symbol, which the caller holds.
    RString::from_value(unsafe { RValue::from_raw(rb_sys::rb_sym2str(symbol.as_raw())) })
}

fn integer_text(integer: Integer) -> BindingResult<String> {
    let text: RString = integer.funcall("to_s", ())?;
    Ok(text.to_string()?)
}

fn unsafe_free_class_name(value: RValue) -> String {
    // SAFETY: `classname` borrows the class name string only until it is
    // copied into an owned String on the same line.
    unsafe { value.classname().into_owned() }
}

/// Converts back to Ruby: Sensitive and Timestamp become the Puppet classes
/// again (Puppet must be loaded for those).
pub fn to_ruby(ruby: &Ruby, value: &Value) -> BindingResult<RValue> {
    Ok(match value {
        Value::Nil => ruby.qnil().as_value(),
        Value::Bool(true) => ruby.qtrue().as_value(),
        Value::Bool(false) => ruby.qfalse().as_value(),
        Value::Int(i) => ruby.integer_from_i64(*i).as_value(),
        Value::BigInt(text) => ruby.str_new(text).funcall("to_i", ())?,
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
            let nanos: RValue = ruby.str_new(&t.nanos.to_string()).funcall("to_i", ())?;
            class.new_instance((nanos,))?
        }
    })
}

pub fn map_to_ruby(ruby: &Ruby, map: &Map) -> BindingResult<RHash> {
    map_to_ruby_with(ruby, map, &mut Donors::default())
}

/// Where [`map_to_ruby_with`] finds a String value already made in Ruby,
/// to pass on as that very String rather than as a new one.
///
/// A `Donors` holds Ruby values, so it lives on the machine stack only
/// (a local, never boxed): the collector scans the stack and pins what it
/// finds there.
#[derive(Default)]
pub struct Donors {
    /// A hash whose equal String under the same key is passed on.
    same_key: Option<RHash>,
    /// A name_hash whose equal `name` String is passed on.
    name_from: Option<RHash>,
    /// A DSC answer's Strings, by the property they came under.
    dsc_answer: Option<DscAnswerStrings>,
}

impl Donors {
    /// Equal Strings of `hash` (if any), under the same key.
    fn same_key(hash: Option<RHash>) -> Self {
        Donors {
            same_key: hash,
            ..Donors::default()
        }
    }

    /// What pwshlib 2.x's `invoke_get_method` returned: the Strings of
    /// `answer`, a DSC answer as `invoke_dsc_resource` gives it (String
    /// keys, PowerShell's casing), each under the attribute its property
    /// becomes (`Ensure` under `dsc_ensure`), and `name` from `name_hash`.
    pub fn get_result(answer: Option<RHash>, name_hash: Option<RHash>) -> BindingResult<Self> {
        Ok(Donors {
            same_key: None,
            name_from: name_hash,
            dsc_answer: answer.map(DscAnswerStrings::of).transpose()?,
        })
    }

    fn string_for(
        &mut self,
        ruby: &Ruby,
        key: &Value,
        key_value: RValue,
        text: &str,
    ) -> Option<RValue> {
        let name = key.key_name();
        if let (Some(answer), Some(name)) = (self.dsc_answer.as_mut(), name) {
            if let Some(found) = answer.take(ruby, name, text) {
                return Some(found.as_value());
            }
        }
        let donor = match self.name_from {
            Some(name_hash) if name == Some("name") => name_hash,
            _ => self.same_key?,
        };
        // A lookup by a Symbol or String key hashes and compares in C.
        donor.get(key_value).filter(|given| {
            RString::from_value(*given).is_some_and(|string| text_is(ruby, string, text))
        })
    }
}

/// How many String entries of a DSC answer are offered; an answer has one
/// per property of its resource, and a property beyond these is made anew.
const DSC_ANSWER_STRINGS: usize = 48;

/// The String-valued entries of a DSC answer, each offered once.
struct DscAnswerStrings {
    entries: [Option<(RString, RString)>; DSC_ANSWER_STRINGS],
}

impl DscAnswerStrings {
    fn of(answer: RHash) -> BindingResult<Self> {
        let mut entries = [None; DSC_ANSWER_STRINGS];
        let mut slots = entries.iter_mut();
        answer.foreach(|key: RValue, value: RValue| {
            if let (Some(key), Some(value)) = (RString::from_value(key), RString::from_value(value))
            {
                match slots.next() {
                    Some(slot) => *slot = Some((key, value)),
                    None => return Ok(ForEach::Stop),
                }
            }
            Ok(ForEach::Continue)
        })?;
        Ok(DscAnswerStrings { entries })
    }

    /// The String of the property `attribute` comes from (`dsc_` and the
    /// property's name in any case, as the Get result's munging names it),
    /// when its text is `text`; taken, so that no two attributes share one.
    fn take(&mut self, ruby: &Ruby, attribute: &str, text: &str) -> Option<RString> {
        let property = attribute.strip_prefix("dsc_")?;
        let slot = self.entries.iter_mut().find(|slot| {
            slot.is_some_and(|(key, value)| {
                // SAFETY: the key's bytes are compared and dropped before
                // any other Ruby call, so it cannot change or be collected
                // meanwhile.
                unsafe { key.as_slice() }.eq_ignore_ascii_case(property.as_bytes())
                    && text_is(ruby, value, text)
            })
        })?;
        slot.take().map(|(_, value)| value)
    }
}

/// Converts `map`, passing on the equal Strings `donors` hold.
pub fn map_to_ruby_with(ruby: &Ruby, map: &Map, donors: &mut Donors) -> BindingResult<RHash> {
    let hash = ruby.hash_new();
    for (k, v) in map.iter() {
        let key = key_to_ruby(ruby, k)?;
        let given = match v {
            Value::Str(text) => donors.string_for(ruby, k, key, text),
            _ => None,
        };
        let value = match given {
            Some(given) => given,
            None => to_ruby(ruby, v)?,
        };
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

/// [`map_to_ruby`], with each String value that `donor` (when there is
/// one) holds, equal, under the same key passed as that very String rather
/// than as a new one.
pub fn map_to_ruby_reusing(ruby: &Ruby, map: &Map, donor: Option<RHash>) -> BindingResult<RHash> {
    map_to_ruby_with(ruby, map, &mut Donors::same_key(donor))
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

/// Resolves `A::B::C` from Object.
pub fn puppet_class(ruby: &Ruby, path: &str) -> BindingResult<RClass> {
    Ok(ruby.class_object().funcall("const_get", (path,))?)
}

/// Reads `context.type.definition` into a [`TypeDef`].
pub fn type_definition_from_context(ruby: &Ruby, context: RValue) -> BindingResult<TypeDef> {
    let type_definition: RValue = context.funcall("type", ())?;
    let definition: RValue = type_definition.funcall("definition", ())?;
    let definition = from_ruby(ruby, definition, "definition")?;
    Ok(TypeDef::from_definition(&definition)?)
}
