//! The host transport on Windows: a named pipe, `\\.\pipe\pwshlib-<pid>-<uuid>`.
//!
//! The pipe is opened for overlapped I/O so that every read and write can
//! wait on two things at once: its own completion event and the call's
//! wake event, with the time left before the deadline as the wait's
//! timeout. A wait that ends early cancels the operation with `CancelIoEx`
//! and waits for it to finish, so the kernel never writes into a buffer or
//! an OVERLAPPED that has gone; bytes that did move are returned, so a
//! woken call can be resumed on the intact pipe.
//!
//! The host runs in a job object that kills it when the job's last handle
//! closes: when the manager destroys it, and also when Ruby dies without
//! cleaning up (the job handle dies with the process). Processes the host
//! starts are not in the job (silent breakaway): an installer or service
//! that a DSC resource launches outlives the host, as with pwshlib 2.x.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{
    GetLastError, ERROR_BROKEN_PIPE, ERROR_IO_PENDING, ERROR_NO_DATA, ERROR_OPERATION_ABORTED,
    ERROR_PIPE_NOT_CONNECTED, FILETIME, GENERIC_READ, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE,
    WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadFile, WriteFile, FILE_FLAG_OVERLAPPED, OPEN_EXISTING, SECURITY_IDENTIFICATION,
    SECURITY_SQOS_PRESENT,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK,
};
use windows_sys::Win32::System::Pipes::GetNamedPipeServerProcessId;
use windows_sys::Win32::System::Threading::{
    CreateEventW, GetProcessTimes, OpenProcess, ResetEvent, SetEvent, WaitForMultipleObjects,
    WaitForSingleObject, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW,
    PROCESS_QUERY_LIMITED_INFORMATION,
};
use windows_sys::Win32::System::IO::{CancelIoEx, GetOverlappedResult, OVERLAPPED};

use super::channel::{remaining, woken_error};

/// How messages name the endpoint.
pub const ENDPOINT_KIND: &str = "named pipe";

/// A fresh pipe name: the PID for whoever looks, a random part so that
/// nobody can guess it and create the pipe ahead of the host. (Pipes have
/// no directory to make private: the host's pipe carries an ACL of its
/// own, and the peer check below finds an impostor.)
pub fn new_endpoint() -> io::Result<String> {
    Ok(format!(
        "{}pwshlib-{}-{}",
        super::WINDOWS_PIPE_PREFIX,
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// A named pipe leaves nothing behind once its handles are closed.
pub fn remove_endpoint(_endpoint: &str) {}

/// ERROR_INTERNAL_ERROR, what `CreateProcessW` reports for
/// STATUS_INTERNAL_ERROR. Wine's `NtCreateUserProcess` gives that status
/// when the new process ended during its start-up without an exit code of
/// its own (the server's new-process info says no success), which a loaded
/// machine shows now and then (the CI's Windows job did once); nothing was
/// wrong with the program, so a second start is the fix. The code names no
/// fault of the program on Windows either, and two retries cost 200 ms.
const ERROR_INTERNAL_ERROR: i32 = 1359;

/// A start that failed for a reason of the moment, worth one more try.
pub fn is_transient_start_failure(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_INTERNAL_ERROR)
}

/// A new process group, so that a Ctrl-C in our console reaches Ruby (which
/// turns it into an interrupt) and not the host; and no console, since the
/// host's standard streams are the null device anyway (under a service
/// every host would otherwise get a hidden console of its own).
pub fn detach_from_our_interrupts(command: &mut Command) {
    command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
}

/// The kill-on-close job the host runs in; `None` where no job could be
/// made (the host is then only killed directly, as on Unix).
pub struct ProcessGuard {
    _job: Option<OwnedHandle>,
}

impl ProcessGuard {
    pub fn new(child: &Child) -> Self {
        ProcessGuard {
            _job: kill_on_close_job(child),
        }
    }
}

fn kill_on_close_job(child: &Child) -> Option<OwnedHandle> {
    // SAFETY: both pointers may be null (default security, no name); the
    // returned handle is checked and then owned by OwnedHandle.
    let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if job.is_null() {
        return None;
    }
    // SAFETY: `job` is a valid handle we own from here on.
    let job = unsafe { OwnedHandle::from_raw_handle(job as RawHandle) };
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    limits.BasicLimitInformation.LimitFlags =
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK;
    // SAFETY: `limits` is the structure this information class expects and
    // its size is passed with it; both handles are valid for the call.
    let assigned = unsafe {
        SetInformationJobObject(
            raw(&job),
            JobObjectExtendedLimitInformation,
            &limits as *const _ as *const std::ffi::c_void,
            size_u32::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>(),
        ) != 0
            && AssignProcessToJobObject(raw(&job), child.as_raw_handle() as HANDLE) != 0
    };
    assigned.then_some(job)
}

fn raw(handle: &OwnedHandle) -> HANDLE {
    handle.as_raw_handle() as HANDLE
}

/// A manual-reset event, unsignalled.
fn new_event() -> io::Result<OwnedHandle> {
    // SAFETY: null security attributes and name are allowed; the handle is
    // checked, then owned.
    let event = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
    if event.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh, valid handle that nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(event as RawHandle) })
}

pub struct Connection {
    pipe: OwnedHandle,
    /// Signalled when the pending operation completes; one per connection,
    /// since operations on it never overlap each other.
    completion: OwnedHandle,
}

impl Connection {
    /// One attempt; the caller retries until its pipe_timeout (a pipe that
    /// does not exist yet or is busy is just "not yet").
    pub fn connect(endpoint: &str) -> io::Result<Connection> {
        let name: Vec<u16> = OsStr::new(endpoint)
            .encode_wide()
            .chain(std::iter::once(0))
            .collect();
        // SAFETY: `name` is NUL-terminated UTF-16 that outlives the call;
        // null security attributes and template are allowed.
        // SECURITY_IDENTIFICATION: the pipe's server may learn who we are,
        // but never act as us.
        let pipe = unsafe {
            CreateFileW(
                name.as_ptr(),
                GENERIC_READ | GENERIC_WRITE,
                0,
                std::ptr::null(),
                OPEN_EXISTING,
                FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                std::ptr::null_mut(),
            )
        };
        if pipe == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle that we own from here on.
        let pipe = unsafe { OwnedHandle::from_raw_handle(pipe as RawHandle) };
        Ok(Connection {
            pipe,
            completion: new_event()?,
        })
    }

    /// The process serving the pipe, checked before anything is sent: it
    /// must be `host_pid` (the process the manager started) or one of its
    /// descendants (PowerShell started through a wrapper). A pipe someone
    /// else created first gets nothing: requests carry credentials.
    pub fn check_peer(&self, host_pid: u32) -> Result<(), String> {
        let mut server = 0u32;
        // SAFETY: a valid pipe handle we own and an out-parameter.
        if unsafe { GetNamedPipeServerProcessId(raw(&self.pipe), &mut server) } == 0 {
            return Err(format!(
                "the process serving the PowerShell host's pipe could not be identified ({}); nothing was sent to it",
                io::Error::last_os_error()
            ));
        }
        if descends_from(server, host_pid) {
            return Ok(());
        }
        Err(format!(
            "the process serving the PowerShell host's pipe (pid {server}) is not the host that was started (pid {host_pid}) nor one of its children; nothing was sent to it"
        ))
    }

    pub fn read(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        cancel: &Cancel,
    ) -> io::Result<usize> {
        // At most 4 GiB per call; the caller loops for the rest.
        let length = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let buffer = buf.as_mut_ptr();
        match self.overlapped(deadline, cancel, Wakeable::Yes, |pipe, overlapped| {
            // SAFETY: `buffer` is valid for `length` bytes and, like the
            // OVERLAPPED, stays put until `overlapped` has seen the
            // operation finish.
            unsafe { ReadFile(pipe, buffer, length, std::ptr::null_mut(), overlapped) }
        }) {
            // The host closed its end: the end of the stream.
            Err(e) if is_disconnected(&e) => Ok(0),
            other => other,
        }
    }

    pub fn write(&mut self, buf: &[u8], deadline: Instant, cancel: &Cancel) -> io::Result<usize> {
        // At most 4 GiB per call; the caller loops for the rest.
        let length = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let buffer = buf.as_ptr();
        // A write is not cut short by a wake, only by the deadline: a
        // cancelled WriteFile on a pipe may have moved more than it reports
        // (seen under wine), and a resumed call that writes those bytes
        // again corrupts the stream. The wake is seen before the next write
        // starts. The host reads each request as it comes, so a write waits
        // only while the pipe's buffer drains.
        self.overlapped(deadline, cancel, Wakeable::No, |pipe, overlapped| {
            // SAFETY: as for ReadFile: the buffer and the OVERLAPPED outlive
            // the operation.
            unsafe { WriteFile(pipe, buffer, length, std::ptr::null_mut(), overlapped) }
        })
    }

    /// Starts one operation, then waits for it, the wake event or the
    /// deadline; a wait that ends early cancels the operation and waits for
    /// the cancellation to land before returning.
    fn overlapped(
        &mut self,
        deadline: Instant,
        cancel: &Cancel,
        wakeable: Wakeable,
        start: impl FnOnce(HANDLE, *mut OVERLAPPED) -> i32,
    ) -> io::Result<usize> {
        if cancel.is_woken() {
            return Err(woken_error());
        }
        let left = remaining(deadline)?;
        let pipe = raw(&self.pipe);
        let mut overlapped = OVERLAPPED {
            hEvent: raw(&self.completion),
            ..Default::default()
        };
        if start(pipe, &mut overlapped) == 0 {
            // SAFETY: reads this thread's last error, set by the call above.
            let error = unsafe { GetLastError() };
            if error != ERROR_IO_PENDING {
                return Err(io::Error::from_raw_os_error(error as i32));
            }
        }
        let handles = [raw(&self.completion), cancel.event_handle()];
        let count = if handles[1].is_null() || wakeable == Wakeable::No {
            1
        } else {
            2
        };
        // SAFETY: `handles` holds `count` valid handles for the call.
        let woke = unsafe { WaitForMultipleObjects(count, handles.as_ptr(), 0, millis(left)) };
        let mut transferred = 0u32;
        if woke == WAIT_OBJECT_0 {
            // SAFETY: the operation has completed (its event is set); the
            // OVERLAPPED is the one it was started with.
            let done = unsafe { GetOverlappedResult(pipe, &overlapped, &mut transferred, 0) };
            return if done != 0 {
                Ok(transferred as usize)
            } else {
                Err(io::Error::last_os_error())
            };
        }
        // Timed out, woken, or the wait itself failed: take the
        // operation back before `overlapped` and the buffer go out of scope.
        // SAFETY: cancels only this operation on our own handle, then waits
        // (bWait = TRUE) until the kernel is done with it.
        unsafe {
            CancelIoEx(pipe, &overlapped);
            GetOverlappedResult(pipe, &overlapped, &mut transferred, 1);
        }
        // Whatever moved before the cancellation landed counts, also when
        // the operation ended as cancelled (GetOverlappedResult then returns
        // FALSE with ERROR_OPERATION_ABORTED, but still stores the bytes
        // transferred, the OVERLAPPED's InternalHigh): a partly written
        // request must not be written again, and partly read bytes are the
        // reply's. 0 would read as the end of the stream, so it is not
        // returned. The next call sees the wake or the deadline again.
        if transferred > 0 {
            return Ok(transferred as usize);
        }
        if woke == WAIT_TIMEOUT {
            Err(io::ErrorKind::TimedOut.into())
        } else {
            Err(woken_error())
        }
    }

    pub fn shutdown(&self) {
        // SAFETY: cancels whatever is pending on our own handle (nothing, in
        // practice: operations are waited for before they return).
        unsafe {
            CancelIoEx(raw(&self.pipe), std::ptr::null());
        }
    }

    /// A pipe has no half-close: the host leaves on the exit message, and
    /// sees the end of the stream when the handle closes.
    pub fn shutdown_write(&self) {}
}

/// How far up the process tree a wrapper's PowerShell may be.
const MAX_DEPTH: usize = 32;

/// `pid` is `ancestor` or below it, by the parent ids of a process
/// snapshot. A parent id on Windows may name a process that has died and
/// whose id was reused, so each link counts only if the parent was created
/// no later than the child. The host itself cannot be reused: we hold its
/// process handle.
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let parents = process_parents();
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        if current == ancestor {
            return true;
        }
        let Some(&parent) = parents.get(&current) else {
            return false;
        };
        if parent == 0 || parent == current {
            return false;
        }
        match (creation_time(parent), creation_time(current)) {
            (Some(born), Some(child_born)) if born <= child_born => current = parent,
            _ => return false,
        }
    }
    false
}

/// Every process id with its parent's, from a Toolhelp snapshot.
fn process_parents() -> std::collections::HashMap<u32, u32> {
    let mut parents = std::collections::HashMap::new();
    // SAFETY: no preconditions; the handle is checked, then owned.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return parents;
    }
    // SAFETY: a valid handle that we own from here on.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot as RawHandle) };
    let mut entry = PROCESSENTRY32W {
        dwSize: size_u32::<PROCESSENTRY32W>(),
        ..Default::default()
    };
    // SAFETY: a valid snapshot handle and an entry whose dwSize is set.
    let mut more = unsafe { Process32FirstW(raw(&snapshot), &mut entry) } != 0;
    while more {
        parents.insert(entry.th32ProcessID, entry.th32ParentProcessID);
        // SAFETY: as above.
        more = unsafe { Process32NextW(raw(&snapshot), &mut entry) } != 0;
    }
    parents
}

/// When the process was created (100 ns units), if it can be opened.
fn creation_time(pid: u32) -> Option<u64> {
    // SAFETY: no preconditions; the handle is checked, then owned.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return None;
    }
    // SAFETY: a valid handle that we own from here on.
    let process = unsafe { OwnedHandle::from_raw_handle(process as RawHandle) };
    let mut times = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut times;
    // SAFETY: a valid process handle and four FILETIME out-parameters.
    if unsafe { GetProcessTimes(raw(&process), created, exited, kernel, user) } == 0 {
        return None;
    }
    Some((u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// Whether a wake (Ruby's unblocking function) ends a pending operation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wakeable {
    Yes,
    No,
}

fn is_disconnected(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(i32::cast_unsigned),
        Some(
            ERROR_BROKEN_PIPE | ERROR_NO_DATA | ERROR_PIPE_NOT_CONNECTED | ERROR_OPERATION_ABORTED
        )
    )
}

/// Milliseconds for a wait, rounded up (never 0 while time is left) and kept
/// below INFINITE.
fn millis(duration: Duration) -> u32 {
    let millis = duration.as_micros().div_ceil(1000);
    u32::try_from(millis).map_or(u32::MAX - 1, |millis| millis.min(u32::MAX - 1))
}

/// The size of a Win32 structure, as the `u32` the API takes.
pub(super) fn size_u32<T>() -> u32 {
    u32::try_from(std::mem::size_of::<T>()).expect("a Win32 structure's size fits in a u32")
}

/// Interrupt plumbing for one blocking call: [`Cancel::unblock`] sets a flag
/// and an event that every wait of the call also waits on. Ruby calls it
/// from another thread. A wake leaves the pipe intact.
pub struct Cancel {
    woken: AtomicBool,
    /// None only if the system refused an event; waits then end at their
    /// deadline rather than at once.
    event: Option<OwnedHandle>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel {
            woken: AtomicBool::new(false),
            event: new_event().ok(),
        }
    }
}

impl Cancel {
    /// Wakes the wait; the pipe is left as it is.
    pub fn unblock(&self) {
        self.woken.store(true, Ordering::SeqCst);
        if let Some(event) = &self.event {
            // SAFETY: a valid event handle we own.
            unsafe {
                SetEvent(raw(event));
            }
        }
    }

    /// Clears a wake, before the next wait (with Ruby's GVL held, before the
    /// unblocking function is installed, so no wake is lost).
    pub fn rearm(&self) {
        if let Some(event) = &self.event {
            // SAFETY: a valid event handle we own.
            unsafe {
                ResetEvent(raw(event));
            }
        }
        self.woken.store(false, Ordering::SeqCst);
    }

    pub fn is_woken(&self) -> bool {
        self.woken.load(Ordering::SeqCst)
    }

    /// Waits between connection attempts; a wake ends the pause at once.
    pub fn pause(&self, duration: Duration) {
        match &self.event {
            // SAFETY: a valid event handle we own.
            Some(event) => unsafe {
                WaitForSingleObject(raw(event), millis(duration));
            },
            None => std::thread::sleep(duration),
        }
    }

    fn event_handle(&self) -> HANDLE {
        self.event.as_ref().map_or(std::ptr::null_mut(), raw)
    }
}
