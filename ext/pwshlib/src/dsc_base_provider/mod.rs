//! `Puppet::Provider::DscBaseProvider`: the base class of every scaffolded
//! DSC provider. The native object is the provider's session (its state,
//! caches and secrets); the Ruby side
//! (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb) reopens the
//! class for the spine: every method a pwshlib 2.x provider overrides
//! (`canonicalize`, `get`, `set`, `insync?`, `invoke_*_method`,
//! `invoke_dsc_resource`, `ps_manager` …), plain Ruby, calling the
//! session's private steps. No native method calls a provider method.
//!
//! - `lifecycle_methods`: the steps of `canonicalize`, `get` and `insync?`;
//! - `change_steps`: the steps of `set`, `invoke_set_method` and
//!   `invoke_test_method`;
//! - `call_steps`: the steps of one DSC call (`invoke_dsc_resource`), and
//!   the reading of its answer for `Pwsh::Manager#execute_dsc`;
//! - `step_args`: the arguments and answers the steps share (each steps
//!   file uses it and registers its own steps: no file imports another's);
//! - `helper_methods`: the pwshlib 2.x helpers (`same?`, caches, …);
//! - `script_methods`: the pwshlib 2.x script-building surface;
//! - `session`: the provider's state and its context's log methods as the
//!   core lifecycle sees them (`pwshlib_core::lifecycle::Provider`);
//! - `run`: which Puppet run a call belongs to; `logon_memo`: the accounts
//!   whose logon failed in it; `constants`: Puppet's constants, found once;
//! - `state`: the provider's state, by how long each part lives;
//! - `private_state`: every read of Puppet's and the Resource API's
//!   non-public state, with the versions it was checked on.

mod call_steps;
mod change_steps;
mod constants;
mod edition_memo;
mod helper_methods;
mod lifecycle_methods;
mod logon_memo;
mod private_state;
mod run;
mod script_methods;
mod session;
mod state;
mod step_args;

use std::cell::RefCell;

use magnus::{function, method, prelude::*, Error, RClass, RModule, Ruby};

pub(crate) use call_steps::{answer, show_before_sending};
use state::{ProviderFacts, RunCaches};

/// The Ruby instance variable holding the resolved PowerShell command
/// (`ps_manager`'s memo, set by the Ruby side), forgotten with each new run.
const POWERSHELL_MEMO_IVAR: &str = "@powershell_command";

#[derive(Default)]
#[magnus::wrap(class = "Puppet::Provider::DscBaseProvider", free_immediately, size)]
pub struct DscBaseProvider {
    /// Learnt once for the provider's life (the type, metaparameters, the
    /// collision wait set from Ruby).
    facts: RefCell<ProviderFacts>,
    /// The caches of the current run.
    run: RefCell<RunCaches>,
    /// The resources of the `canonicalize` call under way, read by
    /// `_canonicalize_plan` for `_canonicalize_all`.
    canonicalizing: RefCell<Vec<lifecycle_methods::Planned>>,
}

impl DscBaseProvider {
    /// Ruby `initialize`: takes no arguments, like pwshlib 2.x, so that
    /// `described_class.new` and Resource API instantiation both work.
    fn initialize(&self) {
        *self.facts.borrow_mut() = ProviderFacts::default();
        *self.run.borrow_mut() = RunCaches::default();
        self.canonicalizing.borrow_mut().clear();
    }
}

/// Defines the class under `Puppet::Provider` once Puppet is loaded. The
/// Ruby loader calls it after `require 'puppet'`; defining it twice is a
/// no-op.
fn define_dsc_base_provider(ruby: &Ruby) -> Result<bool, Error> {
    let puppet: RModule = ruby.class_object().const_get("Puppet")?;
    let provider: RClass = puppet.const_get("Provider")?;
    if provider
        .const_get::<_, magnus::Value>("DscBaseProvider")
        .is_ok()
    {
        return Ok(false);
    }
    let class = provider.define_class("DscBaseProvider", ruby.class_object())?;
    class.define_alloc_func::<DscBaseProvider>();
    class.define_method("initialize", method!(DscBaseProvider::initialize, 0))?;
    lifecycle_methods::define(class)?;
    change_steps::define(class)?;
    call_steps::define(class)?;
    helper_methods::define(class)?;
    script_methods::define(class)?;
    Ok(true)
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let pwshlib = ruby.define_module("Pwshlib")?;
    pwshlib.define_module_function(
        "define_dsc_base_provider",
        function!(define_dsc_base_provider, 0),
    )?;
    Ok(())
}
