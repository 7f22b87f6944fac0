//! The Windows calls behind the assembly cache's trust (`cache_trust.rs`
//! holds the rule): who this process runs as, an object's owner and DACL,
//! a directory made with a protected DACL, and a path as the 64-bit host
//! sees it.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
    GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    AclSizeInformation, GetAce, GetAclInformation, GetTokenInformation, TokenElevation, TokenUser,
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, ACL_SIZE_INFORMATION, DACL_SECURITY_INFORMATION,
    OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SECURITY_ATTRIBUTES, TOKEN_ELEVATION,
    TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::CreateDirectoryW;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, IsWow64Process, OpenProcessToken};

use super::cache_trust::{sysnative, Ace, Security};
use super::transport::size_u32;

fn wide(text: &OsStr) -> Vec<u16> {
    text.encode_wide().chain(std::iter::once(0)).collect()
}

/// This process's account (its SID as a string) and whether its token is
/// elevated (TokenElevation); `None` when the token cannot be read.
pub fn token_facts() -> Option<(String, bool)> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no
    // closing; `token` is a valid out-pointer.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return None;
    }
    let facts = user_sid(token).zip(elevated(token));
    // SAFETY: `token` was opened above and is closed once.
    unsafe { CloseHandle(token) };
    facts
}

fn user_sid(token: HANDLE) -> Option<String> {
    // TOKEN_USER is followed by its SID in the same buffer: 256 bytes hold
    // any SID (at most 68 bytes) after it. u64s keep the buffer aligned.
    let mut buffer = [0u64; 32];
    let mut needed = 0u32;
    // SAFETY: the buffer is writable for its stated length, and `token` is
    // an open token handle with TOKEN_QUERY.
    let read = unsafe {
        GetTokenInformation(
            token,
            TokenUser,
            buffer.as_mut_ptr().cast(),
            size_u32::<[u64; 32]>(),
            &mut needed,
        )
    };
    if read == 0 {
        return None;
    }
    // SAFETY: GetTokenInformation wrote a TOKEN_USER at the buffer's start.
    let user = unsafe { &*buffer.as_ptr().cast::<TOKEN_USER>() };
    sid_string(user.User.Sid)
}

fn elevated(token: HANDLE) -> Option<bool> {
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut needed = 0u32;
    // SAFETY: `elevation` is writable for its size; `token` is open with
    // TOKEN_QUERY.
    let read = unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            std::ptr::from_mut(&mut elevation).cast(),
            size_u32::<TOKEN_ELEVATION>(),
            &mut needed,
        )
    };
    (read != 0).then_some(elevation.TokenIsElevated != 0)
}

fn sid_string(sid: PSID) -> Option<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` points to a valid SID owned by the caller's buffer;
    // ConvertSidToStringSidW allocates `text`, freed below with LocalFree.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return None;
    }
    // SAFETY: `text` is a NUL-terminated UTF-16 string from the call above.
    let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
    // SAFETY: `length` units are readable at `text`.
    let string = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
    // SAFETY: `text` was allocated by ConvertSidToStringSidW.
    unsafe { LocalFree(text.cast()) };
    Some(string)
}

/// The owner and DACL of the file or directory at `path`.
pub fn read_security(path: &Path) -> Option<Security> {
    let name = wide(path.as_os_str());
    let mut owner: PSID = std::ptr::null_mut();
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; the out-pointers are valid; owner
    // and DACL point into `descriptor`, freed below with LocalFree.
    let status = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    if status != 0 {
        return None;
    }
    let security = sid_string(owner).map(|owner| Security {
        owner,
        dacl: (!dacl.is_null()).then(|| aces(dacl)),
    });
    // SAFETY: `descriptor` was allocated by GetNamedSecurityInfoW.
    unsafe { LocalFree(descriptor.cast()) };
    security
}

fn aces(dacl: *mut ACL) -> Vec<Ace> {
    let mut size = ACL_SIZE_INFORMATION {
        AceCount: 0,
        AclBytesInUse: 0,
        AclBytesFree: 0,
    };
    // SAFETY: `dacl` is a valid ACL of a live descriptor; `size` is
    // writable for its size.
    let read = unsafe {
        GetAclInformation(
            dacl,
            std::ptr::from_mut(&mut size).cast(),
            size_u32::<ACL_SIZE_INFORMATION>(),
            AclSizeInformation,
        )
    };
    if read == 0 {
        // Unreadable: one entry no one trusts, so the DACL is refused.
        return vec![Ace {
            sid: "unreadable".to_owned(),
            kind: 0,
            flags: 0,
            mask: u32::MAX,
        }];
    }
    (0..size.AceCount)
        .filter_map(|index| ace(dacl, index))
        .collect()
}

fn ace(dacl: *mut ACL, index: u32) -> Option<Ace> {
    let mut entry: *mut core::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `index` is below the ACL's AceCount; `entry` is an out-pointer.
    if unsafe { GetAce(dacl, index, &mut entry) } == 0 {
        return None;
    }
    // SAFETY: every ACE starts with an ACE_HEADER.
    let header = unsafe { &*entry.cast::<ACE_HEADER>() };
    let kind = header.AceType;
    let flags = header.AceFlags;
    if kind > 1 {
        // Neither allow (0) nor deny (1): an object or callback entry,
        // which the rule does not read; refused as one no one trusts.
        return Some(Ace {
            sid: format!("an entry of type {kind}"),
            kind: 0,
            flags,
            mask: u32::MAX,
        });
    }
    // SAFETY: allow and deny entries share ACCESS_ALLOWED_ACE's layout:
    // header, mask, then the SID from SidStart.
    let body = unsafe { &*entry.cast::<ACCESS_ALLOWED_ACE>() };
    let sid = sid_string(std::ptr::from_ref(&body.SidStart).cast_mut().cast())?;
    Some(Ace {
        sid,
        kind,
        flags,
        mask: body.Mask,
    })
}

/// Makes `dir` (its parent must exist) with the security descriptor that
/// `sddl` describes; an existing directory is left as it is (and checked).
pub fn make_protected(dir: &Path, sddl: &str) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let text = wide(OsStr::new(sddl));
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated; the descriptor is allocated by the
    // call and freed below with LocalFree.
    let parsed = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            text.as_ptr(),
            SDDL_REVISION_1,
            &mut descriptor,
            std::ptr::null_mut(),
        )
    };
    if parsed == 0 {
        return Err(io::Error::last_os_error());
    }
    let attributes = SECURITY_ATTRIBUTES {
        nLength: size_u32::<SECURITY_ATTRIBUTES>(),
        lpSecurityDescriptor: descriptor,
        bInheritHandle: 0,
    };
    let name = wide(dir.as_os_str());
    // SAFETY: `name` is NUL-terminated; `attributes` holds a valid
    // descriptor for the duration of the call.
    let made = unsafe { CreateDirectoryW(name.as_ptr(), &attributes) };
    let result = if made == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    };
    // SAFETY: `descriptor` was allocated by the conversion above.
    unsafe { LocalFree(descriptor) };
    result
}

/// `path` as this process must name it to reach what the 64-bit host
/// reaches at `path`: a 32-bit process (WOW64) sees `%windir%\System32`
/// redirected to SysWOW64 (Microsoft's "File System Redirector": a
/// 32-bit application reaches the 64-bit System32 through
/// `%windir%\Sysnative`), which would check and clean one directory while
/// the host loads from another (SYSTEM's profile is under
/// `System32\config\systemprofile`).
pub fn as_the_host_sees(path: &Path) -> PathBuf {
    let mut wow64 = 0;
    // SAFETY: a pseudo-handle of this process and a valid out-pointer.
    let is_wow64 = unsafe { IsWow64Process(GetCurrentProcess(), &mut wow64) } != 0 && wow64 != 0;
    let Some(windows) = std::env::var_os("SystemRoot").or_else(|| std::env::var_os("windir"))
    else {
        return path.to_path_buf();
    };
    if !is_wow64 {
        return path.to_path_buf();
    }
    sysnative(path, Path::new(&windows))
}
