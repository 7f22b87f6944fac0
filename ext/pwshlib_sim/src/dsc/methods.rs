//! Get, Set and Test against the state file, as a DSC resource plays them.

use serde_json::{json, Map as JsonMap, Value as Json};

use super::values_equal;
use crate::psvalue::{eq_ignore_case, CIM_INSTANCE_TYPE};
use crate::state::{get_ci, State};

fn keys_or_error<'k>(resource: &str, keys: Option<&'k [String]>) -> Result<&'k [String], String> {
    keys.ok_or_else(|| {
        format!(
            "pwshlib-sim: the key properties of {resource} are unknown: call Get first, or declare them in the state file's \"keys\""
        )
    })
}

fn ensure_of(properties: &JsonMap<String, Json>) -> Option<&str> {
    get_ci(properties, "Ensure").and_then(Json::as_str)
}

/// A Get is given the desired state and reads the instance by
/// its keys. Found: what is stored (Present unless it says otherwise); not
/// found: the keys it was given, Absent. A type listed in
/// `get_returns_this` reports every value it was given over that, as a
/// `Get()` that returns `$this` having read nothing.
pub(super) fn get(
    state: &State,
    resource: &str,
    keys: Option<&[String]>,
    given: &JsonMap<String, Json>,
) -> Json {
    let has_ensure = state.has_ensure(resource);
    let found = keys.and_then(|keys| state.find(resource, keys, given));
    let (shown, ensure): (Box<dyn Iterator<Item = (&String, &Json)>>, _) = match found {
        Some((_, stored)) => (Box::new(stored.iter()), "Present"),
        None => (
            Box::new(given.iter().filter(|(name, _)| {
                keys.is_none_or(|keys| keys.iter().any(|k| eq_ignore_case(k, name)))
            })),
            "Absent",
        ),
    };
    let mut out = shown_as_get(shown, has_ensure, found.is_some(), ensure);
    if state.returns_this(resource) {
        for (name, value) in given {
            let name = existing_name(&out, name);
            out.insert(name, get_value(value));
        }
    }
    Json::Object(out)
}

/// The values a Get reports (`get_value`), and an `Ensure` (`ensure`)
/// where the type has one and the instance stores none.
pub(super) fn shown_as_get<'v>(
    shown: impl Iterator<Item = (&'v String, &'v Json)>,
    has_ensure: bool,
    found: bool,
    ensure: &str,
) -> JsonMap<String, Json> {
    let mut out: JsonMap<String, Json> = shown
        .map(|(name, value)| (name.clone(), get_value(value)))
        .collect();
    let stored_ensure = found && get_ci(&out, "Ensure").is_some_and(|e| !e.is_null());
    if has_ensure && !stored_ensure {
        let name = existing_name(&out, "Ensure");
        out.insert(name, json!(ensure));
    }
    out
}

fn existing_name(map: &JsonMap<String, Json>, name: &str) -> String {
    map.keys()
        .find(|k| eq_ignore_case(k, name))
        .cloned()
        .unwrap_or_else(|| name.to_owned())
}

/// A stored value as a Get reports it: empty strings and empty arrays
/// become null at any depth, as the prelude's canonicalisation makes them.
/// A credential comes back as Windows PowerShell 5.1's Invoke-DscResource
/// returns it, an MSFT_Credential CIM instance `{UserName, Password}`,
/// password and all, as canonicalisation without the MSFT_Credential
/// conversion leaves it: the hardest shape for the provider, which must
/// read it as the user alone and never show the password.
fn get_value(value: &Json) -> Json {
    match value {
        Json::String(s) if s.is_empty() => Json::Null,
        Json::Array(items) if items.is_empty() => Json::Null,
        Json::Array(items) => Json::Array(items.iter().map(get_value).collect()),
        Json::Object(map) if is_credential(map) => json!({
            "UserName": map.get("user").cloned().unwrap_or(Json::Null),
            "Password": map.get("password").cloned().unwrap_or(Json::Null),
            CIM_INSTANCE_TYPE: "MSFT_Credential",
        }),
        Json::Object(map) => {
            Json::Object(map.iter().map(|(k, v)| (k.clone(), get_value(v))).collect())
        }
        other => other.clone(),
    }
}

/// Credentials are stored as exactly `{"user", "password"}`.
fn is_credential(map: &JsonMap<String, Json>) -> bool {
    map.len() == 2 && map.contains_key("user") && map.contains_key("password")
}

pub(super) fn set(
    state: &mut State,
    resource: &str,
    keys: Option<&[String]>,
    given: &JsonMap<String, Json>,
) -> Result<(), String> {
    let keys = keys_or_error(resource, keys)?;
    let found = state.find(resource, keys, given).map(|(index, _)| index);
    if ensure_of(given).is_some_and(|e| e.eq_ignore_ascii_case("Absent")) {
        if let Some(index) = found {
            state.remove(resource, index);
        }
        return Ok(());
    }
    state.merge(resource, found, given);
    Ok(())
}

pub(super) fn test(
    state: &State,
    resource: &str,
    keys: Option<&[String]>,
    given: &JsonMap<String, Json>,
) -> Result<bool, String> {
    let keys = keys_or_error(resource, keys)?;
    let wants_absent = ensure_of(given).is_some_and(|e| e.eq_ignore_ascii_case("Absent"));
    let Some((_, stored)) = state.find(resource, keys, given) else {
        return Ok(wants_absent);
    };
    if wants_absent {
        return Ok(false);
    }
    Ok(given.iter().all(|(name, wanted)| {
        if wanted.is_null() {
            // Not specified: a DSC resource leaves it alone.
            return true;
        }
        if eq_ignore_case(name, "Ensure") {
            let actual = get_ci(stored, name)
                .and_then(Json::as_str)
                .unwrap_or("Present");
            return wanted
                .as_str()
                .is_some_and(|w| w.eq_ignore_ascii_case(actual));
        }
        values_equal(wanted, get_ci(stored, name).unwrap_or(&Json::Null))
    }))
}
