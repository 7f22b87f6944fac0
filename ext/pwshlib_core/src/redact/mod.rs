//! Keeping secrets out of logs, errors and change messages.
//!
//! Two halves. [`mark_attributes`] finds the secrets in a resource hash or a
//! DSC result by the type schema: every value whose attribute (at any depth:
//! top level, Struct member, CIM instance member, credential password) is
//! `Sensitive`-typed is wrapped in [`Value::Sensitive`], so that rendering
//! it shows the redaction marker. [`mark_result`] marks a DSC result by the
//! desired state too: whatever the system holds where the manifest put a
//! Sensitive value (a member of a free-form hash, of a CIM instance, an
//! array item) is as secret, though it is not (or no longer) the text the
//! manifest holds: a rotated secret's old value. That covers what the
//! machine reports, which the manifest never held. [`Redactor`] is the last
//! line of defence for text that came back from PowerShell (error messages
//! that quote the script): it replaces every form in which a secret can
//! appear there.
//!
//! Marking is structural and so complete for secrets of any length: a
//! secret `\` at a marked position shows as the marker. The text scrub
//! cannot be: a one- to three-character secret also occurs as ordinary text
//! (`\` in every Windows path), and blanking every occurrence out would
//! wreck each message and, by the gaps it leaves, spell out the secret. It
//! replaces a short secret only where it stands as a whole quoted value
//! (see [`Redactor::add_secret`]).

mod redactor;
mod type_string;

pub use redactor::Redactor;
pub use type_string::secrecy_of_type;

use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// Where the secrets sit inside the values of one Puppet type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Secrecy {
    /// The whole value is secret (`Sensitive[…]`).
    pub whole: bool,
    /// Struct members by lowercase name.
    pub members: Vec<(String, Secrecy)>,
    /// Array elements and Hash values.
    pub items: Option<Box<Secrecy>>,
}

impl Secrecy {
    /// Nothing secret: `Secrecy::default()`, as a constant.
    const fn public() -> Secrecy {
        Secrecy {
            whole: false,
            members: Vec::new(),
            items: None,
        }
    }

    fn whole() -> Secrecy {
        Secrecy {
            whole: true,
            ..Secrecy::default()
        }
    }

    pub fn is_public(&self) -> bool {
        !self.whole
            && self.members.iter().all(|(_, s)| s.is_public())
            && self.items.as_deref().is_none_or(Secrecy::is_public)
    }

    /// What is secret under either (Variant alternatives, Tuple elements).
    fn merge(mut self, other: Secrecy) -> Secrecy {
        self.whole |= other.whole;
        for (name, secrecy) in other.members {
            match self.members.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = std::mem::take(&mut slot.1).merge(secrecy),
                None => self.members.push((name, secrecy)),
            }
        }
        self.items = match (self.items.take(), other.items) {
            (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
            (a, b) => a.or(b),
        };
        self
    }

    /// A member by name, without case: the type's names are ASCII, but a
    /// desired hash's keys (see [`secrecy_of_value`]) may be any text, and
    /// PowerShell compares hashtable keys ignoring case beyond ASCII too.
    fn member(&self, name: &str) -> Option<&Secrecy> {
        self.members
            .iter()
            .find(|(n, _)| same_name(n, name))
            .map(|(_, s)| s)
    }
}

/// Two names equal without case, Unicode's lowercase mapping beyond ASCII.
fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// The secrecy of one attribute: its type's, and for a credential the
/// password too, whatever the type says.
pub fn attribute_secrecy(typedef: &TypeDef, name: &str) -> Secrecy {
    typedef
        .attribute(name)
        .map(|attribute| attribute.secrecy.clone())
        .unwrap_or_default()
}

/// Where an attribute's secrets sit: its Puppet type says, and a
/// credential's password is secret whatever the type says. Computed once,
/// as the type definition is read (`Attribute::secrecy`).
pub(crate) fn secrecy_of_attribute(attribute: &crate::typedef::Attribute) -> Secrecy {
    let secrecy = secrecy_of_type(&attribute.type_string);
    if attribute.is_credential() && secrecy.member("password").is_none() {
        return secrecy.merge(Secrecy {
            members: vec![("password".into(), Secrecy::whole())],
            ..Secrecy::default()
        });
    }
    secrecy
}

/// Where a desired value holds its Sensitive parts: a Sensitive value is
/// secret whole, a hash's members by their (case-insensitive) names, and an
/// array's items by what any of its items holds, since the system may
/// report the items in another order than the manifest gives them.
pub fn secrecy_of_value(value: &Value) -> Secrecy {
    match value {
        Value::Sensitive(_) => Secrecy::whole(),
        Value::Hash(map) => Secrecy {
            members: map
                .iter()
                .filter_map(|(key, item)| {
                    let secrecy = secrecy_of_value(item);
                    let name = key.key_name()?;
                    (!secrecy.is_public()).then(|| (name.to_owned(), secrecy))
                })
                .collect(),
            ..Secrecy::default()
        },
        Value::Array(items) => {
            let each = items
                .iter()
                .map(secrecy_of_value)
                .filter(|secrecy| !secrecy.is_public())
                .reduce(Secrecy::merge);
            Secrecy {
                items: each.map(Box::new),
                ..Secrecy::default()
            }
        }
        _ => Secrecy::default(),
    }
}

/// `value` with every part that `secrecy` calls secret wrapped in
/// Sensitive. A hash member named `password` is secret at any depth: a
/// credential nested in a CIM instance has no type of its own to say so.
/// A scalar where `secrecy` expects secrets inside a hash or an array (the
/// system reports another shape than the type or the manifest has there)
/// is secret whole: where inside it the secret sits cannot be told.
pub fn mark(value: &Value, secrecy: &Secrecy) -> Value {
    match value {
        Value::Nil | Value::Sensitive(_) => value.clone(),
        _ if secrecy.whole => Value::Sensitive(Box::new(value.clone())),
        _ if !value.is_collection() && !secrecy.is_public() => {
            Value::Sensitive(Box::new(value.clone()))
        }
        Value::Hash(map) => Value::Hash(
            map.iter()
                .map(|(key, item)| {
                    let name = key.key_name().unwrap_or_default();
                    let item = match secrecy.member(name).or(secrecy.items.as_deref()) {
                        Some(member) => mark(item, member),
                        None => mark(item, &Secrecy::default()),
                    };
                    let item = if name.eq_ignore_ascii_case("password") {
                        mark(&item, &Secrecy::whole())
                    } else {
                        item
                    };
                    (key.clone(), item)
                })
                .collect(),
        ),
        Value::Array(items) => {
            // An array where the type has a Struct (a CIM instance given as
            // a one-element list) keeps the members' secrecy.
            let each = secrecy.items.as_deref().unwrap_or(secrecy);
            Value::Array(items.iter().map(|item| mark(item, each)).collect())
        }
        _ => value.clone(),
    }
}

/// A resource hash (`dsc_x` keys) or a DSC result (`X` keys, DSC property
/// names) with every Sensitive-typed value marked; see [`mark`].
pub fn mark_attributes(typedef: &TypeDef, map: &Map) -> Map {
    map.iter()
        .map(|(key, value)| (key.clone(), mark(value, key_secrecy(typedef, key))))
        .collect()
}

/// [`mark_attributes`] of a map given up: a scalar with nothing secret about
/// it (most values) is kept as it is, not copied.
pub fn mark_attributes_owned(typedef: &TypeDef, map: Map) -> Map {
    map.0
        .into_iter()
        .map(|(key, value)| {
            let secrecy = key_secrecy(typedef, &key);
            if !value.is_collection() && secrecy.is_public() {
                (key, value)
            } else {
                let marked = mark(&value, secrecy);
                (key, marked)
            }
        })
        .collect()
}

/// The secrecy of the value under `key` in a resource hash (`dsc_x`) or a
/// DSC result (`X`, a DSC property name): its attribute's, and a value
/// named `password` is secret whole.
///
/// Borrowed, not copied: it is asked for every value of every resource
/// hash and Get result that is marked or checked for secrets.
pub fn key_secrecy<'t>(typedef: &'t TypeDef, key: &Value) -> &'t Secrecy {
    static PUBLIC: Secrecy = Secrecy::public();
    static WHOLE: Secrecy = Secrecy {
        whole: true,
        members: Vec::new(),
        items: None,
    };
    let Some(name) = key.key_name() else {
        return &PUBLIC;
    };
    if name.eq_ignore_ascii_case("password") {
        return &WHOLE;
    }
    typedef
        .attribute(name)
        .or_else(|| typedef.dsc_property_attribute(name))
        .map_or(&PUBLIC, |attribute| &attribute.secrecy)
}

/// [`mark_attributes`] for any value: hashes are marked, the rest kept.
pub fn mark_value(typedef: &TypeDef, value: &Value) -> Value {
    match value {
        Value::Hash(map) => Value::Hash(mark_attributes(typedef, map)),
        other => mark(other, &Secrecy::default()),
    }
}

/// A DSC result (`X` keys, DSC property names) marked by the type schema
/// ([`mark_value`]) and by where the desired state holds Sensitive values
/// ([`secrecy_of_value`]): `desired` are resource hashes (`dsc_x` keys),
/// the first that has an attribute's value gives its secrecy.
pub fn mark_result(typedef: &TypeDef, result: &Value, desired: &[&Map]) -> Value {
    let Value::Hash(map) = result else {
        return mark_value(typedef, result);
    };
    let marked = map
        .iter()
        .map(|(key, value)| {
            let value = mark(value, key_secrecy(typedef, key));
            let value = match desired_value(typedef, key, desired) {
                Some(should) if should.contains_sensitive() => {
                    mark(&value, &secrecy_of_value(should))
                }
                _ => value,
            };
            (key.clone(), value)
        })
        .collect();
    Value::Hash(marked)
}

/// The desired value of the attribute that a result's `key` (a DSC
/// property name, or a `dsc_x` attribute name) reports.
pub fn desired_value<'d>(typedef: &TypeDef, key: &Value, desired: &[&'d Map]) -> Option<&'d Value> {
    let name = key.key_name()?;
    let attribute = typedef
        .attribute(name)
        .or_else(|| typedef.dsc_property_attribute(name))?;
    desired
        .iter()
        .find_map(|map| map.get_named(&attribute.name))
}

/// A resource hash as a log shows it: secrets as the redaction marker.
pub fn shown_resource(typedef: &TypeDef, map: &Map) -> String {
    shown(&Value::Hash(mark_attributes(typedef, map)))
}

/// A value as a log shows it: each Sensitive part as the redaction marker,
/// or, should a secret spell out the marker, as a marker that shows none.
pub fn shown(value: &Value) -> String {
    Redactor::for_values([value]).scrub(&value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::secret_typedef;

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    #[test]
    fn marking_wraps_the_secret_parts_of_a_dsc_result() {
        let def = secret_typedef();
        let result = Map(vec![
            (s("VaultName"), s("v1")),
            (s("Secret"), s("top-secret")),
            (
                s("Settings"),
                Value::Hash(Map(vec![(s("Label"), s("l")), (s("Token"), s("in-hash"))])),
            ),
            (
                s("Endpoints"),
                Value::Array(vec![Value::Hash(Map(vec![
                    (s("Address"), s("a")),
                    (s("ApiKey"), s("in-cim")),
                    (
                        s("Login"),
                        Value::Hash(Map(vec![(s("User"), s("u")), (s("Password"), s("nested"))])),
                    ),
                ]))]),
            ),
            (
                s("Credential"),
                Value::Hash(Map(vec![(s("user"), s("u")), (s("password"), s("cred"))])),
            ),
        ]);
        let shown = Value::Hash(mark_attributes(&def, &result)).to_string();
        for secret in ["top-secret", "in-hash", "in-cim", "nested", "cred"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        for public in ["v1", "\"l\"", "\"a\"", "\"u\""] {
            assert!(shown.contains(public), "{public} not in {shown}");
        }
    }
}
