//! Unix: a Unix domain socket at the `-PipePath` path.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub type Connection = UnixStream;

pub struct Listener(UnixListener);

impl Listener {
    /// Binds the socket; fails if `path` exists already.
    pub fn bind(path: &Path) -> io::Result<Listener> {
        UnixListener::bind(path).map(Listener)
    }

    /// Accepts the manager's connection and stops listening. With
    /// `client_pid`, another process's connection is closed unanswered and
    /// the wait goes on (on Linux, where SO_PEERCRED names the peer).
    pub fn accept(self, client_pid: Option<u32>) -> io::Result<Connection> {
        loop {
            let (stream, _) = self.0.accept()?;
            let Some(expected) = client_pid else {
                return Ok(stream);
            };
            match peer_pid(&stream) {
                Ok(None) => return Ok(stream),
                Ok(Some(pid)) if pid == expected => return Ok(stream),
                Ok(Some(pid)) => eprintln!(
                    "pwshlib-sim: refused a client (pid {pid}): only the manager (pid {expected}) may connect"
                ),
                Err(e) => eprintln!("pwshlib-sim: refused a client that could not be identified: {e}"),
            }
        }
    }
}

/// The pid of the process at the other end (SO_PEERCRED: the pid that
/// connected, as the kernel recorded it at connect time).
#[cfg(target_os = "linux")]
fn peer_pid(stream: &UnixStream) -> io::Result<Option<u32>> {
    use std::os::unix::io::AsRawFd;
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut length = libc::socklen_t::try_from(std::mem::size_of::<libc::ucred>())
        .map_err(|_| io::Error::other("ucred size"))?;
    // SAFETY: a connected socket's descriptor, and a live ucred of
    // `length` bytes for the kernel to fill.
    let done = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::addr_of_mut!(credentials).cast(),
            &mut length,
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u32::try_from(credentials.pid).ok())
}

/// Elsewhere the peer is not checked: the socket's 0700 directory admits
/// this user alone.
#[cfg(not(target_os = "linux"))]
fn peer_pid(_stream: &UnixStream) -> io::Result<Option<u32>> {
    Ok(None)
}

/// Removes the socket file.
pub fn clean_up(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Polls `/proc/<pid>` (and our own parent, in case the pid is reused after
/// we were reparented) every 250 ms; exits, removing the socket, once the
/// parent is gone.
pub fn watch_parent(parent_pid: u32, socket: PathBuf) {
    let proc_dir = PathBuf::from(format!("/proc/{parent_pid}"));
    let started_under_parent = std::os::unix::process::parent_id() == parent_pid;
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(250));
        let reparented = started_under_parent && std::os::unix::process::parent_id() != parent_pid;
        if reparented || !proc_dir.exists() {
            clean_up(&socket);
            // The private directory the manager made for the socket:
            // nobody else is left to remove it (remove_dir refuses a
            // directory that is not empty).
            if let Some(dir) = socket.parent().filter(|dir| {
                dir.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with("pwshlib-"))
            }) {
                let _ = std::fs::remove_dir(dir);
            }
            std::process::exit(0);
        }
    });
}
