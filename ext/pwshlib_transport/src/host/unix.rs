//! The host transport on Unix: a Unix socket in a private directory of its
//! own under the temporary directory, and a check of the process at the
//! other end before anything is sent.
//!
//! Deadlines are socket timeouts recomputed before every read and write. A
//! read or write waits in slices of at most [`WAKE_SLICE`], checking the
//! call's [`Cancel`] between slices: a wake only sets a flag (an atomic
//! store is async-signal-safe) and must leave the connection intact, since
//! Ruby wakes us for every signal it handles, and the call goes on after
//! most of them.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::channel::{remaining, woken_error};

/// The longest a read or write blocks before it checks for a wake: the
/// delay between an interrupt and the wait ending.
const WAKE_SLICE: Duration = Duration::from_millis(50);

/// How messages name the endpoint.
pub const ENDPOINT_KIND: &str = "socket";

/// The socket's file name inside its private directory.
const SOCKET_FILE: &str = "host.sock";

/// A fresh socket path, `$TMPDIR/pwshlib-<pid>-<uuid>/host.sock`, in a
/// directory made here with mode 0700 (not through the umask) that did not
/// exist before (`mkdir` fails on an existing name or a planted symlink):
/// only this user (and root) can bind, connect or even see the socket. The
/// PID is for whoever cleans up after a crash, the random part so that
/// nobody can guess the name ahead of the host.
///
/// A socket path must fit `sockaddr_un.sun_path` with its NUL (108 bytes
/// on Linux, 104 on macOS): under a long `TMPDIR` (macOS's per-user
/// `/var/folders/…` is close already) the directory is made in `/tmp`
/// instead (the review's N15).
pub fn new_endpoint() -> io::Result<String> {
    new_endpoint_in(&std::env::temp_dir())
}

/// The most bytes a socket path may have: `sun_path` less its NUL.
#[cfg(target_os = "macos")]
const MAX_SOCKET_PATH: usize = 103;
#[cfg(not(target_os = "macos"))]
const MAX_SOCKET_PATH: usize = 107;

/// Where the socket's directory goes when the temporary directory's path
/// is too long: short, and on every Unix.
const SHORT_TEMP_DIR: &str = "/tmp";

fn new_endpoint_in(temp: &std::path::Path) -> io::Result<String> {
    use std::os::unix::fs::DirBuilderExt;
    let name = format!(
        "pwshlib-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let fits = temp.join(&name).join(SOCKET_FILE).as_os_str().len() <= MAX_SOCKET_PATH;
    let base = if fits {
        temp
    } else {
        std::path::Path::new(SHORT_TEMP_DIR)
    };
    let dir = base.join(name);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir.join(SOCKET_FILE).display().to_string())
}

/// The host's socket file (it normally removes it itself, but not when it
/// was killed), then the private directory made for it.
pub fn remove_endpoint(endpoint: &str) {
    let path = std::path::Path::new(endpoint);
    let _ = std::fs::remove_file(path);
    if path.file_name() == Some(std::ffi::OsStr::new(SOCKET_FILE)) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Its own process group: a Ctrl-C meant for Ruby reaches the manager as an
/// interrupt, and the manager decides the host's fate.
pub fn detach_from_our_interrupts(command: &mut Command) {
    std::os::unix::process::CommandExt::process_group(command, 0);
}

/// `fork`/`exec` failures here say something about the program or the
/// system's limits; none is worth retrying at once.
pub fn is_transient_start_failure(_error: &io::Error) -> bool {
    false
}

/// On Unix the host watches its parent PID itself (`-ParentPid`); nothing
/// more to hold.
pub struct ProcessGuard;

impl ProcessGuard {
    pub fn new(_child: &Child) -> Self {
        ProcessGuard
    }
}

pub struct Connection {
    stream: UnixStream,
}

impl Connection {
    /// One attempt; the caller retries until its pipe_timeout.
    pub fn connect(endpoint: &str) -> io::Result<Connection> {
        UnixStream::connect(endpoint).map(|stream| Connection { stream })
    }

    /// The process at the other end, checked before anything is sent: it
    /// must be `host_pid` (the process the manager started) or one of its
    /// descendants (PowerShell started through a wrapper), and run as this
    /// user. A socket someone else bound first, or any process that is not
    /// the host, fails here and is sent nothing: requests carry scripts
    /// with credentials.
    pub fn check_peer(&self, host_pid: u32) -> Result<(), String> {
        peer::check(&self.stream, host_pid)
    }

    pub fn read(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        cancel: &Cancel,
    ) -> io::Result<usize> {
        in_slices(deadline, cancel, |slice| {
            self.stream.set_read_timeout(Some(slice))?;
            self.stream.read(buf)
        })
    }

    pub fn write(&mut self, buf: &[u8], deadline: Instant, cancel: &Cancel) -> io::Result<usize> {
        in_slices(deadline, cancel, |slice| {
            self.stream.set_write_timeout(Some(slice))?;
            self.stream.write(buf)
        })
    }

    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Tells the host no more requests come (it sees EOF).
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

/// Retries `operation` in slices of at most [`WAKE_SLICE`] (the socket's
/// timeout, which it sets) until it does something, the deadline passes or
/// the wait is woken.
fn in_slices(
    deadline: Instant,
    cancel: &Cancel,
    mut operation: impl FnMut(Duration) -> io::Result<usize>,
) -> io::Result<usize> {
    loop {
        if cancel.is_woken() {
            return Err(woken_error());
        }
        match operation(remaining(deadline)?.min(WAKE_SLICE)) {
            Err(e) if is_slice_over(&e) => {}
            other => return other,
        }
    }
}

/// A socket timeout (or a signal: EINTR) ended the slice; the deadline and
/// the wake flag decide what comes next.
fn is_slice_over(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Interrupt plumbing for one blocking call. [`Cancel::unblock`] may run in
/// a signal handler, so it only does an atomic store; waits see it within
/// `WAKE_SLICE` (50 ms).
#[derive(Default)]
pub struct Cancel {
    woken: AtomicBool,
}

impl Cancel {
    /// Wakes the wait; the connection is left as it is.
    pub fn unblock(&self) {
        self.woken.store(true, Ordering::SeqCst);
    }

    /// Clears a wake, before the next wait (with Ruby's GVL held, before the
    /// unblocking function is installed, so no wake is lost).
    pub fn rearm(&self) {
        self.woken.store(false, Ordering::SeqCst);
    }

    pub fn is_woken(&self) -> bool {
        self.woken.load(Ordering::SeqCst)
    }

    /// Sleeps between connection attempts (short: the flag is checked after).
    pub fn pause(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Who is at the other end of a connected Unix socket.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
mod peer {
    use std::os::unix::io::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// How far up the process tree a wrapper's PowerShell may be.
    const MAX_DEPTH: usize = 32;

    pub fn check(stream: &UnixStream, host_pid: u32) -> Result<(), String> {
        let (pid, uid) = credentials(stream).map_err(|e| {
            format!("the process serving the PowerShell host's socket could not be identified ({e}); nothing was sent to it")
        })?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let ours = unsafe { libc::geteuid() };
        if uid != ours {
            return Err(format!(
                "the process serving the PowerShell host's socket (pid {pid}) runs as uid {uid}, not as this user (uid {ours}); nothing was sent to it"
            ));
        }
        if descends_from(pid, host_pid) {
            return Ok(());
        }
        Err(format!(
            "the process serving the PowerShell host's socket (pid {pid}) is not the host that was started (pid {host_pid}) nor one of its children; nothing was sent to it"
        ))
    }

    /// `pid` is `ancestor` or below it. The host is our child and is not
    /// reaped before this check, so its pid cannot have been reused.
    fn descends_from(pid: u32, ancestor: u32) -> bool {
        let mut current = pid;
        for _ in 0..MAX_DEPTH {
            if current == ancestor {
                return true;
            }
            match parent_of(current) {
                Some(parent) if parent > 1 && parent != current => current = parent,
                _ => return false,
            }
        }
        false
    }

    /// getsockopt for an option whose value is one plain `T`, starting from
    /// `initial` (the kernel overwrites it).
    fn socket_option<T>(
        stream: &UnixStream,
        level: libc::c_int,
        name: libc::c_int,
        initial: T,
    ) -> std::io::Result<T> {
        let mut value = initial;
        let mut length = libc::socklen_t::try_from(std::mem::size_of::<T>())
            .expect("a socket option's size fits in socklen_t");
        // SAFETY: a valid socket descriptor, and a buffer of the size passed.
        let status = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                level,
                name,
                (&raw mut value).cast::<libc::c_void>(),
                &mut length,
            )
        };
        if status != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(value)
    }

    /// A pid the kernel reported; never negative for a live peer.
    fn pid_from(pid: libc::pid_t) -> std::io::Result<u32> {
        u32::try_from(pid).map_err(|_| std::io::Error::other(format!("peer pid {pid}")))
    }

    /// SO_PEERCRED: the pid and uid of the process that called listen()
    /// on the socket we connected to, recorded by the kernel at connect.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn credentials(stream: &UnixStream) -> std::io::Result<(u32, u32)> {
        let empty = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let credentials = socket_option(stream, libc::SOL_SOCKET, libc::SO_PEERCRED, empty)?;
        Ok((pid_from(credentials.pid)?, credentials.uid))
    }

    /// The fourth field of /proc/<pid>/stat, after the command name (which
    /// may itself hold spaces and parentheses, so the last ')' ends it).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn parent_of(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_whitespace().nth(1)?.parse().ok()
    }

    /// LOCAL_PEERPID (the peer's pid) and getpeereid (its effective uid).
    #[cfg(target_os = "macos")]
    fn credentials(stream: &UnixStream) -> std::io::Result<(u32, u32)> {
        let pid: libc::pid_t = socket_option(stream, libc::SOL_LOCAL, libc::LOCAL_PEERPID, 0)?;
        let (mut uid, mut gid): (libc::uid_t, libc::gid_t) = (0, 0);
        // SAFETY: a valid socket descriptor and two out-parameters.
        if unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((pid_from(pid)?, uid))
    }

    /// proc_pidinfo(PROC_PIDTBSDINFO): the parent pid.
    #[cfg(target_os = "macos")]
    fn parent_of(pid: u32) -> Option<u32> {
        // SAFETY: proc_bsdinfo is plain data; all zeros is a valid value.
        let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
        let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>())
            .expect("proc_bsdinfo's size fits in a c_int");
        // SAFETY: the buffer is a proc_bsdinfo of the size passed.
        let written = unsafe {
            libc::proc_pidinfo(
                pid as libc::c_int,
                libc::PROC_PIDTBSDINFO,
                0,
                &mut info as *mut libc::proc_bsdinfo as *mut libc::c_void,
                size,
            )
        };
        (written == size).then_some(info.pbi_ppid)
    }
}

/// Elsewhere (the BSDs): the socket's private directory is the only guard;
/// the peer is not checked.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
mod peer {
    pub fn check(_stream: &std::os::unix::net::UnixStream, _host_pid: u32) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_path_under_a_short_temp_dir_stays_there() {
        let temp = std::env::temp_dir();
        let endpoint = new_endpoint_in(&temp).unwrap();
        assert!(
            std::path::Path::new(&endpoint).starts_with(&temp),
            "{endpoint}"
        );
        remove_endpoint(&endpoint);
    }

    #[test]
    fn a_temp_dir_too_long_for_a_socket_path_falls_back_to_tmp() {
        let long = std::env::temp_dir().join("t".repeat(90));
        std::fs::create_dir_all(&long).unwrap();
        let endpoint = new_endpoint_in(&long).unwrap();
        assert!(endpoint.starts_with("/tmp/pwshlib-"), "{endpoint}");
        assert!(endpoint.len() <= MAX_SOCKET_PATH, "{endpoint}");
        // The path is one a socket can be bound at.
        let listener = std::os::unix::net::UnixListener::bind(&endpoint).unwrap();
        drop(listener);
        remove_endpoint(&endpoint);
        std::fs::remove_dir(&long).unwrap();
    }
}
