//! Fault injection: which faults apply to a call, read per call from the
//! environment (`PWSHLIB_SIM_*`) and the state file's `faults` object.
//! The README's "Faults" section documents every setting and the selector
//! syntax.

use serde_json::{Map as JsonMap, Value as Json};

use crate::psvalue::eq_ignore_case;
use crate::state::get_ci;

pub const COLLISION_MESSAGE: &str = "The Invoke-DscResource cmdlet is in progress and must return before Invoke-DscResource can be invoked";
pub const LOGON_FAILURE_MESSAGE: &str =
    "Logon failure: the user has not been granted the requested logon type at this computer";
/// The two as a German Windows words them (`PWSHLIB_SIM_LOCALIZED`): the
/// provider then has only the category and the codes to go by.
pub const LOCALIZED_COLLISION_MESSAGE: &str = "Das Cmdlet \"Invoke-DscResource\" kann nicht aufgerufen werden. Die Konsistenzprüfung wird ausgeführt und muss abgeschlossen sein, bevor Invoke-DscResource aufgerufen werden kann.";
pub const LOCALIZED_LOGON_FAILURE_MESSAGE: &str =
    "Anmeldung fehlgeschlagen: Der Benutzer besitzt nicht den benötigten Anmeldetyp auf diesem Computer.";
/// The category the 5.1 LCM's busy error has in PowerShell.
pub const COLLISION_CATEGORY: &str = "ResourceBusy";
/// .NET's HResult of HRESULT_FROM_WIN32(ERROR_LOGON_TYPE_NOT_GRANTED, 1385).
pub const LOGON_TYPE_NOT_GRANTED_HRESULT: i64 = -2_147_023_511;
/// What a malformed-JSON fault prints instead of the result.
pub const MALFORMED_STDOUT: &str = "{\"pwshlib_sim\":\"malformed JSON on purpose\",";

/// The faults in effect for one call.
#[derive(Debug, Default, Clone)]
pub struct FaultConfig {
    pub latency_ms: u64,
    pub hang: Option<Selector>,
    pub hang_forever: Option<Selector>,
    pub crash_on_call: Option<u64>,
    pub crash_selector: Option<Selector>,
    pub collisions: u64,
    pub collisions_selector: Option<Selector>,
    pub logon_failure_user: Option<String>,
    /// Collisions and logon failures worded as a German Windows words them.
    pub localized: bool,
    pub malformed_json: Option<Selector>,
    pub reboot_required: Option<Selector>,
    /// Matching calls' resources write a non-terminating error.
    pub nonterminating_error: Option<Selector>,
    /// Matching Tests return a stray string, no boolean.
    pub test_output: Option<Selector>,
    /// Matching Gets report strings read with Get-Content.
    pub ets_strings: Option<Selector>,
}

/// Looks a setting up: the environment variable `PWSHLIB_SIM_<NAME>` wins
/// over the state file's `faults.<name>` (lowercase).
struct Settings<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    file: Option<&'a JsonMap<String, Json>>,
}

impl Settings<'_> {
    fn get(&self, name: &str) -> Option<String> {
        let env_name = format!("PWSHLIB_SIM_{}", name.to_ascii_uppercase());
        if let Some(value) = (self.env)(&env_name).filter(|v| !v.trim().is_empty()) {
            return Some(value);
        }
        match self.file.and_then(|f| get_ci(f, name))? {
            Json::Null => None,
            Json::String(s) if s.trim().is_empty() => None,
            Json::String(s) => Some(s.clone()),
            Json::Bool(b) => Some(b.to_string()),
            other => Some(other.to_string()),
        }
    }

    fn number(&self, name: &str) -> Result<Option<u64>, String> {
        self.get(name)
            .map(|text| {
                text.trim().parse::<u64>().map_err(|_| {
                    format!(
                        "PWSHLIB_SIM_{}: expected a whole number, got {text:?}",
                        name.to_ascii_uppercase()
                    )
                })
            })
            .transpose()
    }

    fn selector(&self, name: &str) -> Result<Option<Selector>, String> {
        self.get(name)
            .map(|text| {
                Selector::parse(&text)
                    .map_err(|e| format!("PWSHLIB_SIM_{}: {e}", name.to_ascii_uppercase()))
            })
            .transpose()
            .map(Option::flatten)
    }
}

impl FaultConfig {
    pub fn load(
        env: &dyn Fn(&str) -> Option<String>,
        file: Option<&JsonMap<String, Json>>,
    ) -> Result<FaultConfig, String> {
        let settings = Settings { env, file };
        let crash_selector = settings.selector("crash_resource")?;
        let mut crash_on_call = settings.number("crash_on_call")?.filter(|n| *n > 0);
        if crash_on_call.is_none() && crash_selector.is_some() {
            crash_on_call = Some(1);
        }
        Ok(FaultConfig {
            latency_ms: settings.number("latency_ms")?.unwrap_or(0),
            hang: settings.selector("hang_resource")?,
            hang_forever: settings.selector("hang_forever_resource")?,
            crash_on_call,
            crash_selector,
            collisions: settings.number("collisions")?.unwrap_or(0),
            collisions_selector: settings.selector("collisions_resource")?,
            logon_failure_user: settings.get("logon_failure_user"),
            localized: settings
                .get("localized")
                .is_some_and(|v| !matches!(v.trim(), "0" | "false")),
            malformed_json: settings.selector("malformed_json")?,
            reboot_required: settings.selector("reboot_required")?,
            nonterminating_error: settings.selector("nonterminating_error")?,
            test_output: settings.selector("test_output")?,
            ets_strings: settings.selector("ets_strings")?,
        })
    }
}

/// What a selector is matched against.
pub struct Call<'a> {
    pub method: &'a str,
    pub resource: &'a str,
    pub properties: &'a JsonMap<String, Json>,
    /// The type's key property names, when known.
    pub keys: Option<&'a [String]>,
}

/// A list of call patterns, separated by `;`:
/// `all` | `*` | `[Method/]Resource[:Property=value | :value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    items: Vec<Pattern>,
}

#[derive(Debug, Clone, PartialEq)]
struct Pattern {
    method: Option<String>,
    /// None matches every resource.
    resource: Option<String>,
    matcher: Option<Matcher>,
}

#[derive(Debug, Clone, PartialEq)]
enum Matcher {
    Property(String, String),
    KeyValue(String),
}

impl Selector {
    /// None for the "off" spellings (`0`, `false`, `no`, `off`, `none`).
    pub fn parse(text: &str) -> Result<Option<Selector>, String> {
        let trimmed = text.trim();
        if ["0", "false", "no", "off", "none", ""]
            .iter()
            .any(|off| off.eq_ignore_ascii_case(trimmed))
        {
            return Ok(None);
        }
        let items = trimmed
            .split(';')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(Pattern::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if items.is_empty() {
            return Ok(None);
        }
        Ok(Some(Selector { items }))
    }

    pub fn matches(&self, call: &Call) -> bool {
        self.items.iter().any(|p| p.matches(call))
    }
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Pattern {
    fn parse(item: &str) -> Result<Pattern, String> {
        if ["all", "*", "1", "true", "yes", "on"]
            .iter()
            .any(|all| all.eq_ignore_ascii_case(item))
        {
            return Ok(Pattern {
                method: None,
                resource: None,
                matcher: None,
            });
        }
        let (head, tail) = match item.split_once(':') {
            Some((head, tail)) => (head, Some(tail)),
            None => (item, None),
        };
        let (method, resource) = match head.split_once('/') {
            Some((method, resource)) => {
                if !["Get", "Set", "Test"]
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(method.trim()))
                {
                    return Err(format!(
                        "unknown method {method:?} in selector {item:?} (use Get, Set or Test)"
                    ));
                }
                (Some(method.trim().to_owned()), resource.trim())
            }
            None => (None, head.trim()),
        };
        if resource.is_empty() {
            return Err(format!(
                "selector {item:?} names no resource (use `*` for any)"
            ));
        }
        let resource = (resource != "*").then(|| resource.to_owned());
        let matcher = tail.map(|tail| match tail.split_once('=') {
            Some((name, value)) if is_identifier(name.trim()) => {
                Matcher::Property(name.trim().to_owned(), value.to_owned())
            }
            _ => Matcher::KeyValue(tail.to_owned()),
        });
        Ok(Pattern {
            method,
            resource,
            matcher,
        })
    }

    fn matches(&self, call: &Call) -> bool {
        if let Some(method) = &self.method {
            if !method.eq_ignore_ascii_case(call.method) {
                return false;
            }
        }
        if let Some(resource) = &self.resource {
            if !eq_ignore_case(resource, call.resource) {
                return false;
            }
        }
        match &self.matcher {
            None => true,
            Some(Matcher::Property(name, value)) => {
                get_ci(call.properties, name).is_some_and(|actual| scalar_matches(actual, value))
            }
            Some(Matcher::KeyValue(value)) => match call.keys {
                Some(keys) => keys.iter().any(|key| {
                    get_ci(call.properties, key).is_some_and(|actual| scalar_matches(actual, value))
                }),
                None => call
                    .properties
                    .values()
                    .any(|actual| scalar_matches(actual, value)),
            },
        }
    }
}

fn scalar_matches(actual: &Json, wanted: &str) -> bool {
    match actual {
        Json::String(s) => eq_ignore_case(s, wanted),
        Json::Number(n) => n.to_string() == wanted.trim(),
        Json::Bool(b) => b.to_string().eq_ignore_ascii_case(wanted.trim()),
        _ => false,
    }
}

/// True when `run_as` (the PsDscRunAsCredential user) is the configured
/// user: the whole name, or the name without its `DOMAIN\` prefix or
/// `@domain` suffix, without case.
pub fn logon_user_matches(configured: &str, run_as: &str) -> bool {
    let configured = configured.trim();
    if eq_ignore_case(configured, run_as) {
        return true;
    }
    let bare = run_as.rsplit('\\').next().unwrap_or(run_as);
    let bare = bare.split('@').next().unwrap_or(bare);
    eq_ignore_case(configured, bare)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call<'a>(
        method: &'a str,
        resource: &'a str,
        properties: &'a JsonMap<String, Json>,
    ) -> Call<'a> {
        Call {
            method,
            resource,
            properties,
            keys: None,
        }
    }

    #[test]
    fn selectors_match_resource_method_and_value() {
        let props = json!({"destinationpath": "C:\\Temp\\A.txt", "port": 80});
        let props = props.as_object().unwrap();
        let get = call("Get", "FixtureFile", props);
        let yes = |s: &str| Selector::parse(s).unwrap().unwrap().matches(&get);
        assert!(yes("all"));
        assert!(yes("fixturefile"));
        assert!(yes("Get/FixtureFile"));
        assert!(!yes("Set/FixtureFile"));
        assert!(yes("FixtureFile:c:\\temp\\a.txt"));
        assert!(yes("FixtureFile:DestinationPath=C:\\TEMP\\A.TXT"));
        assert!(!yes("FixtureFile:DestinationPath=C:\\other"));
        assert!(yes("FixtureUser;FixtureFile"));
        assert!(yes("*:port=80"));
        assert!(!yes("FixtureUser"));
        assert_eq!(Selector::parse("0").unwrap(), None);
        assert!(Selector::parse("Delete/FixtureFile").is_err());
    }

    #[test]
    fn logon_user_matching_ignores_domain_and_case() {
        assert!(logon_user_matches("bob", "CONTOSO\\Bob"));
        assert!(logon_user_matches("contoso\\bob", "CONTOSO\\Bob"));
        assert!(logon_user_matches("bob", "bob@contoso.com"));
        assert!(!logon_user_matches("bob", "CONTOSO\\bobby"));
    }

    #[test]
    fn environment_wins_over_the_state_file() {
        let file = json!({"latency_ms": 5, "collisions": 2});
        let env = |name: &str| (name == "PWSHLIB_SIM_LATENCY_MS").then(|| "7".to_owned());
        let config = FaultConfig::load(&env, file.as_object()).unwrap();
        assert_eq!(config.latency_ms, 7);
        assert_eq!(config.collisions, 2);
        let bad = |_: &str| Some("many".to_owned());
        assert!(FaultConfig::load(&bad, None).is_err());
    }
}
