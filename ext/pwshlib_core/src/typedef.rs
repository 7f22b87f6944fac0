//! The scaffolded type definition (`context.type.definition`), read once per
//! provider instance into owned Rust data with precomputed attribute sets.

use std::collections::HashMap;

use crate::error::{Error, Result};
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
    pub mof_type: Option<String>,
    pub mof_is_embedded: bool,
    /// Allowed values when the Puppet type is (an Optional of) an Enum.
    pub enum_values: Option<Vec<String>>,
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
        self.mof_type.as_deref().is_some_and(|t| t.ends_with("[]"))
            || strip_optional(&self.type_string).starts_with("Array")
    }

    pub fn is_datetime(&self) -> bool {
        self.mof_type
            .as_deref()
            .is_some_and(|t| t.trim_end_matches("[]").eq_ignore_ascii_case("DateTime"))
            || self.type_string.contains("Timestamp")
    }

    pub fn is_credential(&self) -> bool {
        self.mof_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("PSCredential"))
    }

    /// The CIM class of an embedded instance property (`MSFT_Foo[]` → `MSFT_Foo`).
    pub fn cim_class(&self) -> Option<&str> {
        if !self.mof_is_embedded || self.is_credential() {
            return None;
        }
        self.mof_type.as_deref().map(|t| t.trim_end_matches("[]"))
    }

    /// True when the Puppet type is a plain String (optionally Optional), for
    /// the nil → '' rule of result munging.
    pub fn is_plain_string(&self) -> bool {
        let inner = strip_optional(&self.type_string);
        inner == "String" || inner.starts_with("String[")
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

/// Extracts the quoted values of `Enum['a', "b"]` inside a type string
/// (looking through `Optional[...]`). Returns None when it is not an Enum.
pub fn parse_enum_values(type_string: &str) -> Option<Vec<String>> {
    let inner = strip_optional(type_string);
    let body = inner.strip_prefix("Enum[")?.strip_suffix(']')?;
    let mut values = Vec::new();
    let mut chars = body.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ',' || c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut text = String::new();
            let mut escaped = false;
            for d in chars.by_ref() {
                if escaped {
                    text.push(d);
                    escaped = false;
                } else if d == '\\' {
                    escaped = true;
                } else if d == c {
                    break;
                } else {
                    text.push(d);
                }
            }
            values.push(text);
        } else {
            let mut word = String::new();
            while let Some(&d) = chars.peek() {
                if d == ',' {
                    break;
                }
                word.push(d);
                chars.next();
            }
            values.push(word.trim().to_owned());
        }
    }
    Some(values)
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
    index: HashMap<String, usize>,
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
        Ok(TypeDef {
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
    Attribute {
        name: name.to_owned(),
        enum_values: parse_enum_values(&type_string),
        type_string,
        behaviour,
        mandatory_for_get: flag("mandatory_for_get"),
        mandatory_for_set: flag("mandatory_for_set"),
        mof_type: text("mof_type"),
        mof_is_embedded: flag("mof_is_embedded"),
    }
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
    fn enum_values_come_out_of_quoted_and_bare_forms() {
        assert_eq!(
            parse_enum_values("Optional[Enum['a', \"b\", '']]").unwrap(),
            ["a", "b", ""]
        );
        assert_eq!(
            parse_enum_values("Enum[property, resource]").unwrap(),
            ["property", "resource"]
        );
        assert_eq!(parse_enum_values("Optional[String]"), None);
    }

    #[test]
    fn rejects_a_definition_without_attributes() {
        let err = TypeDef::from_definition(&attr(&[("name", Value::str("dsc_x"))])).unwrap_err();
        assert!(err.to_string().contains("dsc_x"), "{err}");
    }
}
