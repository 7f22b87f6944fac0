//! The PowerShell host transport of pwshlib, shared by the two ends that
//! speak to a host and by nothing else:
//!
//! * [`protocol`]: the wire protocol codec (docs/protocol.md), used by the
//!   manager and by the simulated host `pwshlib-sim`;
//! * [`host`]: the manager's side of a host process (start, connect, hello,
//!   one request at a time under a deadline, exit) over a Unix socket or a
//!   Windows named pipe, used by the binding's `Pwsh::Manager`
//!   (`ext/pwshlib/src/manager.rs`) and by the simulator's tests.
//!
//! Nothing here knows Ruby or the provider: the core (`ext/pwshlib_core`)
//! builds the scripts a host runs, and does not depend on this crate.

pub mod host;
pub mod protocol;
