//! The session's steps of one DSC call (`invoke_dsc_resource`): the call
//! and its script (with the load path it is given), the answer read (for
//! `Pwsh::Manager#execute_dsc`, or of another manager's result), the
//! collision waits (`lifecycle_methods` registers them).

use magnus::{
    method, prelude::*, typed_data::Obj, Error, RArray, RClass, RString, Ruby, Value as RValue,
};
use pwshlib_core::lifecycle::{self, ExecuteOutput, Outcome};
use pwshlib_core::script::DscMethod;
use pwshlib_core::Value;

use super::edition_memo;
use super::session::{execute_output, Session};
use super::step_args::{nil, option_value_to_ruby};
use super::DscBaseProvider;
use crate::convert::{from_ruby, hash_arg, id, names};
use crate::dsc_call::DscCall;
use crate::error::BindingResult;

/// Defines the steps of one DSC call, private, with their arities.
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_private_method("_dsc_call", method!(dsc_call, 5))?;
    class.define_private_method("_dsc_outcome", method!(dsc_outcome, 3))?;
    class.define_private_method("_dsc_failed", method!(dsc_failed, 3))?;
    class.define_private_method("_collision_wait", method!(collision_wait, 3))?;
    class.define_private_method("_retrying", method!(retrying, 3))?;
    class.define_private_method("_show_script", method!(show_script, 3))?;
    Ok(())
}

/// `load_path`'s answer, kept for the run when it has none yet (the
/// entries are read only then).
fn keep_load_path(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    load_path: RValue,
) -> BindingResult<()> {
    if rb_self.run.borrow().load_path().is_some() {
        return Ok(());
    }
    let load_path = RArray::try_convert(load_path)?;
    let mut entries = Vec::with_capacity(load_path.len());
    for entry in load_path.into_iter() {
        let text: magnus::RString = entry.funcall(id(ruby, &names::TO_S), ())?;
        entries.push(text.to_string()?);
    }
    rb_self
        .run
        .borrow_mut()
        .keep_load_path(std::sync::Arc::new(entries));
    Ok(())
}

/// `get`, `Get`, `GET`, … (a String or a Symbol), as `DscMethod::parse` reads it.
pub(super) fn dsc_method_arg(ruby: &Ruby, method: RValue) -> BindingResult<DscMethod> {
    let text = match from_ruby(ruby, method, "method")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    DscMethod::parse(&text).ok_or_else(|| {
        pwshlib_core::Error::InvalidValue {
            attribute: "method".into(),
            message: format!("'{text}' is not one of get, set, test, export"),
        }
        .into()
    })
}

/// `_dsc_call(context, name_hash, props, method, load_path)`: the call,
/// its script inside (a `Pwshlib::DscCall`), or nil when it is not made
/// (reported). `load_path` (the spine's `load_path`) is where the vendored
/// resources are sought; it is read once a run.
// The spine's four arguments of `invoke_dsc_resource`, and its load path.
#[allow(clippy::too_many_arguments)]
pub(super) fn dsc_call(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
    props: RValue,
    method: RValue,
    load_path: RValue,
) -> BindingResult<RValue> {
    keep_load_path(ruby, rb_self, load_path)?;
    let provider = Session::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let props = hash_arg(ruby, props, "props")?;
    let method = dsc_method_arg(ruby, method)?;
    if method == DscMethod::Get {
        lifecycle::retrieving(&provider, &name_hash)?;
    }
    let Some((call, script)) = lifecycle::dsc_call(&provider, &name_hash, &props, method)? else {
        return Ok(nil(ruby));
    };
    let host = match script.call().map(edition_memo::host_choice).transpose() {
        Ok(host) => host.flatten(),
        Err(message) => {
            lifecycle::dsc_outcome(&provider, &call, Err(message))?;
            return Ok(nil(ruby));
        }
    };
    let edition = host.as_ref().map(|host| host.edition.as_str());
    let call = ruby.obj_wrap(DscCall::new(
        call,
        script,
        host,
        rb_self.as_value(),
        context,
    ));
    if let Some(edition) = edition {
        // An instance variable the spine reads in Ruby
        // (`Pwshlib::DscCall#powershell_edition`), set only when the module
        // has an edition: no further native entry per call.
        call.ivar_set(EDITION_IVAR, ruby.str_new(edition))?;
    }
    Ok(call.as_value())
}

/// Where a call keeps the name of its PowerShell edition for the spine.
const EDITION_IVAR: &str = "@powershell_edition";

/// `_dsc_outcome(context, call, output)`: what a manager without
/// `execute_dsc` answered (its result Hash), read as [`answer`] reads it.
pub(super) fn dsc_outcome(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: Obj<DscCall>,
    output: RValue,
) -> BindingResult<RValue> {
    let output = execute_output(ruby, output)?;
    outcome_to_ruby(ruby, rb_self, context, &call, Ok(output))
}

/// `_dsc_failed(context, call, message)`: the manager raised `message`.
pub(super) fn dsc_failed(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: Obj<DscCall>,
    message: String,
) -> BindingResult<RValue> {
    outcome_to_ruby(ruby, rb_self, context, &call, Err(message))
}

pub(super) fn outcome_to_ruby(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: &DscCall,
    output: Result<ExecuteOutput, String>,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let outcome = lifecycle::dsc_outcome(&provider, &call.call(), output)?;
    call.set_collided(outcome == Outcome::Collision);
    match outcome {
        Outcome::Data(data) => option_value_to_ruby(ruby, Some(data)),
        Outcome::Failed | Outcome::Collision => Ok(nil(ruby)),
    }
}

/// What `Pwsh::Manager#execute_dsc(call)` answers: the result's data (a
/// Hash), or nil when the call failed (reported to the call's context);
/// after a collision nil, and the call says `collided?`.
pub(crate) fn answer(
    ruby: &Ruby,
    call: &DscCall,
    output: Result<ExecuteOutput, String>,
) -> BindingResult<RValue> {
    let (provider, context) = call.reader(ruby);
    let provider = Obj::<DscBaseProvider>::try_convert(provider)?;
    outcome_to_ruby(ruby, provider, context, call, output)
}

/// `--debug`'s dump of the call's script before `execute_dsc` sends it to
/// the host session `host_session` (the manager's endpoint).
pub(crate) fn show_before_sending(
    ruby: &Ruby,
    call: &DscCall,
    host_session: &str,
) -> BindingResult<()> {
    if !call.call().shows_script() {
        return Ok(());
    }
    let (provider, context) = call.reader(ruby);
    let provider = Obj::<DscBaseProvider>::try_convert(provider)?;
    let session = Session::new(ruby, provider, context)?;
    lifecycle::show_script(
        &session,
        &mut call.call_mut(),
        call.script_ref(),
        Some(host_session),
    )
}

/// `_collision_wait(context, call, attempt)`: the seconds to sleep before
/// the `attempt`th retry, nil when the retries ran out (reported).
pub(super) fn collision_wait(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: Obj<DscCall>,
    attempt: u32,
) -> BindingResult<Option<f64>> {
    let provider = Session::new(ruby, rb_self, context)?;
    lifecycle::collision_wait(&provider, &call.call(), attempt)
}

/// `_retrying(context, call, attempt)`: the call is sent again.
pub(super) fn retrying(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: Obj<DscCall>,
    attempt: u32,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    lifecycle::retrying(&provider, &mut call.call_mut(), attempt)
}

/// `_show_script(context, call, host_session)`: `--debug`'s dump of the
/// call's script, the prelude once per host session (the manager's
/// endpoint, nil for a manager without one) and run.
pub(super) fn show_script(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    call: Obj<DscCall>,
    host_session: Option<RString>,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    let host_session = host_session.map(|s| s.to_string()).transpose()?;
    lifecycle::show_script(
        &provider,
        &mut call.call_mut(),
        call.script_ref(),
        host_session.as_deref(),
    )
}
