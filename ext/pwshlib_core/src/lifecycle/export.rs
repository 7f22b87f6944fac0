//! `get` without names (`puppet resource dsc_x`, `instances`, `resources {
//! purge => true }`): the resource's Export, each instance it lists made
//! into a Puppet hash by the Get's own step ([`get_result`]), so that it is
//! munged, typed, marked Sensitive and cached exactly as a Get result.

use super::resource_api::get_result;
use super::{debug_lazy, Provider};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// The member of an Export answer that lists the instances.
pub const EXPORT_INSTANCES: &str = "instances";
/// The member of an Export answer saying why the resource cannot list
/// itself (no `Export()`, no `Export-TargetResource`): not a failure.
pub const EXPORT_REFUSAL: &str = "cannot_export";
/// What joins the values of several key properties into one title.
pub const TITLE_SEPARATOR: &str = "|";

/// `invoke_export_method`'s answer: one Puppet hash per instance the
/// resource exported, titled by its key values. `data` is the Export's
/// answer, None when the call failed (reported already): then, and for a
/// resource that cannot list itself (one warning naming it and why), no
/// instances, as Puppet lists a type that has none.
pub fn export_result<P: Provider>(provider: &P, data: Option<Value>) -> Result<Vec<Map>, P::Error> {
    let Some(data) = data else {
        return Ok(Vec::new());
    };
    let typedef = provider.typedef()?;
    let answer = data.as_map();
    if let Some(why) = answer
        .and_then(|m| m.get_named(EXPORT_REFUSAL))
        .and_then(Value::as_str)
    {
        provider.warning(None, &cannot_list_message(&typedef, why))?;
        return Ok(Vec::new());
    }
    let Some(instances) = answer
        .and_then(|m| m.get_named(EXPORT_INSTANCES))
        .and_then(Value::as_array)
    else {
        let message = format!(
            "the DSC resource '{}' answered its Export with no list of instances",
            typedef.friendly_name
        );
        provider.err(None, &message)?;
        return Ok(Vec::new());
    };
    debug_lazy(provider, || {
        format!(
            "{} exported {} instance(s)",
            typedef.friendly_name,
            instances.len()
        )
    })?;
    let mut out = Vec::with_capacity(instances.len());
    for instance in instances {
        let Some(properties) = instance.as_map() else {
            let message = format!(
                "the DSC resource '{}' exported a value that is not an instance; it is left out",
                typedef.friendly_name
            );
            provider.err(None, &message)?;
            continue;
        };
        if reports_absent(properties) {
            continue;
        }
        let name_hash = name_hash_of_instance(&typedef, properties);
        if let Some(mut hash) = get_result(provider, &name_hash, Some(instance.clone()))? {
            // The Resource API titles an instance of a type with several
            // namevars by a hash of them, unless it is given one.
            if let Some(title) = name_hash.get_named("name") {
                hash.insert_symbol("title", title.clone());
            }
            out.push(hash);
        }
    }
    Ok(out)
}

/// The one line `puppet resource dsc_x` shows for a resource that cannot
/// list itself (Puppet puts the type before it): the resource, why, and
/// what still works.
pub fn cannot_list_message(typedef: &TypeDef, why: &str) -> String {
    format!(
        "cannot list instances: the DSC resource '{resource}' of module '{module}' cannot list itself ({why}); `puppet resource {type_name} <title> <key>=<value>` reads one instance by its keys",
        type_name = typedef.name,
        resource = typedef.friendly_name,
        module = typedef.module_name,
    )
}

/// An instance that says it is not there (`Ensure` Absent) is not one the
/// machine has.
fn reports_absent(properties: &Map) -> bool {
    properties
        .get_named("Ensure")
        .or_else(|| {
            properties.iter().find_map(|(k, v)| {
                k.key_name()
                    .filter(|name| name.eq_ignore_ascii_case("ensure"))
                    .map(|_| v)
            })
        })
        .and_then(Value::as_str)
        .is_some_and(|ensure| ensure.eq_ignore_ascii_case("absent"))
}

/// The hash a Get of this instance would be made with: its key properties
/// (the type's namevars other than `name`) as it reports them, and a
/// title Puppet can use again, their values (joined by
/// [`TITLE_SEPARATOR`] when there are several).
pub fn name_hash_of_instance(typedef: &TypeDef, properties: &Map) -> Map {
    let mut name_hash = Map::new();
    let mut title_parts = Vec::new();
    for namevar in typedef.namevar_attributes() {
        if namevar == "name" {
            continue;
        }
        let value = properties.iter().find_map(|(key, value)| {
            key.key_name()
                .and_then(|property| typedef.dsc_property_attribute(property))
                .filter(|attribute| attribute.name == namevar)
                .map(|_| value)
        });
        let Some(value) = value.filter(|v| !v.is_nil()) else {
            continue;
        };
        title_parts.push(match value.unwrap_sensitive() {
            Value::Str(text) => text,
            other => other.to_string(),
        });
        name_hash.insert_symbol(namevar, value.clone());
    }
    let mut out = Map::new();
    out.insert_symbol("name", Value::str(title_parts.join(TITLE_SEPARATOR)));
    for (key, value) in name_hash.0 {
        out.insert(key, value);
    }
    out
}
