//! The generated sections of a script, joined with the templates into the
//! [`Script`]; and the entry points that build one.

use super::builder::Builder;
use super::{
    direct_disabled_by_env, random_variable_name, DscMethod, InvocableResource, Script, HEADER,
    INVOKE_CALL, THROUGH_INVOKE_DSC_RESOURCE, VENDORED_PATH_PARAMETER,
};
use crate::error::{Error, Result};
use crate::literal::TrackedText;
use crate::typedef::TypeDef;
use crate::value::Map;

/// The generated sections of a script, before they are joined with the
/// templates. The Ruby methods `munge_psmodulepath`, `prepare_credentials`,
/// `prepare_cim_instances` and `invoke_params` each return one of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptParts {
    /// The call's argument that adds the vendored path to PSModulePath
    /// (`-VendoredPath '…'`, for every resource whose vendored folder is
    /// known); empty otherwise.
    pub module_path: String,
    /// `$cred_… = New-PsCredential …` lines.
    pub credentials: TrackedText,
    /// `$cim_… = New-CimInstance …` lines, nested instances first.
    pub cim_instances: TrackedText,
    /// The `$InvokeParams = @{…}` line.
    pub invoke_params: TrackedText,
    /// The call goes through `Invoke-DscResource` (`PWSHLIB_DSC_DIRECT=0`)
    /// rather than to the resource directly.
    pub through_invoke_dsc_resource: bool,
}

impl ScriptParts {
    /// Builds the sections; `names` makes each variable name from a prefix
    /// (`cred_` or `cim_`).
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
        Ok(ScriptParts {
            module_path,
            credentials: builder.credentials,
            cim_instances: builder.cim_instances,
            invoke_params,
            through_invoke_dsc_resource: direct_disabled_by_env(),
        })
    }

    /// Joins the sections with the header and templates into the script.
    pub fn into_script(self) -> Script {
        let mut out = TrackedText::with_capacity(
            HEADER.len()
                + self.credentials.text().len()
                + self.cim_instances.text().len()
                + self.invoke_params.text().len()
                + INVOKE_CALL.len()
                + THROUGH_INVOKE_DSC_RESOURCE.len()
                + self.module_path.len()
                + 2,
        );
        out.push(HEADER);
        out.append(self.credentials);
        out.append(self.cim_instances);
        out.append(self.invoke_params);
        ensure_newline(&mut out);
        out.push(INVOKE_CALL);
        if self.through_invoke_dsc_resource {
            out.push(THROUGH_INVOKE_DSC_RESOURCE);
        }
        out.push(&self.module_path);
        out.push("\n");
        Script::from_tracked(out).with_prelude()
    }
}

fn ensure_newline(out: &mut TrackedText) {
    if !out.text().ends_with('\n') {
        out.push("\n");
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
    Ok(ScriptParts::build(resource, names)?.into_script())
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
