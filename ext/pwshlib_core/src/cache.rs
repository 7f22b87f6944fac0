//! Caches keyed by resource identity: the namevar values, compared
//! case-insensitively as PowerShell compares them. Lookups are hash-map
//! lookups, so thousands of resources cost linear time in total.
//!
//! A run keeps two resource hashes per resource (the canonicalized desired
//! state and the Get result), so what an entry costs in memory counts: an
//! identity is one allocation ([`Identity`]), each entry sits once in the
//! map of its first namevar, and the cached hashes are packed into one
//! allocation each ([`PackedMap`]).

use std::borrow::Cow;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::value::{Map, Timestamp, Value};

/// The identity of a resource: its namevar values, folded, in the type's
/// namevar order. A namevar missing from the hash is absent.
///
/// Stored as one byte string: per namevar a 0 (absent) or a 1, the length
/// (u32, little-endian) and the folded text. The lengths make it
/// unambiguous, so equal bytes are equal identities.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity(Box<[u8]>);

fn fold_key(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::Nil => None,
        // Most namevars are ASCII (paths, names): folded straight into the
        // identity's bytes, with no lowered copy made first.
        Value::Str(s) | Value::Symbol(s) if s.is_ascii() => Some(Cow::Borrowed(s)),
        Value::Str(s) | Value::Symbol(s) => Some(Cow::Owned(s.to_lowercase())),
        Value::Sensitive(inner) => fold_key(inner),
        other => Some(Cow::Owned(other.to_string().to_lowercase())),
    }
}

impl Identity {
    pub fn of(namevars: &[String], hash: &Map) -> Identity {
        Identity::from_lookup(namevars, |name| hash.get_named(name).map(Cow::Borrowed))
    }

    /// The identity of a resource that is not (yet) a [`Map`]: `lookup`
    /// gives the value of an attribute by name. The binding reads just the
    /// namevars of a Ruby hash this way, without converting the rest.
    pub fn from_lookup<'v>(
        namevars: &[String],
        mut lookup: impl FnMut(&str) -> Option<Cow<'v, Value>>,
    ) -> Identity {
        // Room for the namevars of most resources (a tag, a length and a
        // path or a name each): no growing, and a trim that stays in place.
        let mut bytes = Vec::with_capacity(48 * namevars.len());
        for name in namevars {
            let value = lookup(name).filter(|v| !v.is_nil());
            // Puppet::Type.new(title: …) carries the title, not `name`.
            let value = match (value, name.as_str()) {
                (None, "name") => lookup("title"),
                (v, _) => v,
            };
            match value.as_deref().and_then(fold_key) {
                Some(text) => {
                    bytes.push(1);
                    push_len(&mut bytes, text.len());
                    // ASCII lowering keeps the length; the others are lowered already.
                    bytes.extend(text.bytes().map(|b| b.to_ascii_lowercase()));
                }
                None => bytes.push(0),
            }
        }
        Identity(bytes.into_boxed_slice())
    }

    /// The folded namevar values, in order, as the bytes of their text;
    /// None for an absent one. Compared and hashed as bytes: no UTF-8
    /// check on every lookup (they were written from Strings).
    fn parts(&self) -> impl Iterator<Item = Option<&[u8]>> {
        let mut rest: &[u8] = &self.0;
        std::iter::from_fn(move || {
            let (&tag, after) = rest.split_first()?;
            if tag == 0 {
                rest = after;
                return Some(None);
            }
            let (len, after) = read_len(after);
            let (text, after) = after.split_at(len);
            rest = after;
            Some(Some(text))
        })
    }

    pub fn is_complete(&self) -> bool {
        self.parts().all(|part| part.is_some())
    }

    /// True when every namevar this identity knows matches `other`.
    pub fn matches(&self, other: &Identity) -> bool {
        self.parts()
            .zip(other.parts())
            .all(|(mine, theirs)| mine.is_none() || mine == theirs)
    }

    /// The first namevar (`name` in scaffolded types), the secondary index.
    fn head(&self) -> Option<&[u8]> {
        self.parts().next().flatten()
    }
}

fn push_len(bytes: &mut Vec<u8>, len: usize) {
    // Texts here are attribute values of one resource: far below 4 GiB.
    bytes.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
}

fn read_len(bytes: &[u8]) -> (usize, &[u8]) {
    let (len, rest) = bytes.split_at(4);
    (
        u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize,
        rest,
    )
}

/// The only item of `items`; None when there are none or several.
fn only_one<I: Iterator>(mut items: I) -> Option<I::Item> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}

/// The bucket of a head (the first namevar's folded value, or none): its
/// hash. Entries in a bucket are told apart by their whole identity, so two
/// heads that share a hash only share a bucket.
fn head_key(head: Option<&[u8]>) -> u64 {
    let mut hasher = FxHasher::default();
    head.hash(&mut hasher);
    hasher.finish()
}

/// A cache from identity to `V`. Partial identities (a query that carries
/// only some namevars, e.g. only the title) are answered through the
/// entries that share the first namevar, and only when they match exactly
/// one entry.
#[derive(Debug, Clone)]
pub struct IdentityCache<V> {
    namevars: Vec<String>,
    /// Head bucket → the entries with that head (mostly one).
    by_head: FxHashMap<u64, Vec<(Identity, V)>>,
    len: usize,
}

impl<V> IdentityCache<V> {
    pub fn new(namevars: Vec<String>) -> Self {
        IdentityCache {
            namevars,
            by_head: FxHashMap::default(),
            len: 0,
        }
    }

    pub fn identity(&self, hash: &Map) -> Identity {
        Identity::of(&self.namevars, hash)
    }

    /// The namevars identities are made of, in order.
    pub fn namevars(&self) -> &[String] {
        &self.namevars
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn insert(&mut self, hash: &Map, value: V) {
        let id = self.identity(hash);
        self.insert_identity(id, value);
    }

    pub fn insert_identity(&mut self, id: Identity, value: V) {
        let bucket = self.by_head.entry(head_key(id.head())).or_default();
        if let Some(slot) = bucket.iter_mut().find(|(existing, _)| *existing == id) {
            slot.1 = value;
        } else {
            bucket.push((id, value));
            self.len += 1;
        }
    }

    /// Where the one entry `id` stands for is: (bucket, index).
    fn resolve(&self, id: &Identity) -> Option<(u64, usize)> {
        let complete = id.is_complete();
        let is_match = |candidate: &Identity| {
            if complete {
                candidate == id
            } else {
                id.matches(candidate)
            }
        };
        // The one candidate, or None for none or several (counted without
        // collecting them: this runs on every cache lookup).
        match (complete, id.head()) {
            // A complete identity, or one that knows its head: the head's
            // bucket holds every candidate.
            (true, head) | (false, head @ Some(_)) => {
                let key = head_key(head);
                let bucket = self.by_head.get(&key)?;
                only_one(
                    bucket
                        .iter()
                        .enumerate()
                        .filter(|(_, (candidate, _))| is_match(candidate))
                        .map(|(index, _)| (key, index)),
                )
            }
            (false, None) => only_one(self.by_head.iter().flat_map(|(key, bucket)| {
                bucket
                    .iter()
                    .enumerate()
                    .filter(move |(_, (candidate, _))| is_match(candidate))
                    .map(move |(index, _)| (*key, index))
            })),
        }
    }

    fn at(&self, (key, index): (u64, usize)) -> Option<&V> {
        self.by_head
            .get(&key)
            .and_then(|bucket| bucket.get(index))
            .map(|(_, value)| value)
    }

    pub fn get(&self, hash: &Map) -> Option<&V> {
        self.get_identity(&self.identity(hash))
    }

    pub fn get_identity(&self, id: &Identity) -> Option<&V> {
        self.at(self.resolve(id)?)
    }

    pub fn remove(&mut self, hash: &Map) -> Option<V> {
        let (key, index) = self.resolve(&self.identity(hash))?;
        let bucket = self.by_head.get_mut(&key)?;
        let (_, value) = bucket.swap_remove(index);
        if bucket.is_empty() {
            self.by_head.remove(&key);
        }
        self.len -= 1;
        Some(value)
    }

    pub fn clear(&mut self) {
        self.by_head.clear();
        self.len = 0;
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.by_head
            .values()
            .flat_map(|bucket| bucket.iter().map(|(_, value)| value))
    }
}

/// A resource hash kept in a cache: the [`Map`] written into one byte
/// string, a fraction of the memory of the map itself (which holds a
/// separate allocation for every key and text). Reading it back builds the
/// map anew, which costs about what cloning the map did.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedMap(Box<[u8]>);

mod tag {
    pub const NIL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const INT: u8 = 3;
    pub const BIG_INT: u8 = 4;
    pub const FLOAT: u8 = 5;
    pub const STR: u8 = 6;
    pub const SYMBOL: u8 = 7;
    pub const ARRAY: u8 = 8;
    pub const HASH: u8 = 9;
    pub const SENSITIVE: u8 = 10;
    pub const TIMESTAMP: u8 = 11;
}

impl PackedMap {
    pub fn pack(map: &Map) -> PackedMap {
        // Made at its size: one allocation, no growing, nothing to trim.
        let mut bytes = Vec::with_capacity(packed_map_len(map));
        pack_map(&mut bytes, map);
        PackedMap(bytes.into_boxed_slice())
    }

    pub fn unpack(&self) -> Map {
        let mut reader = Reader(&self.0);
        reader.map()
    }
}

/// How many bytes `pack_map` writes for `map`.
fn packed_map_len(map: &Map) -> usize {
    LEN_BYTES
        + map
            .iter()
            .map(|(key, value)| packed_value_len(key) + packed_value_len(value))
            .sum::<usize>()
}

/// How many bytes `pack_value` writes for `value`.
fn packed_value_len(value: &Value) -> usize {
    1 + match value {
        Value::Nil | Value::Bool(_) => 0,
        Value::Int(_) | Value::Float(_) => 8,
        Value::BigInt(text) | Value::Str(text) | Value::Symbol(text) => LEN_BYTES + text.len(),
        Value::Array(items) => LEN_BYTES + items.iter().map(packed_value_len).sum::<usize>(),
        Value::Hash(map) => packed_map_len(map),
        Value::Sensitive(inner) => packed_value_len(inner),
        Value::Timestamp(t) => std::mem::size_of_val(&t.nanos),
    }
}

/// The bytes of a length (`push_len`).
const LEN_BYTES: usize = 4;

fn pack_text(bytes: &mut Vec<u8>, tag: u8, text: &str) {
    bytes.push(tag);
    push_len(bytes, text.len());
    bytes.extend_from_slice(text.as_bytes());
}

fn pack_map(bytes: &mut Vec<u8>, map: &Map) {
    push_len(bytes, map.len());
    for (key, value) in map.iter() {
        pack_value(bytes, key);
        pack_value(bytes, value);
    }
}

fn pack_value(bytes: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Nil => bytes.push(tag::NIL),
        Value::Bool(false) => bytes.push(tag::FALSE),
        Value::Bool(true) => bytes.push(tag::TRUE),
        Value::Int(i) => {
            bytes.push(tag::INT);
            bytes.extend_from_slice(&i.to_le_bytes());
        }
        Value::BigInt(text) => pack_text(bytes, tag::BIG_INT, text),
        Value::Float(f) => {
            bytes.push(tag::FLOAT);
            bytes.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Str(text) => pack_text(bytes, tag::STR, text),
        Value::Symbol(text) => pack_text(bytes, tag::SYMBOL, text),
        Value::Array(items) => {
            bytes.push(tag::ARRAY);
            push_len(bytes, items.len());
            for item in items {
                pack_value(bytes, item);
            }
        }
        Value::Hash(map) => {
            bytes.push(tag::HASH);
            pack_map(bytes, map);
        }
        Value::Sensitive(inner) => {
            bytes.push(tag::SENSITIVE);
            pack_value(bytes, inner);
        }
        Value::Timestamp(t) => {
            bytes.push(tag::TIMESTAMP);
            bytes.extend_from_slice(&t.nanos.to_le_bytes());
        }
    }
}

/// Reads what `pack_map` wrote (and nothing else: the bytes never leave
/// the cache).
struct Reader<'b>(&'b [u8]);

impl Reader<'_> {
    fn take(&mut self, count: usize) -> &[u8] {
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        taken
    }

    fn len(&mut self) -> usize {
        let (len, rest) = read_len(self.0);
        self.0 = rest;
        len
    }

    fn text(&mut self) -> String {
        let len = self.len();
        let bytes = self.take(len);
        // Packed from a String: always UTF-8, and `from_utf8` checks that
        // with its ASCII fast path, where the lossy reading went character
        // by character.
        match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N));
        out
    }

    fn map(&mut self) -> Map {
        let len = self.len();
        let mut pairs = Vec::with_capacity(len);
        for _ in 0..len {
            let key = self.value();
            let value = self.value();
            pairs.push((key, value));
        }
        Map(pairs)
    }

    fn value(&mut self) -> Value {
        let tag = self.take(1)[0];
        match tag {
            tag::FALSE => Value::Bool(false),
            tag::TRUE => Value::Bool(true),
            tag::INT => Value::Int(i64::from_le_bytes(self.array())),
            tag::BIG_INT => Value::BigInt(self.text()),
            tag::FLOAT => Value::Float(f64::from_bits(u64::from_le_bytes(self.array()))),
            tag::STR => Value::Str(self.text()),
            tag::SYMBOL => Value::Symbol(self.text()),
            tag::ARRAY => {
                let len = self.len();
                Value::Array((0..len).map(|_| self.value()).collect())
            }
            tag::HASH => Value::Hash(self.map()),
            tag::SENSITIVE => Value::Sensitive(Box::new(self.value())),
            tag::TIMESTAMP => {
                Value::Timestamp(Timestamp::from_nanos(i128::from_le_bytes(self.array())))
            }
            _ => Value::Nil,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(pairs: &[(&str, &str)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| (Value::sym(*k), Value::str(*v)))
            .collect()
    }

    #[test]
    fn namevars_compare_case_insensitively() {
        let mut cache = IdentityCache::new(vec!["name".into(), "dsc_key".into()]);
        cache.insert(&hash(&[("name", "Foo"), ("dsc_key", "C:\\A")]), 1);
        cache.insert(&hash(&[("name", "foo"), ("dsc_key", "c:\\b")]), 2);
        assert_eq!(
            cache.get(&hash(&[("name", "FOO"), ("dsc_key", "c:\\a")])),
            Some(&1)
        );
        assert_eq!(
            cache.get(&hash(&[("name", "foo"), ("dsc_key", "C:\\B")])),
            Some(&2)
        );
        // A title alone is ambiguous here.
        assert_eq!(cache.get(&hash(&[("name", "foo")])), None);
        assert_eq!(
            cache.remove(&hash(&[("name", "FOO"), ("dsc_key", "C:\\a")])),
            Some(1)
        );
        assert_eq!(cache.get(&hash(&[("name", "foo")])), Some(&2));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn thousands_of_entries() {
        let mut cache = IdentityCache::new(vec!["name".into()]);
        for i in 0..5000 {
            cache.insert(&hash(&[("name", &format!("R{i}"))]), i);
        }
        for i in 0..5000 {
            assert_eq!(cache.get(&hash(&[("name", &format!("r{i}"))])), Some(&i));
        }
    }

    #[test]
    fn partial_identities_find_one_entry_or_none() {
        let mut cache = IdentityCache::new(vec!["name".into(), "dsc_key".into()]);
        cache.insert(&hash(&[("name", "a"), ("dsc_key", "1")]), 1);
        cache.insert(&hash(&[("name", "b"), ("dsc_key", "2")]), 2);
        cache.insert(&hash(&[("name", "b"), ("dsc_key", "3")]), 3);
        // Only the second namevar: found by a scan, when it is unique.
        assert_eq!(cache.get(&hash(&[("dsc_key", "2")])), Some(&2));
        assert_eq!(cache.get(&hash(&[("name", "a")])), Some(&1));
        assert_eq!(cache.get(&hash(&[("name", "b")])), None);
        // The title stands in for `name`.
        assert_eq!(
            cache.get(&hash(&[("title", "A"), ("dsc_key", "1")])),
            Some(&1)
        );
        // Inserting the same identity again replaces the value.
        cache.insert(&hash(&[("name", "A"), ("dsc_key", "1")]), 10);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&hash(&[("name", "a")])), Some(&10));
        let mut values: Vec<i32> = cache.values().copied().collect();
        values.sort_unstable();
        assert_eq!(values, vec![2, 3, 10]);
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.get(&hash(&[("name", "a")])), None);
    }

    #[test]
    fn an_absent_namevar_differs_from_an_empty_one() {
        let namevars = vec!["name".to_owned(), "dsc_key".to_owned()];
        let absent = Identity::of(&namevars, &hash(&[("name", "a")]));
        let empty = Identity::of(&namevars, &hash(&[("name", "a"), ("dsc_key", "")]));
        assert_ne!(absent, empty);
        assert!(!absent.is_complete());
        assert!(empty.is_complete());
        assert!(absent.matches(&empty));
        assert!(!empty.matches(&absent));
        // The lengths keep texts apart that a separator would not.
        let split = Identity::of(&namevars, &hash(&[("name", "a\u{0}"), ("dsc_key", "b")]));
        let joined = Identity::of(&namevars, &hash(&[("name", "a"), ("dsc_key", "\u{0}b")]));
        assert_ne!(split, joined);
    }

    #[test]
    fn packed_maps_read_back_as_written() {
        let map = Map(vec![
            (Value::sym("name"), Value::str("r1")),
            (Value::str("text"), Value::str("it's ✓")),
            (Value::sym("nil"), Value::Nil),
            (Value::sym("yes"), Value::Bool(true)),
            (Value::sym("no"), Value::Bool(false)),
            (Value::sym("int"), Value::Int(-42)),
            (
                Value::sym("big"),
                Value::BigInt("123456789012345678901234567890".into()),
            ),
            (Value::sym("float"), Value::Float(-0.5)),
            (
                Value::sym("list"),
                Value::Array(vec![Value::Int(1), Value::Array(vec![]), Value::str("x")]),
            ),
            (
                Value::sym("secret"),
                Value::Sensitive(Box::new(Value::Hash(Map(vec![(
                    Value::str("password"),
                    Value::str("hunter2"),
                )])))),
            ),
            (
                Value::sym("when"),
                Value::Timestamp(Timestamp::from_nanos(-1_700_000_000_123_456_789)),
            ),
            (Value::sym("empty"), Value::Hash(Map::new())),
        ]);
        assert_eq!(PackedMap::pack(&map).unpack(), map);
        assert_eq!(PackedMap::pack(&Map::new()).unpack(), Map::new());
        // The size reckoned up front is the size written.
        for packed in [&map, &Map::new()] {
            assert_eq!(PackedMap::pack(packed).0.len(), packed_map_len(packed));
        }
    }
}
