//! Windows: a named pipe, `-PipePath` being its full path
//! (`\\.\pipe\pwshlib-<pid>-<uuid>`), one instance, byte mode, synchronous
//! I/O.

use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_INVALID_PARAMETER, ERROR_PIPE_CONNECTED, INVALID_HANDLE_VALUE,
    WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_FIRST_PIPE_INSTANCE, PIPE_ACCESS_DUPLEX};
use windows_sys::Win32::System::Pipes::{
    ConnectNamedPipe, CreateNamedPipeW, DisconnectNamedPipe, GetNamedPipeClientProcessId,
    GetNamedPipeHandleStateW, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE,
    PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{
    OpenProcess, WaitForSingleObject, INFINITE, PROCESS_SYNCHRONIZE,
};

/// The connected pipe. std's `File` reads a pipe whose client has closed
/// (`ERROR_BROKEN_PIPE`) as end of file, so a hang-up is a clean EOF.
pub type Connection = File;

/// Both buffer sizes: a hint; writes larger than this still go through.
const BUFFER_SIZE: u32 = 65536;

pub struct Listener(OwnedHandle);

impl Listener {
    /// Creates the pipe's one instance. `FILE_FLAG_FIRST_PIPE_INSTANCE`
    /// makes this fail (access denied) if the name is already served, by
    /// another host or by anyone else, rather than add an instance next to
    /// theirs. Wine ignores that flag, so the instance count is checked as
    /// well: more than ours is the same failure.
    pub fn bind(path: &Path) -> io::Result<Listener> {
        let mut name: Vec<u16> = path.as_os_str().encode_wide().collect();
        if name.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the pipe path contains a NUL character",
            ));
        }
        name.push(0);
        // SAFETY: `name` is a NUL-terminated UTF-16 string that outlives the
        // call; a null SECURITY_ATTRIBUTES pointer asks for the default
        // security descriptor and a non-inheritable handle.
        let handle = unsafe {
            CreateNamedPipeW(
                name.as_ptr(),
                PIPE_ACCESS_DUPLEX | FILE_FLAG_FIRST_PIPE_INSTANCE,
                PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
                1,
                BUFFER_SIZE,
                BUFFER_SIZE,
                0,
                std::ptr::null(),
            )
        };
        if handle == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `handle` is a valid pipe handle that CreateNamedPipeW just
        // returned; nothing else owns or closes it.
        let pipe = unsafe { OwnedHandle::from_raw_handle(handle) };
        let mut instances = 0u32;
        // SAFETY: the handle is valid for the call; `instances` is a live
        // u32 to write to; the other outputs are null, which the function
        // allows (it then does not report them).
        let queried = unsafe {
            GetNamedPipeHandleStateW(
                pipe.as_raw_handle(),
                std::ptr::null_mut(),
                &mut instances,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if queried == 0 {
            return Err(io::Error::last_os_error());
        }
        if instances > 1 {
            return Err(io::Error::from_raw_os_error(ERROR_ACCESS_DENIED as i32));
        }
        Ok(Listener(pipe))
    }

    /// Waits for the client. The pipe has one instance, so once it is
    /// connected any other client gets `ERROR_PIPE_BUSY`. With
    /// `client_pid`, a client that is another process
    /// (GetNamedPipeClientProcessId) is disconnected unanswered and the wait
    /// goes on, as host.ps1 does.
    pub fn accept(self, client_pid: Option<u32>) -> io::Result<Connection> {
        loop {
            self.connect()?;
            let Some(expected) = client_pid else {
                break;
            };
            let mut pid = 0u32;
            // SAFETY: a valid, connected pipe handle and a live u32.
            if unsafe { GetNamedPipeClientProcessId(self.0.as_raw_handle(), &mut pid) } == 0 {
                eprintln!(
                    "pwshlib-sim: refused a client that could not be identified: {}",
                    io::Error::last_os_error()
                );
            } else if pid == expected {
                break;
            } else {
                eprintln!("pwshlib-sim: refused a client (pid {pid}): only the manager (pid {expected}) may connect");
            }
            // SAFETY: a valid pipe handle; ends that client's connection so
            // that ConnectNamedPipe can take the next one.
            unsafe { DisconnectNamedPipe(self.0.as_raw_handle()) };
        }
        Ok(File::from(self.0))
    }

    fn connect(&self) -> io::Result<()> {
        // SAFETY: the handle is a valid pipe handle, open for the duration
        // of the call; it was created without FILE_FLAG_OVERLAPPED, so the
        // call is synchronous and a null OVERLAPPED pointer is correct.
        let connected = unsafe { ConnectNamedPipe(self.0.as_raw_handle(), std::ptr::null_mut()) };
        if connected == 0 {
            let error = io::Error::last_os_error();
            // The client connected between CreateNamedPipeW and
            // ConnectNamedPipe: connected all the same.
            if error.raw_os_error() != Some(ERROR_PIPE_CONNECTED as i32) {
                return Err(error);
            }
        }
        Ok(())
    }
}

/// Nothing to do: the pipe disappears with its last handle.
pub fn clean_up(_path: &Path) {}

/// Waits on the parent's process handle in a thread and exits when the
/// parent does. A pid that names no process (`ERROR_INVALID_PARAMETER`)
/// means the parent is gone already: exit at once. Any other failure to
/// open it (it exists but we may not wait on it) leaves the host unwatched,
/// with a warning, rather than kill a host whose parent is alive.
pub fn watch_parent(parent_pid: u32, _pipe: PathBuf) {
    // SAFETY: OpenProcess takes no pointers; it returns a new process
    // handle, or null on failure.
    let handle = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, parent_pid) };
    if handle.is_null() {
        let error = io::Error::last_os_error();
        if error.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) {
            std::process::exit(0);
        }
        eprintln!("pwshlib-sim: cannot watch the parent process {parent_pid}: {error}");
        return;
    }
    // SAFETY: `handle` is a valid process handle that OpenProcess just
    // returned; nothing else owns or closes it.
    let parent = unsafe { OwnedHandle::from_raw_handle(handle) };
    std::thread::spawn(move || {
        // SAFETY: `parent` is a valid handle with SYNCHRONIZE access, owned
        // by this closure and so open for the whole wait.
        let event = unsafe { WaitForSingleObject(parent.as_raw_handle(), INFINITE) };
        if event == WAIT_OBJECT_0 {
            std::process::exit(0);
        }
        eprintln!(
            "pwshlib-sim: waiting for the parent process {parent_pid} failed: {}",
            io::Error::last_os_error()
        );
    });
}
