//! The simulated PowerShell host as a library, so that tests can drive the
//! DSC engine without a socket.

pub mod comparing;
pub mod dsc;
pub mod faults;
pub mod outcome;
pub mod prelude;
pub mod psvalue;
pub mod state;
pub mod syntax;
