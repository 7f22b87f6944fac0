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

/// Like spec/fixtures/.../dsc_fixturefile.rb, plus a DateTime, a CIM array
/// and a credential property so one type covers every munging rule.
pub fn fixture_typedef() -> TypeDef {
    let namevar = |get: bool| {
        vec![
            ("behaviour", Value::sym("namevar")),
            ("mandatory_for_get", Value::Bool(get)),
            ("mandatory_for_set", Value::Bool(get)),
        ]
    };
    let credential = "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]";
    let attributes: Map = [
        (
            "name",
            attr(&[
                ("type", Value::str("String")),
                ("behaviour", Value::sym("namevar")),
            ]),
        ),
        (
            "validation_mode",
            attr(&[
                ("type", Value::str("Enum[property, resource]")),
                ("behaviour", Value::sym("parameter")),
            ]),
        ),
        (
            "dsc_psdscrunascredential",
            prop(
                credential,
                "PSCredential",
                &[
                    ("behaviour", Value::sym("parameter")),
                    ("mof_is_embedded", Value::Bool(true)),
                ],
            ),
        ),
        (
            "dsc_timeout",
            prop(
                "Optional[Integer[1, 1209600]]",
                "UInt32",
                &[("behaviour", Value::sym("parameter"))],
            ),
        ),
        (
            "dsc_destinationpath",
            prop("String", "String", &namevar(true)),
        ),
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
        (
            "dsc_password",
            prop(
                credential,
                "PSCredential",
                &[("mof_is_embedded", Value::Bool(true))],
            ),
        ),
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
    ]
    .into_iter()
    .map(|(k, v)| (Value::sym(k), v))
    .collect();
    let definition = attr(&[
        ("name", Value::str("dsc_fixturefile")),
        ("dscmeta_resource_friendly_name", Value::str("FixtureFile")),
        ("dscmeta_resource_name", Value::str("MSFT_FixtureFile")),
        ("dscmeta_resource_implementation", Value::str("MOF")),
        ("dscmeta_module_name", Value::str("PwshlibFixtureDsc")),
        ("dscmeta_module_version", Value::str("1.2.0")),
        ("attributes", Value::Hash(attributes)),
    ]);
    TypeDef::from_definition(&definition).expect("fixture definition is valid")
}

/// Like spec/fixtures/.../dsc_fixtureaccessrule.rb and
/// dsc_fixturesetting.rb in one type: multi-casing enums at the top level
/// and inside the Struct members of a CIM array, and the scaffolder's
/// `ensurable: Boolean[false]`.
pub fn scaffolded_enum_typedef() -> TypeDef {
    let attributes: Map = [
        (
            "name",
            attr(&[
                ("type", Value::str("String")),
                ("behaviour", Value::sym("namevar")),
            ]),
        ),
        (
            "dsc_path",
            prop(
                "String",
                "String",
                &[
                    ("behaviour", Value::sym("namevar")),
                    ("mandatory_for_get", Value::Bool(true)),
                    ("mandatory_for_set", Value::Bool(true)),
                ],
            ),
        ),
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
    ]
    .into_iter()
    .map(|(k, v)| (Value::sym(k), v))
    .collect();
    let definition = attr(&[
        ("name", Value::str("dsc_fixtureaccessrule")),
        (
            "dscmeta_resource_friendly_name",
            Value::str("FixtureAccessRule"),
        ),
        (
            "dscmeta_resource_name",
            Value::str("MSFT_FixtureAccessRule"),
        ),
        ("dscmeta_module_name", Value::str("PwshlibFixtureDsc")),
        ("attributes", Value::Hash(attributes)),
    ]);
    TypeDef::from_definition(&definition).expect("fixture definition is valid")
}

/// Like spec/fixtures/.../dsc_fixturevault.rb: secrets at every depth (a
/// Sensitive property, a Sensitive member of a hash and of a CIM instance,
/// a credential), and a free-form hash.
pub fn secret_typedef() -> TypeDef {
    let credential = "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]";
    let attributes: Map = [
        (
            "name",
            attr(&[
                ("type", Value::str("String")),
                ("behaviour", Value::sym("namevar")),
            ]),
        ),
        (
            "dsc_psdscrunascredential",
            prop(
                credential,
                "PSCredential",
                &[
                    ("behaviour", Value::sym("parameter")),
                    ("mof_is_embedded", Value::Bool(true)),
                ],
            ),
        ),
        (
            "dsc_vaultname",
            prop(
                "String",
                "String",
                &[
                    ("behaviour", Value::sym("namevar")),
                    ("mandatory_for_get", Value::Bool(true)),
                    ("mandatory_for_set", Value::Bool(true)),
                ],
            ),
        ),
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
        (
            "dsc_credential",
            prop(
                credential,
                "PSCredential",
                &[("mof_is_embedded", Value::Bool(true))],
            ),
        ),
        ("dsc_note", prop("Optional[String]", "String", &[])),
    ]
    .into_iter()
    .map(|(k, v)| (Value::sym(k), v))
    .collect();
    let definition = attr(&[
        ("name", Value::str("dsc_fixturevault")),
        ("dscmeta_resource_friendly_name", Value::str("FixtureVault")),
        ("dscmeta_resource_name", Value::str("MSFT_FixtureVault")),
        ("dscmeta_resource_implementation", Value::str("MOF")),
        ("dscmeta_module_name", Value::str("PwshlibFixtureDsc")),
        ("dscmeta_module_version", Value::str("1.2.0")),
        ("attributes", Value::Hash(attributes)),
    ]);
    TypeDef::from_definition(&definition).expect("secret fixture definition is valid")
}
