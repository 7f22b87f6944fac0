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

    /// Accepts one connection and stops listening.
    pub fn accept(self) -> io::Result<Connection> {
        let (stream, _) = self.0.accept()?;
        Ok(stream)
    }
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
