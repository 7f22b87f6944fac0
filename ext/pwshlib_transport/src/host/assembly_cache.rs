//! Where host.ps1 keeps its compiled assembly between starts (its
//! `-AssemblyCache`): compiling the host's C# takes seconds, loading it a
//! tenth of a second (docs/performance.md, "The compiled host").
//!
//! Whoever can write that directory can put code in every host this user
//! starts, so a directory is passed only when nobody else can write it:
//! PWSHLIB_HOST_CACHE when set (empty: no cache), else a per-user cache
//! directory (`$XDG_CACHE_HOME/pwshlib`, `~/.cache/pwshlib`; on Windows
//! `%LOCALAPPDATA%\pwshlib`, which only the user, SYSTEM and the
//! administrators may write). On Unix the directory, made 0700 when
//! missing, must belong to this user and be writable by nobody else, and
//! its parent must be this user's or root's and not writable by others
//! (unless sticky, as /tmp is). Anything else: no cache, the host compiles
//! in memory as it always did.

use std::path::{Path, PathBuf};

/// The environment variable that names the cache directory ("" for none).
pub const ASSEMBLY_CACHE_ENV: &str = "PWSHLIB_HOST_CACHE";

/// The directory to pass as `-AssemblyCache`, made if missing, or `None`
/// when there is none this user alone can write.
pub fn assembly_cache_dir() -> Option<String> {
    let dir = match std::env::var_os(ASSEMBLY_CACHE_ENV) {
        Some(dir) if dir.is_empty() => return None,
        Some(dir) => PathBuf::from(dir),
        None => default_dir()?,
    };
    if !dir.is_absolute() {
        return None;
    }
    make_private(&dir).ok()?;
    trusted(&dir).then(|| dir.to_string_lossy().into_owned())
}

#[cfg(unix)]
fn default_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(base) if !base.is_empty() => PathBuf::from(base),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    Some(base.join("pwshlib"))
}

#[cfg(windows)]
fn default_dir() -> Option<PathBuf> {
    Some(PathBuf::from(std::env::var_os("LOCALAPPDATA")?).join("pwshlib"))
}

#[cfg(unix)]
fn make_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(windows)]
fn make_private(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Nobody but this user (or root, for the parent) can write `dir` or
/// replace it: see the module's comment.
#[cfg(unix)]
fn trusted(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let ours = unsafe { libc::geteuid() };
    let Ok(own) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    if !own.is_dir() || own.uid() != ours || own.mode() & 0o022 != 0 {
        return false;
    }
    let Some(parent) = dir.parent() else {
        return true;
    };
    let Ok(parent) = std::fs::metadata(parent) else {
        return false;
    };
    let sticky = parent.mode() & 0o1000 != 0;
    (parent.uid() == ours || parent.uid() == 0) && (parent.mode() & 0o022 == 0 || sticky)
}

/// A real directory, not a link to somewhere else; who may write it is
/// left to where it is (the user's profile, or an operator's choice).
#[cfg(windows)]
fn trusted(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pwshlib-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn a_private_directory_is_made_and_trusted() {
        let base = scratch("made");
        let dir = base.join("cache");
        make_private(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert!(trusted(&dir));
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_is_not_trusted() {
        let base = scratch("open");
        let dir = base.join("cache");
        make_private(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!trusted(&dir));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            !trusted(&dir),
            "a parent others can write lets them replace it"
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_link_is_not_trusted() {
        let base = scratch("link");
        let target = base.join("elsewhere");
        make_private(&target).unwrap();
        let link = base.join("cache");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(!trusted(&link));
        std::fs::remove_dir_all(base).unwrap();
    }
}
