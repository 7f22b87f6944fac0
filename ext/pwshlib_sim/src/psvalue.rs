//! Evaluates the subset of PowerShell values that the provider's invocation
//! scripts contain (docs/architecture.md, "The generated invocation
//! script"), straight from the `tree-sitter-powershell` syntax tree.
//!
//! Anything outside that subset is an error naming the construct, never a
//! guess: the simulator exists to catch scripts that real PowerShell would
//! read differently.

use std::collections::HashMap;

use pwshlib_core::Timestamp;
use serde_json::{json, Map as JsonMap, Value as Json};
use tree_sitter::Node;

/// A PowerShell value as the simulated host sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum PsValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<PsValue>),
    /// A typed array, `[string[]]@(…)`: `element` is the lowercase element
    /// type as written (`string`, `uint32`, `ciminstance`, …). Kept apart
    /// from `Array` (an `object[]`) because New-CimInstance can type the
    /// one and not the other.
    TypedArray {
        element: String,
        items: Vec<PsValue>,
    },
    /// A hashtable; keys in source order.
    Hash(Vec<(String, PsValue)>),
    /// A `[DateTime]` cast, already checked to parse.
    DateTime(Timestamp),
    /// The result of `New-PsCredential -User … -Password …`.
    Credential {
        user: String,
        password: String,
    },
    /// The result of `New-CimInstance -ClientOnly -ClassName … -Property @{…}`.
    Cim {
        class: String,
        properties: Vec<(String, PsValue)>,
    },
}

/// The key that marks the class of a CIM instance in JSON, as the real
/// postscript and the provider's munging use it.
pub const CIM_INSTANCE_TYPE: &str = "cim_instance_type";

impl PsValue {
    /// The JSON form the simulator stores and logs: credentials as
    /// `{"user","password"}` (in the clear), CIM instances as objects with
    /// `cim_instance_type`, DateTime as ISO-8601 text.
    pub fn to_json(&self) -> Json {
        match self {
            PsValue::Null => Json::Null,
            PsValue::Bool(b) => Json::Bool(*b),
            PsValue::Int(i) => json!(i),
            PsValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            PsValue::Str(s) => Json::String(s.clone()),
            PsValue::Array(items) | PsValue::TypedArray { items, .. } => {
                Json::Array(items.iter().map(PsValue::to_json).collect())
            }
            PsValue::Hash(entries) => Json::Object(entries_to_json(entries)),
            PsValue::DateTime(t) => Json::String(round_trip_text(*t)),
            PsValue::Credential { user, password } => json!({"user": user, "password": password}),
            PsValue::Cim { class, properties } => {
                let mut object = entries_to_json(properties);
                object.insert(CIM_INSTANCE_TYPE.to_owned(), Json::String(class.clone()));
                Json::Object(object)
            }
        }
    }

    /// Looks a hashtable key up the way PowerShell does: case-insensitively.
    pub fn get(&self, key: &str) -> Option<&PsValue> {
        match self {
            PsValue::Hash(entries) => entries
                .iter()
                .find(|(k, _)| eq_ignore_case(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            PsValue::Str(s) => Some(s),
            _ => None,
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            PsValue::Null => "null",
            PsValue::Bool(_) => "System.Boolean",
            PsValue::Int(_) => "System.Int64",
            PsValue::Float(_) => "System.Double",
            PsValue::Str(_) => "System.String",
            PsValue::Array(_) => "System.Object[]",
            PsValue::TypedArray { .. } => "System.Array",
            PsValue::Hash(_) => "System.Collections.Hashtable",
            PsValue::DateTime(_) => "System.DateTime",
            PsValue::Credential { .. } => "System.Management.Automation.PSCredential",
            PsValue::Cim { .. } => "Microsoft.Management.Infrastructure.CimInstance",
        }
    }
}

/// A DateTime as the real postscript prints it, .NET's round-trip format
/// in UTC: `2024-01-02T03:04:05.0000000Z`.
pub fn round_trip_text(t: Timestamp) -> String {
    let iso = t.to_iso8601();
    let Some(body) = iso.strip_suffix('Z') else {
        return iso;
    };
    let (seconds, fraction) = body.split_once('.').unwrap_or((body, ""));
    let mut digits: String = fraction.chars().take(7).collect();
    while digits.len() < 7 {
        digits.push('0');
    }
    format!("{seconds}.{digits}Z")
}

fn entries_to_json(entries: &[(String, PsValue)]) -> JsonMap<String, Json> {
    entries
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json()))
        .collect()
}

/// A whole number below 9.2e18 in magnitude as the i64 it is: the guard
/// above makes the conversion exact, so nothing is truncated.
#[allow(clippy::cast_possible_truncation)]
fn whole_to_i64(whole: f64) -> i64 {
    whole as i64
}

/// PowerShell compares names (variables, keys, parameters) without case.
pub fn eq_ignore_case(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
}

/// The quote characters PowerShell accepts for single-quoted strings:
/// `'` and the typographic U+2018..U+201B.
fn is_single_quote(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}')
}

fn is_double_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}' | '\u{201E}')
}

/// The text of a verbatim (single-quoted) string literal, with each doubled
/// quote read as one, as PowerShell's tokenizer does (it keeps the second
/// character of the pair).
pub fn unquote_verbatim(literal: &str) -> Result<String, String> {
    let mut chars = literal.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    };
    if !is_single_quote(first) || !is_single_quote(last) {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    }
    let mut out = String::with_capacity(literal.len());
    let mut inner = chars.peekable();
    while let Some(c) = inner.next() {
        if is_single_quote(c) {
            match inner.next() {
                Some(second) if is_single_quote(second) => out.push(second),
                _ => return Err(format!("unescaped quote in {}", excerpt(literal))),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A verbatim here-string `@'⏎…⏎'@`: the lines between the markers.
fn unquote_here_string(literal: &str) -> Result<String, String> {
    let body = literal
        .strip_prefix("@'")
        .or_else(|| literal.strip_prefix("@\u{2019}"))
        .and_then(|rest| rest.split_once('\n').map(|(_, body)| body))
        .ok_or_else(|| format!("malformed here-string {}", excerpt(literal)))?;
    let body = body
        .rsplit_once('\n')
        .map(|(body, _)| body)
        .ok_or_else(|| format!("malformed here-string {}", excerpt(literal)))?;
    Ok(body.strip_suffix('\r').unwrap_or(body).to_owned())
}

/// A double-quoted string is only accepted when nothing in it would expand,
/// so that its value does not depend on runtime state.
fn unquote_expandable(literal: &str) -> Result<String, String> {
    let mut chars = literal.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    };
    let inner = chars.as_str();
    if !is_double_quote(first) || !is_double_quote(last) || inner.contains(['$', '`']) {
        return Err(format!(
            "pwshlib-sim does not expand double-quoted strings with `$` or backticks: {}",
            excerpt(literal)
        ));
    }
    let mut out = String::new();
    let mut rest = inner.chars().peekable();
    while let Some(c) = rest.next() {
        if is_double_quote(c) {
            match rest.next() {
                Some(second) if is_double_quote(second) => out.push(second),
                _ => return Err(format!("unescaped quote in {}", excerpt(literal))),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A short, single-line rendering of source text for error messages.
pub fn excerpt(text: &str) -> String {
    const MAX: usize = 60;
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= MAX {
        flat
    } else {
        let head: String = flat.chars().take(MAX).collect();
        format!("{head}…")
    }
}

/// Node kinds that only wrap one expression in the grammar's precedence
/// ladder; with more than one named child they are a real operation, which
/// the subset does not allow.
const WRAPPERS: &[&str] = &[
    "pipeline",
    "pipeline_chain",
    "logical_expression",
    "bitwise_expression",
    "comparison_expression",
    "additive_expression",
    "multiplicative_expression",
    "format_expression",
    "range_expression",
    "unary_expression",
    "key_expression",
    "left_assignment_expression",
];

/// Evaluates value expressions against the variables the script assigned
/// so far.
pub struct Evaluator<'src> {
    source: &'src str,
    variables: HashMap<String, PsValue>,
}

/// Syntax-tree depth beyond which evaluation is refused, so hostile input
/// cannot exhaust the stack. One level of value nesting (`@(…)` inside
/// `@{…}`) costs about 13 tree levels, so this allows some 75.
const MAX_DEPTH: usize = 1000;

impl<'src> Evaluator<'src> {
    pub fn new(source: &'src str) -> Self {
        Evaluator {
            source,
            variables: HashMap::new(),
        }
    }

    pub fn text(&self, node: Node) -> &'src str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    /// Records `$name = value`. Names are case-insensitive; a scope prefix
    /// (`$script:x`) is dropped.
    pub fn assign(&mut self, name: &str, value: PsValue) {
        self.variables.insert(variable_key(name), value);
    }

    pub fn variable(&self, name: &str) -> Option<&PsValue> {
        self.variables.get(&variable_key(name))
    }

    pub fn eval(&self, node: Node) -> Result<PsValue, String> {
        self.eval_at(node, 0)
    }

    fn unsupported(&self, node: Node) -> String {
        format!(
            "pwshlib-sim cannot evaluate `{}` ({})",
            excerpt(self.text(node)),
            node.kind()
        )
    }

    fn eval_at(&self, node: Node, depth: usize) -> Result<PsValue, String> {
        if depth > MAX_DEPTH {
            return Err("expression nested too deeply".to_owned());
        }
        let depth = depth + 1;
        let kind = node.kind();
        if WRAPPERS.contains(&kind) {
            let mut cursor = node.walk();
            let named: Vec<Node> = node.named_children(&mut cursor).collect();
            return match named.as_slice() {
                [only] if node.child_count() == 1 => self.eval_at(*only, depth),
                _ => Err(self.unsupported(node)),
            };
        }
        match kind {
            "array_literal_expression" => {
                let mut cursor = node.walk();
                let items: Vec<Node> = node.named_children(&mut cursor).collect();
                if items.len() == 1 && node.child_count() == 1 {
                    return self.eval_at(items[0], depth);
                }
                items
                    .into_iter()
                    .map(|item| self.eval_at(item, depth))
                    .collect::<Result<Vec<_>, _>>()
                    .map(PsValue::Array)
            }
            "string_literal" | "parenthesized_expression" => {
                let mut cursor = node.walk();
                let named: Vec<Node> = node.named_children(&mut cursor).collect();
                match named.as_slice() {
                    [only] => self.eval_at(*only, depth),
                    _ => Err(self.unsupported(node)),
                }
            }
            "verbatim_string_characters" => unquote_verbatim(self.text(node)).map(PsValue::Str),
            "verbatim_here_string_characters" => {
                unquote_here_string(self.text(node)).map(PsValue::Str)
            }
            "expandable_string_literal" => unquote_expandable(self.text(node)).map(PsValue::Str),
            "integer_literal" => self.eval_integer(node),
            "real_literal" => {
                let text = self.text(node);
                text.parse::<f64>()
                    .map(PsValue::Float)
                    .map_err(|_| self.unsupported(node))
            }
            "variable" => self.eval_variable(node),
            "expression_with_unary_operator" => self.eval_unary(node, depth),
            "cast_expression" => self.eval_cast(node, depth),
            "array_expression" => self.eval_array_expression(node, depth),
            "hash_literal_expression" => self.eval_hash(node, depth).map(PsValue::Hash),
            _ => Err(self.unsupported(node)),
        }
    }

    fn eval_integer(&self, node: Node) -> Result<PsValue, String> {
        let text = self.text(node);
        let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
        {
            i64::from_str_radix(hex, 16).ok().map(PsValue::Int)
        } else {
            match text.parse::<i64>() {
                Ok(i) => Some(PsValue::Int(i)),
                // PowerShell widens an integer literal beyond Int64 to a
                // Decimal/Double; a Double is close enough here.
                Err(_) => text.parse::<f64>().ok().map(PsValue::Float),
            }
        };
        parsed.ok_or_else(|| self.unsupported(node))
    }

    fn eval_variable(&self, node: Node) -> Result<PsValue, String> {
        let text = self.text(node);
        let name = text
            .strip_prefix('$')
            .ok_or_else(|| self.unsupported(node))?;
        match name.to_ascii_lowercase().as_str() {
            "true" => return Ok(PsValue::Bool(true)),
            "false" => return Ok(PsValue::Bool(false)),
            "null" => return Ok(PsValue::Null),
            _ => {}
        }
        self.variable(name).cloned().ok_or_else(|| {
            format!("The variable '{text}' cannot be retrieved because it has not been set.")
        })
    }

    fn eval_unary(&self, node: Node, depth: usize) -> Result<PsValue, String> {
        let Some(first) = node.child(0) else {
            return Err(self.unsupported(node));
        };
        if first.kind() == "cast_expression" && node.child_count() == 1 {
            return self.eval_at(first, depth);
        }
        let operand = node.child(1).filter(|_| node.child_count() == 2);
        match (first.kind(), operand) {
            ("-", Some(operand)) => match self.eval_at(operand, depth)? {
                PsValue::Int(i) => i
                    .checked_neg()
                    .map(PsValue::Int)
                    .ok_or_else(|| self.unsupported(node)),
                PsValue::Float(f) => Ok(PsValue::Float(-f)),
                _ => Err(self.unsupported(node)),
            },
            ("+", Some(operand)) => match self.eval_at(operand, depth)? {
                number @ (PsValue::Int(_) | PsValue::Float(_)) => Ok(number),
                _ => Err(self.unsupported(node)),
            },
            _ => Err(self.unsupported(node)),
        }
    }

    fn eval_cast(&self, node: Node, depth: usize) -> Result<PsValue, String> {
        let type_node = node
            .child(0)
            .filter(|n| n.kind() == "type_literal")
            .ok_or_else(|| self.unsupported(node))?;
        let operand = node.child(1).ok_or_else(|| self.unsupported(node))?;
        let type_text = self.text(type_node);
        let type_name: String = type_text
            .trim_start_matches('[')
            .strip_suffix(']')
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let value = self.eval_at(operand, depth)?;
        cast(&type_name, value).map_err(|e| format!("{e} (in `{}`)", excerpt(self.text(node))))
    }

    fn eval_array_expression(&self, node: Node, depth: usize) -> Result<PsValue, String> {
        let mut items = Vec::new();
        if let Some(statements) = node.child_by_field_name("statements") {
            let mut cursor = statements.walk();
            for statement in statements.named_children(&mut cursor) {
                if statement.kind() == "comment" {
                    continue;
                }
                // `@()` enumerates what each statement yields, one level.
                match self.eval_at(statement, depth)? {
                    PsValue::Array(inner) | PsValue::TypedArray { items: inner, .. } => {
                        items.extend(inner)
                    }
                    single => items.push(single),
                }
            }
        }
        Ok(PsValue::Array(items))
    }

    fn eval_hash(&self, node: Node, depth: usize) -> Result<Vec<(String, PsValue)>, String> {
        let mut entries: Vec<(String, PsValue)> = Vec::new();
        let mut cursor = node.walk();
        let bodies: Vec<Node> = node
            .named_children(&mut cursor)
            .filter(|n| n.kind() == "hash_literal_body")
            .collect();
        for body in bodies {
            let mut body_cursor = body.walk();
            for entry in body.named_children(&mut body_cursor) {
                if entry.kind() == "comment" {
                    continue;
                }
                if entry.kind() != "hash_entry" {
                    return Err(self.unsupported(entry));
                }
                let mut entry_cursor = entry.walk();
                let parts: Vec<Node> = entry.named_children(&mut entry_cursor).collect();
                let [key_node, value_node] = parts.as_slice() else {
                    return Err(self.unsupported(entry));
                };
                let key = self.eval_key(*key_node, depth)?;
                if entries.iter().any(|(k, _)| eq_ignore_case(k, &key)) {
                    return Err(format!(
                        "Duplicate keys '{key}' are not allowed in hash literals."
                    ));
                }
                let value = self.eval_at(*value_node, depth)?;
                entries.push((key, value));
            }
        }
        Ok(entries)
    }

    fn eval_key(&self, node: Node, depth: usize) -> Result<String, String> {
        let inner = if node.kind() == "key_expression" && node.named_child_count() == 1 {
            node.named_child(0).ok_or_else(|| self.unsupported(node))?
        } else {
            node
        };
        if inner.kind() == "simple_name" {
            return Ok(self.text(inner).to_owned());
        }
        match self.eval_at(inner, depth)? {
            PsValue::Str(s) => Ok(s),
            PsValue::Int(i) => Ok(i.to_string()),
            _ => Err(format!(
                "pwshlib-sim only accepts names, strings and integers as hashtable keys: `{}`",
                excerpt(self.text(node))
            )),
        }
    }
}

fn variable_key(name: &str) -> String {
    let name = name.trim_start_matches(['$', '@']);
    let name = match name.split_once(':') {
        Some((scope, rest))
            if ["script", "global", "local", "private"]
                .iter()
                .any(|s| s.eq_ignore_ascii_case(scope)) =>
        {
            rest
        }
        _ => name,
    };
    name.to_lowercase()
}

/// Why real `New-CimInstance -ClientOnly -Property` would refuse this
/// property value, or None when it takes it. The cmdlet makes each entry a
/// property with MMI's `CimProperty.Create(name, value, flags)`, which asks
/// `CimConverter` for the CIM type of the .NET value and throws
/// ArgumentException when there is none: `$null`, a hashtable, a
/// PSCredential, and an `object[]` (an untyped `@(…)`) unless exactly one
/// CIM type occurs among its items (nulls and untypable items do not
/// count; an array item is an array type, which has no array of its own).
/// A typed array is typed by its element type when CIM has an array of it;
/// otherwise (`[object[]]`) its items decide, as for an untyped one.
pub fn cim_property_refusal(value: &PsValue) -> Option<&'static str> {
    match value {
        PsValue::Null => Some("a null value"),
        PsValue::Hash(_) => Some("a hashtable"),
        PsValue::Credential { .. } => Some("a PSCredential"),
        PsValue::TypedArray { element, .. } if cim_array_element(element).is_some() => None,
        PsValue::Array(items) | PsValue::TypedArray { items, .. } => {
            let mut kinds: Vec<&'static str> = Vec::new();
            for item in items {
                let kind = match item {
                    PsValue::Null | PsValue::Hash(_) | PsValue::Credential { .. } => continue,
                    PsValue::Bool(_) => "Boolean",
                    PsValue::Int(i) if i32::try_from(*i).is_ok() => "SInt32",
                    PsValue::Int(_) => "SInt64",
                    PsValue::Float(_) => "Real64",
                    PsValue::Str(_) => "String",
                    PsValue::DateTime(_) => "DateTime",
                    PsValue::Cim { .. } => "Instance",
                    PsValue::Array(_) | PsValue::TypedArray { .. } => "Array",
                };
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
            match kinds.as_slice() {
                [] => Some("an untyped empty array (or one with only nulls)"),
                ["Array"] => Some("an array of arrays"),
                [_] => None,
                _ => Some("an untyped array whose items have different CIM types"),
            }
        }
        _ => None,
    }
}

/// The CIM array type of a typed array's element type, by its PowerShell
/// name.
fn cim_array_element(element: &str) -> Option<&'static str> {
    let element = element.strip_prefix("system.").unwrap_or(element);
    Some(match element {
        "string" => "StringArray",
        "bool" | "boolean" => "BooleanArray",
        "byte" => "UInt8Array",
        "sbyte" => "SInt8Array",
        "uint16" => "UInt16Array",
        "int16" => "SInt16Array",
        "uint32" => "UInt32Array",
        "int" | "int32" => "SInt32Array",
        "uint64" => "UInt64Array",
        "long" | "int64" => "SInt64Array",
        "single" | "float" => "Real32Array",
        "double" => "Real64Array",
        "char" => "Char16Array",
        "datetime" => "DateTimeArray",
        "ciminstance" => "InstanceArray",
        _ => return None,
    })
}

/// Applies a `[type]` cast from the subset: DateTime, typed arrays (the
/// provider types empty arrays and CIM instance arrays), and the common
/// scalar types. Unknown types leave the value as it is.
fn cast(type_name: &str, value: PsValue) -> Result<PsValue, String> {
    let lower = type_name.to_ascii_lowercase();
    let lower = lower.strip_prefix("system.").unwrap_or(&lower);
    if let Some(element) = lower.strip_suffix("[]") {
        let items = match value {
            PsValue::Null => return Ok(PsValue::Null),
            PsValue::Array(items) | PsValue::TypedArray { items, .. } => items,
            single => vec![single],
        };
        let element_name = element
            .strip_prefix("microsoft.management.infrastructure.")
            .unwrap_or(element)
            .to_owned();
        return items
            .into_iter()
            .map(|item| cast(element, item))
            .collect::<Result<Vec<_>, _>>()
            .map(|items| PsValue::TypedArray {
                element: element_name,
                items,
            });
    }
    let cannot = |value: &PsValue| {
        format!(
            "Cannot convert value of type \"{}\" to type \"{type_name}\".",
            value.type_name()
        )
    };
    match lower {
        "datetime" => match &value {
            PsValue::Str(text) => Timestamp::parse(text)
                .map(PsValue::DateTime)
                .ok_or_else(|| {
                    format!("Cannot convert value \"{text}\" to type \"System.DateTime\".")
                }),
            PsValue::DateTime(_) => Ok(value),
            _ => Err(cannot(&value)),
        },
        "string" => match value {
            PsValue::Null => Ok(PsValue::Str(String::new())),
            PsValue::Str(_) => Ok(value),
            PsValue::Int(i) => Ok(PsValue::Str(i.to_string())),
            PsValue::Float(f) => Ok(PsValue::Str(f.to_string())),
            PsValue::Bool(b) => Ok(PsValue::Str(if b { "True" } else { "False" }.to_owned())),
            other => Err(cannot(&other)),
        },
        "int" | "int32" | "int64" | "long" | "uint32" | "uint64" | "uint16" | "int16" | "byte"
        | "sbyte" => match value {
            PsValue::Int(_) => Ok(value),
            PsValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Ok(PsValue::Int(whole_to_i64(f)))
            }
            PsValue::Str(ref s) => s
                .trim()
                .parse::<i64>()
                .map(PsValue::Int)
                .map_err(|_| cannot(&value)),
            other => Err(cannot(&other)),
        },
        "double" | "single" | "float" | "decimal" => match value {
            PsValue::Int(i) => Ok(PsValue::Float(i as f64)),
            PsValue::Float(_) => Ok(value),
            PsValue::Str(ref s) => s
                .trim()
                .parse::<f64>()
                .map(PsValue::Float)
                .map_err(|_| cannot(&value)),
            other => Err(cannot(&other)),
        },
        "bool" | "boolean" | "switch" => match value {
            PsValue::Bool(_) => Ok(value),
            PsValue::Int(i) => Ok(PsValue::Bool(i != 0)),
            PsValue::Null => Ok(PsValue::Bool(false)),
            other => Err(cannot(&other)),
        },
        "ciminstance" | "microsoft.management.infrastructure.ciminstance" => match value {
            PsValue::Cim { .. } | PsValue::Null => Ok(value),
            other => Err(cannot(&other)),
        },
        _ => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_strings_undouble_every_quote_kind() {
        assert_eq!(unquote_verbatim("'p''ss'").unwrap(), "p'ss");
        assert_eq!(
            unquote_verbatim("'a\u{2019}\u{2019}b\u{2018}\u{2018}'").unwrap(),
            "a\u{2019}b\u{2018}"
        );
        assert_eq!(unquote_verbatim("''").unwrap(), "");
        assert!(unquote_verbatim("'a'b'").is_err());
        assert!(unquote_verbatim("'").is_err());
    }

    #[test]
    fn datetimes_print_in_the_round_trip_format() {
        let at = |text: &str| round_trip_text(Timestamp::parse(text).unwrap());
        assert_eq!(
            at("2024-01-02T03:04:05+02:00"),
            "2024-01-02T01:04:05.0000000Z"
        );
        assert_eq!(at("2024-01-02T03:04:05.5Z"), "2024-01-02T03:04:05.5000000Z");
        assert_eq!(
            at("2024-01-02T03:04:05.123456789Z"),
            "2024-01-02T03:04:05.1234567Z"
        );
    }

    #[test]
    fn here_strings_keep_their_lines() {
        assert_eq!(
            unquote_here_string("@'\nline1\nit's\n'@").unwrap(),
            "line1\nit's"
        );
    }

    #[test]
    fn casts_follow_powershell() {
        assert_eq!(
            cast("string[]", PsValue::Array(vec![])).unwrap(),
            PsValue::TypedArray {
                element: "string".into(),
                items: vec![]
            }
        );
        assert!(matches!(
            cast("DateTime", PsValue::Str("2024-01-02T03:04:05Z".into())).unwrap(),
            PsValue::DateTime(_)
        ));
        assert!(cast("DateTime", PsValue::Str("soon".into())).is_err());
        assert_eq!(
            cast("int", PsValue::Str("7".into())).unwrap(),
            PsValue::Int(7)
        );
    }

    #[test]
    fn variable_names_ignore_case_and_scope() {
        assert_eq!(variable_key("$script:Foo"), "foo");
        assert_eq!(variable_key("$Cim_AB"), "cim_ab");
    }
}
