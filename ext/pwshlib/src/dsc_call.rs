//! `Pwshlib::DscCall`: one DSC call the provider's session prepared
//! (`_dsc_call`), held by the Ruby spine while the manager runs it
//! (`Pwsh::Manager#execute_dsc(call)`, one native call that answers the
//! result's data): its script, what reading the answer needs
//! (`pwshlib_core::lifecycle::DscCall`), and the provider and context the
//! answer is read for. Its text becomes a Ruby String only when asked
//! (`script_text`, for a manager without `execute_dsc`).
//!
//! It holds two Ruby values, the provider and the context, marked below.

use std::cell::{Cell, Ref, RefCell, RefMut};

use magnus::{
    gc::Marker, method, prelude::*, typed_data::DataTypeFunctions, value::Opaque, Error, RString,
    Ruby, Value as RValue,
};
use pwshlib_core::edition::HostChoice;
use pwshlib_core::lifecycle;
use pwshlib_core::script::Script;
use pwshlib_core::templates;

use crate::dsc_script::DscScript;

#[derive(magnus::TypedData)]
#[magnus(class = "Pwshlib::DscCall", free_immediately, size, mark)]
pub struct DscCall {
    call: RefCell<lifecycle::DscCall>,
    script: Script,
    collided: Cell<bool>,
    /// The PowerShell edition the call's module runs on, when it has one:
    /// the spine reads its name (`powershell_edition`, lib/pwshlib/dsc_call.rb).
    host: Option<HostChoice>,
    /// The `Puppet::Provider::DscBaseProvider` whose session made the call.
    provider: Opaque<RValue>,
    /// The Resource API context the call's answer is reported to.
    context: Opaque<RValue>,
}

impl DataTypeFunctions for DscCall {
    // The call lives as long as the spine holds it; the provider and the
    // context must live (and stay put) as long.
    fn mark(&self, marker: &Marker) {
        marker.mark(self.provider);
        marker.mark(self.context);
    }
}

impl DscCall {
    pub fn new(
        call: lifecycle::DscCall,
        script: Script,
        host: Option<HostChoice>,
        provider: RValue,
        context: RValue,
    ) -> Self {
        DscCall {
            call: RefCell::new(call),
            script,
            collided: Cell::new(false),
            host,
            provider: provider.into(),
            context: context.into(),
        }
    }

    /// The provider and the context the call's answer is read for.
    pub fn reader(&self, ruby: &Ruby) -> (RValue, RValue) {
        (ruby.get_inner(self.provider), ruby.get_inner(self.context))
    }

    pub fn call(&self) -> Ref<'_, lifecycle::DscCall> {
        self.call.borrow()
    }

    pub fn call_mut(&self) -> RefMut<'_, lifecycle::DscCall> {
        self.call.borrow_mut()
    }

    pub fn script_ref(&self) -> &Script {
        &self.script
    }

    pub fn set_collided(&self, collided: bool) {
        self.collided.set(collided);
    }

    /// The script for `execute_dsc` (the lines, and the secrets as data).
    fn script(&self) -> DscScript {
        DscScript(self.script.clone())
    }

    /// The whole text, secrets set inline, for a manager that takes text.
    fn script_text(ruby: &Ruby, rb_self: &Self) -> RString {
        ruby.str_new(rb_self.script.text())
    }

    /// This call's lines after the prelude, secrets set inline, for a
    /// manager with `execute_with_prelude` only.
    fn inline_body(ruby: &Ruby, rb_self: &Self) -> RString {
        ruby.str_new(rb_self.script.inline_body())
    }

    fn prelude(&self) -> bool {
        self.script.has_prelude()
    }

    pub fn timeout_ms(&self) -> Option<u64> {
        self.call.borrow().timeout_ms()
    }

    fn method(&self) -> &'static str {
        self.call.borrow().method().as_lowercase_str()
    }

    /// Whether `--debug` shows the script (`_show_script`) before it is sent.
    fn shows_script(&self) -> bool {
        self.call.borrow().shows_script()
    }

    /// The call's failure when its edition's PowerShell is not there:
    /// `not_found` says where `Pwsh::Manager` looked. As given for a call
    /// without an edition.
    fn edition_unavailable(&self, not_found: String) -> String {
        match &self.host {
            Some(host) => host.unavailable(&not_found),
            None => not_found,
        }
    }

    fn collided(&self) -> bool {
        self.collided.get()
    }

    fn inspect(&self) -> String {
        format!("#<Pwshlib::DscCall {}>", self.method())
    }
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("Pwshlib")?;
    module.const_set("PRELUDE_NAME", templates::PRELUDE_NAME)?;
    let class = module.define_class("DscCall", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_method("script", method!(DscCall::script, 0))?;
    class.define_method("script_text", method!(DscCall::script_text, 0))?;
    class.define_method("inline_body", method!(DscCall::inline_body, 0))?;
    class.define_method("prelude?", method!(DscCall::prelude, 0))?;
    class.define_method("timeout_ms", method!(DscCall::timeout_ms, 0))?;
    class.define_method("method_name", method!(DscCall::method, 0))?;
    class.define_method("collided?", method!(DscCall::collided, 0))?;
    class.define_method(
        "edition_unavailable",
        method!(DscCall::edition_unavailable, 1),
    )?;
    class.define_method("shows_script?", method!(DscCall::shows_script, 0))?;
    class.define_method("inspect", method!(DscCall::inspect, 0))?;
    Ok(())
}
