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

pub use redactor::Redactor;

use crate::secrecy::{mark, secrecy_of_value, Secrecy};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

/// The secrecy of one attribute: its type's, and for a credential the
/// password too, whatever the type says.
pub fn attribute_secrecy(typedef: &TypeDef, name: &str) -> Secrecy {
    typedef
        .attribute(name)
        .map(|attribute| attribute.secrecy.clone())
        .unwrap_or_default()
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
    static WHOLE: Secrecy = Secrecy::whole();
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
