//! The process's memo of accounts whose logon failed in this run: one
//! memo for every provider instance (one per type), since a credential is
//! not tied to a type. `run::observe_run` empties it when a new run begins.

use std::sync::{Mutex, MutexGuard, PoisonError};

use pwshlib_core::run::RunMarker;

/// The (user, password) pairs that failed to log on in this run. A
/// credential is not tied to a type, and there is one provider instance per
/// type, so the memo is shared by all of them; it belongs to the run whose
/// marker it carries.
#[derive(Default)]
pub(super) struct LogonMemo {
    pub(super) run_marker: Option<RunMarker>,
    pub(super) failures: Vec<(String, String)>,
}

static LOGON_FAILURES: Mutex<LogonMemo> = Mutex::new(LogonMemo {
    run_marker: None,
    failures: Vec::new(),
});

pub(super) fn logon_memo() -> MutexGuard<'static, LogonMemo> {
    LOGON_FAILURES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
