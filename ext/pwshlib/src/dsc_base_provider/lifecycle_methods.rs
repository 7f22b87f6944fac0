//! The session's steps of `canonicalize`, `get` and `insync?`: native
//! methods the Ruby spine
//! (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb) calls, each
//! one way, from Ruby into Rust. Each converts its arguments, runs one step
//! of `pwshlib_core::lifecycle` over the provider's state, and converts the
//! answer; none calls a provider method. They are private, and named with a
//! leading underscore: the overridable methods are the spine's.

use magnus::{
    method, prelude::*, typed_data::Obj, Error, RArray, RClass, RHash, Ruby, Value as RValue,
};
use pwshlib_core::cache::Identity;
use pwshlib_core::lifecycle::{self, GetStep, InsyncStep, Known, Unconvertible};
use pwshlib_core::{Map, Value};

use super::session::{insync_from_ruby, Session};
use super::step_args::{
    insync_to_ruby, nil, option_hash_arg, option_result_arg, resource_arg, resource_label, title_in,
};
use super::DscBaseProvider;
use crate::convert::{
    from_ruby, hash_arg, hash_entries, hash_entry, map_to_ruby, names, static_symbol,
};
use crate::error::{BindingError, BindingResult};

/// Defines the steps of `canonicalize`, `get` and `insync?`, private, with
/// their arities.
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_private_method("_canonicalize_plan", method!(canonicalize_plan, 2))?;
    class.define_private_method("_canonicalize_all", method!(canonicalize_all, 3))?;
    class.define_private_method("_get_passed_attributes", method!(get_passed_attributes, 1))?;
    class.define_private_method("_note_get_failed", method!(note_get_failed, 2))?;
    class.define_private_method("_get_begins", method!(get_begins, 1))?;
    class.define_private_method("_get_known", method!(get_known, 2))?;
    class.define_private_method("_get_query", method!(get_query, 2))?;
    class.define_private_method("_get_result", method!(get_result, 3))?;
    class.define_private_method("_export_result", method!(export_result, 2))?;
    class.define_private_method("_insync", method!(insync::<false>, 6))?;
    class.define_private_method("_insync_tested", method!(insync::<true>, 6))?;
    Ok(())
}

/// What `_canonicalize_plan` read of one resource of a `canonicalize`
/// call, for `_canonicalize_all`: the resource converted (or why it cannot
/// go to PowerShell), and where its system state comes from.
pub(super) struct Planned {
    resource: Result<Map, String>,
    system: SystemFrom,
}

/// Where `_canonicalize_all` finds a resource's system state.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SystemFrom {
    /// It is not read (canonicalized earlier, absent, or not convertible).
    Nowhere,
    /// The spine's Get of it (`invoke_get_method_for_canonicalize`).
    SpineGet,
    /// What the run read already (this call's Get of an earlier resource
    /// of the same identity included).
    Run,
}

/// `_canonicalize_plan(context, resources)`: nil when every resource comes
/// back as given (each canonicalized earlier in this run, read from its
/// namevars alone); else the indexes of the resources whose system state
/// is still to be read (`invoke_get_method_for_canonicalize`), each
/// resource read once and kept for `_canonicalize_all`. A run's work on a
/// type may begin here: the run is observed first.
fn canonicalize_plan(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
) -> BindingResult<RValue> {
    let provider = Session::at_run_entry(ruby, rb_self, context)?;
    let given = lifecycle::canonical_as_given(&provider, resources.len(), |index, name| {
        let hash = resources
            .entry::<RValue>(index as isize)
            .ok()
            .and_then(RHash::from_value)
            .ok_or(Unconvertible)?;
        hash_entry(ruby, hash, name).map_err(|_| Unconvertible)
    })?;
    if given.iter().all(|known| *known) {
        return Ok(nil(ruby));
    }
    let namevars = provider.typedef.identity_namevars();
    let to_read = ruby.ary_new();
    let mut reading: Vec<Identity> = Vec::new();
    let mut planned = Vec::with_capacity(resources.len());
    for (index, resource) in resources.into_iter().enumerate() {
        let resource = match hash_arg(ruby, resource, "resource") {
            Ok(map) => Ok(map),
            // A resource holding a value that cannot go to PowerShell is not
            // read, and comes back as given (`_canonicalize_all`).
            Err(BindingError::Core(error)) => Err(format!(
                "{}: not canonicalized: {error}",
                resource_label(&provider.typedef, &title_in(ruby, resource))
            )),
            Err(ruby_error) => return Err(ruby_error),
        };
        let system = match &resource {
            Ok(map) => {
                let identity = Identity::of(namevars, map);
                if !lifecycle::system_wanted(&provider, &identity, map.get_named("dsc_ensure")) {
                    SystemFrom::Nowhere
                } else if read_once(&provider, &mut reading, identity) {
                    SystemFrom::SpineGet
                } else {
                    SystemFrom::Run
                }
            }
            Err(_) => SystemFrom::Nowhere,
        };
        if system == SystemFrom::SpineGet {
            to_read.push(index)?;
        }
        planned.push(Planned { resource, system });
    }
    *rb_self.canonicalizing.borrow_mut() = planned;
    Ok(to_read.as_value())
}

/// Whether the spine reads the resource of `identity` for this
/// `canonicalize` call: not read earlier in the run (nor failed), nor by
/// an earlier resource of the call.
fn read_once(provider: &Session<'_>, reading: &mut Vec<Identity>, identity: Identity) -> bool {
    if !matches!(lifecycle::known_system(provider, &identity), Known::Unknown)
        || reading.contains(&identity)
    {
        return false;
    }
    reading.push(identity);
    true
}

/// `_canonicalize_all(context, resources, systems)`: the resources as
/// canonicalize returns them, each with the system state its Get answered
/// (`systems`: the Puppet hash, or nil when the Get failed, of each
/// resource `_canonicalize_plan` named, in its order) or the run read
/// already; the given array when nothing changed, and within it the very
/// hash given for each resource that did not change. A resource holding a
/// value that cannot go to PowerShell comes back as given (canonicalize
/// runs while Puppet builds the catalog, where an exception would abort
/// every resource): its insync?/set raise the error.
fn canonicalize_all(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resources: RArray,
    systems: RArray,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let mut planned = std::mem::take(&mut *rb_self.canonicalizing.borrow_mut());
    if planned.len() != resources.len() {
        // Not the resources the plan read (an override called this step
        // alone): read them now, and none is read from the system.
        planned = resources
            .into_iter()
            .map(|resource| Planned {
                resource: hash_arg(ruby, resource, "resource").map_err(|error| error.to_string()),
                system: SystemFrom::Nowhere,
            })
            .collect();
    }
    let namevars = provider.typedef.identity_namevars();
    let keeps_debug = provider.keeps_debug();
    // Made at the first resource that changes: a call that changes nothing
    // answers the given array.
    let mut out: Option<RArray> = None;
    let mut shown = Vec::new();
    let mut answers = systems.into_iter();
    for (index, (given, plan)) in resources.into_iter().zip(planned).enumerate() {
        let map = match plan.resource {
            Ok(map) => map,
            Err(message) => {
                provider.debug_message(&message)?;
                if let Some(out) = out {
                    out.push(given)?;
                }
                continue;
            }
        };
        let system = match plan.system {
            SystemFrom::Nowhere => None,
            SystemFrom::SpineGet => answers
                .next()
                .and_then(|answer| option_hash_arg(ruby, answer, "system").ok().flatten()),
            SystemFrom::Run => {
                match lifecycle::known_system(&provider, &Identity::of(namevars, &map)) {
                    Known::Read(system) => Some(system),
                    Known::Failed | Known::Unknown => None,
                }
            }
        };
        let (canonical, changed) = lifecycle::canonicalize_one(&provider, map, system)?;
        if changed {
            let array = if let Some(array) = out {
                array
            } else {
                let array = ruby.ary_new_capa(resources.len());
                for earlier in resources.into_iter().take(index) {
                    array.push(earlier)?;
                }
                out = Some(array);
                array
            };
            array.push(map_to_ruby(ruby, &canonical)?)?;
        } else if let Some(out) = out {
            out.push(given)?;
        }
        if keeps_debug {
            shown.push(canonical);
        }
    }
    if keeps_debug {
        lifecycle::canonicalized_all(&provider, &shown)?;
    }
    Ok(out.map_or(resources.as_value(), |out| out.as_value()))
}

/// `_get_passed_attributes`: the names (Symbols) of the attributes a Get
/// passes when they are set; the spine selects a Get's props by them.
fn get_passed_attributes(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
) -> BindingResult<RArray> {
    let provider = Session::new(ruby, rb_self, context)?;
    Ok(ruby.ary_from_iter(
        lifecycle::attributes_passed_to_get(&provider.typedef).map(|name| ruby.to_symbol(name)),
    ))
}

/// `_note_get_failed(context, resource)`.
fn note_get_failed(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    resource: RValue,
) -> BindingResult<()> {
    let provider = Session::new(ruby, rb_self, context)?;
    let resource = hash_arg(ruby, resource, "resource")?;
    lifecycle::note_get_failed(&provider, &resource);
    Ok(())
}

/// `_get_begins(context)`: a run's work on a type may begin here.
fn get_begins(ruby: &Ruby, rb_self: Obj<DscBaseProvider>, context: RValue) -> BindingResult<()> {
    let provider = Session::at_run_entry(ruby, rb_self, context)?;
    lifecycle::get_begins(&provider)
}

/// `_get_known(context, name)`: the answer for a name known without a
/// call (the run's Get result, or the title alone after a failed Get);
/// nil when `invoke_get_method` is due with `_get_query`'s hash.
fn get_known(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    get_step_part::<false>(ruby, rb_self, context, name)
}

/// `_get_query(context, name)`: the hash `invoke_get_method` is called
/// with (nil when the answer is known).
fn get_query(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    get_step_part::<true>(ruby, rb_self, context, name)
}

fn get_step_part<const QUERY: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    match (lifecycle::get_step(&provider, &name), QUERY) {
        (GetStep::Answer(map), false) | (GetStep::Query(map), true) => {
            Ok(map_to_ruby(ruby, &map)?.as_value())
        }
        _ => Ok(nil(ruby)),
    }
}

/// `_get_result(context, name_hash, data)`: the Puppet hash of a Get's
/// answer, nil when there is none.
fn get_result(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name_hash: RValue,
    data: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name_hash = hash_arg(ruby, name_hash, "name_hash")?;
    let data = option_result_arg(ruby, data)?;
    match lifecycle::get_result(&provider, &name_hash, data)? {
        Some(map) => Ok(map_to_ruby(ruby, &map)?.as_value()),
        None => Ok(nil(ruby)),
    }
}

/// `_export_result(context, data)`: the Puppet hashes of the instances an
/// Export listed (each as `_get_result` makes a Get's), an empty Array when
/// the call failed or the resource cannot list itself (reported).
fn export_result(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    data: RValue,
) -> BindingResult<RArray> {
    let provider = Session::new(ruby, rb_self, context)?;
    let data = option_result_arg(ruby, data)?;
    let listed = lifecycle::export_result(&provider, data)?;
    let out = ruby.ary_new_capa(listed.len());
    for map in &listed {
        out.push(map_to_ruby(ruby, map)?)?;
    }
    Ok(out)
}

/// `_insync(context, name, property, is_hash, should_hash, nil)`: the
/// answer, or `:test` when the resource's Test is due first; then
/// `_insync_tested(…, test)` with `invoke_test_method`'s answer (`TESTED`).
// The Resource API's five arguments of `insync?`, and the Test's answer.
#[allow(clippy::too_many_arguments)]
fn insync<const TESTED: bool>(
    ruby: &Ruby,
    rb_self: Obj<DscBaseProvider>,
    context: RValue,
    name: RValue,
    property_name: RValue,
    is_hash: RValue,
    should_hash: RValue,
    test: RValue,
) -> BindingResult<RValue> {
    let provider = Session::new(ruby, rb_self, context)?;
    let name = from_ruby(ruby, name, "name")?;
    let property = match from_ruby(ruby, property_name, "property_name")? {
        Value::Str(s) | Value::Symbol(s) => s,
        other => other.to_string(),
    };
    if !TESTED {
        // The Resource API asks once per property with the same two whole
        // hashes: the core answers from the few entries it reads when it can.
        let in_brief = lifecycle::insync_in_brief(
            &provider,
            &name,
            &property,
            |wanted| hash_entries(ruby, RHash::from_value(should_hash)?, wanted),
            |wanted| {
                if is_hash.is_nil() {
                    return Some(None);
                }
                hash_entries(ruby, RHash::from_value(is_hash)?, wanted).map(Some)
            },
        )?;
        if let Some(answer) = in_brief {
            return insync_to_ruby(ruby, &answer);
        }
    }
    let is_hash = option_hash_arg(ruby, is_hash, "is_hash")?;
    let should_hash = resource_arg(ruby, &provider.typedef, &name, should_hash, "should_hash")?;
    let test = TESTED.then(|| insync_from_ruby(ruby, test));
    let step = lifecycle::insync_step(
        &provider,
        &name,
        &property,
        is_hash.as_ref(),
        &should_hash,
        test.as_ref(),
    )?;
    match step {
        InsyncStep::Answer(answer) => insync_to_ruby(ruby, &answer),
        InsyncStep::Test => Ok(static_symbol(ruby, &names::TEST)),
    }
}
