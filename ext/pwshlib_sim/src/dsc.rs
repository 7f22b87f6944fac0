//! STUB until the DSC engine lands: nothing is a DSC invocation yet, so every
//! request falls through to echo mode.

use crate::outcome::Outcome;

/// Handles `code` if it is a DSC invocation script; `None` otherwise.
pub fn handle(_code: &str, _timeout_ms: u64) -> Option<Outcome> {
    None
}
