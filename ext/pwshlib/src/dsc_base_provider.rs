//! `Puppet::Provider::DscBaseProvider`: the base class of every scaffolded
//! DSC provider.

use std::cell::RefCell;

use magnus::{function, method, prelude::*, Error, RClass, RModule, Ruby};

/// Per-run provider state. Only owned Rust data lives here; Ruby values are
/// converted on the way in.
#[derive(Default)]
pub struct ProviderState {}

#[derive(Default)]
#[magnus::wrap(class = "Puppet::Provider::DscBaseProvider", free_immediately, size)]
pub struct DscBaseProvider {
    state: RefCell<ProviderState>,
}

impl DscBaseProvider {
    /// Ruby `initialize`: takes no arguments, like pwshlib 2.x, so that
    /// `described_class.new` and Resource API instantiation both work.
    fn initialize(&self) {
        *self.state.borrow_mut() = ProviderState::default();
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
