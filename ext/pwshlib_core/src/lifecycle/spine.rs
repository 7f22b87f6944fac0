//! The Ruby spine (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb)
//! in Rust, for the unit tests only: each function here is the provider
//! method of the same name, calling the lifecycle's steps in the same order,
//! so that the tests drive the steps as a run does. A change of the spine's
//! order is made in both places.

use super::{
    canonicalize_one, canonicalized_all, collision_wait, dsc_call, dsc_outcome, get_begins,
    get_props, get_result, get_step, insync_step, known_system, note_get_failed, retrying,
    set_call, set_result, show_script, system_wanted, test_call, test_result, ExecuteOutput,
    GetStep, Insync, InsyncStep, Known, Provider,
};
use crate::cache::Identity;
use crate::error::Error;
use crate::script::{DscMethod, Script};
use crate::value::{Map, Value};

/// What the tests' provider adds to the session: the manager and `sleep`.
pub trait Spine: Provider<Error = Error> {
    /// `ps_manager.execute_dsc(script, timeout_ms)`.
    fn execute_script(
        &self,
        script: &Script,
        timeout_ms: Option<u64>,
    ) -> Result<ExecuteOutput, Error>;
    fn sleep(&self, seconds: f64);
    /// The manager's endpoint (`host_session` in the Ruby spine); a
    /// stand-in manager has none.
    fn host_session(&self) -> Option<String> {
        None
    }
}

pub fn canonicalize<P: Spine>(provider: &P, resources: Vec<Map>) -> Result<Vec<Map>, Error> {
    let namevars = provider.typedef()?.identity_namevars().to_vec();
    let mut out = Vec::with_capacity(resources.len());
    for resource in resources {
        let id = Identity::of(&namevars, &resource);
        let system = if system_wanted(provider, &id, resource.get_named("dsc_ensure")) {
            get_for_canonicalize(provider, &resource)?
        } else {
            None
        };
        out.push(canonicalize_one(provider, resource, system)?.0);
    }
    canonicalized_all(provider, &out)?;
    Ok(out)
}

pub fn get_for_canonicalize<P: Spine>(provider: &P, resource: &Map) -> Result<Option<Map>, Error> {
    let id = Identity::of(provider.typedef()?.identity_namevars(), resource);
    match known_system(provider, &id) {
        Known::Read(map) => Ok(Some(map)),
        Known::Failed => Ok(None),
        Known::Unknown => {
            let result = invoke_get_method(provider, resource)?;
            if result.is_none() {
                note_get_failed(provider, resource);
            }
            Ok(result)
        }
    }
}

pub fn get<P: Spine>(provider: &P, names: Option<Vec<Value>>) -> Result<Vec<Map>, Error> {
    get_begins(provider)?;
    let mut out = Vec::new();
    for name in names.unwrap_or_default() {
        match get_step(provider, &name) {
            GetStep::Answer(map) => out.push(map),
            GetStep::Query(query) => {
                if let Some(result) = invoke_get_method(provider, &query)? {
                    out.push(result);
                } else {
                    note_get_failed(provider, &query);
                    out.push(super::name_hash_of(&name));
                }
            }
        }
    }
    Ok(out)
}

pub fn invoke_get_method<P: Spine>(provider: &P, name_hash: &Map) -> Result<Option<Map>, Error> {
    let props = get_props(provider, name_hash)?;
    let data = invoke_dsc_resource(provider, name_hash, &props, DscMethod::Get)?;
    get_result(provider, name_hash, data)
}

pub fn invoke_set_method<P: Spine>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<Option<Value>, Error> {
    let (name_hash, props) = set_call(provider, name, should)?;
    let data = invoke_dsc_resource(provider, &name_hash, &props, DscMethod::Set)?;
    set_result(provider, name, &name_hash, data.as_ref())?;
    Ok(data)
}

pub fn invoke_test_method<P: Spine>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<Insync, Error> {
    let (name_hash, props) = test_call(provider, name, should)?;
    let data = invoke_dsc_resource(provider, &name_hash, &props, DscMethod::Test)?;
    Ok(test_result(provider, &name_hash, data.as_ref()))
}

pub fn insync<P: Spine>(
    provider: &P,
    name: &Value,
    property: &str,
    is_hash: Option<&Map>,
    should_hash: &Map,
) -> Result<Insync, Error> {
    match insync_step(provider, name, property, is_hash, should_hash, None)? {
        InsyncStep::Answer(answer) => Ok(answer),
        InsyncStep::Test => {
            let test = invoke_test_method(provider, name, should_hash)?;
            match insync_step(provider, name, property, is_hash, should_hash, Some(&test))? {
                InsyncStep::Answer(answer) => Ok(answer),
                InsyncStep::Test => unreachable!("a Test answer was given"),
            }
        }
    }
}

pub fn invoke_dsc_resource<P: Spine>(
    provider: &P,
    name_hash: &Map,
    props: &Map,
    method: DscMethod,
) -> Result<Option<Value>, Error> {
    let Some((mut call, script)) = dsc_call(provider, name_hash, props, method)? else {
        return Ok(None);
    };
    let mut attempt = 0;
    loop {
        if call.shows_script() {
            show_script(
                provider,
                &mut call,
                &script,
                provider.host_session().as_deref(),
            )?;
        }
        let output = provider
            .execute_script(&script, call.timeout_ms())
            .map_err(|e| e.to_string());
        match dsc_outcome(provider, &call, output)? {
            super::Outcome::Data(data) => return Ok(Some(data)),
            super::Outcome::Failed => return Ok(None),
            super::Outcome::Collision => {}
        }
        attempt += 1;
        let Some(wait) = collision_wait(provider, &call, attempt)? else {
            return Ok(None);
        };
        provider.sleep(wait);
        retrying(provider, &mut call, attempt)?;
    }
}
