//! `Pwsh::Manager`'s arguments and answers as Ruby sees them: a call's
//! timeout, and the pwshlib 2.x result Hash of `execute`.

use magnus::{prelude::*, RHash, Ruby, Value};
use pwshlib_transport::protocol::{self, ExecuteResult};

use crate::error::BindingResult;

/// nil → default; Integer or Float milliseconds, truncated; negative → floor.
pub(crate) fn optional_timeout(value: Option<Value>) -> BindingResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_nil()) else {
        return Ok(None);
    };
    let millis = f64::try_convert(value)?;
    if !millis.is_finite() || millis < 0.0 {
        return Ok(Some(protocol::MIN_TIMEOUT_MS));
    }
    Ok(Some(whole_millis(millis)))
}

/// A finite, non-negative count of milliseconds without its fraction.
// Rust's float-to-integer `as` saturates (values beyond u64::MAX become
// u64::MAX) and drops the fraction, which is the rule here; the caller has
// ruled out NaN, infinities and negatives, so nothing is truncated or loses
// a sign in a way that matters.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn whole_millis(millis: f64) -> u64 {
    millis as u64
}

/// The pwshlib 2.x result shape, which other modules rely on (the
/// powershell module's exec provider calls `stderr.each`):
/// `exitcode` an Integer; `stdout` a String or nil; `stderr` an Array of
/// Strings, each with its line end (the host's `stderr_items` when it
/// sends them, else one per line), empty when there is none;
/// `native_stdout` a String or nil; `errormessage` present only when the
/// call failed.
pub(crate) fn result_to_ruby(ruby: &Ruby, result: &ExecuteResult) -> BindingResult<RHash> {
    let hash = ruby.hash_new();
    let optional = |text: &Option<String>| -> Value {
        match text {
            Some(text) => ruby.str_new(text).as_value(),
            None => ruby.qnil().as_value(),
        }
    };
    hash.aset(ruby.to_symbol("exitcode"), result.exitcode)?;
    hash.aset(ruby.to_symbol("stdout"), optional(&result.stdout))?;
    let stderr = ruby.ary_new();
    match &result.stderr_items {
        Some(items) => {
            for item in items {
                stderr.push(ruby.str_new(item))?;
            }
        }
        None => {
            for line in stderr_lines(&result.stderr) {
                stderr.push(ruby.str_new(line))?;
            }
        }
    }
    hash.aset(ruby.to_symbol("stderr"), stderr)?;
    if let Some(message) = &result.errormessage {
        hash.aset(ruby.to_symbol("errormessage"), ruby.str_new(message))?;
    }
    hash.aset(
        ruby.to_symbol("native_stdout"),
        optional(&result.native_stdout),
    )?;
    Ok(hash)
}

/// The host's stderr text as lines, each keeping its line end (a last line
/// without one stays as it is).
fn stderr_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}
