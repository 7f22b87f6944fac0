//! `Pwsh::Manager`: the persistent PowerShell host manager.

use magnus::{Error, Ruby};

pub fn init(_ruby: &Ruby) -> Result<(), Error> {
    Ok(())
}
