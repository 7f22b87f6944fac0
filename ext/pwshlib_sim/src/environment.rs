//! The process environment the simulator restores before every call, as
//! host.ps1 restores its own (`PwshlibHost.Requests.cs`,
//! `RestoreEnvironment` and `KeepEnvironment`).

use std::ffi::{OsStr, OsString};
use std::sync::{Mutex, OnceLock};

/// The process environment when the host started, and what DSC calls
/// (requests with a prelude) left in it since: nothing a plain call sets
/// (`$env:X = …`, a request's `env`) reaches a later call, while what a
/// DSC call sets in the process lasts, as in the one process where the
/// LCM runs a configuration's resources. `SystemRoot` is never removed
/// (PowerShell dies without it when script block logging is on);
/// `PSModulePath` and a request's own `env` names are never kept.
pub struct EnvironmentSnapshot;

type Pairs = Vec<(OsString, OsString)>;

fn snapshot() -> &'static Mutex<Pairs> {
    static SNAPSHOT: OnceLock<Mutex<Pairs>> = OnceLock::new();
    SNAPSHOT.get_or_init(|| Mutex::new(std::env::vars_os().collect()))
}

fn locked() -> std::sync::MutexGuard<'static, Pairs> {
    snapshot()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EnvironmentSnapshot {
    /// Takes the start-up snapshot now, before anything changes the
    /// environment.
    pub fn take() {
        let _ = snapshot();
    }

    /// The environment back to the snapshot. The sim is single-threaded
    /// apart from the parent watchdog, which reads no environment.
    pub fn restore() {
        let kept = locked();
        for (name, _) in std::env::vars_os() {
            let known = kept.iter().any(|(known, _)| same_env_name(known, &name));
            if !known && !same_env_name(&name, OsStr::new("SystemRoot")) {
                std::env::remove_var(&name);
            }
        }
        for (name, value) in kept.iter() {
            if std::env::var_os(name).as_ref() != Some(value) {
                std::env::set_var(name, value);
            }
        }
    }

    /// After a DSC call: the environment as it left it becomes the
    /// snapshot, but for `PSModulePath`, `SystemRoot` and `request_names`.
    pub fn keep<'a>(request_names: impl Iterator<Item = &'a str>) {
        let request_names: Vec<&str> = request_names.collect();
        let not_kept = |name: &OsStr| {
            ["PSModulePath", "SystemRoot"]
                .iter()
                .chain(request_names.iter())
                .any(|fixed| same_env_name(name, OsStr::new(fixed)))
        };
        let mut kept = locked();
        let mut next: Pairs = kept
            .iter()
            .filter(|(name, _)| not_kept(name))
            .cloned()
            .collect();
        next.extend(std::env::vars_os().filter(|(name, _)| !not_kept(name)));
        *kept = next;
    }
}

/// Environment names compare as the platform compares them.
fn same_env_name(a: &OsStr, b: &OsStr) -> bool {
    if cfg!(windows) {
        a.to_string_lossy()
            .eq_ignore_ascii_case(&b.to_string_lossy())
    } else {
        a == b
    }
}
