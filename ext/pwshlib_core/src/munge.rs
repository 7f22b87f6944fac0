//! Turning the JSON that the host script prints into Values, and a DSC Get
//! result into the Puppet resource hash (docs/behavior.md §3 "get").

use crate::canonical::{conform_enums, is_absent, recursively_sort, values_equal, EqualValueIndex};
use crate::cim_type::CimType;
use crate::typedef::{Attribute, Behaviour, TypeDef};
use crate::value::{Map, Timestamp, Value};
use rustc_hash::FxHashMap;

/// Parses one line of result JSON. Objects become hashes with String keys,
/// in the order the text gives them (a key given twice keeps its first
/// place and its last value, as `serde_json`'s ordered map does).
///
/// The text is read straight into Values: going through `serde_json::Value`
/// built an ordered map per object (an allocation and a SipHash per key)
/// only to take it apart again, on every Get.
pub fn parse_json(text: &str) -> Result<Value, serde_json::Error> {
    let JsonValue(value) = serde_json::from_str(text.trim())?;
    Ok(value)
}

/// A Value read from JSON, with the same rules as [`from_json`].
struct JsonValue(Value);

impl<'de> serde::Deserialize<'de> for JsonValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor).map(JsonValue)
    }
}

struct JsonVisitor;

/// Objects up to this size find a repeated key by looking through it; a
/// larger one keeps an index.
const LINEAR_KEY_SEARCH_MAX: usize = 32;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Int(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(match i64::try_from(value) {
            Ok(small) => Value::Int(small),
            Err(_) => Value::BigInt(value.to_string()),
        })
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::Float(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::Str(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::Str(value))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(JsonValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut pairs: Vec<(Value, Value)> = Vec::with_capacity(map.size_hint().unwrap_or(0));
        let mut index: Option<rustc_hash::FxHashMap<String, usize>> = None;
        while let Some((key, JsonValue(value))) = map.next_entry::<String, JsonValue>()? {
            if index.is_none() && pairs.len() >= LINEAR_KEY_SEARCH_MAX {
                index = Some(
                    pairs
                        .iter()
                        .enumerate()
                        .filter_map(|(at, (k, _))| k.key_name().map(|k| (k.to_owned(), at)))
                        .collect(),
                );
            }
            let repeated = match &mut index {
                Some(index) => index.get(&key).copied(),
                None => pairs
                    .iter()
                    .position(|(k, _)| k.key_name() == Some(key.as_str())),
            };
            if let Some(at) = repeated {
                pairs[at].1 = value;
            } else {
                if let Some(index) = &mut index {
                    index.insert(key.clone(), pairs.len());
                }
                pairs.push((Value::Str(key), value));
            }
        }
        Ok(Value::Hash(Map(pairs)))
    }
}

pub fn from_json(json: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match json {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Int(i),
            (None, _) if n.is_u64() => Value::BigInt(n.to_string()),
            (None, Some(f)) => Value::Float(f),
            (None, None) => Value::BigInt(n.to_string()),
        },
        J::String(s) => Value::Str(s),
        J::Array(items) => Value::Array(items.into_iter().map(from_json).collect()),
        J::Object(map) => Value::Hash(
            map.into_iter()
                .map(|(k, v)| (Value::Str(k), from_json(v)))
                .collect(),
        ),
    }
}

/// Lowercases the keys of every hash inside `value` (2.x `downcase_hash_keys!`).
pub fn downcase_hash_keys(value: &mut Value) {
    match value {
        Value::Hash(map) => {
            for (k, v) in map.iter_mut() {
                match k {
                    Value::Str(s) | Value::Symbol(s) => *s = s.to_lowercase(),
                    _ => {}
                }
                downcase_hash_keys(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(downcase_hash_keys),
        _ => {}
    }
}

/// Removes `cim_instance_type` from a top-level instance, and from the
/// instances directly inside a top-level array (2.x `munge_cim_instances!`).
/// Deeper instances keep it.
pub fn munge_cim_instances(value: &mut Value) {
    match value {
        Value::Hash(map) => {
            map.remove_named("cim_instance_type");
        }
        Value::Array(items) => items
            .iter_mut()
            .filter(|i| i.is_collection())
            .for_each(munge_cim_instances),
        _ => {}
    }
}

/// `System.Object[]`, `System.String[]`, … are what .NET prints for a
/// collection it could not serialize.
fn is_dotnet_artifact(value: &Value) -> bool {
    match value {
        Value::Str(s) => s
            .strip_prefix("System.")
            .and_then(|rest| rest.strip_suffix("[]"))
            .is_some_and(|middle| {
                !middle.is_empty()
                    && middle
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '`')
            }),
        _ => false,
    }
}

fn parse_datetime(value: &Value) -> Result<Value, String> {
    match value {
        Value::Nil => Ok(Value::Nil),
        Value::Timestamp(_) => Ok(value.clone()),
        Value::Str(s) => Timestamp::parse(s)
            .map(Value::Timestamp)
            .ok_or_else(|| format!("Value returned for DateTime ({value}) failed to parse")),
        Value::Array(items) => items
            .iter()
            .map(parse_datetime)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Err(format!(
            "Value returned for DateTime ({other}) failed to parse"
        )),
    }
}

fn stringify_nil(typedef: &TypeDef, name: &str) -> bool {
    typedef.attribute(name).is_some_and(|a| {
        let t = a.type_string.trim();
        t == "String" || a.enum_allows_empty()
    })
}

/// 2.x `stringify_nil_attributes`: nil → '' where the type schema needs it.
pub fn stringify_nil_attributes(typedef: &TypeDef, data: &mut Map) {
    for (key, value) in data.iter_mut() {
        if value.is_nil() && key.key_name().is_some_and(|n| stringify_nil(typedef, n)) {
            *value = Value::str("");
        }
    }
}

/// A credential as Get reports it, in either shape: `{user, password}`
/// (a PSCredential, as the prelude writes it, and as it now writes an
/// MSFT_Credential too) or Windows PowerShell 5.1's MSFT_Credential CIM
/// instance `{UserName, Password}` with its `cim_instance_type` (what a
/// result canonicalised without that conversion holds). Either becomes
/// `{"user" => …, "password" => …}`, so that it compares with the desired
/// `{user, password}`; a reported password stays (the caller marks every
/// `password` Sensitive, so it never shows), a missing one is nil for
/// [`fill_credential_password`]. Keys are matched without case.
fn credential_from_get(value: Value) -> Value {
    let Value::Hash(map) = value else {
        return value;
    };
    let named = |wanted: &str| {
        map.iter()
            .find(|(k, _)| k.key_name().is_some_and(|n| n.eq_ignore_ascii_case(wanted)))
            .map(|(_, v)| v)
    };
    let user = named("user").or_else(|| named("username"));
    match user {
        Some(user) => {
            let mut out = Map::new();
            out.insert(Value::str("user"), user.clone());
            let password = named("password").cloned().unwrap_or(Value::Nil);
            out.insert(Value::str("password"), password);
            Value::Hash(out)
        }
        None => Value::Hash(map),
    }
}

/// DSC's Get never returns a password: a PSCredential comes back as
/// `{"user" => …, "password" => nil}`. That cannot be compared on the
/// password and does not satisfy the type schema (`password =>
/// Sensitive[String[1]]`), so the desired password (Sensitive) takes its
/// place. The credential then compares on its user alone: equal when the
/// user matches case-insensitively, a change otherwise.
fn fill_credential_password(value: Value, desired: Option<&Value>) -> Value {
    let Value::Hash(mut map) = value else {
        return value;
    };
    if !matches!(map.get_named("password"), None | Some(Value::Nil)) {
        return Value::Hash(map);
    }
    let desired = desired.map(|d| match d {
        Value::Sensitive(inner) => inner.as_ref(),
        other => other,
    });
    let Some(password) = desired
        .and_then(Value::as_map)
        .and_then(|m| m.get_named("password"))
        .filter(|p| !p.is_nil())
    else {
        // DSC never reports a password and the manifest names none to
        // compare with: the credential cannot be shown in a form the type
        // schema accepts (its password is mandatory), so it is unknown.
        return Value::Nil;
    };
    let password = match password {
        Value::Sensitive(_) => password.clone(),
        other => Value::Sensitive(Box::new(other.clone())),
    };
    match map.get_named_mut("password") {
        Some(slot) => *slot = password,
        None => map.insert(Value::str("password"), password),
    }
    Value::Hash(map)
}

/// Munges a DSC Get result (a hash of DSC property name → value) into the
/// Puppet hash. `query` is the name hash the Get was made for. Returns the
/// hash and the error messages to report (unparseable date-times).
pub fn munge_get_result(typedef: &TypeDef, query: &Map, data: &Map) -> (Map, Vec<String>) {
    munge_get_result_owned(typedef, query, data.clone())
}

/// [`munge_get_result`] of a result given up: its values are moved into
/// the Puppet hash, not copied.
pub fn munge_get_result_owned(typedef: &TypeDef, query: &Map, data: Map) -> (Map, Vec<String>) {
    let mut errors = Vec::new();
    let mut out = Map::new();
    for (key, raw) in data.0 {
        let Some(dsc_key) = key.key_name() else {
            continue;
        };
        let Some(attribute) = typedef.dsc_property_attribute(dsc_key) else {
            continue;
        };
        let type_key = attribute.name.as_str();
        if attribute.behaviour == Behaviour::Parameter {
            continue;
        }
        let desired = query.get_named(type_key);
        let value = munge_value(attribute, raw, desired, &mut errors);
        let value = match value {
            Value::Array(_) | Value::Hash(_) | Value::Sensitive(_) => recursively_sort(&value),
            // Nothing to sort in a scalar: kept, not copied.
            scalar => scalar,
        };
        out.insert_symbol(type_key, value);
    }
    if let Some(ensurable) = typedef
        .attribute("ensurable")
        .filter(|a| a.is_ensurable_workaround())
    {
        // The only value its type allows: what the resource "has".
        out.insert_symbol(&ensurable.name, Value::Bool(false));
    }
    restore_namevars(typedef, query, &mut out);
    stringify_nil_attributes(typedef, &mut out);
    let query_has_nil = query.iter().any(|(_, v)| v.is_nil());
    if is_absent(out.get_named("dsc_ensure"))
        && is_absent(query.get_named("dsc_ensure"))
        && !query_has_nil
    {
        out.0.retain(|(_, v)| !v.is_nil());
    }
    (out, errors)
}

/// One property's value as DSC reported it (`raw`), in the form the type
/// schema wants, next to its `desired` value. An unparseable date-time is
/// nil, its message pushed to `errors`.
fn munge_value(
    attribute: &Attribute,
    raw: Value,
    desired: Option<&Value>,
    errors: &mut Vec<String>,
) -> Value {
    let mut value = raw;
    if is_dotnet_artifact(&value) {
        value = Value::Nil;
    }
    if let Value::Array(items) = &mut value {
        for item in items.iter_mut() {
            if is_dotnet_artifact(item) {
                *item = Value::Nil;
            }
        }
    }
    conform_to_mof(attribute, &mut value);
    if value.is_collection() {
        downcase_hash_keys(&mut value);
        munge_cim_instances(&mut value);
    }
    let reading = Reading::of(attribute);
    if reading == Reading::DateTime || attribute.type_string.contains("Timestamp") {
        value = parse_datetime(&value).unwrap_or_else(|message| {
            errors.push(message);
            Value::Nil
        });
    }
    if reading == Reading::Credential {
        value = credential_from_get(value);
        value = fill_credential_password(value, desired);
    }
    if value.is_nil() && matches!(desired, Some(Value::Array(_))) {
        value = Value::Array(Vec::new());
    }
    if let Some(desired) = desired {
        adopt_number_forms(&mut value, desired);
    }
    if reading == Reading::Integer {
        integers_from_text(&mut value);
    }
    conform_enums(&attribute.shape, &mut value);
    value
}

/// A value in the shape its MOF type gives it, as the LCM made it: the
/// 5.1 LCM converted Get-TargetResource's hashtable to an instance of the
/// resource's MOF class, and pwshlib 2.x wrapped a one-item value of an
/// array property. Without it, Puppet's type check
/// (`strict=error`, Puppet 8's default) raises "Provider returned data
/// that does not match the Type Schema", and otherwise the resource
/// changes every run. A one-item value of a `[]` property becomes an
/// array; for a Boolean, the text `True`/`False` (any case) a boolean;
/// for a String (or Char16), a number or a boolean its text, as
/// PowerShell writes it (`True`). A .NET object with no JSON meaning (a
/// TimeSpan, a Version) is already text: the prelude's
/// `ConvertTo-PwshlibCanonicalValue` writes it so.
fn conform_to_mof(attribute: &Attribute, value: &mut Value) {
    let Some(mof_type) = &attribute.mof_type else {
        return;
    };
    if mof_type.is_array() && !matches!(value, Value::Nil | Value::Array(_)) {
        let item = std::mem::replace(value, Value::Nil);
        *value = Value::Array(vec![item]);
    }
    let convert: fn(&mut Value) = match mof_type.element() {
        CimType::Boolean => boolean_from_text,
        CimType::String | CimType::Char16 => text_from_scalar,
        _ => return,
    };
    match value {
        Value::Array(items) => items.iter_mut().for_each(convert),
        scalar => convert(scalar),
    }
}

fn boolean_from_text(value: &mut Value) {
    if let Value::Str(text) = value {
        let text = text.trim();
        if text.eq_ignore_ascii_case("true") {
            *value = Value::Bool(true);
        } else if text.eq_ignore_ascii_case("false") {
            *value = Value::Bool(false);
        }
    }
}

fn text_from_scalar(value: &mut Value) {
    let text = match value {
        Value::Int(number) => number.to_string(),
        Value::BigInt(digits) => digits.clone(),
        Value::Float(number) if number.is_finite() => number.to_string(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        _ => return,
    };
    *value = Value::Str(text);
}

/// How a Get result's value is read back, by its property's CIM type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Date-time text becomes a Timestamp (as it does for a Puppet
    /// `Timestamp` type, whatever the CIM type).
    DateTime,
    /// `{user, password}` with the desired password filled in.
    Credential,
    /// An integer reported as text is an integer.
    Integer,
    AsGiven,
}

impl Reading {
    fn of(attribute: &Attribute) -> Reading {
        let Some(mof_type) = &attribute.mof_type else {
            return Reading::AsGiven;
        };
        match mof_type.element() {
            CimType::DateTime => Reading::DateTime,
            CimType::Credential => Reading::Credential,
            CimType::UInt8
            | CimType::SInt8
            | CimType::UInt16
            | CimType::SInt16
            | CimType::UInt32
            | CimType::SInt32
            | CimType::UInt64
            | CimType::SInt64 => Reading::Integer,
            CimType::Boolean
            | CimType::Char16
            | CimType::String
            | CimType::Real32
            | CimType::Real64
            | CimType::Instance(_)
            | CimType::Unknown(_) => Reading::AsGiven,
        }
    }
}

/// Puts back the namevars the query named where the result has none (and
/// `name` always): DSC does not report the title, and Puppet matches
/// results on the namevars it asked for.
fn restore_namevars(typedef: &TypeDef, query: &Map, out: &mut Map) {
    for namevar in typedef.namevar_attributes() {
        let restore = namevar == "name"
            || match out.get_named(namevar) {
                None | Some(Value::Nil) => true,
                Some(Value::Str(s)) => s.is_empty(),
                _ => false,
            };
        if restore {
            let from_query = match (query.get_named(namevar), namevar) {
                (None, "name") => query.get_named("title"),
                (v, _) => v,
            };
            if let Some(v) = from_query {
                out.insert_symbol(namevar, v.clone());
            }
        }
    }
}

/// A DSC integer property reported as text (`"1440"`) is still an integer:
/// its declared CIM type says so, and the Puppet type schema wants one.
fn integers_from_text(value: &mut Value) {
    match value {
        Value::Str(text) => {
            if let Ok(number) = text.trim().parse::<i64>() {
                *value = Value::Int(number);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integers_from_text),
        _ => {}
    }
}

/// Where the system reports a number as text (`"1440"`) and the desired
/// value is that number, takes the number: the values are equal anyway
/// (docs/behavior.md §3), and Puppet checks the current state against the type
/// schema, which wants an Integer. Goes through arrays (matching elements by
/// equality, since order does not matter) and hashes (keys without case).
fn adopt_number_forms(current: &mut Value, desired: &Value) {
    let desired = match desired {
        Value::Sensitive(inner) => inner.as_ref(),
        other => other,
    };
    match (current, desired) {
        (current @ Value::Str(_), Value::Int(_) | Value::BigInt(_) | Value::Float(_))
            if values_equal(current, desired) =>
        {
            *current = desired.clone();
        }
        (Value::Array(items), Value::Array(wanted)) => {
            // Only a number in the desired value can be adopted: an array
            // of texts (the common case) is not indexed at all.
            if !wanted.iter().any(holds_number) {
                return;
            }
            let index = EqualValueIndex::new(wanted);
            for item in items.iter_mut() {
                if let Some(match_) = index.first_equal(item) {
                    adopt_number_forms(item, match_);
                }
            }
        }
        (Value::Hash(map), Value::Hash(wanted)) => {
            // Each desired key once, without case (ASCII, as the names are
            // compared), the first of a name given twice kept.
            let mut by_name: FxHashMap<String, &Value> = FxHashMap::default();
            for (key, wanted_item) in wanted.iter() {
                if let Some(name) = key.key_name() {
                    by_name
                        .entry(name.to_ascii_lowercase())
                        .or_insert(wanted_item);
                }
            }
            for (key, item) in map.iter_mut() {
                let Some(name) = key.key_name() else { continue };
                if let Some(wanted_item) = by_name.get(&name.to_ascii_lowercase()) {
                    adopt_number_forms(item, wanted_item);
                }
            }
        }
        _ => {}
    }
}

/// True when a number stands anywhere in `value`.
fn holds_number(value: &Value) -> bool {
    match value {
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => true,
        Value::Array(items) => items.iter().any(holds_number),
        Value::Hash(map) => map.iter().any(|(_, item)| holds_number(item)),
        Value::Sensitive(inner) => holds_number(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {

    /// The direct reading gives what reading through `serde_json::Value`
    /// gave: the same values, key order, repeated keys and number kinds.
    #[test]
    fn parse_json_reads_as_serde_json_value_does() {
        let many_keys: String = (0..40)
            .map(|i| format!("\"k{i}\": {i}"))
            .chain(["\"k3\": \"again\"".to_owned(), "\"k39\": null".to_owned()])
            .collect::<Vec<_>>()
            .join(", ");
        let documents = [
            "null".to_owned(),
            "true".to_owned(),
            "-12".to_owned(),
            "9223372036854775807".to_owned(),
            "9223372036854775808".to_owned(),
            "18446744073709551615".to_owned(),
            "18446744073709551616".to_owned(),
            "1.5e3".to_owned(),
            "\"caf\\u00e9 \\\"q\\\" \\ud83d\\ude00\"".to_owned(),
            "[]".to_owned(),
            "{}".to_owned(),
            "{\"B\": 1, \"a\": [1, {\"x\": null}], \"B\": 2, \"c\": {\"z\": 1, \"y\": 2}}"
                .to_owned(),
            format!("{{{many_keys}}}"),
            "  {\"padded\": true}\n".to_owned(),
        ];
        for document in &documents {
            let through_value: serde_json::Value = serde_json::from_str(document.trim()).unwrap();
            assert_eq!(
                parse_json(document).unwrap(),
                from_json(through_value),
                "{document}"
            );
        }
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "nul"] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }
    use super::*;
    use crate::test_support::fixture_typedef;

    fn json_map(text: &str) -> Map {
        match parse_json(text).unwrap() {
            Value::Hash(m) => m,
            other => panic!("not a hash: {other}"),
        }
    }

    fn query() -> Map {
        Map(vec![
            (Value::sym("name"), Value::str("Title")),
            (Value::sym("dsc_destinationpath"), Value::str("c:\\foo")),
            (Value::sym("dsc_attributes"), Value::Array(vec![])),
        ])
    }

    #[test]
    fn munges_every_rule() {
        let def = fixture_typedef();
        let data = json_map(
            r#"{"DestinationPath":null,"Ensure":"Present","Contents":"x","Timeout":5,
                "PsDscRunAsCredential":null,"Unknown":1,"Attributes":null,"Plain":null,"Mode":null,
                "Type":"System.Object[]","StartTime":"2020-01-02T03:04:05.0000000+00:00",
                "BindingInfo":[{"cim_instance_type":"MSFT_Binding","Protocol":"http","Port":80,
                   "Auth":{"cim_instance_type":"MSFT_Auth","Basic":true}},
                   {"cim_instance_type":"MSFT_Binding","Protocol":"Ftp"}],
                "Password":{"cim_instance_type":"MSFT_Credential","User":"u","Password":null}}"#,
        );
        let (out, errors) = munge_get_result(&def, &query(), &data);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(out.get_named("name"), Some(&Value::str("Title")));
        assert_eq!(
            out.get_named("dsc_destinationpath"),
            Some(&Value::str("c:\\foo"))
        );
        assert!(!out.contains_named("dsc_timeout"));
        assert!(!out.contains_named("dsc_psdscrunascredential"));
        assert!(!out.contains_named("dsc_unknown"));
        assert_eq!(out.get_named("dsc_attributes"), Some(&Value::Array(vec![])));
        assert_eq!(out.get_named("dsc_plain"), Some(&Value::str("")));
        assert_eq!(out.get_named("dsc_mode"), Some(&Value::str("")));
        assert_eq!(out.get_named("dsc_type"), Some(&Value::Nil));
        assert_eq!(
            out.get_named("dsc_starttime"),
            Some(&Value::Timestamp(
                Timestamp::parse("2020-01-02T03:04:05Z").unwrap()
            ))
        );
        let bindings = out.get_named("dsc_bindinginfo").unwrap().to_string();
        assert_eq!(
            bindings,
            r#"[{"auth" => {"basic" => true, "cim_instance_type" => "MSFT_Auth"}, "port" => 80, "protocol" => "http"}, {"protocol" => "Ftp"}]"#
        );
        // No password from DSC and none in the query: unknown, not a hash
        // with a nil password that the type schema would reject.
        assert_eq!(out.get_named("dsc_password"), Some(&Value::Nil));
    }

    /// A query that wants the credential of Alice with this password
    /// (Sensitive), and that credential.
    fn query_with_desired_credential(password: &str) -> (Value, Map) {
        let desired = Value::Hash(Map(vec![
            (Value::str("user"), Value::str("Alice")),
            (
                Value::str("password"),
                Value::Sensitive(Box::new(Value::str(password))),
            ),
        ]));
        let mut q = query();
        q.insert_symbol("dsc_password", desired.clone());
        (desired, q)
    }

    #[test]
    fn a_credential_without_password_takes_the_desired_sensitive_one() {
        let def = fixture_typedef();
        let (desired, q) = query_with_desired_credential("x");
        for json in [
            r#"{"Password":{"user":"alice","password":null}}"#,
            r#"{"Password":{"User":"alice"}}"#,
        ] {
            let (out, _) = munge_get_result(&def, &q, &json_map(json));
            let password = out.get_named("dsc_password").unwrap();
            assert_eq!(
                password.as_map().unwrap().get_named("password"),
                Some(&Value::Sensitive(Box::new(Value::str("x")))),
                "{json}"
            );
            assert!(crate::canonical::values_equal(password, &desired), "{json}");
        }
        let (out, _) = munge_get_result(
            &def,
            &q,
            &json_map(r#"{"Password":{"user":"Bob","password":null}}"#),
        );
        let password = out.get_named("dsc_password").unwrap();
        assert!(!crate::canonical::values_equal(password, &desired));
        assert_eq!(
            password.to_string(),
            r#"{"password" => #<Sensitive [value redacted]>, "user" => "Bob"}"#
        );
    }

    #[test]
    fn a_credential_in_the_5_1_shape_reads_as_user_and_the_desired_password() {
        let def = fixture_typedef();
        let (desired, q) = query_with_desired_credential("wanted-pw");
        for json in [
            // MSFT_Credential as 5.1 returns it.
            r#"{"Password":{"UserName":"alice","Password":null,"cim_instance_type":"MSFT_Credential"}}"#,
            r#"{"Password":{"UserName":"alice","cim_instance_type":"MSFT_Credential"}}"#,
            r#"{"Password":{"user":"alice","password":null}}"#,
        ] {
            let (out, _) = munge_get_result(&def, &q, &json_map(json));
            let password = out.get_named("dsc_password").unwrap();
            assert_eq!(
                password,
                &Value::Hash(Map(vec![
                    (
                        Value::str("password"),
                        Value::Sensitive(Box::new(Value::str("wanted-pw")))
                    ),
                    (Value::str("user"), Value::str("alice")),
                ])),
                "{json}"
            );
            assert!(crate::canonical::values_equal(password, &desired), "{json}");
        }
        // A password reported in the clear is kept to compare, as Sensitive.
        let (out, _) = munge_get_result(
            &def,
            &q,
            &json_map(
                r#"{"Password":{"UserName":"alice","Password":"reported-pw","cim_instance_type":"MSFT_Credential"}}"#,
            ),
        );
        let password = out.get_named("dsc_password").unwrap();
        assert!(!crate::canonical::values_equal(password, &desired));
        let shown = crate::redact::shown_resource(&def, &out);
        assert!(!shown.contains("reported-pw"), "{shown}");
        assert!(shown.contains(r#""user" => "alice""#), "{shown}");
    }

    #[test]
    fn unparseable_datetime_is_an_error_and_nil() {
        let def = fixture_typedef();
        let data = json_map(r#"{"StartTime":"yesterday"}"#);
        let (out, errors) = munge_get_result(&def, &query(), &data);
        assert_eq!(out.get_named("dsc_starttime"), Some(&Value::Nil));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("yesterday"), "{}", errors[0]);
    }

    #[test]
    fn absent_on_both_sides_drops_nils() {
        let def = fixture_typedef();
        let mut q = query();
        q.insert_symbol("dsc_ensure", Value::str("absent"));
        let data = json_map(r#"{"Ensure":"Absent","Contents":null,"Force":null}"#);
        let (out, _) = munge_get_result(&def, &q, &data);
        assert!(!out.contains_named("dsc_contents"));
        assert!(!out.contains_named("dsc_force"));
        assert_eq!(out.get_named("dsc_ensure"), Some(&Value::str("Absent")));
    }

    #[test]
    fn big_and_float_numbers_survive() {
        assert_eq!(
            parse_json("18446744073709551615").unwrap(),
            Value::BigInt("18446744073709551615".into())
        );
        assert_eq!(parse_json("1.5").unwrap(), Value::Float(1.5));
        assert!(parse_json("{nope").is_err());
    }

    #[test]
    fn get_maps_enum_values_to_declared_ones_at_every_depth_and_reports_ensurable() {
        let def = crate::test_support::scaffolded_enum_typedef();
        let query = Map(vec![
            (Value::sym("name"), Value::str("acl")),
            (Value::sym("dsc_path"), Value::str("C:\\data")),
        ]);
        let data = json_map(
            r#"{"Path":"C:\\data","Schedule":"ONCE","Ensurable":"yes",
                "AccessRules":[{"cim_instance_type":"MSFT_Rule","Principal":"Users","AccessControlType":"GRANT","Rights":["fullcontrol","READ"]},
                               {"cim_instance_type":"MSFT_Rule","Principal":"Guests","AccessControlType":"deny","Rights":null}]}"#,
        );
        let (out, errors) = munge_get_result(&def, &query, &data);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(out.get_named("dsc_schedule"), Some(&Value::str("Once")));
        assert_eq!(
            out.get_named("dsc_accessrules").unwrap().to_string(),
            r#"[{"accesscontroltype" => "Grant", "principal" => "Users", "rights" => ["Read", "fullcontrol"]}, {"accesscontroltype" => "deny", "principal" => "Guests", "rights" => nil}]"#
        );
        // `ensurable` is no DSC property (DSC's `Ensurable` is ignored): Get
        // reports the one value its type allows.
        assert_eq!(out.get_named("ensurable"), Some(&Value::Bool(false)));
        assert!(!out.contains_named("dsc_ensurable"));
        let (plain, _) = munge_get_result(&fixture_typedef(), &query, &Map::new());
        assert!(!plain.contains_named("ensurable"));
    }
}

#[cfg(test)]
mod mof_shape_tests {
    use super::*;
    use crate::cim_type::MofType;

    fn attribute(mof_type: &str) -> Attribute {
        let mut attribute = crate::test_support::scaffolded_enum_typedef()
            .attribute("dsc_schedule")
            .unwrap()
            .clone();
        attribute.type_string = "Any".into();
        attribute.mof_type = Some(MofType::parse(mof_type, false));
        attribute
    }

    fn conformed(mof_type: &str, value: Value) -> Value {
        let mut value = value;
        conform_to_mof(&attribute(mof_type), &mut value);
        value
    }

    /// What a Get-TargetResource returns loosely, in the
    /// shape the MOF class gave it under the LCM.
    #[test]
    fn get_values_take_the_shape_of_their_mof_type() {
        let one = |text: &str| Value::Array(vec![Value::str(text)]);
        assert_eq!(
            conformed("String[]", Value::str("only-one")),
            one("only-one")
        );
        assert_eq!(conformed("String[]", one("kept")), one("kept"));
        assert_eq!(conformed("String[]", Value::Nil), Value::Nil);
        assert_eq!(
            conformed("UInt32[]", Value::Int(5)),
            Value::Array(vec![Value::Int(5)])
        );
        let instance = Value::Hash(Map(vec![(Value::str("key"), Value::str("a"))]));
        assert_eq!(
            conformed("MSFT_Option[]", instance.clone()),
            Value::Array(vec![instance])
        );
        assert_eq!(conformed("Boolean", Value::str("True")), Value::Bool(true));
        assert_eq!(
            conformed("boolean", Value::str(" false ")),
            Value::Bool(false)
        );
        assert_eq!(conformed("Boolean", Value::str("yes")), Value::str("yes"));
        assert_eq!(
            conformed("Boolean[]", Value::str("TRUE")),
            Value::Array(vec![Value::Bool(true)])
        );
        assert_eq!(conformed("String", Value::Int(42)), Value::str("42"));
        assert_eq!(conformed("String", Value::Bool(true)), Value::str("True"));
        assert_eq!(conformed("String", Value::Float(1.5)), Value::str("1.5"));
        assert_eq!(
            conformed(
                "String[]",
                Value::Array(vec![Value::Int(1), Value::str("b")])
            ),
            Value::Array(vec![Value::str("1"), Value::str("b")])
        );
        assert_eq!(conformed("UInt32", Value::str("7")), Value::str("7"));
    }

    /// Through the whole munge: a scalar for an array property, and a text
    /// boolean, read as the schema wants, so that they equal the desired
    /// values.
    #[test]
    fn a_get_result_munged_is_shaped_by_the_mof_types() {
        let def = crate::test_support::fixture_typedef();
        let query = Map(vec![
            (Value::sym("name"), Value::str("Title")),
            (Value::sym("dsc_destinationpath"), Value::str("c:\\foo")),
        ]);
        let data = match parse_json(r#"{"Attributes":"ReadOnly","Force":"True"}"#).unwrap() {
            Value::Hash(map) => map,
            other => panic!("{other}"),
        };
        let (out, errors) = munge_get_result(&def, &query, &data);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            out.get_named("dsc_attributes"),
            Some(&Value::Array(vec![Value::str("ReadOnly")]))
        );
        assert_eq!(out.get_named("dsc_force"), Some(&Value::Bool(true)));
    }
}

#[cfg(test)]
mod number_form_tests {
    use super::*;

    fn hash(pairs: &[(&str, Value)]) -> Value {
        Value::Hash(
            pairs
                .iter()
                .map(|(k, v)| (Value::str(*k), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn numbers_reported_as_text_take_the_desired_form_at_any_depth() {
        let mut current = Value::Array(vec![
            hash(&[
                ("Port", Value::str("443")),
                ("protocol", Value::str("https")),
            ]),
            hash(&[("port", Value::str("80")), ("protocol", Value::str("http"))]),
        ]);
        let desired = Value::Array(vec![
            hash(&[("port", Value::Int(80)), ("protocol", Value::str("http"))]),
            hash(&[("port", Value::Int(443)), ("protocol", Value::str("https"))]),
        ]);
        adopt_number_forms(&mut current, &desired);
        let ports: Vec<_> = current
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                h.as_map()
                    .unwrap()
                    .get_named("Port")
                    .or(h.as_map().unwrap().get_named("port"))
                    .cloned()
            })
            .collect();
        assert_eq!(ports, vec![Some(Value::Int(443)), Some(Value::Int(80))]);
    }

    #[test]
    fn integer_typed_properties_reported_as_text_become_integers() {
        let mut value = Value::Array(vec![Value::str("1440"), Value::str(" 7 "), Value::str("x")]);
        let reading = |mof_type: &str| {
            let mut options = crate::test_support::scaffolded_enum_typedef()
                .attribute("dsc_schedule")
                .unwrap()
                .clone();
            options.type_string = "Any".into();
            options.mof_type = Some(crate::cim_type::MofType::parse(mof_type, false));
            Reading::of(&options)
        };
        assert!(reading("UInt32[]") == Reading::Integer && reading("String") != Reading::Integer);
        integers_from_text(&mut value);
        assert_eq!(
            value,
            Value::Array(vec![Value::Int(1440), Value::Int(7), Value::str("x")])
        );
    }

    #[test]
    fn text_that_differs_from_the_desired_number_stays_text() {
        let mut current = Value::str("1440");
        adopt_number_forms(&mut current, &Value::Int(60));
        assert_eq!(current, Value::str("1440"));
        let mut words = Value::str("many");
        adopt_number_forms(&mut words, &Value::Int(1));
        assert_eq!(words, Value::str("many"));
    }
}
