//! Case-insensitive, order-insensitive value comparison and canonicalization
//! (pwshlib 2.x `same?`, `recursively_downcase`, `recursively_sort`, and the
//! property rules of `canonicalize`).

use std::cmp::Ordering;

use crate::typedef::{Behaviour, TypeDef, TypeShape};
use crate::value::{Map, Timestamp, Value};

/// Lowercases every String and Symbol, hash keys included (2.x
/// `recursively_downcase`). Sensitive values keep their wrapper.
pub fn recursively_downcase(value: &Value) -> Value {
    match value {
        Value::Str(s) => Value::Str(s.to_lowercase()),
        Value::Symbol(s) => Value::Symbol(s.to_lowercase()),
        Value::Array(items) => Value::Array(items.iter().map(recursively_downcase).collect()),
        Value::Hash(map) => Value::Hash(
            map.iter()
                .map(|(k, v)| (recursively_downcase(k), recursively_downcase(v)))
                .collect(),
        ),
        Value::Sensitive(inner) => Value::Sensitive(Box::new(recursively_downcase(inner))),
        other => other.clone(),
    }
}

/// Sorts every array and every hash (by key), at any depth, so that two
/// values that differ only in order compare equal.
pub fn recursively_sort(value: &Value) -> Value {
    match value {
        Value::Array(items) => {
            let mut sorted: Vec<Value> = items.iter().map(recursively_sort).collect();
            sorted.sort_by(compare_values);
            Value::Array(sorted)
        }
        Value::Hash(map) => Value::Hash(sort_map(map)),
        Value::Sensitive(inner) => Value::Sensitive(Box::new(recursively_sort(inner))),
        other => other.clone(),
    }
}

pub fn sort_map(map: &Map) -> Map {
    let mut pairs: Vec<(Value, Value)> = map
        .iter()
        .map(|(k, v)| (k.clone(), recursively_sort(v)))
        .collect();
    pairs.sort_by(|a, b| compare_values(&a.0, &b.0));
    Map(pairs)
}

/// 2.x `same?`: equal once both sides are recursively sorted.
pub fn same(a: &Value, b: &Value) -> bool {
    a == b || recursively_sort(a) == recursively_sort(b)
}

fn rank(value: &Value) -> u8 {
    match value {
        Value::Nil => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => 2,
        Value::Str(_) => 3,
        Value::Symbol(_) => 4,
        Value::Timestamp(_) => 5,
        Value::Array(_) => 6,
        Value::Hash(_) => 7,
        Value::Sensitive(_) => 8,
    }
}

/// A total order over values, used only to sort; it never looks inside a
/// Sensitive value's text in a way that could be observed.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) | (Value::Symbol(x), Value::Symbol(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y.iter())
            .map(|(p, q)| compare_values(p, q))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Value::Hash(x), Value::Hash(y)) => x
            .iter()
            .zip(y.iter())
            .map(|((k1, v1), (k2, v2))| compare_values(k1, k2).then_with(|| compare_values(v1, v2)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Value::Sensitive(x), Value::Sensitive(y)) => compare_values(x, y),
        _ if rank(a) == 2 && rank(b) == 2 => number(a)
            .zip(number(b))
            .and_then(|(x, y)| x.partial_cmp(&y))
            .unwrap_or(Ordering::Equal),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::BigInt(s) => s.parse().ok(),
        Value::Str(s) => {
            let t = s.trim();
            if t.is_empty() {
                None
            } else {
                t.parse::<f64>().ok().filter(|f| f.is_finite())
            }
        }
        _ => None,
    }
}

/// True for nil, '', [] and {} (and a Sensitive wrapping one of those).
pub fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Nil => true,
        Value::Str(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Hash(m) => m.is_empty(),
        Value::Sensitive(inner) => is_empty_value(inner),
        _ => false,
    }
}

/// The comparison form used by `insync?`: case folded, numbers and numeric
/// strings unified, date-times as instants, order removed.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Folded {
    Nil,
    Bool(bool),
    Number(f64),
    Instant(i128),
    Text(String),
    List(Vec<Folded>),
    Table(Vec<(Folded, Folded)>),
}

fn fold(value: &Value) -> Folded {
    match value {
        Value::Nil => Folded::Nil,
        Value::Bool(b) => Folded::Bool(*b),
        Value::Int(_) | Value::Float(_) | Value::BigInt(_) => {
            number(value).map_or_else(|| Folded::Text(value.to_string()), Folded::Number)
        }
        Value::Timestamp(t) => Folded::Instant(t.nanos),
        Value::Str(s) | Value::Symbol(s) => {
            if let Some(n) = number(value) {
                Folded::Number(n)
            } else if let Some(b) = bool_text(s) {
                Folded::Bool(b)
            } else if let Some(t) = date_like(s).then(|| Timestamp::parse(s)).flatten() {
                Folded::Instant(t.nanos)
            } else {
                Folded::Text(s.to_lowercase())
            }
        }
        Value::Sensitive(inner) => fold(inner),
        Value::Array(items) => {
            let mut list: Vec<Folded> = items.iter().map(fold).collect();
            list.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
            Folded::List(list)
        }
        Value::Hash(map) => {
            let mut table: Vec<(Folded, Folded)> = map
                .iter()
                .map(|(k, v)| (Folded::Text(key_text(k)), fold(v)))
                .collect();
            table.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal));
            Folded::Table(table)
        }
    }
}

fn key_text(key: &Value) -> String {
    match key.key_name() {
        Some(name) => name.to_lowercase(),
        None => key.to_string().to_lowercase(),
    }
}

fn bool_text(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Only texts shaped like `yyyy-mm-dd…` are tried as date-times.
fn date_like(s: &str) -> bool {
    let b = s.trim().as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
}

/// The `insync?` equality of docs/behavior.md §3: `==`, both empty, or equal
/// after folding case, ignoring order, unifying numbers with numeric strings
/// and date-times as instants, nested too.
pub fn values_equal(is: &Value, should: &Value) -> bool {
    if is == should || (is_empty_value(is) && is_empty_value(should)) {
        return true;
    }
    fold(is) == fold(should)
}

/// Finds, among a list of values, the first one [`values_equal`] to a given
/// non-empty value, in O(log n) a look-up: each value is folded once, and
/// the folded forms are kept sorted. Matching every item of an n-item array
/// against another n-item array with `values_equal` pair by pair costs
/// O(n²) folds, which an array of 100,000 strings makes minutes.
pub struct EqualValueIndex<'a> {
    values: &'a [Value],
    /// The folded form of each value with its index, sorted by the form
    /// and then by the index, so the first of equal values comes first.
    sorted: Vec<(Folded, usize)>,
}

impl<'a> EqualValueIndex<'a> {
    pub fn new(values: &'a [Value]) -> Self {
        let mut sorted: Vec<(Folded, usize)> = values.iter().map(fold).zip(0..).collect();
        sorted.sort_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then(a.1.cmp(&b.1))
        });
        Self { values, sorted }
    }

    /// The first value equal to `value`. An empty value (nil, '', [], {})
    /// is not looked up: `values_equal` takes every empty value as equal to
    /// every other, which no order of folded forms can show.
    pub fn first_equal(&self, value: &Value) -> Option<&'a Value> {
        if is_empty_value(value) {
            return None;
        }
        let key = fold(value);
        let at = self.sorted.partition_point(|(folded, _)| {
            folded.partial_cmp(&key).unwrap_or(Ordering::Equal) == Ordering::Less
        });
        self.sorted
            .get(at)
            .filter(|(folded, _)| *folded == key)
            .map(|(_, index)| &self.values[*index])
    }
}

/// Canonicalizes one manifest resource against the system state (the
/// munged Get result). `is_metaparam` tells Puppet metaparameters apart.
/// Both are given up: each value goes into the result as it is, moved,
/// not copied (the first Get of every resource comes through here).
pub fn canonicalize_resource(
    typedef: &TypeDef,
    manifest: Map,
    mut system: Map,
    is_metaparam: &dyn Fn(&str) -> bool,
) -> Map {
    let mut result = Map(Vec::with_capacity(manifest.len()));
    // Where each system value went in `result` once moved there: a name
    // given twice (a Symbol and a String key) takes it from there.
    let mut moved_to: Vec<Option<usize>> = vec![None; system.len()];
    for (key, manifest_value) in manifest.0 {
        let Some(name) = key.key_name() else {
            result.0.push((key, manifest_value));
            continue;
        };
        let attribute = typedef.attribute(name);
        let keep_manifest = match attribute {
            None => true,
            Some(a) => {
                a.behaviour == Behaviour::Parameter
                    || name == "name"
                    || name == "dsc_psdscrunascredential"
                    || !name.starts_with("dsc_")
                    || is_metaparam(name)
            }
        };
        let found = (!keep_manifest)
            .then(|| {
                system
                    .0
                    .iter()
                    .position(|(k, _)| k.key_name() == Some(name))
            })
            .flatten();
        let chosen = match found {
            Some(index) => {
                let system_value = match moved_to[index] {
                    Some(at) => &result.0[at].1,
                    None => &system.0[index].1,
                };
                if same_without_case(system_value, &manifest_value)
                    && attribute.is_none_or(|a| enums_allowed(&a.shape, system_value))
                {
                    if let Some(at) = moved_to[index] {
                        result.0[at].1.clone()
                    } else {
                        moved_to[index] = Some(result.0.len());
                        std::mem::replace(&mut system.0[index].1, Value::Nil)
                    }
                } else {
                    manifest_value
                }
            }
            None => manifest_value,
        };
        result.0.push((key, chosen));
    }
    result
}

/// `same` once both sides are downcased; two ASCII texts (most values) are
/// compared as they are, without the downcased copies.
fn same_without_case(a: &Value, b: &Value) -> bool {
    if let (Value::Str(a), Value::Str(b)) = (a, b) {
        if a.is_ascii() && b.is_ascii() {
            return a.eq_ignore_ascii_case(b);
        }
    }
    same(&recursively_downcase(a), &recursively_downcase(b))
}

/// The declared value that equals `text` without case: `text` itself when
/// it is declared, else the first declared value that matches.
pub fn declared_enum_value<'a>(declared: &'a [String], text: &str) -> Option<&'a str> {
    declared
        .iter()
        .find(|d| d.as_str() == text)
        .or_else(|| {
            declared
                .iter()
                .find(|d| d.to_lowercase() == text.to_lowercase())
        })
        .map(String::as_str)
}

/// Replaces every enum value inside `value` (by the attribute's or Struct
/// member's type, at any depth) with the declared value it equals without
/// case, so that Puppet's type schema accepts what DSC returned.
pub fn conform_enums(shape: &TypeShape, value: &mut Value) {
    match (shape, value) {
        (_, Value::Sensitive(inner)) => conform_enums(shape, inner),
        (TypeShape::Enum(declared), Value::Str(text)) => {
            if let Some(found) = declared_enum_value(declared, text) {
                if found != text.as_str() {
                    *text = found.to_owned();
                }
            }
        }
        (TypeShape::Array(inner), Value::Array(items)) => {
            items.iter_mut().for_each(|item| conform_enums(inner, item))
        }
        // PowerShell's JSON leaves a one-element array as its element.
        (TypeShape::Array(inner), item @ Value::Hash(_)) => conform_enums(inner, item),
        (TypeShape::Struct(_), Value::Hash(map)) => {
            for (key, item) in map.iter_mut() {
                if let Some(member) = key.key_name().and_then(|k| shape.member(k)) {
                    conform_enums(member, item);
                }
            }
        }
        _ => {}
    }
}

/// True when every enum value inside `value` is exactly a declared value:
/// only then may canonicalize keep the system's casing (Puppet refuses any
/// other casing of an Enum).
pub fn enums_allowed(shape: &TypeShape, value: &Value) -> bool {
    match (shape, value) {
        (TypeShape::Other | TypeShape::Scalar(_), _) | (_, Value::Nil) => true,
        (_, Value::Sensitive(inner)) => enums_allowed(shape, inner),
        (TypeShape::Enum(declared), Value::Str(text)) => declared.iter().any(|d| d == text),
        (TypeShape::Enum(_), _) => false,
        (TypeShape::Array(inner), Value::Array(items)) => {
            items.iter().all(|item| enums_allowed(inner, item))
        }
        (TypeShape::Array(inner), item) => enums_allowed(inner, item),
        (TypeShape::Struct(_), Value::Hash(map)) => map.iter().all(|(key, item)| {
            key.key_name()
                .and_then(|k| shape.member(k))
                .is_none_or(|member| enums_allowed(member, item))
        }),
        (TypeShape::Struct(_), _) => true,
    }
}

/// True when the value says Absent, in any case.
pub fn is_absent(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Str(s)) | Some(Value::Symbol(s)) if s.eq_ignore_ascii_case("absent"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::fixture_typedef;

    fn s(t: &str) -> Value {
        Value::str(t)
    }

    #[test]
    fn values_equal_folds_case_order_numbers_and_dates() {
        assert!(values_equal(&s("C:\\Foo"), &s("c:\\foo")));
        assert!(values_equal(
            &Value::Array(vec![s("B"), s("a")]),
            &Value::Array(vec![s("A"), s("b")])
        ));
        assert!(values_equal(&s("1"), &Value::Int(1)));
        assert!(values_equal(&Value::Float(1.0), &Value::Int(1)));
        let t = Timestamp::parse("2020-01-02T03:04:05Z").unwrap();
        assert!(values_equal(
            &s("2020-01-02 05:04:05 +02:00"),
            &Value::Timestamp(t)
        ));
        assert!(values_equal(&Value::Nil, &Value::Array(vec![])));
        assert!(values_equal(&Value::Nil, &s("")));
        let h1 = Value::Hash(Map(vec![(s("Key"), s("VALUE")), (s("n"), Value::Int(2))]));
        let h2 = Value::Hash(Map(vec![(s("n"), s("2")), (s("key"), s("value"))]));
        assert!(values_equal(&h1, &h2));
        assert!(!values_equal(&s("a"), &s("b")));
        assert!(!values_equal(&Value::Int(1), &Value::Int(2)));
        assert!(!values_equal(&s("x"), &Value::Nil));
        assert!(values_equal(&Value::Bool(true), &s("True")));
    }

    #[test]
    fn sort_and_same() {
        let a = Value::Array(vec![s("b"), s("a")]);
        let b = Value::Array(vec![s("a"), s("b")]);
        assert!(same(&a, &b));
        assert_eq!(recursively_sort(&a), b);
        assert!(!same(&s("A"), &s("a")));
        assert_eq!(recursively_downcase(&s("AbC")), s("abc"));
    }

    /// The system's values are moved into the result, not copied: a name
    /// given twice (a Symbol and a String key) still gets the system's
    /// value both times, and the manifest's order and keys are kept.
    #[test]
    fn canonicalize_gives_a_system_value_to_each_key_that_names_it() {
        let def = fixture_typedef();
        let manifest = Map(vec![
            (Value::sym("dsc_contents"), s("HELLO")),
            (s("dsc_contents"), s("hello")),
            (Value::sym("dsc_destinationpath"), s("c:\\foo")),
        ]);
        let system = Map(vec![
            (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
            (Value::sym("dsc_contents"), s("Hello")),
        ]);
        let out = canonicalize_resource(&def, manifest, system, &|_| false);
        assert_eq!(
            out,
            Map(vec![
                (Value::sym("dsc_contents"), s("Hello")),
                (s("dsc_contents"), s("Hello")),
                (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
            ])
        );
    }

    #[test]
    fn canonicalize_prefers_system_casing_except_for_disallowed_enums() {
        let def = fixture_typedef();
        let manifest = Map(vec![
            (Value::sym("name"), s("Title")),
            (Value::sym("dsc_destinationpath"), s("c:\\foo")),
            (Value::sym("dsc_ensure"), s("present")),
            (Value::sym("dsc_type"), s("FILE")),
            (Value::sym("dsc_contents"), s("new")),
            (Value::sym("validation_mode"), s("property")),
            (Value::sym("loglevel"), s("debug")),
        ]);
        let system = Map(vec![
            (Value::sym("name"), s("title")),
            (Value::sym("dsc_destinationpath"), s("C:\\Foo")),
            (Value::sym("dsc_ensure"), s("Present")),
            (Value::sym("dsc_type"), s("fIle")),
            (Value::sym("dsc_contents"), s("old")),
            (Value::sym("dsc_attributes"), Value::Array(vec![])),
        ]);
        let out =
            canonicalize_resource(&def, manifest.clone(), system.clone(), &|n| n == "loglevel");
        assert_eq!(out.get_named("name"), Some(&s("Title")));
        assert_eq!(out.get_named("dsc_destinationpath"), Some(&s("C:\\Foo")));
        assert_eq!(out.get_named("dsc_ensure"), Some(&s("Present")));
        assert_eq!(out.get_named("dsc_type"), Some(&s("FILE")));
        assert_eq!(out.get_named("dsc_contents"), Some(&s("new")));
        assert_eq!(out.get_named("loglevel"), Some(&s("debug")));
        assert!(!out.contains_named("dsc_attributes"));
    }

    fn rule(principal: &str, kind: &str, rights: &[&str]) -> Value {
        Value::Hash(Map(vec![
            (s("principal"), s(principal)),
            (s("accesscontroltype"), s(kind)),
            (
                s("rights"),
                Value::Array(rights.iter().map(|r| s(r)).collect()),
            ),
        ]))
    }

    #[test]
    fn declared_enum_value_prefers_an_exact_match_then_the_first_declared() {
        let declared: Vec<String> = ["Once", "once", "Daily"].map(String::from).to_vec();
        assert_eq!(declared_enum_value(&declared, "once"), Some("once"));
        assert_eq!(declared_enum_value(&declared, "Once"), Some("Once"));
        assert_eq!(declared_enum_value(&declared, "ONCE"), Some("Once"));
        assert_eq!(declared_enum_value(&declared, "daily"), Some("Daily"));
        assert_eq!(declared_enum_value(&declared, "Weekly"), None);
    }

    #[test]
    fn conform_enums_maps_case_only_differences_at_every_depth() {
        let def = crate::test_support::scaffolded_enum_typedef();
        let shape = &def.attribute("dsc_accessrules").unwrap().shape;
        let mut value = Value::Array(vec![
            rule("BUILTIN\\Users", "GRANT", &["READ", "fullControl"]),
            rule("Admins", "deny", &["Write?"]),
        ]);
        conform_enums(shape, &mut value);
        assert_eq!(
            value,
            Value::Array(vec![
                rule("BUILTIN\\Users", "Grant", &["Read", "FullControl"]),
                rule("Admins", "deny", &["Write?"]),
            ])
        );
        // A lone instance (PowerShell's JSON unrolls one-element arrays).
        let mut lone = rule("x", "DENY", &[]);
        conform_enums(shape, &mut lone);
        assert_eq!(lone, rule("x", "Deny", &[]));
        // Plain strings are not enums: their case stays.
        let mut principal = rule("bUiLtIn", "grant", &[]);
        conform_enums(shape, &mut principal);
        assert_eq!(principal, rule("bUiLtIn", "grant", &[]));
        let top = &def.attribute("dsc_schedule").unwrap().shape;
        let mut once = s("ONCE");
        conform_enums(top, &mut once);
        assert_eq!(once, s("Once"));
    }

    #[test]
    fn enums_allowed_looks_at_every_depth() {
        let def = crate::test_support::scaffolded_enum_typedef();
        let shape = &def.attribute("dsc_accessrules").unwrap().shape;
        let ok = Value::Array(vec![rule("u", "grant", &["Read"])]);
        assert!(enums_allowed(shape, &ok));
        assert!(!enums_allowed(
            shape,
            &Value::Array(vec![rule("u", "GRANT", &["Read"])])
        ));
        assert!(!enums_allowed(
            shape,
            &Value::Array(vec![rule("u", "Grant", &["READ"])])
        ));
        assert!(enums_allowed(&TypeShape::Other, &s("ANY")));
    }

    #[test]
    fn canonicalize_keeps_system_casing_inside_instances_only_where_allowed() {
        let def = crate::test_support::scaffolded_enum_typedef();
        let manifest_rules = Value::Array(vec![rule("BUILTIN\\Users", "grant", &["read"])]);
        let manifest = Map(vec![
            (Value::sym("name"), s("acl")),
            (Value::sym("dsc_path"), s("c:\\data")),
            (Value::sym("dsc_accessrules"), manifest_rules.clone()),
            (Value::sym("dsc_schedule"), s("once")),
            (Value::sym("ensurable"), Value::Bool(false)),
        ]);
        let canon = |system_rules: Value, schedule: &str| {
            let system = Map(vec![
                (Value::sym("dsc_path"), s("C:\\Data")),
                (Value::sym("dsc_accessrules"), system_rules),
                (Value::sym("dsc_schedule"), s(schedule)),
            ]);
            canonicalize_resource(&def, manifest.clone(), system.clone(), &|_| false)
        };
        // Allowed system casings are kept, at every depth.
        let allowed = Value::Array(vec![rule("builtin\\users", "Grant", &["Read"])]);
        let out = canon(allowed.clone(), "Once");
        assert_eq!(out.get_named("dsc_accessrules"), Some(&allowed));
        assert_eq!(out.get_named("dsc_schedule"), Some(&s("Once")));
        assert_eq!(out.get_named("dsc_path"), Some(&s("C:\\Data")));
        assert_eq!(out.get_named("ensurable"), Some(&Value::Bool(false)));
        // A casing the Enum does not allow, nested or not: the manifest's.
        let out = canon(
            Value::Array(vec![rule("BUILTIN\\Users", "GRANT", &["Read"])]),
            "ONCE",
        );
        assert_eq!(out.get_named("dsc_accessrules"), Some(&manifest_rules));
        assert_eq!(out.get_named("dsc_schedule"), Some(&s("once")));
        let out = canon(
            Value::Array(vec![rule("BUILTIN\\Users", "Grant", &["rEAD"])]),
            "once",
        );
        assert_eq!(out.get_named("dsc_accessrules"), Some(&manifest_rules));
    }

    mod equal_value_index {
        use super::super::*;
        use proptest::prelude::*;

        /// Values that fold alike in many ways: numbers and their texts,
        /// case, booleans as text, date-times, empties, nesting.
        fn a_value() -> impl Strategy<Value = Value> {
            let scalar = prop_oneof![
                Just(Value::Nil),
                any::<bool>().prop_map(Value::Bool),
                (-3i64..4).prop_map(Value::Int),
                (-3i64..4).prop_map(|i| Value::str(i.to_string())),
                (-3i64..4).prop_map(|i| Value::str(format!(" {i}.0"))),
                prop_oneof![
                    Just("a"),
                    Just("A"),
                    Just("b"),
                    Just(""),
                    Just("TRUE"),
                    Just("false")
                ]
                .prop_map(Value::str),
                prop_oneof![
                    Just("2024-01-02T03:04:05Z"),
                    Just("2024-01-02T04:04:05+01:00")
                ]
                .prop_map(Value::str),
            ];
            scalar.prop_recursive(2, 12, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                    prop::collection::vec(
                        (prop_oneof![Just("k"), Just("K"), Just("j")], inner.clone()),
                        0..3
                    )
                    .prop_map(|pairs| Value::Hash(
                        pairs.into_iter().map(|(k, v)| (Value::str(k), v)).collect()
                    )),
                    inner.prop_map(|v| Value::Sensitive(Box::new(v))),
                ]
            })
        }

        proptest! {
            /// The index finds what a search pair by pair with
            /// `values_equal` finds, the same first value, for every
            /// non-empty value.
            #[test]
            fn finds_the_first_value_a_pairwise_search_finds(
                values in prop::collection::vec(a_value(), 0..12),
                probe in a_value(),
            ) {
                let index = EqualValueIndex::new(&values);
                let pairwise = if is_empty_value(&probe) {
                    None
                } else {
                    values.iter().find(|v| values_equal(&probe, v))
                };
                prop_assert_eq!(
                    index.first_equal(&probe).map(|v| v as *const Value),
                    pairwise.map(|v| v as *const Value)
                );
            }
        }
    }
}
