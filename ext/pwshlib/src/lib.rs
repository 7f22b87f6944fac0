//! Ruby entry point. Each Ruby class lives in its own file; `init` only
//! dispatches to them.

mod convert;
mod dsc_base_provider;
mod error;
mod gvl;
mod literal;
mod manager;

use magnus::{Error, Ruby};

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    dsc_base_provider::init(ruby)?;
    manager::init(ruby)?;
    literal::init(ruby)?;
    Ok(())
}
