//! Running a call: the run-as refusal, the configured faults, then the
//! method against the state file, logged.

use std::path::PathBuf;

use pwshlib_core::script::DscMethod;
use serde_json::{json, Map as JsonMap, Value as Json};

use super::call_log::append_log;
use super::export::export;
use super::methods::{get, set, test};
use super::{failure_json, stdout_reply, Invocation, RUN_AS};
use crate::faults::{
    logon_user_matches, Call, FaultConfig, Selector, COLLISION_CATEGORY, COLLISION_MESSAGE,
    LOCALIZED_COLLISION_MESSAGE, LOCALIZED_LOGON_FAILURE_MESSAGE, LOGON_FAILURE_MESSAGE,
    LOGON_TYPE_NOT_GRANTED_HRESULT, MALFORMED_STDOUT,
};
use crate::outcome::Outcome;
use crate::psvalue::{eq_ignore_case, PsValue};
use crate::state::{get_ci, State};

/// The member the prelude adds to a Get result whose `Get()` returned
/// `$this` (the core's `lifecycle::GET_RETURNED_THIS`).
const GET_RETURNED_THIS: &str = pwshlib_core::lifecycle::GET_RETURNED_THIS;

/// The PowerShell version the simulated host plays (`7.4.6`, say); unset
/// or empty is Windows PowerShell 5.1.
pub const PSVERSION_VARIABLE: &str = "PWSHLIB_SIM_PSVERSION";
/// The PowerShell 7 a host started as `pwsh` plays (`main.rs`).
pub const PLAYED_CORE_VERSION: &str = "7.4.6";
/// How far past the caller's timeout a simulated hang sleeps; the main loop
/// answers with the host's timeout error at the deadline.
const HANG_BEYOND_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// Plays one invocation: log, faults, then the method against the state.
pub fn run(
    invocation: &Invocation,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
    defined: &dyn Fn(&str) -> bool,
) -> Outcome {
    let state_path = env("PWSHLIB_SIM_STATE")
        .filter(|p| !p.trim().is_empty())
        .map(PathBuf::from);
    let method = invocation.method;
    let mut state = match State::open(state_path.as_deref()) {
        Ok(state) => state,
        Err(message) => return stdout_reply(failure_json(method, &message).to_string()),
    };
    let (outcome, fault) = play(invocation, timeout_ms, env, defined, &mut state);
    // Logged while the state is still locked, so that lines from several
    // hosts sharing one state never interleave.
    if let Some(log_path) = env("PWSHLIB_SIM_LOG").filter(|p| !p.trim().is_empty()) {
        let kind = kind_of(invocation, env);
        let machine = writes_machine_module_path(invocation, env);
        let played = edition(env);
        append_log(&log_path, invocation, fault, kind, machine, played);
    }
    let saved = state.save();
    match saved {
        Err(message) if !matches!(outcome, Outcome::Crash) => {
            stdout_reply(failure_json(method, &message).to_string())
        }
        _ => outcome,
    }
}

/// The call with properties as JSON: the form stored, compared and logged.
struct JsonCall {
    /// Every property but the run-as credential.
    properties: JsonMap<String, Json>,
    run_as_user: Option<String>,
}

fn json_call(invocation: &Invocation) -> JsonCall {
    let mut properties = JsonMap::new();
    let mut run_as_user = None;
    for (name, value) in &invocation.properties {
        if eq_ignore_case(name, RUN_AS) {
            if let PsValue::Credential { user, .. } = value {
                run_as_user = Some(user.clone());
            }
            continue;
        }
        properties.insert(name.clone(), value.to_json());
    }
    JsonCall {
        properties,
        run_as_user,
    }
}

/// Plays the call against the state: the refusal of run-as on PowerShell
/// 7, then the faults that replace the call, then the method itself. Also
/// names the fault that applied, for the log.
fn play(
    invocation: &Invocation,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
    defined: &dyn Fn(&str) -> bool,
    state: &mut State,
) -> (Outcome, Option<&'static str>) {
    let method = invocation.method;
    let resource = invocation.resource.as_str();
    let call = json_call(invocation);
    if let Some(message) = run_as_refusal(invocation, env) {
        let refused = stdout_reply(failure_json(method, &message).to_string());
        return (refused, Some("run_as_on_powershell_7"));
    }
    if let Some(message) = unelevated_refusal(invocation, env) {
        let refused = stdout_reply(failure_json(method, &message).to_string());
        return (refused, Some("unelevated"));
    }
    if edition(env) == super::Edition::Desktop {
        if let Some(message) = super::manifest_version::insufficient_version(invocation) {
            let refused = stdout_reply(failure_json(method, &message).to_string());
            return (refused, Some("insufficient_powershell_version"));
        }
    }
    if method == DscMethod::Get {
        let names: Vec<String> = call.properties.keys().cloned().collect();
        state.learn_keys(resource, &names);
    }
    let keys = state.keys(resource);
    let armed = match FaultConfig::load(env, state.faults()) {
        Ok(faults) => Armed {
            faults,
            method,
            call: Call {
                method: method.as_str(),
                resource,
                properties: &call.properties,
                keys: keys.as_deref(),
            },
        },
        Err(message) => {
            let unreadable =
                stdout_reply(failure_json(method, &format!("pwshlib-sim: {message}")).to_string());
            return (unreadable, None);
        }
    };
    if let Some((outcome, fault)) = armed.fault(state, call.run_as_user.as_deref(), timeout_ms) {
        return (outcome, Some(fault));
    }
    let reboot_required = armed.selected(armed.faults.reboot_required.as_ref());
    let class_based = is_class_based(invocation);
    let mut json = answer(state, &armed.call, method, reboot_required, class_based)
        .unwrap_or_else(|message| failure_json(method, &message));
    if method == DscMethod::Get && returned_this_seen(invocation, state) {
        if let Json::Object(result) = &mut json {
            result.insert(GET_RETURNED_THIS.to_owned(), json!(true));
        }
    }
    if method == DscMethod::Get && armed.selected(armed.faults.ets_strings.as_ref()) {
        let version = env(PSVERSION_VARIABLE).unwrap_or_default();
        super::lcm::ets_strings(&mut json, &version, defined);
    }
    let writes_error = armed.selected(armed.faults.nonterminating_error.as_ref());
    let stray_test_output = armed.selected(armed.faults.test_output.as_ref());
    let edition = edition(env);
    if let Some((text, fault)) =
        super::lcm::answer(invocation, edition, writes_error, stray_test_output, &json)
    {
        return (armed.with_latency(stdout_reply(text)), Some(fault));
    }
    if armed.selected(armed.faults.malformed_json.as_ref()) {
        let malformed = stdout_reply(MALFORMED_STDOUT.to_owned());
        return (armed.with_latency(malformed), Some("malformed_json"));
    }
    (armed.with_latency(reply(&json, invocation, env)), None)
}

/// The result line, after the streams line with the identity record that
/// the prelude writes for a direct call in a 5.1 host that is not SYSTEM
/// (Invoke-PwshlibDscResource).
fn reply(json: &Json, invocation: &Invocation, env: &dyn Fn(&str) -> Option<String>) -> Outcome {
    let user = non_system_user(env).filter(|_| kind_of(invocation, env) == "direct");
    match user {
        Some(user) => {
            let streams = json!({"pwshlib_streams": [{"kind": "identity", "text": user}]});
            stdout_reply(format!("{streams}\n{json}"))
        }
        None => stdout_reply(json.to_string()),
    }
}

/// How the prelude makes this call in the host the environment plays.
pub(super) fn kind_of(
    invocation: &Invocation,
    env: &dyn Fn(&str) -> Option<String>,
) -> &'static str {
    super::call_kind(invocation, edition(env), non_system_user(env).is_some())
}

/// The account the simulated host runs as (`DOMAIN\user`); unset or
/// empty is SYSTEM, as an agent running as its service.
const USER_VARIABLE: &str = "PWSHLIB_SIM_USER";
/// `0`, `false`, `no` or `off`: the simulated host runs unelevated.
const ELEVATED_VARIABLE: &str = "PWSHLIB_SIM_ELEVATED";

/// What the prelude's Get-PwshlibNonSystemUser answers: the account of a
/// Windows PowerShell 5.1 host that is not SYSTEM; None on PowerShell 7 or
/// as SYSTEM (the prelude compares the SID with S-1-5-18).
fn non_system_user(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if edition(env) == super::Edition::Core {
        return None;
    }
    let user = env(USER_VARIABLE)?;
    let user = user.trim();
    let system = ["", "SYSTEM", "NT AUTHORITY\\SYSTEM", "S-1-5-18"]
        .iter()
        .any(|name| eq_ignore_case(user, name));
    (!system).then(|| user.to_owned())
}

/// Whether the prelude writes the machine-level PSModulePath for this call
/// (Add-PwshlibMachineModulePath): on 5.1, through the LCM, with a vendored
/// folder; never for a direct call, which the LCM does
/// not run.
pub(super) fn writes_machine_module_path(
    invocation: &Invocation,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    edition(env) == super::Edition::Desktop
        && invocation.vendored_path.is_some()
        && kind_of(invocation, env) == "invoke_dsc_resource"
}

/// An unelevated host cannot write the machine-level PSModulePath: .NET
/// Framework's RegistryKey.OpenSubKey(name, true) throws a
/// SecurityException, "Requested registry access is not allowed.", for an
/// account that may not write HKLM's Environment key (administrators and
/// SYSTEM only). The prelude names the folder and why;
/// a direct call writes nothing and runs.
fn unelevated_refusal(
    invocation: &Invocation,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let unelevated = env(ELEVATED_VARIABLE).is_some_and(|value| {
        matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    });
    if !unelevated || !writes_machine_module_path(invocation, env) {
        return None;
    }
    let path = invocation.vendored_path.as_deref()?.replace('/', "\\");
    Some(format!("Cannot add {path} to the machine-level PSModulePath, where the LCM finds the module of a call through Invoke-DscResource: Requested registry access is not allowed. Such a call needs an elevated run, as the LCM does."))
}

/// Whether the prelude would flag this Get as one whose `Get()` returned
/// the instance it was called on (`pwshlib_get_returned_this`): a type
/// listed in `get_returns_this`, class-based (its ModuleName names the
/// module, not a `.psd1`), on every route: the direct call sees the
/// instance come back, a call through Invoke-DscResource reads
/// `return $this` in the class's syntax tree (`Test-PwshlibGetReturnsThis`).
fn returned_this_seen(invocation: &Invocation, state: &State) -> bool {
    is_class_based(invocation) && state.returns_this(&invocation.resource)
}

/// A class-based resource: its ModuleName names the module, not a `.psd1`.
fn is_class_based(invocation: &Invocation) -> bool {
    let module = invocation.module.to_json();
    let module_name = match &module {
        Json::Object(map) => get_ci(map, "ModuleName").and_then(Json::as_str),
        other => other.as_str(),
    };
    module_name.is_some_and(|name| !name.to_ascii_lowercase().ends_with(".psd1"))
}

/// The method's own result JSON (before any fault touches it).
fn answer(
    state: &mut State,
    call: &Call<'_>,
    method: DscMethod,
    reboot_required: bool,
    class_based: bool,
) -> Result<Json, String> {
    let (resource, keys, properties) = (call.resource, call.keys, call.properties);
    match method {
        DscMethod::Get => Ok(get(state, resource, keys, properties)),
        DscMethod::Set => set(state, resource, keys, properties).map(|()| {
            json!({
                "indesiredstate": true,
                "rebootrequired": reboot_required,
                "errormessage": "",
            })
        }),
        DscMethod::Test => test(state, resource, keys, properties)
            .map(|ok| json!({"indesiredstate": ok, "errormessage": ""})),
        DscMethod::Export => Ok(export(state, resource, class_based)),
    }
}

/// PowerShell 7 (PSDesiredStateConfiguration 2.x) cannot run a resource as
/// PsDscRunAsCredential: the prelude's Invoke-PwshlibDscResource throws
/// before Invoke-DscResource, naming the resource, and
/// its catch makes that the result's errormessage.
fn run_as_refusal(invocation: &Invocation, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let version = env(PSVERSION_VARIABLE).filter(|v| major_version(v) > 5)?;
    let run_as = invocation
        .properties
        .iter()
        .any(|(name, _)| eq_ignore_case(name, RUN_AS));
    run_as.then(|| run_as_on_7_message(&invocation.resource, version.trim()))
}

fn run_as_on_7_message(resource: &str, version: &str) -> String {
    format!("The DSC resource '{resource}' cannot run as PsDscRunAsCredential on PowerShell {version}: {RUN_AS_ON_7_REASON}")
}

/// The part of the run-as refusal that names neither resource nor version.
const RUN_AS_ON_7_REASON: &str = "Invoke-DscResource in PowerShell 7 (PSDesiredStateConfiguration 2.x) does not support PsDscRunAsCredential. Remove dsc_psdscrunascredential, or run this resource with Windows PowerShell 5.1.";

/// The faults configured for one call, and the call they are matched
/// against.
struct Armed<'call> {
    faults: FaultConfig,
    method: DscMethod,
    call: Call<'call>,
}

impl Armed<'_> {
    fn selected(&self, selector: Option<&Selector>) -> bool {
        selector.is_some_and(|s| s.matches(&self.call))
    }

    /// A fault without a selector applies to every call.
    fn selected_or_unset(&self, selector: Option<&Selector>) -> bool {
        selector.is_none() || self.selected(selector)
    }

    fn fail(&self, message: &str) -> Outcome {
        stdout_reply(failure_json(self.method, message).to_string())
    }

    /// A failure the 5.1 LCM reports, as the prelude's catch writes it:
    /// the message (English, or German under `localized`), the record's
    /// category and the codes of its exceptions.
    fn fail_as_the_lcm(&self, english: &str, german: &str, category: &str, code: i64) -> Outcome {
        let message = if self.faults.localized {
            german
        } else {
            english
        };
        let mut failed = failure_json(self.method, message);
        failed["errorcategory"] = Json::from(category);
        failed["errorcodes"] = Json::from(vec![code]);
        stdout_reply(failed.to_string())
    }

    fn with_latency(&self, outcome: Outcome) -> Outcome {
        if self.faults.latency_ms > 0 {
            Outcome::Sleep {
                millis: self.faults.latency_ms,
                then: Box::new(outcome),
                written: Vec::new(),
            }
        } else {
            outcome
        }
    }

    /// The fault that takes the place of the call, if one applies, in order:
    /// crash, hang forever, hang, collision, logon failure. The counters of
    /// crashes and collisions live in the state.
    fn fault(
        &self,
        state: &mut State,
        run_as_user: Option<&str>,
        timeout_ms: u64,
    ) -> Option<(Outcome, &'static str)> {
        let faults = &self.faults;
        if let Some(n) = faults.crash_on_call {
            if self.selected_or_unset(faults.crash_selector.as_ref()) {
                let seen = state.counter("crash_calls") + 1;
                state.set_counter("crash_calls", seen);
                if seen == n {
                    return Some((Outcome::Crash, "crash"));
                }
            }
        }
        if self.selected(faults.hang_forever.as_ref()) {
            return Some((Outcome::HangForever, "hang_forever"));
        }
        if self.selected(faults.hang.as_ref()) {
            let released =
                self.fail("pwshlib-sim: a simulated hang ended before the caller's timeout");
            let hang = Outcome::Sleep {
                millis: timeout_ms.saturating_add(HANG_BEYOND_TIMEOUT_MS),
                then: Box::new(released),
                written: Vec::new(),
            };
            return Some((hang, "hang"));
        }
        if faults.collisions > 0 && self.selected_or_unset(faults.collisions_selector.as_ref()) {
            let served = state.counter("collisions_served");
            if served < faults.collisions {
                state.set_counter("collisions_served", served + 1);
                // CimException's HResult: E_FAIL, as MI_RESULT_FAILED maps.
                let busy = self.fail_as_the_lcm(
                    COLLISION_MESSAGE,
                    LOCALIZED_COLLISION_MESSAGE,
                    COLLISION_CATEGORY,
                    -2_147_467_259,
                );
                return Some((self.with_latency(busy), "collision"));
            }
        }
        let configured = faults.logon_failure_user.as_deref()?;
        let user = run_as_user?;
        logon_user_matches(configured, user).then(|| {
            let failed = self.with_latency(self.fail_as_the_lcm(
                LOGON_FAILURE_MESSAGE,
                LOCALIZED_LOGON_FAILURE_MESSAGE,
                "NotSpecified",
                LOGON_TYPE_NOT_GRANTED_HRESULT,
            ));
            (failed, "logon_failure")
        })
    }
}

/// The PowerShell the simulated host plays: PowerShell 7 (Core) when
/// PWSHLIB_SIM_PSVERSION names a major version above 5.
pub(super) fn edition(env: &dyn Fn(&str) -> Option<String>) -> super::Edition {
    match env(PSVERSION_VARIABLE) {
        Some(version) if major_version(&version) > 5 => super::Edition::Core,
        _ => super::Edition::Desktop,
    }
}

/// The major version of `7.4.6`; 5 (Windows PowerShell 5.1) when unreadable.
fn major_version(version: &str) -> u32 {
    version
        .trim()
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(5)
}
