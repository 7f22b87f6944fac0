//! Script building: the pwshlib 2.x method surface over `pwshlib_core::script`.
//!
//! Methods that hand a script (or part of one) to Ruby return the "marked
//! text" form (`Script::marked`): the real script with each secret literal
//! bracketed by a block comment holding a per-process random token. It is
//! valid PowerShell; `remove_secret_identifiers` turns it into the real text
//! and `redact_secrets` into the log text, as in pwshlib 2.x. The provider's
//! own lifecycle uses `Script::text()`/`Script::redacted()` directly.

use magnus::{
    method, prelude::*, typed_data::Obj, Error, RArray, RClass, RString, Ruby, Value as RValue,
};
use pwshlib_core::literal::{escape_quotes as core_escape_quotes, format_value, TrackedText};
use pwshlib_core::script::{
    self as core_script, DscMethod, InvocableResource, Script, ScriptParts,
};
use pwshlib_core::{vendored, TypeDef, Value};

use super::DscBaseProvider;
use crate::convert::{from_ruby, to_ruby, type_definition_from_context};
use crate::error::BindingResult;

fn invalid(attribute: &str, message: impl Into<String>) -> pwshlib_core::Error {
    pwshlib_core::Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: message.into(),
    }
}

fn text_argument(ruby: &Ruby, value: RValue, what: &str) -> BindingResult<String> {
    match from_ruby(ruby, value, what)? {
        Value::Str(s) | Value::Symbol(s) => Ok(s),
        other => Err(invalid(what, format!("expected a String, got {other}")).into()),
    }
}

/// An invocable resource hash from Ruby, its values marked by their
/// attributes' types when the provider knows its type (from a lifecycle
/// call of this run): a hash built or edited by hand may hold a
/// Sensitive-typed value in the clear.
fn invocable_from_ruby(
    ruby: &Ruby,
    rb_self: RValue,
    resource: RValue,
) -> BindingResult<InvocableResource> {
    let value = from_ruby(ruby, resource, "resource")?;
    let mut resource = InvocableResource::from_value(&value)?;
    let typedef = Obj::<DscBaseProvider>::try_convert(rb_self)
        .ok()
        .and_then(|provider| provider.facts.borrow().typedef());
    if let Some(typedef) = typedef {
        resource.mark_secrets_by_type(&typedef);
    }
    Ok(resource)
}

fn parts_from_ruby(ruby: &Ruby, rb_self: RValue, resource: RValue) -> BindingResult<ScriptParts> {
    let resource = invocable_from_ruby(ruby, rb_self, resource)?;
    Ok(ScriptParts::build(
        &resource,
        &mut core_script::random_variable_name,
    )?)
}

fn marked(ruby: &Ruby, script: &Script) -> BindingResult<RString> {
    Ok(ruby.str_new(&script.marked()?))
}

fn symbols(ruby: &Ruby, names: Vec<&str>) -> RArray {
    ruby.ary_from_iter(names.into_iter().map(|n| ruby.sym_new(n)))
}

fn typedef(ruby: &Ruby, context: RValue) -> BindingResult<TypeDef> {
    type_definition_from_context(ruby, context)
}

/// `_invocable_resource(should, context, method, vendored)`: the 2.x
/// resource hash (`dscmeta_*`, `dsc_invoke_method`,
/// `vendored_modules_path`, `parameters`) for a Get, Set or Test of
/// `should`. `vendored` is where the type's vendored module is: the load
/// path to search (an Array), or the folder an override of
/// `vendored_modules_path` named (a String); the spine chooses.
fn invocable_resource(
    ruby: &Ruby,
    _rb_self: RValue,
    should: RValue,
    context: RValue,
    dsc_method: RValue,
    vendored: RValue,
) -> BindingResult<RValue> {
    let typedef = typedef(ruby, context)?;
    let method_text = text_argument(ruby, dsc_method, "method")?;
    let method = DscMethod::parse(&method_text)
        .ok_or_else(|| invalid("method", format!("unknown DSC method {method_text:?}")))?;
    let should = match from_ruby(ruby, should, "")? {
        Value::Hash(map) => map,
        other => return Err(invalid("should", format!("expected a Hash, got {other}")).into()),
    };
    let path = if !needs_vendored_path(&typedef) {
        String::new()
    } else if RArray::from_value(vendored).is_some() {
        search_load_path(ruby, &typedef.module_name, vendored)?
    } else {
        text_argument(ruby, vendored, "vendored_modules_path")?
    };
    let resource = InvocableResource::new(&typedef, &should, method, &path)?;
    to_ruby(ruby, &resource.to_value())
}

/// Whether the type's scripts name its vendored module by path: a
/// class-based resource, or one of a pinned module version.
fn needs_vendored_path(typedef: &TypeDef) -> bool {
    typedef.is_class_based() || typedef.module_version.is_some()
}

/// `_vendored_module_name(context)`: the module whose vendored folder the
/// type's scripts name, nil when they name none.
fn vendored_module_name(
    ruby: &Ruby,
    _rb_self: RValue,
    context: RValue,
) -> BindingResult<Option<String>> {
    let typedef = typedef(ruby, context)?;
    Ok(needs_vendored_path(&typedef).then(|| typedef.module_name.clone()))
}

/// `ps_script_content(resource)`: the whole script for an invocable
/// resource hash, in the marked text form.
fn ps_script_content(ruby: &Ruby, rb_self: RValue, resource: RValue) -> BindingResult<RString> {
    let resource = invocable_from_ruby(ruby, rb_self, resource)?;
    marked(ruby, &core_script::build_script(&resource)?)
}

/// `format(value)`: any Puppet value as a PowerShell literal, in the
/// marked text form when it holds Sensitive values.
fn format(ruby: &Ruby, _rb_self: RValue, value: RValue) -> BindingResult<RString> {
    let value = from_ruby(ruby, value, "value")?;
    marked(ruby, &Script::from_tracked(format_value(&value)?))
}

/// `unwrap(value)`: the value with every Sensitive wrapper removed, at any
/// depth (no 2.x `#PuppetSensitive` suffix: secrets are tracked by position).
fn unwrap(ruby: &Ruby, _rb_self: RValue, value: RValue) -> BindingResult<RValue> {
    let value = from_ruby(ruby, value, "value")?;
    to_ruby(ruby, &value.unwrap_sensitive())
}

/// `escape_quotes(text)`: doubles every PowerShell single-quote character
/// (U+0027 and U+2018..U+201B).
fn escape_quotes(ruby: &Ruby, _rb_self: RValue, text: RValue) -> BindingResult<RString> {
    Ok(ruby.str_new(&core_escape_quotes(&text_argument(ruby, text, "text")?)))
}

/// `redact_secrets(text)`: the log rendering of marked text (each secret
/// replaced by a redaction marker); text without markers is returned as is.
fn redact_secrets(ruby: &Ruby, _rb_self: RValue, text: RValue) -> BindingResult<RString> {
    let text = text_argument(ruby, text, "text")?;
    Ok(ruby.str_new(&Script::from_marked(&text).redacted()))
}

/// `remove_secret_identifiers(text)`: the real script text of marked
/// text (the secret markers removed), ready for PowerShell.
fn remove_secret_identifiers(
    ruby: &Ruby,
    _rb_self: RValue,
    text: RValue,
) -> BindingResult<RString> {
    let text = text_argument(ruby, text, "text")?;
    Ok(ruby.str_new(Script::from_marked(&text).text()))
}

/// `_vendored_modules_path(module_name, load_path)`: the module's vendored
/// `dsc_resources` folder, searched along `load_path`; raises naming the
/// module and the folders searched when it is missing.
fn vendored_modules_path(
    ruby: &Ruby,
    _rb_self: RValue,
    module_name: RValue,
    load_path: RValue,
) -> BindingResult<RString> {
    let module_name = text_argument(ruby, module_name, "module_name")?;
    Ok(ruby.str_new(&search_load_path(ruby, &module_name, load_path)?))
}

fn search_load_path(ruby: &Ruby, module_name: &str, entries: RValue) -> BindingResult<String> {
    let load_path = match from_ruby(ruby, entries, "load_path")? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Value::Str(s) | Value::Symbol(s) => Some(s),
                _ => None,
            })
            .collect::<Vec<_>>(),
        other => {
            return Err(invalid("load_path", format!("expected an Array, got {other}")).into())
        }
    };
    Ok(vendored::vendored_modules_path(&load_path, module_name)?)
}

/// `puppetize_name(name)`: lowercase, `[^a-z0-9_]` → `_`, `a` before a leading digit.
fn puppetize_name(ruby: &Ruby, _rb_self: RValue, name: RValue) -> BindingResult<RString> {
    Ok(ruby.str_new(&vendored::puppetize_name(&text_argument(
        ruby, name, "name",
    )?)))
}

/// `random_variable_name`: a fresh PowerShell variable name (`var_` + a simple UUID).
fn random_variable_name(ruby: &Ruby, _rb_self: RValue) -> RString {
    ruby.str_new(&core_script::random_variable_name("var_"))
}

/// `munge_psmodulepath(resource)`: what puts the vendored folder on
/// PSModulePath in a resource's script, the call's ` -VendoredPath '…'`
/// argument (empty when the folder is unknown). Thin entry: the script
/// builder emits it.
fn munge_psmodulepath(ruby: &Ruby, rb_self: RValue, resource: RValue) -> BindingResult<RString> {
    Ok(ruby.str_new(&parts_from_ruby(ruby, rb_self, resource)?.module_path))
}

type ScriptSection = (
    &'static str,
    fn(&ScriptParts) -> pwshlib_core::Result<TrackedText>,
);

/// The sections of a script that 2.x offered one by one (marked text, in
/// the inline form: each section sets the secret variables it uses by
/// literals first): `prepare_credentials` (the `New-PsCredential` lines),
/// `prepare_cim_instances` (the embedded instance lines, nested instances
/// first) and `invoke_params` (the `$InvokeParams = @{…}` line). Thin
/// entries: variable names are fresh on every call, so combine sections
/// only through `ps_script_content`.
const SCRIPT_SECTIONS: [ScriptSection; 3] = [
    ("prepare_credentials", ScriptParts::inline_credentials),
    ("prepare_cim_instances", |parts| {
        parts.cim_instances.inline()
    }),
    ("invoke_params", |parts| parts.invoke_params.inline()),
];

fn script_section<const INDEX: usize>(
    ruby: &Ruby,
    rb_self: RValue,
    resource: RValue,
) -> BindingResult<RString> {
    let (_, section) = SCRIPT_SECTIONS[INDEX];
    let parts = parts_from_ruby(ruby, rb_self, resource)?;
    marked(ruby, &Script::from_tracked(section(&parts)?))
}

type AttributeList = (&'static str, for<'t> fn(&'t TypeDef) -> Vec<&'t str>);

/// The attribute lists of a type that 2.x offered, each `name(context)`:
/// the attributes DSC needs for Get and for Set, those with `behaviour:
/// :namevar` or `:parameter`, and those whose type is an Enum.
const ATTRIBUTE_LISTS: [AttributeList; 5] = [
    (
        "mandatory_get_attributes",
        TypeDef::mandatory_get_attributes,
    ),
    (
        "mandatory_set_attributes",
        TypeDef::mandatory_set_attributes,
    ),
    ("namevar_attributes", TypeDef::namevar_attributes),
    ("parameter_attributes", TypeDef::parameter_attributes),
    ("enum_attributes", TypeDef::enum_attributes),
];

fn attribute_list<const INDEX: usize>(
    ruby: &Ruby,
    _rb_self: RValue,
    context: RValue,
) -> BindingResult<RArray> {
    let (_, list) = ATTRIBUTE_LISTS[INDEX];
    Ok(symbols(ruby, list(&typedef(ruby, context)?)))
}

/// `enum_values(context, attribute)`: the allowed values of an Enum
/// attribute; empty for other or unknown attributes.
fn enum_values(
    ruby: &Ruby,
    _rb_self: RValue,
    context: RValue,
    attribute: RValue,
) -> BindingResult<RArray> {
    let typedef = typedef(ruby, context)?;
    let attribute = text_argument(ruby, attribute, "attribute")?;
    let values = typedef
        .attribute(&attribute)
        .and_then(|a| a.enum_values.clone())
        .unwrap_or_default();
    Ok(ruby.ary_from_iter(values.iter().map(|v| ruby.str_new(v))))
}

/// Defines the script-building methods (pwshlib 2.x names and arities).
pub(super) fn define(class: RClass) -> Result<(), Error> {
    class.define_private_method("_invocable_resource", method!(invocable_resource, 4))?;
    class.define_private_method("_vendored_module_name", method!(vendored_module_name, 1))?;
    class.define_method("ps_script_content", method!(ps_script_content, 1))?;
    class.define_method("format", method!(format, 1))?;
    class.define_method("unwrap", method!(unwrap, 1))?;
    class.define_method("escape_quotes", method!(escape_quotes, 1))?;
    class.define_method("redact_secrets", method!(redact_secrets, 1))?;
    class.define_method(
        "remove_secret_identifiers",
        method!(remove_secret_identifiers, 1),
    )?;
    class.define_private_method("_vendored_modules_path", method!(vendored_modules_path, 2))?;
    class.define_method("puppetize_name", method!(puppetize_name, 1))?;
    class.define_method("random_variable_name", method!(random_variable_name, 0))?;
    class.define_method("munge_psmodulepath", method!(munge_psmodulepath, 1))?;
    class.define_method(SCRIPT_SECTIONS[0].0, method!(script_section::<0>, 1))?;
    class.define_method(SCRIPT_SECTIONS[1].0, method!(script_section::<1>, 1))?;
    class.define_method(SCRIPT_SECTIONS[2].0, method!(script_section::<2>, 1))?;
    class.define_method(ATTRIBUTE_LISTS[0].0, method!(attribute_list::<0>, 1))?;
    class.define_method(ATTRIBUTE_LISTS[1].0, method!(attribute_list::<1>, 1))?;
    class.define_method(ATTRIBUTE_LISTS[2].0, method!(attribute_list::<2>, 1))?;
    class.define_method(ATTRIBUTE_LISTS[3].0, method!(attribute_list::<3>, 1))?;
    class.define_method(ATTRIBUTE_LISTS[4].0, method!(attribute_list::<4>, 1))?;
    class.define_method("enum_values", method!(enum_values, 2))?;
    Ok(())
}
