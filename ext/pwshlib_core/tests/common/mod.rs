//! Type definitions shaped like the scaffolded fixture types, and helpers
//! shared by the script-building tests.
#![allow(dead_code)] // each test file uses its own subset

use pwshlib_core::script::DscMethod;
use pwshlib_core::script::{build_script_with, InvocableResource, Script};
use pwshlib_core::{Map, TypeDef, Value};

pub fn sym(s: &str) -> Value {
    Value::sym(s)
}

pub fn s(text: &str) -> Value {
    Value::str(text)
}

pub fn secret(value: Value) -> Value {
    Value::Sensitive(Box::new(value))
}

pub fn hash(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

pub fn resource(pairs: Vec<(&str, Value)>) -> Map {
    pairs.into_iter().map(|(k, v)| (sym(k), v)).collect()
}

/// One attribute: (name, Puppet type, behaviour, mandatory_for_get, mof_type, embedded).
pub struct Attr(
    pub &'static str,
    pub &'static str,
    pub Option<&'static str>,
    pub bool,
    pub Option<&'static str>,
    pub bool,
);

impl Attr {
    /// A plain property of this MOF type.
    pub fn property(name: &'static str, ty: &'static str, mof: &'static str) -> Attr {
        Attr(name, ty, None, false, Some(mof), false)
    }

    /// A property of an embedded MOF type (a CIM instance or credential).
    pub fn embedded(name: &'static str, ty: &'static str, mof: &'static str) -> Attr {
        Attr(name, ty, None, false, Some(mof), true)
    }
}

pub fn typedef(
    friendly: &str,
    implementation: Option<&str>,
    module: &str,
    version: Option<&str>,
    extra: &[Attr],
) -> TypeDef {
    let mut attrs = vec![
        Attr("name", "String", Some("namevar"), false, None, false),
        Attr(
            "validation_mode",
            "Enum[property, resource]",
            Some("parameter"),
            false,
            None,
            false,
        ),
        Attr(
            "dsc_psdscrunascredential",
            "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]",
            Some("parameter"),
            false,
            Some("PSCredential"),
            true,
        ),
        Attr(
            "dsc_timeout",
            "Optional[Integer[1, 1209600]]",
            Some("parameter"),
            false,
            Some("UInt32"),
            false,
        ),
    ];
    attrs.extend(extra.iter().map(|a| Attr(a.0, a.1, a.2, a.3, a.4, a.5)));
    let attributes: Map = attrs
        .iter()
        .map(|Attr(name, ty, behaviour, get, mof, embedded)| {
            let mut options = vec![(sym("type"), s(ty))];
            if let Some(b) = behaviour {
                options.push((sym("behaviour"), sym(b)));
            }
            options.push((sym("mandatory_for_get"), Value::Bool(*get)));
            options.push((sym("mandatory_for_set"), Value::Bool(*get)));
            if let Some(m) = mof {
                options.push((sym("mof_type"), s(m)));
                options.push((sym("mof_is_embedded"), Value::Bool(*embedded)));
            }
            (sym(name), Value::Hash(options.into_iter().collect()))
        })
        .collect();
    let mut definition = vec![
        (sym("name"), s(&format!("dsc_{}", friendly.to_lowercase()))),
        (sym("dscmeta_resource_friendly_name"), s(friendly)),
        (sym("dscmeta_resource_name"), s(&format!("MSFT_{friendly}"))),
        (sym("dscmeta_module_name"), s(module)),
        (sym("attributes"), Value::Hash(attributes)),
    ];
    if let Some(i) = implementation {
        definition.push((sym("dscmeta_resource_implementation"), s(i)));
    }
    if let Some(v) = version {
        definition.push((sym("dscmeta_module_version"), s(v)));
    }
    TypeDef::from_definition(&Value::Hash(definition.into_iter().collect())).unwrap()
}

/// A MOF resource with every value kind the builder handles.
pub fn kitchen_sink(implementation: Option<&str>, version: Option<&str>) -> TypeDef {
    let credential = "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]";
    typedef(
        "KitchenSink",
        implementation,
        "PwshlibFixtureDsc",
        version,
        &[
            Attr(
                "dsc_name",
                "String",
                Some("namevar"),
                true,
                Some("String"),
                false,
            ),
            Attr::property(
                "dsc_ensure",
                "Optional[Enum['Present', 'Absent']]",
                "String",
            ),
            Attr::property("dsc_text", "Optional[String]", "String"),
            Attr::property("dsc_list", "Optional[Array[String]]", "String[]"),
            Attr::property("dsc_number", "Optional[Integer]", "UInt32"),
            Attr::property("dsc_flag", "Optional[Boolean]", "Boolean"),
            Attr::property("dsc_when", "Optional[Timestamp]", "DateTime"),
            Attr::embedded("dsc_password", credential, "PSCredential"),
            Attr::embedded(
                "dsc_bindings",
                "Optional[Array[Struct[{}]]]",
                "MSFT_Binding[]",
            ),
            Attr::embedded("dsc_single", "Optional[Struct[{}]]", "MSFT_Single"),
            Attr("dsc_anything", "Optional[Any]", None, false, None, false),
            Attr(
                "dsc_checksum",
                "Optional[String]",
                Some("read_only"),
                false,
                Some("String"),
                false,
            ),
        ],
    )
}

pub const VENDORED: &str =
    "C:/ProgramData/PuppetLabs/puppet/cache/lib/puppet_x/pwshlibfixturedsc/dsc_resources";

/// Builds with predictable variable names (`cred_1`, `cim_2`, …).
pub fn build(typedef: &TypeDef, should: &Map, method: DscMethod) -> Script {
    let resource = InvocableResource::new(typedef, should, method, VENDORED).unwrap();
    let mut counter = 0;
    build_script_with(&resource, &mut |prefix| {
        counter += 1;
        format!("{prefix}{counter}")
    })
    .unwrap()
}

/// The line that starts with `start`.
pub fn line<'a>(script: &'a str, start: &str) -> &'a str {
    script
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in:\n{script}"))
}

/// The generated lines (credentials, CIM instances, InvokeParams).
pub fn generated_lines(script: &str) -> Vec<&str> {
    script
        .lines()
        .filter(|l| {
            l.starts_with("$cred_") || l.starts_with("$cim_") || l.starts_with("$InvokeParams")
        })
        .collect()
}
