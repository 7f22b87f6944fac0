//! Which Puppet run a provider call belongs to, so that a call in a new run
//! starts with empty caches (`pwshlib_core::run` explains the choice).

use std::sync::OnceLock;

use magnus::{
    block::Proc,
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    typed_data::Obj,
    value::Opaque,
    RClass, Ruby, Value as RValue,
};
use pwshlib_core::run::{self, RunMarker};

use super::constants::{cached_constant, PUPPET_LOG_CLASS, PUPPET_MODULE, PUPPET_REPORT_CLASS};
use super::edition_memo;
use super::logon_memo::logon_memo;
use super::state::Observed;
use super::{private_state, DscBaseProvider, POWERSHELL_MEMO_IVAR};
use crate::convert::{id, names, static_symbol};

/// The object id of a Ruby object (never reused by Ruby, unlike addresses),
/// from `rb_obj_id`, what `Object#object_id` answers, without a method call.
fn object_id(value: RValue) -> Option<u64> {
    // SAFETY: `value` is a live object (the caller holds it on the stack);
    // `rb_obj_id` only reads or assigns its id, and may raise only on
    // failing to allocate, which `protect` catches.
    let id = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_id(value.as_raw()) }).ok()?;
    // SAFETY: `rb_obj_id` returned a live Integer VALUE.
    let id = unsafe { RValue::from_raw(id) };
    magnus::Integer::from_value(id)?.to_u64().ok()
}

/// `{ nil }`, made once: the block of `Puppet.lookup(:loaders) { nil }`.
fn nil_block(ruby: &Ruby) -> Proc {
    static NIL_BLOCK: OnceLock<Opaque<Proc>> = OnceLock::new();
    if let Some(block) = NIL_BLOCK.get() {
        return ruby.get_inner(*block);
    }
    let block = ruby.proc_from_fn(|ruby, _args, _block| Ok(ruby.qnil().as_value()));
    // Registered, so the static handle keeps it (and its closure) alive.
    ruby.gc_register_mark_object(block);
    let _ = NIL_BLOCK.set(Opaque::from(block));
    block
}

/// The report and loaders Puppet has in view now (`pwshlib_core::run`
/// explains the choice). Either is None outside a Puppet run. When a report
/// is in view now and was at every earlier look (`last_reports_seen`), the
/// loaders decide nothing (`run::is_new_run` compares the reports alone),
/// so they are not looked up (a `Puppet.lookup`, in Ruby, on every entry
/// call of a run's evaluation) and `last_loaders` stands for them.
fn current_run_marker(
    ruby: &Ruby,
    last_reports_seen: bool,
    last_loaders: Option<u64>,
) -> RunMarker {
    let report = cached_constant(ruby, &PUPPET_REPORT_CLASS, "Puppet::Transaction::Report")
        .and_then(|report_class| {
            let log = cached_constant(ruby, &PUPPET_LOG_CLASS, "Puppet::Util::Log")?;
            let destinations = private_state::log_destinations(ruby, log)?;
            let report_class = RClass::from_value(report_class)?;
            let mut found = None;
            destinations
                .foreach(|destination: RValue, _handler: RValue| {
                    if destination.is_kind_of(report_class) {
                        found = Some(destination);
                        return Ok(magnus::r_hash::ForEach::Stop);
                    }
                    Ok(magnus::r_hash::ForEach::Continue)
                })
                .ok()?;
            found.and_then(object_id)
        });
    if report.is_some() && last_reports_seen {
        return RunMarker {
            report,
            loaders: last_loaders,
        };
    }
    let loaders = cached_constant(ruby, &PUPPET_MODULE, "Puppet").and_then(|puppet| {
        let loaders = match private_state::loaders_binding(ruby, puppet) {
            Some(loaders) => loaders,
            // `Puppet.lookup(:loaders) { nil }`: nil rather than an error
            // when nothing is bound (outside a run).
            None => puppet
                .funcall_with_block(
                    id(ruby, &names::LOOKUP),
                    (static_symbol(ruby, &names::LOADERS),),
                    nil_block(ruby),
                )
                .ok()?,
        };
        (!loaders.is_nil()).then_some(loaders).and_then(object_id)
    });
    RunMarker { report, loaders }
}

/// Called where a run's work on a type can begin (canonicalize, get, set):
/// a provider call in a new run starts with empty caches, and the first one
/// in the run empties the logon-failure memo. Answers whether this call
/// begins the provider's work in a run: a new run, or the provider's first
/// call ever (it has cached nothing, but the Resource API may hold what an
/// earlier provider of the type answered: `private_state`).
pub(super) fn observe_run(
    ruby: &Ruby,
    provider: Obj<DscBaseProvider>,
) -> Result<bool, magnus::Error> {
    let (last_reports_seen, last_loaders) = {
        let memo_marker = logon_memo().run_marker;
        let state_marker = provider.run.borrow().run_marker();
        match (memo_marker, state_marker) {
            (Some(memo), Some(state)) => (
                memo.report.is_some() && state.report.is_some(),
                state.loaders,
            ),
            _ => (false, None),
        }
    };
    let now = current_run_marker(ruby, last_reports_seen, last_loaders);
    {
        let mut memo = logon_memo();
        if run::is_new_run(memo.run_marker, now) {
            memo.failures.clear();
            memo.notices.clear();
            edition_memo::forget_manifests();
        }
        memo.run_marker = Some(now);
    }
    let Observed {
        new_run,
        first_call,
    } = {
        let facts = provider.facts.borrow();
        let typedef = facts.typedef();
        provider
            .run
            .borrow_mut()
            .observe(now, typedef.as_deref(), || facts.collision_wait_seconds())
    };
    if new_run {
        // PowerShell is looked up again too (a PATH search), in case the
        // agent installed or moved it in between.
        provider.ivar_set(POWERSHELL_MEMO_IVAR, ruby.qnil())?;
    }
    Ok(new_run || first_call)
}
