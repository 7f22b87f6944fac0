//! The process's memo of the DSC modules' manifests read in this run: one
//! for every provider instance (one per type), since several types come
//! from one module. `run::observe_run` empties it when a new run begins,
//! so a module upgraded between runs is read again.

use std::sync::{Mutex, PoisonError};

use pwshlib_core::call_data::DscCallData;
use pwshlib_core::edition::{self, HostChoice, ManifestMemo, Overrides};

static MANIFESTS: Mutex<Option<ManifestMemo>> = Mutex::new(None);

pub(super) fn forget_manifests() {
    if let Some(memo) = MANIFESTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
    {
        memo.clear();
    }
}

/// The PowerShell edition `call`'s module runs on (None: as every call
/// without one), from the agent's `PWSHLIB_EDITIONS` and the module's
/// manifest, read once a run.
///
/// # Errors
/// The message the call fails with: an unreadable manifest, a
/// `PWSHLIB_EDITIONS` that cannot be read.
pub(super) fn host_choice(call: &DscCallData) -> Result<Option<HostChoice>, String> {
    let overrides = Overrides::from_env()?;
    let declared = || {
        MANIFESTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(ManifestMemo::default)
            .declared_for(call)
    };
    edition::choose(&call.module.name, declared, &overrides, cfg!(windows))
}
