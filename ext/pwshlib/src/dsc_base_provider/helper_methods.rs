//! The pwshlib 2.x helper methods: value comparison and munging, the test
//! result cache, the logon-failure memo, the DSC timeout and the collision
//! retry wait. Thin entries over `pwshlib_core`.

use magnus::{
    function, method, prelude::*, typed_data::Obj, Error, RArray, RClass, RHash, RString, Ruby,
    Value as RValue,
};
use pwshlib_core::{canonical, lifecycle, munge, Map, Value};

use super::logon_memo::logon_memo;
use super::session::Session;
use super::DscBaseProvider;
use crate::convert::{from_ruby, hash_arg, id, lossy_string, maps_to_ruby, names, to_ruby};
use crate::error::BindingResult;

/// Defines the 2.x helpers (names and arities as in pwshlib 2.x).
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_method("cached_test_results", method!(rb_cached_test_results, 0))?;
    class.define_method("fetch_cached_hashes", method!(rb_fetch_cached_hashes, 2))?;
    class.define_method(COMPARISONS[0].0, method!(rb_compare::<0>, 2))?;
    class.define_method(COMPARISONS[1].0, method!(rb_compare::<1>, 2))?;
    class.define_method(TRANSFORMS[0].0, method!(rb_transform::<0>, 1))?;
    class.define_method(TRANSFORMS[1].0, method!(rb_transform::<1>, 1))?;
    class.define_method(MUNGERS[0].0, method!(rb_munge_in_place::<0>, 1))?;
    class.define_method(MUNGERS[1].0, method!(rb_munge_in_place::<1>, 1))?;
    class.define_method(
        "stringify_nil_attributes",
        method!(rb_stringify_nil_attributes, 2),
    )?;
    class.define_method("logon_failed_already?", method!(rb_logon_failed_already, 1))?;
    class.define_singleton_method(
        "forget_logon_failures",
        function!(rb_forget_logon_failures, 0),
    )?;
    class.define_method("specify_dsc_timeout", method!(rb_specify_dsc_timeout, 1))?;
    class.define_private_method("_scrub_known_secrets", method!(rb_scrub_known_secrets, 2))?;
    class.define_method(
        "collision_retry_seconds",
        method!(rb_collision_retry_seconds, 0),
    )?;
    class.define_method(
        "collision_retry_seconds=",
        method!(rb_set_collision_retry_seconds, 1),
    )?;
    Ok(())
}

fn rb_cached_test_results(ruby: &Ruby, rb_self: Obj<DscBaseProvider>) -> BindingResult<RArray> {
    let entries: Vec<Map> = rb_self
        .run
        .borrow()
        .lifecycle()
        .map(|l| {
            l.test_results
                .values()
                .map(|(name, result)| {
                    let mut entry = name.clone();
                    entry.insert_symbol(
                        "in_desired_state",
                        result.map(Value::Bool).unwrap_or(Value::Nil),
                    );
                    entry
                })
                .collect()
        })
        .unwrap_or_default();
    maps_to_ruby(ruby, &entries)
}

/// 2.x `fetch_cached_hashes`: the cached hashes that agree with any of
/// `hashes` on every key they share.
fn rb_fetch_cached_hashes(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    cache: RArray,
    hashes: RValue,
) -> BindingResult<RArray> {
    let wanted: Vec<Map> = match from_ruby(ruby, hashes, "hashes")? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::Hash(m) => Some(m),
                _ => None,
            })
            .collect(),
        Value::Hash(m) => vec![m],
        _ => Vec::new(),
    };
    let found = ruby.ary_new();
    for item in cache.into_iter() {
        let Value::Hash(candidate) = from_ruby(ruby, item, "cache")? else {
            continue;
        };
        let matches = wanted.iter().any(|w| {
            w.iter().all(|(k, v)| match candidate.get(k) {
                Some(c) => c == v,
                None => true,
            })
        });
        if matches {
            found.push(item)?;
        }
    }
    Ok(found)
}

/// A 2.x comparison: its name, the core function, and the names of its two
/// arguments (for conversion errors).
type Comparison = (&'static str, fn(&Value, &Value) -> bool, [&'static str; 2]);

const COMPARISONS: [Comparison; 2] = [
    ("same?", canonical::same, ["value1", "value2"]),
    ("values_equal?", canonical::values_equal, ["is", "should"]),
];

/// `same?(a, b)` and `values_equal?(is, should)`: `COMPARISONS[INDEX]`.
fn rb_compare<const INDEX: usize>(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    a: RValue,
    b: RValue,
) -> BindingResult<bool> {
    let (_, compare, [a_name, b_name]) = COMPARISONS[INDEX];
    Ok(compare(
        &from_ruby(ruby, a, a_name)?,
        &from_ruby(ruby, b, b_name)?,
    ))
}

/// A 2.x function that returns a new value made from the one given.
type Transform = (&'static str, fn(&Value) -> Value);

const TRANSFORMS: [Transform; 2] = [
    ("recursively_downcase", canonical::recursively_downcase),
    ("recursively_sort", canonical::recursively_sort),
];

fn rb_transform<const INDEX: usize>(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    let (_, transform) = TRANSFORMS[INDEX];
    to_ruby(ruby, &transform(&from_ruby(ruby, value, "value")?))
}

/// A 2.x `!` function, which changes the Hash or Array given in place.
type Munger = (&'static str, fn(&mut Value));

const MUNGERS: [Munger; 2] = [
    ("downcase_hash_keys!", munge::downcase_hash_keys),
    ("munge_cim_instances!", munge::munge_cim_instances),
];

fn rb_munge_in_place<const INDEX: usize>(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    value: RValue,
) -> BindingResult<RValue> {
    let (_, munge_value) = MUNGERS[INDEX];
    let mut converted = from_ruby(ruby, value, "value")?;
    munge_value(&mut converted);
    replace_in_place(ruby, value, &converted)
}

/// Replaces the contents of a Ruby Hash or Array in place, for the `!`
/// helpers.
fn replace_in_place(ruby: &Ruby, target: RValue, value: &Value) -> BindingResult<RValue> {
    let fresh = to_ruby(ruby, value)?;
    if RHash::from_value(target).is_some() || RArray::from_value(target).is_some() {
        let _: RValue = target.funcall(id(ruby, &names::REPLACE), (fresh,))?;
        Ok(target)
    } else {
        Ok(fresh)
    }
}

fn rb_stringify_nil_attributes(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    data: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let mut map = hash_arg(ruby, data, "data")?;
    munge::stringify_nil_attributes(&provider.typedef, &mut map);
    replace_in_place(ruby, data, &Value::Hash(map))
}

fn rb_logon_failed_already(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    credential: RValue,
) -> BindingResult<bool> {
    let credential = from_ruby(ruby, credential, "credential")?;
    Ok(lifecycle::logon_key(&credential).is_some_and(|pair| logon_memo().failures.contains(&pair)))
}

/// `DscBaseProvider.forget_logon_failures`: starts a new run's memo (tests).
fn rb_forget_logon_failures() {
    let mut memo = logon_memo();
    memo.failures.clear();
    memo.notices.clear();
}

/// 2.x `specify_dsc_timeout(name_hash)`: the resource's `dsc_timeout`
/// (seconds) in milliseconds. Nothing reads a timeout kept in the state
/// (each invocation computes its own), so none is kept.
fn rb_specify_dsc_timeout(
    ruby: &Ruby,
    _rb_self: Obj<DscBaseProvider>,
    name_hash: RValue,
) -> BindingResult<Option<u64>> {
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    Ok(lifecycle::specify_dsc_timeout(&name_hash))
}

/// `_scrub_known_secrets(context, text)` (private): `text` with every
/// secret the provider knows in this run scrubbed, for the error that the
/// Ruby `retry_invoke_dsc_resource` reports (it comes from PowerShell, and
/// may quote a secret of any resource of the type).
fn rb_scrub_known_secrets(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    text: RString,
) -> BindingResult<RString> {
    let provider = Session::new(ruby, rb_self, context)?;
    let text = lossy_string(text);
    Ok(ruby.str_new(&lifecycle::scrub_with_known_secrets(&provider, &text)?))
}

fn rb_collision_retry_seconds(rb_self: Obj<DscBaseProvider>) -> f64 {
    rb_self.facts.borrow().collision_wait_seconds()
}

/// Sets the wait from Ruby; the running lifecycle uses it from now on.
fn rb_set_collision_retry_seconds(rb_self: Obj<DscBaseProvider>, seconds: f64) -> f64 {
    let mut facts = rb_self.facts.borrow_mut();
    facts.set_collision_wait_seconds(seconds);
    rb_self
        .run
        .borrow_mut()
        .apply_collision_wait(facts.collision_wait_seconds());
    seconds
}
