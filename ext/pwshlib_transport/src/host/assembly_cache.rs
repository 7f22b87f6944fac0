//! Where host.ps1 keeps its compiled assembly between starts (its
//! `-AssemblyCache`): compiling the host's C# takes seconds, loading it a
//! tenth of a second (docs/performance.md, "The compiled host").
//!
//! Whoever can write that directory can put code in every host this user
//! starts, so a directory is passed only when nobody else can write it
//! (docs/protocol.md, "The assembly cache's trust"):
//! PWSHLIB_HOST_CACHE when set (empty: no cache), else a per-user cache
//! directory (`$XDG_CACHE_HOME/pwshlib`, `~/.cache/pwshlib`; on Windows
//! `%LOCALAPPDATA%\pwshlib`, or `%ProgramData%\pwshlib` for an elevated
//! run that is not SYSTEM). On Unix the directory, made 0700 when
//! missing, must belong to this user and be writable by nobody else, and
//! its parent must be this user's or root's and not writable by others
//! (unless sticky, as /tmp is). On Windows it is made with a protected
//! DACL, and its owner and DACL, and its parent's, must let nobody but the
//! trusted write it or replace it (`cache_trust.rs`). Anything else: no
//! cache, the host compiles in memory as it always did.
//!
//! The manager also does the cache's hashing, so that the host's first
//! line runs as little PowerShell as it can (each statement runs cold in
//! a fresh pwsh, and .NET's first SHA-256 there takes some 20 ms):
//! [`host_source_key`] names the C# source host.ps1 compiles
//! (`-HostSourceKey`), and [`remove_unsound`] deletes, before the host
//! starts, each cached assembly of that key whose bytes do not hash to its
//! name or that an account other than the trusted owns or may write (one
//! planted, named after its own hash), and what the cache no longer needs.
//! host.ps1 writes a file under a temporary name and renames it into
//! place whole, and nothing writes it again, so what the manager checked
//! is what the host loads.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[cfg(windows)]
use super::cache_security;
#[cfg(windows)]
use super::cache_trust::{file_refusal, protected_sddl, refusal, trusted_writers, SYSTEM};

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
    let local = as_the_host_sees(&dir);
    make_private(&local).ok()?;
    trusted(&local).then(|| dir.to_string_lossy().into_owned())
}

/// The cache directory the host is given, as this process must name it
/// to reach the same directory (a 32-bit Ruby on 64-bit Windows).
pub fn as_the_host_sees(dir: &Path) -> PathBuf {
    #[cfg(windows)]
    return cache_security::as_the_host_sees(dir);
    #[cfg(not(windows))]
    dir.to_path_buf()
}

/// The key of the host's C# source: the SHA-256 of every `PwshlibHost*.cs`
/// in `script_dir` (host.ps1's own directory), in the byte order of their
/// names, each as its name, NUL, its length in decimal, NUL, its bytes;
/// the first 16 bytes in lowercase hex. host_compile.ps1 computes the
/// same (Get-PwshlibHostSourceKey) before it caches what it compiled, and
/// names its cached assemblies `PwshlibHost-<key>-<edition>-<version>-<runtime>-optimized-<SHA-256 of the file>.dll`
/// (docs/protocol.md; [`remove_unsound`] reads the hash after the last `-`).
/// `None` when a file cannot be read (the host then compiles in memory).
pub fn host_source_key(script_dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(script_dir)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("PwshlibHost") && name.ends_with(".cs"))
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    let mut hasher = Sha256::new();
    for name in &names {
        let bytes = std::fs::read(script_dir.join(name)).ok()?;
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(bytes.len().to_string().as_bytes());
        hasher.update([0]);
        hasher.update(&bytes);
    }
    Some(hex(&hasher.finalize()[..16]))
}

/// How old a temporary file (`tmp-*.dll`) is when no host can still be
/// writing it: a compile takes seconds, so one this old was left by a host
/// that was killed.
const STALE_TEMPORARY: Duration = Duration::from_secs(60 * 60);
/// How old another key's assembly is when it is removed: a file is never
/// written again after it is cached, so this is its age, and another key
/// is another pwshlib (an upgrade's leftover, or one still in use beside
/// this one, which then compiles and caches it again once in this time).
const STALE_OTHER_KEY: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Deletes each cached assembly of `key` in `dir` whose bytes do not hash
/// to the last part of its name (a truncated or corrupted file), or that
/// is not this account's alone (`file_trusted`): host.ps1 then compiles
/// and caches it again. Also deletes a temporary file a killed compile
/// left, and another key's files once they are old (see the constants).
pub fn remove_unsound(dir: &Path, key: &str) {
    let prefix = format!("PwshlibHost-{key}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let path = entry.path();
        let remove = if let Some(stem) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".dll"))
        {
            let named = stem.rsplit_once('-').map_or(stem, |(_, hash)| hash);
            !file_trusted(&path)
                || !std::fs::read(&path).is_ok_and(|bytes| hex(&Sha256::digest(&bytes)) == named)
        } else if name.starts_with("tmp-") && name.ends_with(".dll") {
            older_than(&path, STALE_TEMPORARY)
        } else if name.starts_with("PwshlibHost-") && name.ends_with(".dll") {
            older_than(&path, STALE_OTHER_KEY)
        } else {
            false
        };
        if remove {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Last written more than `age` ago (by this machine's clock).
fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|written| {
            SystemTime::now()
                .duration_since(written)
                .is_ok_and(|elapsed| elapsed > age)
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(unix)]
fn default_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(base) if !base.is_empty() => PathBuf::from(base),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    Some(base.join("pwshlib"))
}

/// An elevated run that is not SYSTEM trusts not its own account, which
/// owns `%LOCALAPPDATA%` (`cache_trust.rs`), but the Administrators, who
/// own what it makes under `%ProgramData%`.
#[cfg(windows)]
fn default_dir() -> Option<PathBuf> {
    let (user, elevated) = cache_security::token_facts()?;
    let base = if elevated && user != SYSTEM {
        "ProgramData"
    } else {
        "LOCALAPPDATA"
    };
    Some(PathBuf::from(std::env::var_os(base)?).join("pwshlib"))
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

/// A directory made with a protected DACL (`protected_sddl`); its parent,
/// when missing, as Windows makes folders there (and checked below).
#[cfg(windows)]
fn make_private(dir: &Path) -> std::io::Result<()> {
    let (user, elevated) = cache_security::token_facts()
        .ok_or_else(|| std::io::Error::other("this process's token cannot be read"))?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    cache_security::make_protected(dir, &protected_sddl(&user, elevated))
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

/// A real directory, not a link (nor a junction) to somewhere else, that
/// nobody but the trusted can write or replace: see `cache_trust.rs`.
#[cfg(windows)]
fn trusted(dir: &Path) -> bool {
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    let Some((user, elevated)) = cache_security::token_facts() else {
        return false;
    };
    let own = cache_security::read_security(dir);
    let parent = dir.parent().and_then(cache_security::read_security);
    own.zip(parent).is_some_and(|(own, parent)| {
        refusal(&own, &parent, &trusted_writers(&user, elevated)).is_none()
    })
}

/// A cached file this account alone (with the trusted) may have written:
/// a regular file, not a link, owned by this user and writable by nobody
/// else.
#[cfg(unix)]
fn file_trusted(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let ours = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && m.uid() == ours && m.mode() & 0o022 == 0)
}

/// The same on Windows: its owner and DACL as `cache_trust::file_refusal`
/// reads them.
#[cfg(windows)]
fn file_trusted(path: &Path) -> bool {
    let Some((user, elevated)) = cache_security::token_facts() else {
        return false;
    };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
        && cache_security::read_security(path)
            .is_some_and(|own| file_refusal(&own, &trusted_writers(&user, elevated)).is_none())
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

    #[test]
    fn the_source_key_covers_each_part_its_name_and_nothing_else() {
        let dir = scratch("key");
        std::fs::write(dir.join("PwshlibHost.cs"), "class A {}").unwrap();
        std::fs::write(dir.join("PwshlibHost.Json.cs"), "class B {}").unwrap();
        std::fs::write(dir.join("host.ps1"), "1").unwrap();
        let key = host_source_key(&dir).unwrap();
        assert_eq!(key.len(), 32);
        assert!(key
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        // The same bytes under the same names in any order of creation: the same key.
        std::fs::write(dir.join("host.ps1"), "2").unwrap();
        assert_eq!(host_source_key(&dir).unwrap(), key);
        std::fs::write(dir.join("PwshlibHost.Json.cs"), "class C {}").unwrap();
        let changed = host_source_key(&dir).unwrap();
        assert_ne!(changed, key, "a part's bytes change the key");
        std::fs::rename(
            dir.join("PwshlibHost.Json.cs"),
            dir.join("PwshlibHost.Dsc.cs"),
        )
        .unwrap();
        assert_ne!(
            host_source_key(&dir).unwrap(),
            changed,
            "so does a part's name"
        );
        // The framing: "ab" + "c" is not "a" + "bc".
        let other = scratch("key-framing");
        std::fs::write(other.join("PwshlibHost.A.cs"), "ab").unwrap();
        std::fs::write(other.join("PwshlibHost.B.cs"), "c").unwrap();
        let first = host_source_key(&other).unwrap();
        std::fs::write(other.join("PwshlibHost.A.cs"), "a").unwrap();
        std::fs::write(other.join("PwshlibHost.B.cs"), "bc").unwrap();
        assert_ne!(host_source_key(&other).unwrap(), first);
        std::fs::remove_dir_all(other).unwrap();
        let empty = scratch("key-empty");
        assert_eq!(host_source_key(&empty), None, "no source, no key");
        std::fs::remove_dir_all(empty).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_a_damaged_file_of_the_key_is_removed() {
        let dir = scratch("damaged");
        let bytes = b"MZ an assembly";
        let sound_hash = hex(&Sha256::digest(bytes));
        let sound =
            format!("PwshlibHost-k1-Core-7.6.0-preview.1-10.0.0-optimized-{sound_hash}.dll");
        let damaged = format!("PwshlibHost-k1-Core-7.6.9-10.0.0-optimized-{sound_hash}.dll");
        let other_key = format!("PwshlibHost-k2-Core-7.6.9-10.0.0-{sound_hash}.dll");
        std::fs::write(dir.join(&sound), bytes).unwrap();
        std::fs::write(dir.join(&damaged), &bytes[..4]).unwrap();
        std::fs::write(dir.join(&other_key), b"not checked").unwrap();
        std::fs::write(dir.join("tmp-123.dll"), b"being written").unwrap();
        remove_unsound(&dir, "k1");
        assert!(
            dir.join(&sound).exists(),
            "a version with '-' in it still names its hash last"
        );
        assert!(!dir.join(&damaged).exists());
        assert!(
            dir.join(&other_key).exists(),
            "another key's recent files may be another pwshlib's, in use"
        );
        assert!(
            dir.join("tmp-123.dll").exists(),
            "a recent temporary file may be a compile under way"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn age(path: &Path, by: Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn what_the_cache_no_longer_needs_is_removed() {
        let dir = scratch("stale");
        let bytes = b"MZ an assembly";
        let hash = hex(&Sha256::digest(bytes));
        let ours = format!("PwshlibHost-k1-Core-7.6.9-10.0.0-optimized-{hash}.dll");
        let old_key = format!("PwshlibHost-k0-Core-7.6.9-10.0.0-optimized-{hash}.dll");
        for name in [&ours, &old_key, &"tmp-killed.dll".to_owned()] {
            std::fs::write(dir.join(name), bytes).unwrap();
            age(&dir.join(name), STALE_OTHER_KEY + Duration::from_secs(60));
        }
        std::fs::write(dir.join("notes.txt"), b"not the cache's").unwrap();
        age(&dir.join("notes.txt"), STALE_OTHER_KEY * 2);
        remove_unsound(&dir, "k1");
        assert!(
            dir.join(&ours).exists(),
            "this key's sound file is kept at any age"
        );
        assert!(!dir.join(&old_key).exists(), "an old key's file goes");
        assert!(
            !dir.join("tmp-killed.dll").exists(),
            "a killed compile's file goes"
        );
        assert!(
            dir.join("notes.txt").exists(),
            "what is not the cache's stays"
        );
        std::fs::write(dir.join("tmp-recent.dll"), b"x").unwrap();
        age(
            &dir.join("tmp-recent.dll"),
            STALE_TEMPORARY - Duration::from_secs(60),
        );
        remove_unsound(&dir, "k1");
        assert!(dir.join("tmp-recent.dll").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_planted_file_named_after_its_hash_is_removed() {
        let dir = scratch("planted");
        let bytes = b"MZ someone else's assembly";
        let hash = hex(&Sha256::digest(bytes));
        let writable = format!("PwshlibHost-k1-Core-7.6.9-10.0.0-optimized-{hash}.dll");
        std::fs::write(dir.join(&writable), bytes).unwrap();
        std::fs::set_permissions(dir.join(&writable), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        let linked = format!("PwshlibHost-k1-Desktop-5.1-4.0-optimized-{hash}.dll");
        std::fs::write(dir.join("elsewhere"), bytes).unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join(&linked)).unwrap();
        // Another account's file: only root can make one here.
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let foreign = format!("PwshlibHost-k1-Core-7.5.0-9.0.0-optimized-{hash}.dll");
        if root {
            std::fs::write(dir.join(&foreign), bytes).unwrap();
            std::os::unix::fs::chown(dir.join(&foreign), Some(4242), None).unwrap();
        }
        remove_unsound(&dir, "k1");
        assert!(
            !dir.join(&writable).exists(),
            "a file others may write goes"
        );
        assert!(!dir.join(&linked).exists(), "a link goes");
        assert!(dir.join("elsewhere").exists(), "not what it points to");
        assert!(!dir.join(&foreign).exists(), "another account's file goes");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_another_account_owns_is_not_trusted() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let base = scratch("owner");
        let dir = base.join("cache");
        make_private(&dir).unwrap();
        assert!(trusted(&dir));
        std::os::unix::fs::chown(&dir, Some(4242), None).unwrap();
        assert!(!trusted(&dir), "a directory made first by another user");
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
        std::os::unix::fs::chown(&base, Some(4242), None).unwrap();
        assert!(
            !trusted(&dir),
            "a parent another user owns lets them replace it"
        );
        std::fs::remove_dir_all(base).unwrap();
    }
}
