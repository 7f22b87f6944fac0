//! Puppet's constants the provider reads on every entry call, looked up
//! once they exist (a path lookup walks a module per segment).

use std::sync::OnceLock;

use magnus::{prelude::*, value::Opaque, Ruby, Value as RValue};

use crate::convert::{id, names};

pub(super) static PUPPET_MODULE: OnceLock<Opaque<RValue>> = OnceLock::new();
pub(super) static PUPPET_LOG_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();
pub(super) static PUPPET_REPORT_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();
pub(super) static PUPPET_CONTEXT_CLASS: OnceLock<Opaque<RValue>> = OnceLock::new();

/// The constant at `path`, from `cell` once it has been found. Classes and
/// modules bound to constants live as long as the process; each one cached
/// is registered with the GC as well (which also pins it), so the handle in
/// the static stays valid. Not found: None, and nothing is cached, so a
/// later call looks again (Puppet loads parts of itself on first use).
pub(super) fn cached_constant(
    ruby: &Ruby,
    cell: &'static OnceLock<Opaque<RValue>>,
    path: &str,
) -> Option<RValue> {
    if let Some(value) = cell.get() {
        return Some(ruby.get_inner(*value));
    }
    let value: RValue = ruby
        .class_object()
        .funcall(id(ruby, &names::CONST_GET), (path,))
        .ok()?;
    ruby.gc_register_mark_object(value);
    let _ = cell.set(Opaque::from(value));
    Some(value)
}
