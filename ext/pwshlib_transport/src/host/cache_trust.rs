//! Whether a Windows security descriptor lets only trusted accounts put a
//! file in the assembly cache, or replace the cache directory itself: the
//! rule, kept apart from the Windows calls that read a descriptor
//! (`host/cache_security.rs`) so that it is tested on every platform.
//!
//! Whoever can write the cache runs code in every host that loads from it,
//! so the directory is trusted only when each account that can write it is
//! one of the trusted: this account, SYSTEM, the Administrators and
//! TrustedInstaller (who can run code as this account anyway). An elevated
//! run that is not SYSTEM does not trust its own account: the same user's
//! medium-integrity processes hold it too, and a file they planted would
//! be loaded at high integrity (UAC's boundary). docs/protocol.md, "The
//! assembly cache's trust", says the same for operators.
//!
//! Windows' access check (AccessCheck, "How DACLs Control Access to an
//! Object" in Microsoft's security documentation): an object's owner may
//! always change its DACL (an implicit WRITE_DAC), an allow entry grants
//! its rights to every token that holds its SID, and an entry flagged
//! INHERIT_ONLY_ACE applies to children only, never to the object. A NULL
//! DACL grants everyone everything. Deny entries are not credited: a
//! descriptor that needs one to be safe is refused (a refusal costs a
//! compile, a wrong trust runs a planted DLL).

use std::path::{Path, PathBuf};

/// `S-1-5-18`: LocalSystem.
pub const SYSTEM: &str = "S-1-5-18";
/// `S-1-5-32-544`: BUILTIN\Administrators.
pub const ADMINISTRATORS: &str = "S-1-5-32-544";
/// NT SERVICE\TrustedInstaller, the owner of Windows' own folders.
pub const TRUSTED_INSTALLER: &str =
    "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464";
/// `S-1-3-4`, OWNER RIGHTS: an entry for it grants the object's owner.
const OWNER_RIGHTS: &str = "S-1-3-4";

/// ACE_HEADER.AceType of an allow entry (ACCESS_ALLOWED_ACE_TYPE).
pub const ACCESS_ALLOWED_ACE_TYPE: u8 = 0;
/// ACE_HEADER.AceFlags: the entry applies to children only.
pub const INHERIT_ONLY_ACE: u8 = 0x08;

// The file-system rights that add an entry to a directory, or remove or
// re-permission one (winnt.h).
const FILE_ADD_FILE: u32 = 0x0002;
const FILE_ADD_SUBDIRECTORY: u32 = 0x0004;
const FILE_DELETE_CHILD: u32 = 0x0040;
const DELETE: u32 = 0x0001_0000;
const WRITE_DAC: u32 = 0x0004_0000;
const WRITE_OWNER: u32 = 0x0008_0000;
const GENERIC_ALL: u32 = 0x1000_0000;
const GENERIC_WRITE: u32 = 0x4000_0000;

/// What lets an account put a file in the cache directory, or take the
/// directory (or its DACL) away.
const WRITES_THE_CACHE: u32 = FILE_ADD_FILE
    | FILE_ADD_SUBDIRECTORY
    | FILE_DELETE_CHILD
    | DELETE
    | WRITE_DAC
    | WRITE_OWNER
    | GENERIC_ALL
    | GENERIC_WRITE;
/// What lets an account replace the cache directory through its parent:
/// remove or rename a child (creating a new child is harmless: the cache's
/// own name is taken), or re-permission the parent to do so.
const REPLACES_A_CHILD: u32 = FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER | GENERIC_ALL;

/// One access control entry, as read from a DACL: the SID as a string
/// (`S-1-…`), the ACE type and flags, the access mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ace {
    pub sid: String,
    pub kind: u8,
    pub flags: u8,
    pub mask: u32,
}

/// An object's owner and DACL (`None`: a NULL DACL, open to everyone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Security {
    pub owner: String,
    pub dacl: Option<Vec<Ace>>,
}

/// The accounts trusted to write the cache: see the module's comment.
/// `user` is this process's account; `elevated` that its token is
/// elevated (TokenElevation).
pub fn trusted_writers(user: &str, elevated: bool) -> Vec<String> {
    let mut writers = vec![
        SYSTEM.to_owned(),
        ADMINISTRATORS.to_owned(),
        TRUSTED_INSTALLER.to_owned(),
    ];
    if !elevated || user == SYSTEM {
        writers.push(user.to_owned());
    }
    writers
}

/// Why the cache directory (`dir`, under `parent`) is not trusted, or
/// `None` when nobody but `trusted` can write it or replace it.
pub fn refusal(dir: &Security, parent: &Security, trusted: &[String]) -> Option<String> {
    if let Some(refused) = file_refusal(dir, trusted) {
        return Some(refused);
    }
    let is_trusted = |sid: &str| trusted.iter().any(|t| t.eq_ignore_ascii_case(sid));
    if !is_trusted(&parent.owner) {
        return Some(format!(
            "its parent's owner {} may replace it",
            parent.owner
        ));
    }
    if let Some(sid) = untrusted_holder(parent, REPLACES_A_CHILD, &is_trusted) {
        return Some(format!("{sid} may replace it through its parent"));
    }
    None
}

/// Why a file or directory (a cached assembly, the cache itself) is not
/// trusted: an owner, or an account it lets write, that is not trusted.
pub fn file_refusal(object: &Security, trusted: &[String]) -> Option<String> {
    let is_trusted = |sid: &str| trusted.iter().any(|t| t.eq_ignore_ascii_case(sid));
    if !is_trusted(&object.owner) {
        return Some(format!(
            "its owner {} is not trusted to write it",
            object.owner
        ));
    }
    untrusted_holder(object, WRITES_THE_CACHE, &is_trusted).map(|sid| format!("{sid} may write it"))
}

/// The first account other than the trusted that `security` grants any of
/// `rights` on the object itself ("everyone" for a NULL DACL).
fn untrusted_holder(
    security: &Security,
    rights: u32,
    is_trusted: &impl Fn(&str) -> bool,
) -> Option<String> {
    let Some(dacl) = &security.dacl else {
        return Some("everyone (a NULL DACL)".to_owned());
    };
    dacl.iter()
        .filter(|ace| ace.kind == ACCESS_ALLOWED_ACE_TYPE && ace.flags & INHERIT_ONLY_ACE == 0)
        .filter(|ace| ace.mask & rights != 0)
        .find(|ace| {
            let sid = if ace.sid.eq_ignore_ascii_case(OWNER_RIGHTS) {
                &security.owner
            } else {
                &ace.sid
            };
            !is_trusted(sid)
        })
        .map(|ace| ace.sid.clone())
}

/// The SDDL of a cache directory made by this account: owner and DACL
/// protected from inheritance (`P`), full control (`FA`) for SYSTEM, the
/// Administrators and, unless elevated (SYSTEM is), the user, inherited
/// by the files in it (`OICI`). An elevated run's directory is owned by
/// the Administrators (`O:BA`), which its token may set as owner.
pub fn protected_sddl(user: &str, elevated: bool) -> String {
    let mut sddl = String::new();
    if elevated && user != SYSTEM {
        sddl.push_str("O:BA");
    }
    sddl.push_str("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
    if !elevated && user != SYSTEM {
        sddl.push_str(&format!("(A;OICI;FA;;;{user})"));
    }
    sddl
}

/// `path` with `<windows>\System32` swapped for `<windows>\Sysnative`
/// (in any case, as NTFS compares names): how a 32-bit process reaches
/// the 64-bit System32 (`cache_security::as_the_host_sees`).
pub fn sysnative(path: &Path, windows: &Path) -> PathBuf {
    let whole = path.to_string_lossy();
    let prefix = windows.join("System32").to_string_lossy().into_owned();
    // Either separator, as Windows takes both: `join` writes '\\' there
    // while a path from elsewhere may hold '/'.
    let same = |a: &u8, b: &u8| {
        a.eq_ignore_ascii_case(b) || (matches!(a, b'\\' | b'/') && matches!(b, b'\\' | b'/'))
    };
    let matches = whole.len() >= prefix.len()
        && whole.as_bytes()[..prefix.len()]
            .iter()
            .zip(prefix.as_bytes())
            .all(|(a, b)| same(a, b));
    let rest = if matches { &whole[prefix.len()..] } else { "" };
    if matches && (rest.is_empty() || rest.starts_with(['\\', '/'])) {
        return PathBuf::from(format!("{}{rest}", windows.join("Sysnative").display()));
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "S-1-5-21-1-2-3-1001";
    const OTHER: &str = "S-1-5-21-1-2-3-1002";
    const USERS: &str = "S-1-5-32-545";
    const EVERYONE: &str = "S-1-1-0";
    const FULL: u32 = 0x001F_01FF;

    fn allow(sid: &str, mask: u32) -> Ace {
        Ace {
            sid: sid.to_owned(),
            kind: ACCESS_ALLOWED_ACE_TYPE,
            flags: 0,
            mask,
        }
    }

    /// A directory made as `protected_sddl` says, for a user not elevated.
    fn private_dir(owner: &str) -> Security {
        Security {
            owner: owner.to_owned(),
            dacl: Some(vec![
                allow(SYSTEM, FULL),
                allow(ADMINISTRATORS, FULL),
                allow(owner, FULL),
            ]),
        }
    }

    /// A user's profile folder (`%LOCALAPPDATA%`): the same shape.
    fn profile() -> Security {
        private_dir(USER)
    }

    /// `C:\ProgramData`: SYSTEM's, Users may create folders and files in
    /// it (not remove them), CREATOR OWNER's entry for children only.
    fn program_data() -> Security {
        Security {
            owner: SYSTEM.to_owned(),
            dacl: Some(vec![
                allow(SYSTEM, FULL),
                allow(ADMINISTRATORS, FULL),
                allow(USERS, 0x0012_0089),
                allow(USERS, FILE_ADD_FILE | FILE_ADD_SUBDIRECTORY),
                Ace {
                    sid: "S-1-3-0".to_owned(),
                    kind: 0,
                    flags: 0x0B,
                    mask: GENERIC_ALL,
                },
            ]),
        }
    }

    #[test]
    fn the_users_own_private_directory_is_trusted() {
        let trusted = trusted_writers(USER, false);
        assert_eq!(refusal(&private_dir(USER), &profile(), &trusted), None);
        assert_eq!(refusal(&private_dir(USER), &program_data(), &trusted), None);
    }

    #[test]
    fn a_directory_another_account_owns_is_refused() {
        // A low-privileged user made C:\ProgramData\pwshlib first: theirs
        // however its DACL reads, since an owner may always rewrite it.
        let planted = private_dir(OTHER);
        let refused = refusal(&planted, &program_data(), &trusted_writers(SYSTEM, true));
        assert!(refused.unwrap().contains(OTHER));
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let mut open = private_dir(USER);
        open.dacl
            .as_mut()
            .unwrap()
            .push(allow(USERS, FILE_ADD_FILE));
        let trusted = trusted_writers(USER, false);
        assert!(refusal(&open, &profile(), &trusted)
            .unwrap()
            .contains(USERS));
        let null_dacl = Security {
            owner: USER.to_owned(),
            dacl: None,
        };
        assert!(refusal(&null_dacl, &profile(), &trusted)
            .unwrap()
            .contains("NULL DACL"));
        // An entry for children only grants nothing on the directory itself.
        let mut inherit_only = private_dir(USER);
        inherit_only.dacl.as_mut().unwrap().push(Ace {
            sid: EVERYONE.to_owned(),
            kind: ACCESS_ALLOWED_ACE_TYPE,
            flags: INHERIT_ONLY_ACE | 0x03,
            mask: FULL,
        });
        assert_eq!(refusal(&inherit_only, &profile(), &trusted), None);
    }

    #[test]
    fn a_parent_others_may_replace_children_of_is_refused() {
        let mut parent = program_data();
        parent
            .dacl
            .as_mut()
            .unwrap()
            .push(allow(EVERYONE, FILE_DELETE_CHILD));
        let trusted = trusted_writers(USER, false);
        assert!(refusal(&private_dir(USER), &parent, &trusted)
            .unwrap()
            .contains(EVERYONE));
        let foreign_parent = private_dir(OTHER);
        assert!(refusal(&private_dir(USER), &foreign_parent, &trusted)
            .unwrap()
            .contains(OTHER));
    }

    #[test]
    fn an_elevated_run_does_not_trust_its_own_medium_integrity_account() {
        // An admin's elevated console: %LOCALAPPDATA%\pwshlib is the
        // user's, which every non-elevated process of that user can write.
        let elevated = trusted_writers(USER, true);
        assert!(refusal(&private_dir(USER), &profile(), &elevated).is_some());
        // A directory only SYSTEM and the Administrators may write, under
        // C:\ProgramData, is trusted.
        let admins_only = Security {
            owner: ADMINISTRATORS.to_owned(),
            dacl: Some(vec![allow(SYSTEM, FULL), allow(ADMINISTRATORS, FULL)]),
        };
        assert_eq!(refusal(&admins_only, &program_data(), &elevated), None);
        // SYSTEM's token is elevated, and SYSTEM trusts itself.
        assert!(trusted_writers(SYSTEM, true).contains(&SYSTEM.to_owned()));
    }

    #[test]
    fn a_planted_file_is_refused_whatever_its_name() {
        // A file another account made in the cache (its name the hash of
        // its bytes, so that the hash check passes) is theirs.
        let trusted = trusted_writers(USER, false);
        let planted = private_dir(OTHER);
        assert!(file_refusal(&planted, &trusted).unwrap().contains(OTHER));
        assert_eq!(file_refusal(&private_dir(USER), &trusted), None);
        let mut writable = private_dir(USER);
        writable
            .dacl
            .as_mut()
            .unwrap()
            .push(allow(EVERYONE, GENERIC_WRITE));
        assert!(file_refusal(&writable, &trusted).is_some());
    }

    #[test]
    fn owner_rights_stand_for_the_owner() {
        let mut dir = private_dir(USER);
        dir.dacl.as_mut().unwrap().push(allow(OWNER_RIGHTS, FULL));
        assert_eq!(
            refusal(&dir, &profile(), &trusted_writers(USER, false)),
            None
        );
        dir.owner = OTHER.to_owned();
        assert!(refusal(&dir, &profile(), &trusted_writers(USER, false)).is_some());
    }

    #[test]
    fn the_protected_sddl_grants_the_trusted_alone() {
        assert_eq!(
            protected_sddl(USER, false),
            format!("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;{USER})")
        );
        assert_eq!(
            protected_sddl(USER, true),
            "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
        );
        assert_eq!(
            protected_sddl(SYSTEM, true),
            "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
        );
    }

    #[test]
    fn system32_is_named_as_a_32_bit_process_reaches_the_64_bit_one() {
        // Joined with '/' here, as Path does on the machine that runs the test.
        let windows = Path::new("C:/Windows");
        let profile = Path::new("c:/windows/system32/config/systemprofile/AppData/Local/pwshlib");
        assert_eq!(
            sysnative(profile, windows),
            PathBuf::from("C:/Windows/Sysnative/config/systemprofile/AppData/Local/pwshlib")
        );
        let elsewhere = Path::new("C:/Windows/System32x/pwshlib");
        assert_eq!(sysnative(elsewhere, windows), elsewhere);
        let user = Path::new("C:/Users/a/AppData/Local/pwshlib");
        assert_eq!(sysnative(user, windows), user);
    }
}
