//! The scaffolded type definition (`context.type.definition`), read once per
//! provider instance into owned Rust data with precomputed attribute sets.

use rustc_hash::FxHashMap;

use crate::redact::Secrecy;

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

/// A DSC (MOF/CIM) type as the type schema names it: `String[]`,
/// `PSCredential`, `MSFT_Foo[]`. Parsed once, here: the name as given is
/// kept (pwshlib 2.x passes it on), and its element type is the name
/// trimmed and without the `[]` of an array. Every question about the type
/// (credential? date-time? integer? array?) asks the element type, so the
/// attribute and the parameter built from it cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MofType {
    text: String,
    element: String,
    array: bool,
}

/// The CIM integer types (MOF's `uint8` … `sint64`; `int16` … `int64` as
/// some schemas spell them).
const INTEGER_MOF_TYPES: [&str; 11] = [
    "uint8", "uint16", "uint32", "uint64", "sint8", "sint16", "sint32", "sint64", "int16", "int32",
    "int64",
];

impl MofType {
    pub fn parse(text: &str) -> MofType {
        let trimmed = text.trim();
        let element = trimmed.trim_end_matches("[]");
        MofType {
            text: text.to_owned(),
            element: element.to_owned(),
            array: element.len() < trimmed.len(),
        }
    }

    /// The name as the type schema gives it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The element type: `MSFT_Foo` for `MSFT_Foo[]`.
    pub fn element(&self) -> &str {
        &self.element
    }

    pub fn is_array(&self) -> bool {
        self.array
    }

    pub fn is_credential(&self) -> bool {
        self.element.eq_ignore_ascii_case("PSCredential")
    }

    pub fn is_datetime(&self) -> bool {
        self.element.eq_ignore_ascii_case("DateTime")
    }

    pub fn is_integer(&self) -> bool {
        INTEGER_MOF_TYPES
            .iter()
            .any(|t| self.element.eq_ignore_ascii_case(t))
    }

    /// The CIM class of an embedded instance (`MSFT_Foo[]` → `MSFT_Foo`);
    /// None when not embedded, and for a credential (no CIM instance).
    pub fn cim_class(&self, embedded: bool) -> Option<&str> {
        (embedded && !self.is_credential()).then_some(self.element.as_str())
    }
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
    /// (`redact::attribute_secrecy` gives it), not on every invocation.
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

    pub fn is_datetime(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_datetime)
            || self.type_string.contains("Timestamp")
    }

    pub fn is_credential(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_credential)
    }

    /// The CIM class of an embedded instance property (`MSFT_Foo[]` → `MSFT_Foo`).
    pub fn cim_class(&self) -> Option<&str> {
        self.mof_type.as_ref()?.cim_class(self.mof_is_embedded)
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

/// Extracts the quoted values of `Enum['a', "b"]` inside a type string
/// (looking through `Optional[...]`). Returns None when it is not an Enum.
pub fn parse_enum_values(type_string: &str) -> Option<Vec<String>> {
    match TypeShape::parse(type_string) {
        TypeShape::Enum(values) => Some(values),
        _ => None,
    }
}

/// What the enum rules need to know of a Puppet type: where its Enums are,
/// at any depth. Scaffolded types nest them in the Struct members of CIM
/// instances (`Optional[Array[Struct[{ right => Enum['Grant', 'grant'] }]]]`).
/// Wrappers that do not change the value's shape (`Optional`, `Sensitive`,
/// `NotUndef`) are looked through; anything else is `Other`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum TypeShape {
    /// The declared values, in declaration order.
    Enum(Vec<String>),
    Array(Box<TypeShape>),
    /// Member names (lowercase, as scaffolded) and their shapes.
    Struct(Vec<(String, TypeShape)>),
    /// A scalar the scaffolder writes for a CIM type (`String`, `Boolean`,
    /// `Float`, `Timestamp`, `Integer[min, max]`), as the PowerShell type
    /// that holds it (`string`, `bool`, `double`, `DateTime`, `uint32`, …).
    /// The script builder types arrays inside CIM instances with it.
    Scalar(&'static str),
    #[default]
    Other,
}

impl TypeShape {
    /// Reads a Puppet type string. Never fails: what it cannot read is
    /// `Other`, which no enum rule touches.
    pub fn parse(type_string: &str) -> TypeShape {
        let tokens = tokenize(type_string);
        let mut parser = ShapeParser { tokens, at: 0 };
        parser.parse_type()
    }

    /// True when the shape holds an Enum somewhere.
    pub fn has_enum(&self) -> bool {
        match self {
            TypeShape::Enum(_) => true,
            TypeShape::Array(inner) => inner.has_enum(),
            TypeShape::Struct(members) => members.iter().any(|(_, m)| m.has_enum()),
            TypeShape::Scalar(_) | TypeShape::Other => false,
        }
    }

    /// The PowerShell type of one element of this shape inside a CIM
    /// instance: scalars as [`TypeShape::Scalar`] names them, Enums as
    /// `string`, Structs (nested instances) as `CimInstance`; None when
    /// the type does not say.
    pub fn cim_element_type(&self) -> Option<&'static str> {
        match self {
            TypeShape::Scalar(name) => Some(name),
            TypeShape::Enum(_) => Some("string"),
            TypeShape::Struct(_) => Some("CimInstance"),
            TypeShape::Array(_) | TypeShape::Other => None,
        }
    }

    /// The element shape of an Array, or the shape itself (a CIM array
    /// property given as one instance).
    pub fn element(&self) -> &TypeShape {
        match self {
            TypeShape::Array(inner) => inner,
            other => other,
        }
    }

    /// The shape of a Struct member, by name without case.
    pub fn member(&self, name: &str) -> Option<&TypeShape> {
        match self {
            TypeShape::Struct(members) => members
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, m)| m),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Punct(char),
    Arrow,
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut quoted = String::new();
            let mut escaped = false;
            for d in chars.by_ref() {
                if escaped {
                    quoted.push(d);
                    escaped = false;
                } else if d == '\\' {
                    escaped = true;
                } else if d == c {
                    break;
                } else {
                    quoted.push(d);
                }
            }
            tokens.push(Token::Quoted(quoted));
        } else if c == '=' {
            chars.next();
            if chars.peek() == Some(&'>') {
                chars.next();
            }
            tokens.push(Token::Arrow);
        } else if "[]{},".contains(c) {
            chars.next();
            tokens.push(Token::Punct(c));
        } else {
            let mut word = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_whitespace() || "[]{},='\"".contains(d) {
                    break;
                }
                word.push(d);
                chars.next();
            }
            tokens.push(Token::Word(word));
        }
    }
    tokens
}

struct ShapeParser {
    tokens: Vec<Token>,
    at: usize,
}

impl ShapeParser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn eat(&mut self, punct: char) -> bool {
        if self.peek() == Some(&Token::Punct(punct)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Skips to just past the `]` that closes the parameters being read.
    fn skip_to_close(&mut self) {
        let mut depth = 0usize;
        while let Some(token) = self.next() {
            match token {
                Token::Punct('[') | Token::Punct('{') => depth += 1,
                Token::Punct(']') | Token::Punct('}') => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
        }
    }

    fn parse_type(&mut self) -> TypeShape {
        let Some(Token::Word(name)) = self.next() else {
            return TypeShape::Other;
        };
        let scalar = match name.as_str() {
            "String" => Some("string"),
            "Boolean" => Some("bool"),
            "Float" => Some("double"),
            "Timestamp" => Some("DateTime"),
            "Integer" => Some("int64"),
            _ => None,
        };
        if !self.eat('[') {
            return scalar.map_or(TypeShape::Other, TypeShape::Scalar);
        }
        let shape = match name.as_str() {
            "Optional" | "Sensitive" | "NotUndef" => self.parse_type(),
            "Array" => TypeShape::Array(Box::new(self.parse_type())),
            "Enum" => self.parse_enum_values(),
            "Struct" => self.parse_struct_members(),
            "Integer" => TypeShape::Scalar(self.parse_integer_range()),
            _ => scalar.map_or(TypeShape::Other, TypeShape::Scalar),
        };
        self.skip_to_close();
        shape
    }

    /// The CIM integer type the scaffolder's `Integer[min, max]` stands for
    /// (it writes each CIM integer type's full range); `int64` for any
    /// other range. Reads up to (not past) the closing `]`.
    fn parse_integer_range(&mut self) -> &'static str {
        let mut bounds = Vec::new();
        while let Some(token) = self.peek() {
            match token {
                Token::Word(word) => bounds.push(word.clone()),
                Token::Punct(',') => {}
                _ => break,
            }
            self.at += 1;
        }
        let bounds: Vec<&str> = bounds.iter().map(String::as_str).collect();
        match bounds.as_slice() {
            ["0", "255"] => "byte",
            ["-128", "127"] => "sbyte",
            ["0", "65535"] => "uint16",
            ["-32768", "32767"] => "int16",
            ["0", "4294967295"] => "uint32",
            ["-2147483648", "2147483647"] => "int32",
            ["0", "18446744073709551615"] => "uint64",
            _ => "int64",
        }
    }

    /// Reads enum values up to (not past) the closing `]`.
    fn parse_enum_values(&mut self) -> TypeShape {
        let mut values = Vec::new();
        while let Some(token) = self.peek() {
            match token {
                Token::Quoted(text) | Token::Word(text) => values.push(text.clone()),
                Token::Punct(',') => {}
                _ => break,
            }
            self.at += 1;
        }
        TypeShape::Enum(values)
    }

    /// Reads `{ key => Type, ... }` up to (not past) the closing `]`.
    fn parse_struct_members(&mut self) -> TypeShape {
        if !self.eat('{') {
            return TypeShape::Other;
        }
        let mut members = Vec::new();
        loop {
            if self.eat('}') {
                break;
            }
            if self.eat(',') {
                continue;
            }
            let Some(key) = self.parse_member_name() else {
                return TypeShape::Other;
            };
            if self.next() != Some(Token::Arrow) {
                return TypeShape::Other;
            }
            let shape = self.parse_type();
            members.push((key.to_lowercase(), shape));
        }
        TypeShape::Struct(members)
    }

    /// `key`, `'key'`, or `Optional['key']` / `NotUndef['key']`.
    fn parse_member_name(&mut self) -> Option<String> {
        match self.next()? {
            // A wrapper such as `Optional[`: the guard runs for a word only,
            // so a quoted key never eats a bracket.
            Token::Word(_) if self.eat('[') => {
                let key = match self.next()? {
                    Token::Quoted(key) | Token::Word(key) => key,
                    _ => return None,
                };
                self.skip_to_close();
                Some(key)
            }
            Token::Quoted(key) | Token::Word(key) => Some(key),
            _ => None,
        }
    }
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
        mof_type: text("mof_type").as_deref().map(MofType::parse),
        mof_is_embedded: flag("mof_is_embedded"),
        secrecy: Secrecy::default(),
    };
    attribute.secrecy = crate::redact::secrecy_of_attribute(&attribute);
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

    #[test]
    fn shapes_find_enums_at_every_depth() {
        let shape = TypeShape::parse(
            "Optional[Array[Struct[{ principal => String, accesscontroltype => Enum['Grant', 'grant'], rights => Optional[Array[Enum['Read', \"read\"]]], Optional['extra'] => Sensitive[Enum[a, b]], inner => Optional[Struct[{ cim_instance_type => Optional[String], mode => Enum['X'] }]] }]]]",
        );
        let TypeShape::Array(element) = &shape else {
            panic!("{shape:?}")
        };
        assert_eq!(
            element.member("principal"),
            Some(&TypeShape::Scalar("string"))
        );
        assert_eq!(
            element.member("AccessControlType"),
            Some(&TypeShape::Enum(vec!["Grant".into(), "grant".into()]))
        );
        assert_eq!(
            element.member("rights"),
            Some(&TypeShape::Array(Box::new(TypeShape::Enum(vec![
                "Read".into(),
                "read".into()
            ]))))
        );
        assert_eq!(
            element.member("extra"),
            Some(&TypeShape::Enum(vec!["a".into(), "b".into()]))
        );
        let inner = element.member("inner").unwrap();
        assert_eq!(
            inner.member("mode"),
            Some(&TypeShape::Enum(vec!["X".into()]))
        );
        assert!(shape.has_enum());
        assert!(!TypeShape::parse("Optional[Hash[String, Enum[a]]]").has_enum());
        assert!(!TypeShape::parse("Optional[Integer[0, 4294967295]]").has_enum());
    }

    #[test]
    fn a_mof_type_is_parsed_once_trimmed_and_without_its_array_suffix() {
        let credential = MofType::parse(" PSCredential ");
        assert!(credential.is_credential() && !credential.is_array());
        assert_eq!(credential.as_str(), " PSCredential ");
        assert_eq!(credential.cim_class(true), None);
        let credentials = MofType::parse("pscredential[]");
        assert!(credentials.is_credential() && credentials.is_array());
        let instances = MofType::parse("MSFT_Foo[] ");
        assert_eq!(instances.element(), "MSFT_Foo");
        assert!(instances.is_array());
        assert_eq!(instances.cim_class(true), Some("MSFT_Foo"));
        assert_eq!(instances.cim_class(false), None);
        assert!(MofType::parse("DateTime[]").is_datetime());
        assert!(MofType::parse("SInt64").is_integer());
        assert!(!MofType::parse("Real32").is_integer());
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
            assert_eq!(
                attribute.is_credential(),
                parameter.is_credential(),
                "{mof_type}"
            );
            assert_eq!(
                attribute.is_datetime(),
                parameter.is_datetime(),
                "{mof_type}"
            );
            assert_eq!(attribute.cim_class(), parameter.cim_class(), "{mof_type}");
            assert_eq!(
                attribute.is_credential(),
                mof_type.contains("PSCredential"),
                "{mof_type}"
            );
        }
    }

    #[test]
    fn scalar_shapes_name_the_powershell_type_of_their_cim_type() {
        let shape = TypeShape::parse(
            "Optional[Struct[{ port => Optional[Integer[0, 4294967295]], offset => Integer[-2147483648, 2147483647], big => Integer, ratio => Optional[Float], on => Boolean, when => Optional[Timestamp], names => Optional[Array[String[1]]], mode => Enum['A'], inner => Struct[{ a => String }], any => Any }]]",
        );
        let element = |name: &str| shape.member(name).unwrap().element().cim_element_type();
        assert_eq!(element("port"), Some("uint32"));
        assert_eq!(element("offset"), Some("int32"));
        assert_eq!(element("big"), Some("int64"));
        assert_eq!(element("ratio"), Some("double"));
        assert_eq!(element("on"), Some("bool"));
        assert_eq!(element("when"), Some("DateTime"));
        assert_eq!(element("names"), Some("string"));
        assert_eq!(element("mode"), Some("string"));
        assert_eq!(element("inner"), Some("CimInstance"));
        assert_eq!(element("any"), None);
    }

    #[test]
    fn shapes_of_broken_type_strings_are_other_and_never_panic() {
        for text in [
            "",
            "Enum[",
            "Struct[{",
            "Struct[{ a => }]",
            "Array[[[",
            "]]]",
            "Struct[{ 'a' Enum[x] }]",
            "Optional[Struct[{ a => Enum['x', }]]",
            "'unterminated",
            "Enum['a\\",
        ] {
            let shape = TypeShape::parse(text);
            assert!(
                !matches!(shape, TypeShape::Struct(ref m) if m.iter().any(|(k, _)| k.is_empty())),
                "{text}: {shape:?}"
            );
        }
        assert_eq!(TypeShape::parse("Struct[{ a => }]"), TypeShape::Other);
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
