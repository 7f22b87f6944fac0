//! Type definitions shaped like the scaffolded fixture types, for unit tests.

pub mod fake_provider;

use crate::typedef::TypeDef;
use crate::value::{Map, Value};

fn attr(pairs: &[(&str, Value)]) -> Value {
    Value::Hash(
        pairs
            .iter()
            .map(|(k, v)| (Value::sym(*k), v.clone()))
            .collect(),
    )
}

fn prop(type_string: &str, mof_type: &str, extra: &[(&str, Value)]) -> Value {
    let mut pairs = vec![
        ("type", Value::str(type_string)),
        ("mof_type", Value::str(mof_type)),
    ];
    pairs.extend(extra.iter().cloned());
    attr(&pairs)
}

const CREDENTIAL: &str =
    "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]";

/// `name`, the namevar every scaffolded type has.
fn name_attribute() -> (&'static str, Value) {
    (
        "name",
        attr(&[
            ("type", Value::str("String")),
            ("behaviour", Value::sym("namevar")),
        ]),
    )
}

/// `dsc_psdscrunascredential`, the run-as credential parameter.
fn run_as_credential() -> (&'static str, Value) {
    (
        "dsc_psdscrunascredential",
        prop(
            CREDENTIAL,
            "PSCredential",
            &[
                ("behaviour", Value::sym("parameter")),
                ("mof_is_embedded", Value::Bool(true)),
            ],
        ),
    )
}

/// A String namevar that Get and Set need.
fn mandatory_namevar(name: &'static str) -> (&'static str, Value) {
    (
        name,
        prop(
            "String",
            "String",
            &[
                ("behaviour", Value::sym("namevar")),
                ("mandatory_for_get", Value::Bool(true)),
                ("mandatory_for_set", Value::Bool(true)),
            ],
        ),
    )
}

/// An embedded credential property.
fn credential_property(name: &'static str) -> (&'static str, Value) {
    (
        name,
        prop(
            CREDENTIAL,
            "PSCredential",
            &[("mof_is_embedded", Value::Bool(true))],
        ),
    )
}

/// A type definition of the `PwshlibFixtureDsc` module with these
/// attributes; `mof_version` makes it a MOF resource of that version.
fn definition(
    name: &str,
    friendly: &str,
    mof_version: Option<&str>,
    attributes: Vec<(&'static str, Value)>,
) -> TypeDef {
    let attributes: Map = attributes
        .into_iter()
        .map(|(k, v)| (Value::sym(k), v))
        .collect();
    let mut pairs = vec![
        ("name", Value::str(name)),
        ("dscmeta_resource_friendly_name", Value::str(friendly)),
        (
            "dscmeta_resource_name",
            Value::str(format!("MSFT_{friendly}")),
        ),
    ];
    if let Some(version) = mof_version {
        pairs.push(("dscmeta_resource_implementation", Value::str("MOF")));
        pairs.push(("dscmeta_module_version", Value::str(version)));
    }
    pairs.push(("dscmeta_module_name", Value::str("PwshlibFixtureDsc")));
    pairs.push(("attributes", Value::Hash(attributes)));
    TypeDef::from_definition(&attr(&pairs)).expect("fixture definition is valid")
}

/// Like spec/fixtures/.../dsc_fixturefile.rb, plus a DateTime, a CIM array
/// and a credential property so one type covers every munging rule.
pub fn fixture_typedef() -> TypeDef {
    let attributes = vec![
        name_attribute(),
        (
            "validation_mode",
            attr(&[
                ("type", Value::str("Enum[property, resource]")),
                ("behaviour", Value::sym("parameter")),
            ]),
        ),
        run_as_credential(),
        (
            "dsc_timeout",
            prop(
                "Optional[Integer[1, 1209600]]",
                "UInt32",
                &[("behaviour", Value::sym("parameter"))],
            ),
        ),
        mandatory_namevar("dsc_destinationpath"),
        (
            "dsc_ensure",
            prop(
                "Optional[Enum['Present', 'present', 'Absent', 'absent']]",
                "String",
                &[],
            ),
        ),
        ("dsc_contents", prop("Optional[String]", "String", &[])),
        ("dsc_plain", prop("String", "String", &[])),
        (
            "dsc_type",
            prop(
                "Optional[Enum['File', 'file', 'Directory', 'directory']]",
                "String",
                &[],
            ),
        ),
        (
            "dsc_mode",
            prop("Optional[Enum['', 'Fast', 'Slow']]", "String", &[]),
        ),
        ("dsc_force", prop("Optional[Boolean]", "Boolean", &[])),
        (
            "dsc_attributes",
            prop("Optional[Array[String]]", "String[]", &[]),
        ),
        (
            "dsc_starttime",
            prop("Optional[Timestamp]", "DateTime", &[]),
        ),
        (
            "dsc_port",
            prop("Optional[Integer[0, 65535]]", "UInt32", &[]),
        ),
        credential_property("dsc_password"),
        (
            "dsc_bindinginfo",
            prop(
                "Optional[Array[Struct[{ protocol => String }]]]",
                "MSFT_Binding[]",
                &[("mof_is_embedded", Value::Bool(true))],
            ),
        ),
        (
            "dsc_checksum",
            prop(
                "Optional[String]",
                "String",
                &[("behaviour", Value::sym("read_only"))],
            ),
        ),
    ];
    definition("dsc_fixturefile", "FixtureFile", Some("1.2.0"), attributes)
}

/// Like spec/fixtures/.../dsc_fixtureaccessrule.rb and
/// dsc_fixturesetting.rb in one type: multi-casing enums at the top level
/// and inside the Struct members of a CIM array, and the scaffolder's
/// `ensurable: Boolean[false]`.
pub fn scaffolded_enum_typedef() -> TypeDef {
    let attributes = vec![
        name_attribute(),
        mandatory_namevar("dsc_path"),
        (
            "dsc_schedule",
            prop(
                "Optional[Enum['Once', 'once', 'Daily', 'daily']]",
                "String",
                &[],
            ),
        ),
        (
            "dsc_accessrules",
            prop(
                "Optional[Array[Struct[{ principal => String, accesscontroltype => Enum['Grant', 'grant', 'Deny', 'deny'], rights => Optional[Array[Enum['Read', 'read', 'FullControl', 'fullcontrol']]] }]]]",
                "MSFT_Rule[]",
                &[("mof_is_embedded", Value::Bool(true))],
            ),
        ),
        (
            "ensurable",
            prop("Boolean[false]", "String", &[("default", Value::Bool(false))]),
        ),
    ];
    definition(
        "dsc_fixtureaccessrule",
        "FixtureAccessRule",
        None,
        attributes,
    )
}

/// Like spec/fixtures/.../dsc_fixturevault.rb: secrets at every depth (a
/// Sensitive property, a Sensitive member of a hash and of a CIM instance,
/// a credential), and a free-form hash.
pub fn secret_typedef() -> TypeDef {
    let attributes = vec![
        name_attribute(),
        run_as_credential(),
        mandatory_namevar("dsc_vaultname"),
        (
            "dsc_ensure",
            prop("Optional[Enum['Present', 'Absent']]", "String", &[]),
        ),
        (
            "dsc_secret",
            prop("Optional[Sensitive[String]]", "String", &[]),
        ),
        (
            "dsc_settings",
            prop(
                "Optional[Struct[{ label => Optional[String], token => Optional[Sensitive[String]] }]]",
                "Hashtable",
                &[],
            ),
        ),
        ("dsc_options", prop("Optional[Hash]", "Hashtable", &[])),
        (
            "dsc_endpoints",
            prop(
                "Optional[Array[Struct[{ address => String, apikey => Optional[Sensitive[String]], cim_instance_type => Optional[String] }]]]",
                "MSFT_FixtureEndpoint[]",
                &[("mof_is_embedded", Value::Bool(true))],
            ),
        ),
        credential_property("dsc_credential"),
        ("dsc_note", prop("Optional[String]", "String", &[])),
    ];
    definition(
        "dsc_fixturevault",
        "FixtureVault",
        Some("1.2.0"),
        attributes,
    )
}

/// A class-based resource in the Machine Configuration convention: a key,
/// two configurable properties (one Sensitive) and a `NotConfigurable`
/// `Reasons` of `Reason` instances.
pub fn reasons_typedef() -> TypeDef {
    let attributes = vec![
        name_attribute(),
        (
            "validation_mode",
            attr(&[
                ("type", Value::str("Enum[property, resource]")),
                ("behaviour", Value::sym("parameter")),
            ]),
        ),
        mandatory_namevar("dsc_name"),
        ("dsc_value", prop("Optional[String]", "String", &[])),
        (
            "dsc_secret",
            prop("Optional[Sensitive[String]]", "String", &[]),
        ),
        (
            "dsc_reasons",
            prop(
                "Optional[Array[Struct[{ code => Optional[String], phrase => Optional[String] }]]]",
                "Reason[]",
                &[
                    ("behaviour", Value::sym("read_only")),
                    ("mof_is_embedded", Value::Bool(true)),
                ],
            ),
        ),
    ];
    definition(
        "dsc_fixturecompliance",
        "FixtureCompliance",
        None,
        attributes,
    )
}
