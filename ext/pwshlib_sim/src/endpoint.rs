//! The host's end of the transport (docs/protocol.md, "Transport"), the same
//! small API on every platform:
//!
//! * [`Listener::bind`] starts serving the `-PipePath` endpoint: a Unix
//!   socket path, or on Windows a named pipe path (`\\.\pipe\<name>`);
//! * [`Listener::accept`] waits for the manager's one connection and gives
//!   back the connection (`Read + Write`); nobody else can connect after it.
//!   Given the manager's pid (`-ParentPid`), a client that is another
//!   process is refused (hung up on, unanswered) and the wait goes on, as
//!   host.ps1 refuses it (`PwshlibHost.PeerCheck`);
//! * [`clean_up`] removes what the endpoint leaves behind when the host is
//!   done (the socket file; nothing for a pipe, which goes with its handle);
//! * [`watch_parent`] exits the process (cleaning up) once the `-ParentPid`
//!   process is gone, so that a killed Ruby leaves no host behind.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{clean_up, watch_parent, Listener};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{clean_up, watch_parent, Listener};
