//! Ruby values ⇄ owned [`pwshlib_core::Value`]s. Everything that crosses into
//! Rust is copied out here, so no Ruby object is ever held in Rust heap data.
//! One job a file: this one names things in Ruby (method ids, Symbols,
//! interned Strings); `reading` copies Ruby values out, `making` makes them,
//! `typedef` reads `context.type`.

mod making;
mod reading;
mod typedef;

pub use making::{map_to_ruby, maps_to_ruby, to_ruby};
pub use reading::{from_ruby, hash_arg, hash_entries, hash_entry, lossy_string};
pub use typedef::type_definition_from_context;

use std::cell::RefCell;

use magnus::rb_sys::FromRawValue;
use magnus::{value::Id, value::LazyId, value::OpaqueId, IntoValue, Ruby, Value as RValue};
use rustc_hash::FxHashMap;

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
