//! The generated sections of a script, joined with the templates into the
//! [`Script`]; and the entry points that build one.

use super::builder::Builder;
use super::calling::call_data;
use super::inline::inline_lines;
use super::{
    random_variable_name, route_by_env, DscMethod, InvocableResource, Route, Script, HEADER,
    INVOKE_CALL, LCM_UNLESS_SYSTEM, THROUGH_INVOKE_DSC_RESOURCE, VENDORED_PATH_PARAMETER,
};
use crate::bound::{bind_leaves, SecretBinding};
use crate::call_data::DscCallData;
use crate::error::{Error, Result};
use crate::literal::TrackedText;
use crate::typedef::TypeDef;
use crate::value::Map;

/// The generated sections of a script, before they are joined with the
/// templates. The Ruby methods `munge_psmodulepath`, `prepare_credentials`,
/// `prepare_cim_instances` and `invoke_params` each return one of them (in
/// the inline form: see [`ScriptParts::inline_credentials`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptParts {
    /// The call's argument that adds the vendored path to PSModulePath
    /// (`-VendoredPath '…'`, for every resource whose vendored folder is
    /// known); empty otherwise.
    pub module_path: String,
    /// The credentials, each bound to a `$cred_…` variable.
    pub credentials: Vec<SecretBinding>,
    /// `$cim_… = New-CimInstance …` lines, nested instances first.
    pub cim_instances: BoundText,
    /// The `$InvokeParams = @{…}` line.
    pub invoke_params: BoundText,
    /// The call goes through `Invoke-DscResource` (`PWSHLIB_DSC_DIRECT=0`)
    /// rather than to the resource directly.
    pub through_invoke_dsc_resource: bool,
    /// The call goes through the LCM unless the host runs as SYSTEM
    /// (`PWSHLIB_DSC_DIRECT=system`).
    pub lcm_unless_system: bool,
    /// The same call as data (its secrets bound under their own names).
    pub call: Option<DscCallData>,
}

/// A section whose secret leaves are variables: its text, the leaves
/// bound under those names, and their plain texts (for redaction).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundText {
    pub text: String,
    pub bindings: Vec<SecretBinding>,
    pub secrets: Vec<String>,
}

impl BoundText {
    fn new(tracked: TrackedText, names: &mut dyn FnMut(&str) -> String) -> BoundText {
        let (text, leaves, secrets) = tracked.into_bound();
        let (text, bindings) = bind_leaves(&text, leaves, names);
        BoundText {
            text,
            bindings,
            secrets,
        }
    }

    /// The section on its own in the inline form: its bound variables set
    /// by literals, then its text (pwshlib 2.x's section methods).
    pub fn inline(&self) -> Result<TrackedText> {
        let mut out = inline_lines(&self.bindings)?;
        out.push(&self.text);
        Ok(out)
    }
}

impl ScriptParts {
    /// Builds the sections; `names` makes each variable name from a prefix
    /// (`cred_`, `cim_` or `secret_`).
    pub fn build(
        resource: &InvocableResource,
        names: &mut dyn FnMut(&str) -> String,
    ) -> Result<ScriptParts> {
        let mut builder = Builder::new(names, resource.is_class_based());
        let invoke_params = builder.invoke_params(resource)?;
        let module_path = if resource.is_class_based() || !resource.vendored_modules_path.is_empty()
        {
            let path = crate::literal::quote(resource.vendored_path()?).map_err(|_| {
                Error::MissingVendoredPath {
                    module: resource.module_name.clone(),
                    searched: "the vendored path contains a NUL character".into(),
                }
            })?;
            format!("{VENDORED_PATH_PARAMETER}{path}")
        } else {
            String::new()
        };
        let route = route_by_env();
        let Builder {
            names,
            credentials,
            cim_instances,
            ..
        } = builder;
        let cim_instances = BoundText::new(cim_instances, names);
        let invoke_params = BoundText::new(invoke_params, names);
        // After the script's names: the data's variables are its own.
        let call = call_data(resource, route, names)?;
        Ok(ScriptParts {
            module_path,
            credentials,
            cim_instances,
            invoke_params,
            through_invoke_dsc_resource: route == Route::Through,
            lcm_unless_system: route == Route::LcmUnlessSystem,
            call: Some(call),
        })
    }

    /// The credential lines in the inline form (`$cred_… =
    /// New-PsCredential …`): pwshlib 2.x's `prepare_credentials`.
    pub fn inline_credentials(&self) -> Result<TrackedText> {
        inline_lines(&self.credentials)
    }

    /// Joins the sections with the header and templates into the script.
    pub fn into_script(self) -> Result<Script> {
        let mut body = String::with_capacity(
            HEADER.len()
                + self.cim_instances.text.len()
                + self.invoke_params.text.len()
                + INVOKE_CALL.len()
                + THROUGH_INVOKE_DSC_RESOURCE.len()
                + self.module_path.len()
                + 2,
        );
        body.push_str(HEADER);
        body.push_str(&self.cim_instances.text);
        body.push_str(&self.invoke_params.text);
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(INVOKE_CALL);
        if self.through_invoke_dsc_resource {
            body.push_str(THROUGH_INVOKE_DSC_RESOURCE);
        } else if self.lcm_unless_system {
            body.push_str(LCM_UNLESS_SYSTEM);
        }
        body.push_str(&self.module_path);
        body.push('\n');
        let mut bindings = self.credentials;
        bindings.extend(self.cim_instances.bindings);
        bindings.extend(self.invoke_params.bindings);
        let mut secrets = self.cim_instances.secrets;
        secrets.extend(self.invoke_params.secrets);
        let script = Script::bound(body, bindings, secrets)?.with_prelude();
        Ok(match self.call {
            Some(call) => script.with_call(call),
            None => script,
        })
    }
}

/// Builds the script for one invocation, with random variable names.
pub fn build_script(resource: &InvocableResource) -> Result<Script> {
    build_script_with(resource, &mut random_variable_name)
}

/// Builds the script with variable names from `names` (tests use a counter,
/// so that two builds can be compared).
pub fn build_script_with(
    resource: &InvocableResource,
    names: &mut dyn FnMut(&str) -> String,
) -> Result<Script> {
    ScriptParts::build(resource, names)?.into_script()
}

/// From a type definition, a resource hash, a method and Ruby's load path to
/// the script: the one call the provider's lifecycle needs.
pub fn script_for(
    typedef: &TypeDef,
    should: &Map,
    method: DscMethod,
    load_path: &[String],
) -> Result<Script> {
    build_script(&InvocableResource::from_load_path(
        typedef, should, method, load_path,
    )?)
}
