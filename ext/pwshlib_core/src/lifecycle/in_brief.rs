//! The lifecycle's answers from part of a resource: what a binding may
//! decide before (or instead of) converting a whole resource hash. The
//! Resource API hands the same resources to `canonicalize` three times in a
//! run and asks `insync?` once per property with the same two whole hashes;
//! most of the binding's cost per in-sync resource was converting them
//! again. The decisions stay here, beside the full paths they shortcut, so
//! that the binding only fetches the values these functions ask for
//! (through a lookup closure) and converts.

use std::borrow::Cow;

use super::resource_api::{
    canonicalized_earlier, insync_step, judgement_of, validates_whole_resource,
};
use super::{invocation_identity, Insync, InsyncStep, Provider};
use crate::cache::Identity;
use crate::value::{Map, Value};

/// A lookup closure's answer for a value it holds but cannot convert: the
/// caller takes the full path, which reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unconvertible;

/// Which of `count` resources (a `canonicalize` call's, not converted)
/// come back as given: each one canonicalized earlier in this run, found
/// by its namevars alone (`namevar(index, name)`: the value, None when the
/// resource lacks it, `Unconvertible` when it is not a hash or the value
/// does not convert). The same test as [`super::canonicalize_one`] makes of a
/// converted resource, which returns such a resource unchanged. All false
/// when debug messages are kept: the full path logs every resource it
/// returns.
pub fn canonical_as_given<P: Provider>(
    provider: &P,
    count: usize,
    mut namevar: impl FnMut(usize, &str) -> Result<Option<Value>, Unconvertible>,
) -> Result<Vec<bool>, P::Error> {
    if provider.debug_enabled() {
        return Ok(vec![false; count]);
    }
    let typedef = provider.typedef()?;
    let namevars = typedef.identity_namevars();
    Ok((0..count)
        .map(|index| {
            let mut readable = true;
            let identity = Identity::from_lookup(namevars, |name| {
                let found = namevar(index, name);
                readable &= found.is_ok();
                found.ok().flatten().map(Cow::Owned)
            });
            readable && canonicalized_earlier(provider, &identity)
        })
        .collect())
}

/// What [`insync_in_brief`] asks of the desired state: the property, how
/// the resource is validated, and what identifies it.
fn attributes_read<'a>(property: &'a str, namevars: &'a [String]) -> Vec<&'a str> {
    let mut wanted = vec![property, "validation_mode", "title"];
    wanted.extend(namevars.iter().map(String::as_str));
    wanted
}

/// `insync?` of a resource canonicalized in this run, compared by property
/// (`validation_mode` other than `resource`), from the few attributes it
/// reads: `should_entries(names)` gives those entries of the desired state
/// (None: it is not a hash, or one of them does not convert), and
/// `is_entries(names)` those of the current state (`Some(None)` when there
/// is none, None as before). None: no answer in brief (a Test is due, by
/// `validation_mode` or because the Get returned `$this`, the
/// resource is unknown, which is also where a value that cannot go to
/// PowerShell is reported, or a value does not convert); the caller
/// converts the whole hashes and calls [`super::insync_step`].
pub fn insync_in_brief<P: Provider>(
    provider: &P,
    name: &Value,
    property: &str,
    should_entries: impl FnOnce(&[&str]) -> Option<Map>,
    is_entries: impl FnOnce(&[&str]) -> Option<Option<Map>>,
) -> Result<Option<Insync>, P::Error> {
    let typedef = provider.typedef()?;
    let namevars = typedef.identity_namevars();
    let Some(should) = should_entries(&attributes_read(property, namevars)) else {
        return Ok(None);
    };
    if validates_whole_resource(&should) {
        return Ok(None);
    }
    let identity = invocation_identity(namevars, name, &should);
    if judgement_of(provider, &identity).is_some() || !canonicalized_earlier(provider, &identity) {
        return Ok(None);
    }
    let Some(is) = is_entries(&[property]) else {
        return Ok(None);
    };
    // No Test is due here (checked above): a Test step is no answer.
    Ok(
        match insync_step(provider, name, property, is.as_ref(), &should, None)? {
            InsyncStep::Answer(answer) => Some(answer),
            InsyncStep::Test => None,
        },
    )
}
