//! `Pwshlib::DscScript`: one DSC call's script as the provider built it,
//! handed to `Pwsh::Manager#execute_dsc` without becoming a Ruby String.
//! It carries the call's lines and the secrets they refer to by variable,
//! which the host binds (docs/protocol.md, "Secrets"): so the secrets
//! never cross into Ruby as text, nor into PowerShell as code.
//!
//! It holds owned Rust data only (no Ruby value), so it needs no marking.

use magnus::{method, prelude::*, Error, RArray, RString, Ruby};
use pwshlib_core::bound::{BoundValue, SecretBinding};
use pwshlib_core::call_data::DscCallData;
use pwshlib_core::script::Script;
use pwshlib_transport::protocol::{BoundSecret, ExecuteRequest, SecretValue};

use crate::convert::lossy_string;

/// A request's code: as given, or a DSC call's script with the secrets it
/// binds and its inline form for a host that cannot bind, or the call as
/// data with the secrets the data names and the script to render for a
/// host that does not take calls as data.
pub struct RequestCode<'s> {
    pub code: String,
    pub secrets: Vec<BoundSecret>,
    /// Borrowed from the DSC script for the call: copied only for a host
    /// that cannot bind.
    pub inline: Option<&'s str>,
    /// The call as data, for a host that offers it.
    pub dsc: Option<serde_json::Value>,
    /// The variables `dsc` names: the request's `secrets` when it goes.
    pub dsc_secrets: Vec<BoundSecret>,
    /// With `dsc`: the call, whose text ([`text_request`]) goes instead
    /// to a host that does not take calls as data.
    pub text: Option<&'s Script>,
}

impl<'s> RequestCode<'s> {
    /// The request for this code, its inline form for a host that cannot
    /// bind, and the call to render for a host that does not take data.
    pub fn into_request(
        self,
        timeout_ms: Option<u64>,
        working_dir: Option<String>,
        env_vars: &[String],
    ) -> (ExecuteRequest, Option<&'s str>, Option<&'s Script>) {
        let mut request = ExecuteRequest::new(self.code, timeout_ms, working_dir, env_vars);
        request.secrets = self.secrets;
        request.dsc = self.dsc;
        request.dsc_secrets = self.dsc_secrets;
        (request, self.inline, self.text)
    }

    pub fn plain(code: RString) -> RequestCode<'static> {
        RequestCode {
            code: lossy_string(code),
            secrets: Vec::new(),
            inline: None,
            dsc: None,
            dsc_secrets: Vec::new(),
            text: None,
        }
    }
}

/// `PWSHLIB_DSC_DATA` set to `0`, `false`, `no` or `off` (read per call)
/// sends every DSC call as script text, as before DSC calls went as data, for
/// bench/fresh_host_bench.rb's comparison and as an escape hatch.
fn data_enabled() -> bool {
    !std::env::var("PWSHLIB_DSC_DATA")
        .is_ok_and(|value| pwshlib_core::script::direct_disabled_by(&value))
}

#[magnus::wrap(class = "Pwshlib::DscScript", free_immediately, size)]
pub struct DscScript(pub Script);

impl DscScript {
    /// The call's lines in the data form: no secret in them.
    fn body(&self) -> String {
        self.0.body().to_owned()
    }

    /// The names of the variables the host binds, without `$`.
    fn secret_names(ruby: &Ruby, rb_self: &Self) -> RArray {
        ruby.ary_from_iter(rb_self.0.bindings().iter().map(|b| b.name.clone()))
    }

    /// The call's lines, with how many secrets are bound; never a secret.
    fn inspect(&self) -> String {
        format!(
            "#<Pwshlib::DscScript {} bound secret(s)>\n{}",
            self.0.bindings().len(),
            self.0.body()
        )
    }
}

/// The request's code for a DSC call: the call as data
/// (`pwshlib_core::call_data`) with the secrets it names, no text rendered
/// (a host that does not take data gets [`text_request`] instead); or,
/// when data is turned off or the script was read from text, its text.
pub fn request_code(script: &Script) -> RequestCode<'_> {
    match script.call().filter(|_| data_enabled()) {
        Some(call) => RequestCode {
            code: String::new(),
            secrets: Vec::new(),
            inline: None,
            dsc: Some(DscCallData::to_json(call)),
            dsc_secrets: call.secrets.iter().map(wire_secret).collect(),
            text: Some(script),
        },
        None => text_code(script),
    }
}

/// A DSC call's text: its lines with the secrets bound, and the inline
/// form for a host that cannot bind.
fn text_code(script: &Script) -> RequestCode<'_> {
    let secrets: Vec<BoundSecret> = script.bindings().iter().map(wire_secret).collect();
    RequestCode {
        inline: (!secrets.is_empty()).then(|| script.inline_body()),
        code: script.body().to_owned(),
        secrets,
        dsc: None,
        dsc_secrets: Vec::new(),
        text: None,
    }
}

/// `request` made the text of `script`'s call, for a host that does not
/// take calls as data; the inline form, for one that cannot bind.
pub fn text_request<'s>(script: &'s Script, request: &mut ExecuteRequest) -> Option<&'s str> {
    let code = text_code(script);
    request.code = code.code;
    request.secrets = code.secrets;
    request.dsc = None;
    request.dsc_secrets.clear();
    code.inline
}

fn wire_secret(binding: &SecretBinding) -> BoundSecret {
    let value = match &binding.value {
        BoundValue::Text(value) => SecretValue::String {
            value: value.clone(),
        },
        BoundValue::Integer(value) => SecretValue::Integer {
            value: value.clone(),
        },
        BoundValue::Real(value) => SecretValue::Real {
            value: value.clone(),
        },
        BoundValue::Bool(value) => SecretValue::Bool { value: *value },
        BoundValue::Credential { user, password, .. } => SecretValue::Credential {
            user: user.clone(),
            password: password.clone(),
        },
    };
    BoundSecret {
        name: binding.name.clone(),
        value,
    }
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("Pwshlib")?;
    let class = module.define_class("DscScript", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_method("body", method!(DscScript::body, 0))?;
    class.define_method("secret_names", method!(DscScript::secret_names, 0))?;
    class.define_method("inspect", method!(DscScript::inspect, 0))?;
    class.define_method("to_s", method!(DscScript::inspect, 0))?;
    Ok(())
}
