//! Evaluates the subset of PowerShell values that the provider's invocation
//! scripts contain (docs/behavior.md, "The generated invocation
//! script"), straight from the `tree-sitter-powershell` syntax tree.
//!
//! Anything outside that subset is an error naming the construct, never a
//! guess: the simulator exists to catch scripts that real PowerShell would
//! read differently.

mod cim;
mod strings;

use std::collections::{HashMap, HashSet};

use pwshlib_core::Timestamp;
use serde_json::{json, Map as JsonMap, Value as Json};
use tree_sitter::Node;

pub use cim::cast;
pub use cim::cim_property_refusal;
pub use strings::unquote_verbatim;
use strings::{unquote_expandable, unquote_here_string};

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

/// PowerShell compares names (variables, keys, parameters) without case.
pub fn eq_ignore_case(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
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
        let mut folded_keys = HashSet::new();
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
                // Each key's folded form once: a literal of n keys costs
                // n look-ups, not n² comparisons.
                if !folded_keys.insert(key.to_lowercase()) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn variable_names_ignore_case_and_scope() {
        assert_eq!(variable_key("$script:Foo"), "foo");
        assert_eq!(variable_key("$Cim_AB"), "cim_ab");
    }
}
