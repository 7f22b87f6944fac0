//! The owned value model: every Puppet value the provider sees, converted out
//! of Ruby once, so that no Ruby object outlives a method call in Rust.

use chrono::{DateTime, FixedOffset, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// A Puppet value. `Sensitive` may wrap any value at any depth; everything
/// that renders values (scripts, logs, change messages) must treat it as a
/// secret. Its `Display` (in `secrecy/shown.rs`, beside the marker text it
/// writes) shows every Sensitive part as the redaction marker.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    /// An integer beyond i64, kept as its decimal text (Ruby Bignum).
    BigInt(String),
    Float(f64),
    Str(String),
    Symbol(String),
    Array(Vec<Value>),
    Hash(Map),
    Sensitive(Box<Value>),
    Timestamp(Timestamp),
}

/// An insertion-ordered hash. Resource hashes hold a few dozen keys at most,
/// so a vector beats a hash map here and keeps Ruby's ordering for free.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Map(pub Vec<(Value, Value)>);

impl Map {
    pub fn new() -> Self {
        Map(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Looks a key up whether it is stored as a Symbol or a String, which is
    /// how resource hashes (symbols) and struct members (strings) differ.
    pub fn get_named(&self, name: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(k, _)| k.key_name() == Some(name))
            .map(|(_, v)| v)
    }

    pub fn get_named_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.0
            .iter_mut()
            .find(|(k, _)| k.key_name() == Some(name))
            .map(|(_, v)| v)
    }

    pub fn contains_named(&self, name: &str) -> bool {
        self.get_named(name).is_some()
    }

    /// Replaces the value of an existing key in place (keeping its position),
    /// or appends the pair.
    pub fn insert(&mut self, key: Value, value: Value) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Inserts under a Symbol key, the form resource hashes use.
    pub fn insert_symbol(&mut self, name: &str, value: Value) {
        match self.get_named_mut(name) {
            Some(slot) => *slot = value,
            None => self.0.push((Value::Symbol(name.to_owned()), value)),
        }
    }

    pub fn remove_named(&mut self, name: &str) -> Option<Value> {
        let index = self
            .0
            .iter()
            .position(|(k, _)| k.key_name() == Some(name))?;
        Some(self.0.remove(index).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = &(Value, Value)> {
        self.0.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut (Value, Value)> {
        self.0.iter_mut()
    }

    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl FromIterator<(Value, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (Value, Value)>>(iter: I) -> Self {
        Map(iter.into_iter().collect())
    }
}

impl IntoIterator for Map {
    type Item = (Value, Value);
    type IntoIter = std::vec::IntoIter<(Value, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Value {
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(text.into())
    }

    pub fn sym(name: impl Into<String>) -> Value {
        Value::Symbol(name.into())
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// A Hash or an Array: a value with values inside.
    pub fn is_collection(&self) -> bool {
        matches!(self, Value::Hash(_) | Value::Array(_))
    }

    /// The text of a String or Symbol, which is how hash keys are named.
    pub fn key_name(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Symbol(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Hash(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Hash(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// True when this value, or anything inside it, is Sensitive.
    pub fn contains_sensitive(&self) -> bool {
        match self {
            Value::Sensitive(_) => true,
            Value::Array(items) => items.iter().any(Value::contains_sensitive),
            Value::Hash(map) => map
                .iter()
                .any(|(k, v)| k.contains_sensitive() || v.contains_sensitive()),
            _ => false,
        }
    }

    /// Strips every Sensitive wrapper, at any depth (pwshlib 2.x `unwrap`).
    pub fn unwrap_sensitive(&self) -> Value {
        match self {
            Value::Sensitive(inner) => inner.unwrap_sensitive(),
            Value::Array(items) => {
                Value::Array(items.iter().map(Value::unwrap_sensitive).collect())
            }
            Value::Hash(map) => Value::Hash(
                map.iter()
                    .map(|(k, v)| (k.unwrap_sensitive(), v.unwrap_sensitive()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Collects the plain text of every secret inside this value, for tests
    /// and for last-line-of-defence scrubbing of error text.
    pub fn secret_texts(&self, out: &mut Vec<String>) {
        fn leaves(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Sensitive(inner) => leaves(inner, out),
                Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
                Value::Hash(map) => map.iter().for_each(|(k, v)| {
                    leaves(k, out);
                    leaves(v, out)
                }),
                Value::Str(s) | Value::Symbol(s) | Value::BigInt(s) => out.push(s.clone()),
                Value::Int(i) => out.push(i.to_string()),
                Value::Float(f) => out.push(f.to_string()),
                Value::Timestamp(t) => out.push(t.to_iso8601()),
                Value::Bool(_) | Value::Nil => {}
            }
        }
        match self {
            Value::Sensitive(inner) => leaves(inner, out),
            Value::Array(items) => items.iter().for_each(|v| v.secret_texts(out)),
            Value::Hash(map) => map.iter().for_each(|(k, v)| {
                k.secret_texts(out);
                v.secret_texts(out)
            }),
            _ => {}
        }
    }
}

/// A point in time, as Puppet's `Timestamp` holds it: nanoseconds since the
/// Unix epoch, UTC. Comparing two of them compares instants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub nanos: i128,
}

impl Timestamp {
    pub fn from_nanos(nanos: i128) -> Self {
        Timestamp { nanos }
    }

    fn to_chrono(self) -> Option<DateTime<Utc>> {
        let secs = self.nanos.div_euclid(1_000_000_000);
        // Below 10^9, so it fits.
        let sub = u32::try_from(self.nanos.rem_euclid(1_000_000_000)).ok()?;
        Utc.timestamp_opt(i64::try_from(secs).ok()?, sub).single()
    }

    /// ISO-8601 in UTC with as many fractional digits as needed, e.g.
    /// `2024-02-29T13:45:00Z` or `2024-02-29T13:45:00.123456789Z`.
    pub fn to_iso8601(self) -> String {
        match self.to_chrono() {
            Some(dt) => dt.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            None => format!("@{}ns", self.nanos),
        }
    }

    /// Parses the date-time texts PowerShell and Puppet produce: RFC 3339
    /// with any offset, `yyyy-mm-dd hh:mm:ss[.f] [+zz:zz|UTC]`, and a plain
    /// date-time without an offset (taken as UTC).
    pub fn parse(text: &str) -> Option<Timestamp> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return None;
        }
        let from_fixed = |dt: DateTime<FixedOffset>| Timestamp::from_chrono(dt.with_timezone(&Utc));
        if let Ok(dt) = DateTime::parse_from_rfc3339(trimmed) {
            return Some(from_fixed(dt));
        }
        let without_suffix = trimmed
            .strip_suffix("UTC")
            .map(str::trim_end)
            .unwrap_or(trimmed);
        let mut normalized = without_suffix.to_owned();
        if normalized.as_bytes().get(10) == Some(&b' ') {
            normalized.replace_range(10..11, "T");
        }
        if let Ok(dt) = DateTime::parse_from_rfc3339(&normalized) {
            return Some(from_fixed(dt));
        }
        let without_utc = normalized.as_str();
        for pattern in [
            "%Y-%m-%dT%H:%M:%S%.f%:z",
            "%Y-%m-%dT%H:%M:%S%.f %:z",
            "%Y-%m-%dT%H:%M:%S%.f%z",
        ] {
            if let Ok(dt) = DateTime::parse_from_str(without_utc, pattern) {
                return Some(from_fixed(dt));
            }
        }
        for pattern in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M",
        ] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(without_utc, pattern) {
                return Some(Timestamp::from_chrono(naive.and_utc()));
            }
        }
        if let Ok(date) = chrono::NaiveDate::parse_from_str(without_utc, "%Y-%m-%d") {
            return Some(Timestamp::from_chrono(date.and_hms_opt(0, 0, 0)?.and_utc()));
        }
        None
    }

    fn from_chrono(dt: DateTime<Utc>) -> Timestamp {
        let nanos =
            i128::from(dt.timestamp()) * 1_000_000_000 + i128::from(dt.timestamp_subsec_nanos());
        Timestamp { nanos }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_round_trips_through_iso8601() {
        let t = Timestamp::parse("2024-02-29T13:45:00.5+02:00").unwrap();
        assert_eq!(t.to_iso8601(), "2024-02-29T11:45:00.500Z");
        assert_eq!(Timestamp::parse(&t.to_iso8601()), Some(t));
    }

    #[test]
    fn timestamp_parses_puppet_and_powershell_forms() {
        let expected = Timestamp::parse("2020-01-02T03:04:05Z").unwrap();
        for text in [
            "2020-01-02T03:04:05.000000000 UTC",
            "2020-01-02 03:04:05 UTC",
            "2020-01-02T03:04:05.0000000+00:00",
            "2020-01-02T05:04:05+02:00",
            "2020-01-02T03:04:05",
        ] {
            assert_eq!(Timestamp::parse(text), Some(expected), "{text}");
        }
        assert_eq!(Timestamp::parse("not a date"), None);
        assert_eq!(Timestamp::parse(""), None);
    }

    #[test]
    fn map_keeps_order_and_replaces_in_place() {
        let mut map = Map::new();
        map.insert_symbol("b", Value::Int(1));
        map.insert_symbol("a", Value::Int(2));
        map.insert_symbol("b", Value::Int(3));
        let keys: Vec<_> = map.keys().filter_map(Value::key_name).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(map.get_named("b"), Some(&Value::Int(3)));
        assert_eq!(map.remove_named("b"), Some(Value::Int(3)));
        assert!(!map.contains_named("b"));
    }
}
