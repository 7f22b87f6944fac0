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
//!
//! The manager also does the cache's hashing, so that the host's first
//! line runs as little PowerShell as it can (issue 39: each statement runs
//! cold in a fresh pwsh, and .NET's first SHA-256 there takes some 20 ms):
//! [`host_source_key`] names the C# source host.ps1 compiles
//! (`-HostSourceKey`), and [`remove_damaged`] deletes, before the host
//! starts, each cached assembly of that key whose bytes do not hash to its
//! name. host.ps1 writes a file under a temporary name and renames it into
//! place whole, and nothing writes it again, so what the manager checked
//! is what the host loads.

use sha2::{Digest, Sha256};
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

/// The key of the host's C# source: the SHA-256 of every `PwshlibHost*.cs`
/// in `script_dir` (host.ps1's own directory), in the byte order of their
/// names, each as its name, NUL, its length in decimal, NUL, its bytes;
/// the first 16 bytes in lowercase hex. host.ps1 computes the same
/// (Get-PwshlibHostSourceKey) before it caches what it compiled, and
/// names its cached assemblies `PwshlibHost-<key>-<edition>-<version>-<runtime>-optimized-<SHA-256 of the file>.dll`
/// (docs/protocol.md; [`remove_damaged`] reads the hash after the last `-`).
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

/// Deletes each cached assembly of `key` in `dir` whose bytes do not hash
/// to the last part of its name (a truncated or corrupted file): host.ps1
/// then compiles and caches it again.
pub fn remove_damaged(dir: &Path, key: &str) {
    let prefix = format!("PwshlibHost-{key}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some(stem) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".dll"))
        else {
            continue;
        };
        let named = stem.rsplit_once('-').map_or(stem, |(_, hash)| hash);
        let sound =
            std::fs::read(entry.path()).is_ok_and(|bytes| hex(&Sha256::digest(&bytes)) == named);
        if !sound {
            let _ = std::fs::remove_file(entry.path());
        }
    }
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
        remove_damaged(&dir, "k1");
        assert!(
            dir.join(&sound).exists(),
            "a version with '-' in it still names its hash last"
        );
        assert!(!dir.join(&damaged).exists());
        assert!(
            dir.join(&other_key).exists(),
            "another key's files are not this host's"
        );
        assert!(dir.join("tmp-123.dll").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
