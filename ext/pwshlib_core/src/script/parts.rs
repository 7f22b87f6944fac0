//! The entry points that build a call ([`script_for`], [`build_script`]),
//! and the sections of its rendered text that the pwshlib 2.x methods
//! return one by one ([`ScriptParts`]).

use super::calling::call_data;
use super::inline::inline_lines;
use super::render::{render, Section};
use super::{random_variable_name, route_by_env, DscMethod, InvocableResource, Route, Script};
use crate::bound::{BoundValue, SecretBinding};
use crate::call_data::DscCallData;
use crate::error::Result;
use crate::literal::TrackedText;
use crate::typedef::TypeDef;
use crate::value::Map;

/// The sections of a call's rendered text. The Ruby methods
/// `munge_psmodulepath`, `prepare_credentials`, `prepare_cim_instances`
/// and `invoke_params` each return one of them (in the inline form: see
/// [`ScriptParts::inline_credentials`]).
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
    /// How the call is routed (`PWSHLIB_DSC_DIRECT`).
    pub route: Route,
}

/// A section whose secret leaves are variables: its text and the leaves
/// bound under those names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundText {
    pub text: String,
    pub bindings: Vec<SecretBinding>,
}

impl BoundText {
    /// The section's text and the secret leaves (not credentials) it names.
    fn of(section: Section, secrets: &[SecretBinding]) -> BoundText {
        let bindings = secrets
            .iter()
            .filter(|binding| !matches!(binding.value, BoundValue::Credential { .. }))
            .filter(|binding| section.variables.contains(&binding.name))
            .cloned()
            .collect();
        BoundText {
            text: section.text,
            bindings,
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
    /// The sections of `resource`'s call; `names` makes each bound
    /// variable's name from a prefix (`cred_` or `secret_`).
    pub fn build(
        resource: &InvocableResource,
        names: &mut dyn FnMut(&str) -> String,
    ) -> Result<ScriptParts> {
        Ok(ScriptParts::of(&call_data(
            resource,
            route_by_env(),
            names,
        )?))
    }

    /// The sections of `call`'s rendered text.
    pub fn of(call: &DscCallData) -> ScriptParts {
        let rendered = render(call);
        ScriptParts {
            module_path: rendered.module_path,
            credentials: call
                .secrets
                .iter()
                .filter(|binding| matches!(binding.value, BoundValue::Credential { .. }))
                .cloned()
                .collect(),
            cim_instances: BoundText::of(rendered.cim_instances, &call.secrets),
            invoke_params: BoundText::of(rendered.invoke_params, &call.secrets),
            route: call.route,
        }
    }

    /// The credential lines in the inline form (`$cred_… =
    /// New-PsCredential …`): pwshlib 2.x's `prepare_credentials`.
    pub fn inline_credentials(&self) -> Result<TrackedText> {
        inline_lines(&self.credentials)
    }
}

/// Builds one invocation's call, with random variable names.
pub fn build_script(resource: &InvocableResource) -> Result<Script> {
    build_script_with(resource, &mut random_variable_name)
}

/// Builds the call with variable names from `names` (tests use a counter,
/// so that two builds can be compared).
pub fn build_script_with(
    resource: &InvocableResource,
    names: &mut dyn FnMut(&str) -> String,
) -> Result<Script> {
    Ok(Script::from_call(call_data(
        resource,
        route_by_env(),
        names,
    )?))
}

/// From a type definition, a resource hash, a method and Ruby's load path to
/// the call: the one the provider's lifecycle needs.
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
