//! The process's memo of accounts whose logon failed in this run: one
//! memo for every provider instance (one per type), since a credential is
//! not tied to a type. `run::observe_run` empties it when a new run begins.

use std::sync::{Mutex, MutexGuard, PoisonError};

use pwshlib_core::run::RunMarker;

/// The (user, password) pairs that failed to log on in this run, and the
/// run-wide warnings given in it (`first_in_run`). A credential is not tied
/// to a type, nor is the host's account, and there is one provider instance
/// per type, so the memo is shared by all of them; it belongs to the run
/// whose marker it carries.
#[derive(Default)]
pub(super) struct LogonMemo {
    pub(super) run_marker: Option<RunMarker>,
    pub(super) failures: Vec<(String, String)>,
    pub(super) notices: Vec<String>,
}

static LOGON_FAILURES: Mutex<LogonMemo> = Mutex::new(LogonMemo {
    run_marker: None,
    failures: Vec::new(),
    notices: Vec::new(),
});

pub(super) fn logon_memo() -> MutexGuard<'static, LogonMemo> {
    LOGON_FAILURES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
