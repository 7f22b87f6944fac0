//! What the enum rules and the script builder read of a Puppet type
//! string: where its Enums are, and the CIM type of its scalars.

use crate::cim_type::CimType;

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
    /// `Float`, `Timestamp`, `Integer[min, max]`), as the CIM type it
    /// stands for (`String`, `Boolean`, `Real64`, `DateTime`, `UInt32`, …).
    /// The script builder types arrays inside CIM instances with it.
    Scalar(CimType),
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

    /// The CIM type of one element of this shape inside a CIM instance:
    /// scalars as [`TypeShape::Scalar`] names them, Enums as `String`,
    /// Structs (nested instances) as an instance of no class said; None
    /// when the type does not say.
    pub fn cim_element_type(&self) -> Option<CimType> {
        match self {
            TypeShape::Scalar(cim_type) => Some(cim_type.clone()),
            TypeShape::Enum(_) => Some(CimType::String),
            TypeShape::Struct(_) => Some(CimType::Instance(None)),
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
            "String" => Some(CimType::String),
            "Boolean" => Some(CimType::Boolean),
            "Float" => Some(CimType::Real64),
            "Timestamp" => Some(CimType::DateTime),
            "Integer" => Some(CimType::SInt64),
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
    /// (it writes each CIM integer type's full range); `SInt64` for any
    /// other range. Reads up to (not past) the closing `]`.
    fn parse_integer_range(&mut self) -> CimType {
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
            ["0", "255"] => CimType::UInt8,
            ["-128", "127"] => CimType::SInt8,
            ["0", "65535"] => CimType::UInt16,
            ["-32768", "32767"] => CimType::SInt16,
            ["0", "4294967295"] => CimType::UInt32,
            ["-2147483648", "2147483647"] => CimType::SInt32,
            ["0", "18446744073709551615"] => CimType::UInt64,
            _ => CimType::SInt64,
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn shapes_find_enums_at_every_depth() {
        let shape = TypeShape::parse(
            "Optional[Array[Struct[{ principal => String, accesscontroltype => Enum['Grant', 'grant'], rights => Optional[Array[Enum['Read', \"read\"]]], Optional['extra'] => Sensitive[Enum[a, b]], inner => Optional[Struct[{ cim_instance_type => Optional[String], mode => Enum['X'] }]] }]]]",
        );
        let TypeShape::Array(element) = &shape else {
            panic!("{shape:?}")
        };
        assert_eq!(
            element.member("principal"),
            Some(&TypeShape::Scalar(CimType::String))
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
    fn scalar_shapes_name_the_powershell_type_of_their_cim_type() {
        let shape = TypeShape::parse(
            "Optional[Struct[{ port => Optional[Integer[0, 4294967295]], offset => Integer[-2147483648, 2147483647], big => Integer, ratio => Optional[Float], on => Boolean, when => Optional[Timestamp], names => Optional[Array[String[1]]], mode => Enum['A'], inner => Struct[{ a => String }], any => Any }]]",
        );
        let element = |name: &str| {
            let cim_type = shape.member(name).unwrap().element().cim_element_type();
            cim_type.as_ref().map(crate::literal::powershell_type)
        };
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
}
