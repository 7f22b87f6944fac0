//! Ruby entry point. Each Ruby class lives in its own file; `init` only
//! dispatches to them.

mod convert;
mod dsc_base_provider;
mod dsc_call;
mod dsc_script;
mod error;
mod gvl;
mod literal;
mod manager;
mod manager_values;

use magnus::{Error, Ruby};

/// The extension's Rust allocations (its owned values, scripts, caches) go
/// to mimalloc, not to the C library's malloc that Ruby and Puppet share:
/// in an agent's large, fragmented heap, glibc's free-list work
/// (consolidating and unlinking chunks) was over a quarter of the
/// provider's own time per in-sync resource (`rake bench`, profiled with
/// perf). Ruby's objects are untouched; nothing allocated here is freed by
/// Ruby or the other way round.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    dsc_base_provider::init(ruby)?;
    manager::init(ruby)?;
    dsc_script::init(ruby)?;
    dsc_call::init(ruby)?;
    literal::init(ruby)?;
    Ok(())
}
