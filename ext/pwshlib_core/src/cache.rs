//! Caches keyed by resource identity: the namevar values, compared
//! case-insensitively as PowerShell compares them. Lookups are hash-map
//! lookups, so thousands of resources cost linear time in total.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::value::{Map, Value};

/// The identity of a resource: its namevar values, folded, in the type's
/// namevar order. A namevar missing from the hash is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity(Vec<Option<String>>);

fn fold_key(value: &Value) -> Option<String> {
    match value {
        Value::Nil => None,
        Value::Str(s) | Value::Symbol(s) => Some(s.to_lowercase()),
        Value::Sensitive(inner) => fold_key(inner),
        other => Some(other.to_string().to_lowercase()),
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
        Identity(
            namevars
                .iter()
                .map(|n| {
                    let value = lookup(n).filter(|v| !v.is_nil());
                    // Puppet::Type.new(title: …) carries the title, not `name`.
                    let value = match (value, n.as_str()) {
                        (None, "name") => lookup("title"),
                        (v, _) => v,
                    };
                    value.as_deref().and_then(fold_key)
                })
                .collect(),
        )
    }

    pub fn is_complete(&self) -> bool {
        self.0.iter().all(Option::is_some)
    }

    /// True when every namevar this identity knows matches `other`.
    pub fn matches(&self, other: &Identity) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .all(|(mine, theirs)| mine.is_none() || mine == theirs)
    }

    /// The first namevar (`name` in scaffolded types), the secondary index.
    fn head(&self) -> Option<&str> {
        self.0.first().and_then(|o| o.as_deref())
    }
}

/// A cache from identity to `V`. Partial identities (a query that carries
/// only some namevars, e.g. only the title) are answered through an index
/// on the first namevar, and only when they match exactly one entry.
#[derive(Debug, Clone)]
pub struct IdentityCache<V> {
    namevars: Vec<String>,
    entries: HashMap<Identity, V>,
    by_head: HashMap<String, Vec<Identity>>,
}

impl<V> IdentityCache<V> {
    pub fn new(namevars: Vec<String>) -> Self {
        IdentityCache {
            namevars,
            entries: HashMap::new(),
            by_head: HashMap::new(),
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
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn insert(&mut self, hash: &Map, value: V) {
        let id = self.identity(hash);
        self.insert_identity(id, value);
    }

    pub fn insert_identity(&mut self, id: Identity, value: V) {
        if let Some(head) = id.head() {
            let list = self.by_head.entry(head.to_owned()).or_default();
            if !list.contains(&id) {
                list.push(id.clone());
            }
        }
        self.entries.insert(id, value);
    }

    fn resolve(&self, id: &Identity) -> Option<Identity> {
        if id.is_complete() {
            return self.entries.contains_key(id).then(|| id.clone());
        }
        let candidates: Vec<&Identity> = match id.head() {
            Some(head) => self
                .by_head
                .get(head)
                .map(|l| l.iter().filter(|c| id.matches(c)).collect())
                .unwrap_or_default(),
            None => self.entries.keys().filter(|c| id.matches(c)).collect(),
        };
        match candidates.as_slice() {
            [only] => Some((*only).clone()),
            _ => None,
        }
    }

    pub fn get(&self, hash: &Map) -> Option<&V> {
        let id = self.resolve(&self.identity(hash))?;
        self.entries.get(&id)
    }

    pub fn get_identity(&self, id: &Identity) -> Option<&V> {
        let id = self.resolve(id)?;
        self.entries.get(&id)
    }

    pub fn remove(&mut self, hash: &Map) -> Option<V> {
        let id = self.resolve(&self.identity(hash))?;
        if let Some(head) = id.head() {
            if let Some(list) = self.by_head.get_mut(head) {
                list.retain(|c| c != &id);
            }
        }
        self.entries.remove(&id)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_head.clear();
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values()
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
}
