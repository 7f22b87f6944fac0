//! The scaffolded type definition (`context.type.definition`), read once per
//! provider instance into owned Rust data with precomputed attribute sets.

mod shape;

use rustc_hash::FxHashMap;

use crate::cim_type::MofType;
pub use shape::{parse_enum_values, TypeShape};

use crate::error::{Error, Result};
use crate::secrecy::Secrecy;
use crate::value::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// A managed property (no `behaviour` key).
    Property,
    Namevar,
    Parameter,
    ReadOnly,
    InitOnly,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// The attribute name as Puppet knows it, e.g. `dsc_ensure` or `name`.
    pub name: String,
    /// The Puppet type string, e.g. `Optional[Enum['Present', 'Absent']]`.
    pub type_string: String,
    pub behaviour: Behaviour,
    pub mandatory_for_get: bool,
    pub mandatory_for_set: bool,
    /// The DSC/CIM type, e.g. `String[]`, `PSCredential`, `MSFT_Foo[]`.
    pub mof_type: Option<MofType>,
    pub mof_is_embedded: bool,
    /// Allowed values when the Puppet type is (an Optional of) an Enum.
    pub enum_values: Option<Vec<String>>,
    /// The parts of the Puppet type that the enum rules look into.
    pub shape: TypeShape,
    /// Where its values' secrets sit, read from the type string once
    /// ([`Secrecy::of_attribute`]), not on every invocation.
    pub secrecy: Secrecy,
}

impl Attribute {
    /// The DSC property name: the attribute name without `dsc_`.
    pub fn dsc_name(&self) -> Option<&str> {
        self.name.strip_prefix("dsc_")
    }

    pub fn is_dsc_property(&self) -> bool {
        self.name.starts_with("dsc_") && self.name != "dsc_timeout"
    }

    pub fn is_parameter(&self) -> bool {
        self.behaviour == Behaviour::Parameter
    }

    pub fn is_array(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_array)
            || strip_optional(&self.type_string).starts_with("Array")
    }

    pub fn is_credential(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_credential)
    }

    /// The `ensurable` attribute that the scaffolder adds to types without
    /// `Ensure`, typed `Boolean[false]` (a workaround for a Resource API
    /// bug). It is no DSC property: it never goes to DSC, Get reports it as
    /// `false`, and it is always in sync.
    pub fn is_ensurable_workaround(&self) -> bool {
        self.name == "ensurable"
            && strip_optional(&self.type_string).replace(' ', "") == "Boolean[false]"
    }

    pub fn enum_allows_empty(&self) -> bool {
        self.enum_values
            .as_ref()
            .is_some_and(|values| values.iter().any(String::is_empty))
    }
}

fn strip_optional(type_string: &str) -> &str {
    let t = type_string.trim();
    t.strip_prefix("Optional[")
        .and_then(|rest| rest.strip_suffix(']'))
        .map(str::trim)
        .unwrap_or(t)
}

#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// `dsc_<lowercase resource name>`.
    pub name: String,
    pub friendly_name: String,
    pub resource_name: String,
    /// `MOF`, `Class`, or None for older modules.
    pub implementation: Option<String>,
    pub module_name: String,
    pub module_version: Option<String>,
    /// Attributes in definition order.
    pub attributes: Vec<Attribute>,
    index: FxHashMap<String, usize>,
    /// The attributes a resource's identity is made of (`identity_namevars`).
    identity_namevars: Vec<String>,
}

impl TypeDef {
    /// Reads the `definition` hash that `Puppet::ResourceApi.register_type`
    /// received, already converted to a [`Value`].
    pub fn from_definition(definition: &Value) -> Result<TypeDef> {
        let map = definition
            .as_map()
            .ok_or_else(|| Error::InvalidTypeDefinition {
                type_name: "<unknown>".into(),
                message: "the definition is not a hash".into(),
            })?;
        let text = |key: &str| -> Option<String> {
            match map.get_named(key)? {
                Value::Str(s) | Value::Symbol(s) => Some(s.clone()),
                Value::Nil => None,
                other => Some(other.to_string()),
            }
        };
        let name = text("name").unwrap_or_default();
        let invalid = |message: String| Error::InvalidTypeDefinition {
            type_name: name.clone(),
            message,
        };
        let attributes_map = map
            .get_named("attributes")
            .and_then(Value::as_map)
            .ok_or_else(|| invalid("it has no attributes hash".into()))?;
        let mut attributes = Vec::with_capacity(attributes_map.len());
        for (key, options) in attributes_map.iter() {
            let attr_name = key
                .key_name()
                .ok_or_else(|| invalid(format!("attribute key {key} is not a name")))?;
            let options = options
                .as_map()
                .ok_or_else(|| invalid(format!("attribute {attr_name} has no options hash")))?;
            attributes.push(attribute_from_options(attr_name, options));
        }
        let index = attributes
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.clone(), i))
            .collect();
        let namevars: Vec<String> = attributes
            .iter()
            .filter(|a| a.behaviour == Behaviour::Namevar)
            .map(|a| a.name.clone())
            .collect();
        let identity_namevars = if namevars.is_empty() {
            vec!["name".to_owned()]
        } else {
            namevars
        };
        Ok(TypeDef {
            identity_namevars,
            friendly_name: text("dscmeta_resource_friendly_name").unwrap_or_default(),
            resource_name: text("dscmeta_resource_name").unwrap_or_default(),
            implementation: text("dscmeta_resource_implementation"),
            module_name: text("dscmeta_module_name").unwrap_or_default(),
            module_version: text("dscmeta_module_version").filter(|v| !v.is_empty()),
            name,
            attributes,
            index,
        })
    }

    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.index.get(name).map(|&i| &self.attributes[i])
    }

    /// The attribute of a DSC property (`DestinationPath` is
    /// `dsc_destinationpath`). Asked for every property of every Get
    /// result: a short ASCII name is lowered on the stack, not into a new
    /// String.
    pub fn dsc_property_attribute(&self, property: &str) -> Option<&Attribute> {
        const PREFIX: &[u8] = b"dsc_";
        let mut buffer = [0u8; 96];
        let length = PREFIX.len() + property.len();
        if property.is_ascii() && length <= buffer.len() {
            buffer[..PREFIX.len()].copy_from_slice(PREFIX);
            for (slot, byte) in buffer[PREFIX.len()..length]
                .iter_mut()
                .zip(property.bytes())
            {
                *slot = byte.to_ascii_lowercase();
            }
            // ASCII bytes: always UTF-8.
            return self.attribute(std::str::from_utf8(&buffer[..length]).ok()?);
        }
        self.attribute(&format!("dsc_{}", property.to_lowercase()))
    }

    pub fn is_class_based(&self) -> bool {
        self.implementation
            .as_deref()
            .is_some_and(|i| i.eq_ignore_ascii_case("Class"))
    }

    fn names_where(&self, keep: impl Fn(&Attribute) -> bool) -> Vec<&str> {
        self.attributes
            .iter()
            .filter(|a| keep(a))
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The attributes that tell resources apart in the caches, in order: the
    /// namevars, or `name` for a type that declares none. Made once with
    /// the definition; every entry call reads it.
    pub fn identity_namevars(&self) -> &[String] {
        &self.identity_namevars
    }

    pub fn namevar_attributes(&self) -> Vec<&str> {
        self.names_where(|a| a.behaviour == Behaviour::Namevar)
    }

    pub fn mandatory_get_attributes(&self) -> Vec<&str> {
        self.names_where(|a| a.mandatory_for_get)
    }

    pub fn mandatory_set_attributes(&self) -> Vec<&str> {
        self.names_where(|a| a.mandatory_for_set)
    }

    pub fn parameter_attributes(&self) -> Vec<&str> {
        self.names_where(Attribute::is_parameter)
    }

    pub fn enum_attributes(&self) -> Vec<&str> {
        self.names_where(|a| a.enum_values.is_some())
    }
}

fn attribute_from_options(name: &str, options: &Map) -> Attribute {
    let text = |key: &str| {
        options
            .get_named(key)
            .and_then(Value::key_name)
            .map(str::to_owned)
    };
    let flag = |key: &str| matches!(options.get_named(key), Some(Value::Bool(true)));
    let type_string = text("type").unwrap_or_else(|| "Any".into());
    let behaviour = match text("behaviour").as_deref() {
        Some("namevar") => Behaviour::Namevar,
        Some("parameter") => Behaviour::Parameter,
        Some("read_only") => Behaviour::ReadOnly,
        Some("init_only") => Behaviour::InitOnly,
        _ => Behaviour::Property,
    };
    let shape = TypeShape::parse(&type_string);
    let mut attribute = Attribute {
        name: name.to_owned(),
        enum_values: match &shape {
            TypeShape::Enum(values) => Some(values.clone()),
            _ => None,
        },
        shape,
        type_string,
        behaviour,
        mandatory_for_get: flag("mandatory_for_get"),
        mandatory_for_set: flag("mandatory_for_set"),
        mof_type: text("mof_type")
            .as_deref()
            .map(|mof_type| MofType::parse(mof_type, flag("mof_is_embedded"))),
        mof_is_embedded: flag("mof_is_embedded"),
        secrecy: Secrecy::default(),
    };
    attribute.secrecy = Secrecy::of_attribute(&attribute.type_string, attribute.is_credential());
    attribute
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(s: &str) -> Value {
        Value::sym(s)
    }

    fn attr(pairs: &[(&str, Value)]) -> Value {
        Value::Hash(pairs.iter().map(|(k, v)| (sym(k), v.clone())).collect())
    }

    pub(crate) fn sample_definition() -> Value {
        attr(&[
            ("name", Value::str("dsc_psrepository")),
            ("dscmeta_resource_friendly_name", Value::str("PSRepository")),
            ("dscmeta_resource_name", Value::str("MSFT_PSRepository")),
            ("dscmeta_module_name", Value::str("PowerShellGet")),
            ("dscmeta_module_version", Value::str("2.2.5")),
            (
                "attributes",
                Value::Hash(
                    [
                        (
                            "name",
                            attr(&[
                                ("type", Value::str("String")),
                                ("behaviour", sym("namevar")),
                            ]),
                        ),
                        (
                            "dsc_name",
                            attr(&[
                                ("type", Value::str("String")),
                                ("behaviour", sym("namevar")),
                                ("mandatory_for_get", Value::Bool(true)),
                                ("mandatory_for_set", Value::Bool(true)),
                                ("mof_type", Value::str("String")),
                            ]),
                        ),
                        (
                            "dsc_ensure",
                            attr(&[
                                ("type", Value::str("Optional[Enum['Present', 'Absent']]")),
                                ("mof_type", Value::str("String")),
                            ]),
                        ),
                        (
                            "validation_mode",
                            attr(&[
                                ("type", Value::str("Enum[property, resource]")),
                                ("behaviour", sym("parameter")),
                            ]),
                        ),
                    ]
                    .into_iter()
                    .map(|(k, v)| (sym(k), v))
                    .collect(),
                ),
            ),
        ])
    }

    #[test]
    fn reads_a_scaffolded_definition() {
        let def = TypeDef::from_definition(&sample_definition()).unwrap();
        assert_eq!(def.friendly_name, "PSRepository");
        assert_eq!(def.module_version.as_deref(), Some("2.2.5"));
        assert!(!def.is_class_based());
        assert_eq!(def.namevar_attributes(), ["name", "dsc_name"]);
        assert_eq!(def.mandatory_get_attributes(), ["dsc_name"]);
        assert_eq!(def.parameter_attributes(), ["validation_mode"]);
        assert_eq!(def.enum_attributes(), ["dsc_ensure", "validation_mode"]);
        let ensure = def.attribute("dsc_ensure").unwrap();
        assert_eq!(
            ensure.enum_values.as_deref(),
            Some(&["Present".to_string(), "Absent".to_string()][..])
        );
        assert_eq!(ensure.dsc_name(), Some("ensure"));
    }

    #[test]
    fn rejects_a_definition_without_attributes() {
        let err = TypeDef::from_definition(&attr(&[("name", Value::str("dsc_x"))])).unwrap_err();
        assert!(err.to_string().contains("dsc_x"), "{err}");
    }

    #[test]
    fn an_attribute_and_its_invoke_parameter_agree_on_the_mof_type() {
        use crate::script::{DscMethod, InvocableResource};
        for mof_type in [
            "PSCredential",
            " PSCredential",
            "PSCredential[]",
            "DateTime[]",
            "MSFT_Foo[]",
        ] {
            let options = Map(vec![
                (sym("type"), Value::str("Any")),
                (sym("mof_type"), Value::str(mof_type)),
                (sym("mof_is_embedded"), Value::Bool(true)),
                (sym("mandatory_for_get"), Value::Bool(true)),
            ]);
            let attribute = attribute_from_options("dsc_thing", &options);
            let definition = Value::Hash(Map(vec![
                (sym("name"), Value::str("dsc_thing")),
                (sym("dscmeta_resource_friendly_name"), Value::str("Thing")),
                (sym("dscmeta_resource_name"), Value::str("MSFT_Thing")),
                (sym("dscmeta_module_name"), Value::str("ThingDsc")),
                (
                    sym("attributes"),
                    Value::Hash(Map(vec![(sym("dsc_thing"), Value::Hash(options))])),
                ),
            ]));
            let typedef = TypeDef::from_definition(&definition).unwrap();
            let should = Map(vec![(sym("dsc_thing"), Value::str("x"))]);
            let resource = InvocableResource::new(&typedef, &should, DscMethod::Set, "").unwrap();
            let parameter = &resource.parameters[0];
            let (ours, theirs) = (
                attribute.mof_type.as_ref().unwrap(),
                parameter.mof_type.as_ref().unwrap(),
            );
            assert_eq!(ours.is_credential(), theirs.is_credential(), "{mof_type}");
            assert_eq!(ours.is_datetime(), theirs.is_datetime(), "{mof_type}");
            assert_eq!(ours.cim_class(), theirs.cim_class(), "{mof_type}");
            assert_eq!(
                attribute.is_credential(),
                mof_type.contains("PSCredential"),
                "{mof_type}"
            );
        }
    }

    #[test]
    fn only_a_boolean_false_ensurable_is_the_scaffolder_workaround() {
        let def = crate::test_support::scaffolded_enum_typedef();
        assert!(def
            .attribute("ensurable")
            .unwrap()
            .is_ensurable_workaround());
        assert!(!def
            .attribute("dsc_schedule")
            .unwrap()
            .is_ensurable_workaround());
    }
}
