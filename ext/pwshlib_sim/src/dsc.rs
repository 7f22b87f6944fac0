//! The simulator's DSC engine: recognises the invocation scripts the
//! provider generates (docs/architecture.md), plays Get, Set and Test
//! against the state file, injects the configured faults, and answers with
//! the result JSON of docs/behavior.md §4, one compressed line on stdout.
//!
//! The main loop calls [`handle`] for every execute request; `None` means
//! "not a DSC invocation", and echo mode takes over.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use pwshlib_core::pslint;
use pwshlib_core::script::DscMethod;
use serde_json::{json, Map as JsonMap, Value as Json};
use tree_sitter::{Node, Tree};

use crate::faults::{
    logon_user_matches, Call, FaultConfig, Selector, COLLISION_MESSAGE, LOGON_FAILURE_MESSAGE,
    MALFORMED_STDOUT,
};
use crate::outcome::Outcome;
use crate::psvalue::{eq_ignore_case, excerpt, Evaluator, PsValue, CIM_INSTANCE_TYPE};
use crate::state::{get_ci, State};

/// The property that carries the run-as account; never stored.
const RUN_AS: &str = "PsDscRunAsCredential";
/// The variable the provider's script assigns the Invoke-DscResource
/// parameters to.
const INVOKE_PARAMS: &str = "InvokeParams";
/// The PowerShell version the simulated host plays (`7.4.6`, say); unset
/// or empty is Windows PowerShell 5.1.
const PSVERSION_VARIABLE: &str = "PWSHLIB_SIM_PSVERSION";
/// How far past the caller's timeout a simulated hang sleeps; the main loop
/// answers with the host's timeout error at the deadline.
const HANG_BEYOND_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// What ValidateSet on Invoke-DscResource's -Method says of anything else;
/// `{}` is the argument, quoted.
const METHOD_REFUSAL: &str = "Cannot validate argument on parameter 'Method'. The argument {} does not belong to the set \"Get,Set,Test\".";
/// When the grammar cannot be loaded (a build problem, never the script).
const NO_PARSER: &str = "pwshlib-sim: the PowerShell parser gave up on this script";

/// One Invoke-DscResource call, as read from a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub resource: String,
    pub method: DscMethod,
    pub properties: Vec<(String, PsValue)>,
    pub module: PsValue,
}

/// The main loop's entry point: `tree` is the parse of `code` (which the
/// main loop has checked); reads the environment of the process.
pub fn handle(code: &str, tree: &Tree, timeout_ms: u64) -> Option<Outcome> {
    handle_parsed(code, tree, timeout_ms, &|name| std::env::var(name).ok())
}

/// [`handle`] with an explicit environment, for tests (the process
/// environment is shared by parallel tests); parses `code` itself.
pub fn handle_with_env(
    code: &str,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Outcome> {
    match pslint::parse_tree(code) {
        Some(tree) => handle_parsed(code, &tree, timeout_ms, env),
        None => Some(script_error(NO_PARSER.to_owned())),
    }
}

fn handle_parsed(
    code: &str,
    tree: &Tree,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Outcome> {
    // Reading a script evaluates its literals; a script that never names
    // $InvokeParams cannot be an invocation, and big echo-mode scripts
    // (megabytes of text) would otherwise be evaluated for nothing.
    if !contains_ignore_ascii_case(code, INVOKE_PARAMS) {
        return None;
    }
    let invocation = match read_invocation_in(code, tree) {
        Ok(None) => return None,
        Ok(Some(invocation)) => invocation,
        // Real PowerShell would stop the script before Invoke-DscResource:
        // a terminating error, reported by the host, not in the result JSON.
        Err(message) => return Some(script_error(message)),
    };
    Some(run(&invocation, timeout_ms, env))
}

fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

fn script_error(message: String) -> Outcome {
    Outcome::Reply {
        stdout: None,
        stderr: String::new(),
        exitcode: 1,
        errormessage: Some(message),
    }
}

fn stdout_reply(text: String) -> Outcome {
    Outcome::Reply {
        stdout: Some(text + "\n"),
        stderr: String::new(),
        exitcode: 0,
        errormessage: None,
    }
}

/// The result JSON of a failed call, as the postscript prints it: Test
/// gets its own shape, Get and Set the `$Response` of the preamble.
fn failure_json(method: DscMethod, message: &str) -> Json {
    match method {
        DscMethod::Test => json!({"indesiredstate": false, "errormessage": message}),
        DscMethod::Get | DscMethod::Set => {
            json!({"indesiredstate": false, "rebootrequired": false, "errormessage": message})
        }
    }
}

// ---------------------------------------------------------------------------
// Reading the script

/// Finds the DSC invocation in a script. `Ok(None)`: the script is not a
/// DSC invocation (it never assigns `$InvokeParams`).
pub fn read_invocation(code: &str) -> Result<Option<Invocation>, String> {
    let tree = pslint::parse_tree(code).ok_or(NO_PARSER)?;
    read_invocation_in(code, &tree)
}

/// [`read_invocation`] over `tree`, the parse of `code`. A script that
/// assigns `$InvokeParams` but does not parse is refused as the main loop
/// refuses it (`syntax.rs`).
pub fn read_invocation_in(code: &str, tree: &Tree) -> Result<Option<Invocation>, String> {
    let root = tree.root_node();
    let mut reader = ScriptReader {
        evaluator: Evaluator::new(code),
        invoke_params: None,
        constructor_error: None,
    };
    reader.visit(root, 0);
    let Some(params) = reader.invoke_params else {
        return Ok(None);
    };
    if let Some(error) = pslint::first_error(tree, code) {
        return Err(crate::syntax::refusal(&error));
    }
    if let Some(message) = reader.constructor_error {
        return Err(message);
    }
    let params = params?;
    invocation_from(&params).map(Some)
}

struct ScriptReader<'src> {
    evaluator: Evaluator<'src>,
    /// The value of the last `$InvokeParams = …`, or why it failed.
    invoke_params: Option<Result<PsValue, String>>,
    /// Why the first credential or CIM variable could not be built.
    constructor_error: Option<String>,
}

const MAX_STATEMENT_DEPTH: usize = 100;

impl ScriptReader<'_> {
    /// Visits the statements in document order. Function bodies are skipped:
    /// the templates define helpers there, and nothing in them runs until
    /// called.
    fn visit(&mut self, node: Node, depth: usize) {
        if depth > MAX_STATEMENT_DEPTH {
            return;
        }
        match node.kind() {
            "function_statement" | "class_statement" | "script_block_expression" | "comment" => {}
            "assignment_expression" => self.assignment(node),
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.visit(child, depth + 1);
                }
            }
        }
    }

    fn assignment(&mut self, node: Node) {
        let Some(operator) = node.child(1) else {
            return;
        };
        if self.evaluator.text(operator).trim() != "=" {
            return;
        }
        let (Some(target), Some(value)) = (
            node.child(0).and_then(single_variable),
            node.child_by_field_name("value"),
        ) else {
            return;
        };
        let name = self.evaluator.text(target).to_owned();
        let is_invoke_params = eq_ignore_case(name.trim_start_matches('$'), INVOKE_PARAMS);
        let result = match single_command(value) {
            Some(command) => self.command(command),
            None => self.evaluator.eval(value),
        };
        if is_invoke_params {
            self.invoke_params = Some(result.clone());
        }
        match result {
            Ok(value) => self.evaluator.assign(&name, value),
            // The templates assign things the sim does not model (command
            // output, .NET calls); only an unreadable $InvokeParams, or a
            // credential or CIM variable, matters.
            Err(message) => {
                let constructor = single_command(value)
                    .is_some_and(|c| is_constructor(self.evaluator.text(command_name(c))));
                if constructor {
                    self.constructor_error.get_or_insert(message);
                }
            }
        }
    }

    /// Evaluates `New-PsCredential` and `New-CimInstance`; other commands
    /// are not modelled.
    fn command(&self, command: Node) -> Result<PsValue, String> {
        let name = self.evaluator.text(command_name(command));
        let arguments = self.arguments(command)?;
        let argument = |wanted: &str| -> Option<&PsValue> {
            arguments
                .iter()
                .find(|(name, _)| eq_ignore_case(name, wanted))
                .and_then(|(_, value)| value.as_ref())
        };
        let text_argument = |wanted: &str| -> Result<String, String> {
            match argument(wanted) {
                Some(PsValue::Str(s)) => Ok(s.clone()),
                _ => Err(format!("{name}: -{wanted} must be a string literal")),
            }
        };
        if eq_ignore_case(name, "New-PsCredential") {
            Ok(PsValue::Credential {
                user: text_argument("User")?,
                password: text_argument("Password")?,
            })
        } else if eq_ignore_case(name, "New-CimInstance") {
            let class = text_argument("ClassName")?;
            let properties = match argument("Property") {
                Some(PsValue::Hash(entries)) => entries.clone(),
                None | Some(PsValue::Null) => Vec::new(),
                Some(_) => return Err(format!("{name}: -Property must be a hashtable")),
            };
            for (property, value) in &properties {
                if let Some(what) = crate::psvalue::cim_property_refusal(value) {
                    // What MMI's CimProperty.Create throws, naming the
                    // property so that a test failure says where.
                    return Err(format!(
                        "New-CimInstance : Cannot infer CimType from the .NET object type of property '{property}' of {class} ({what})"
                    ));
                }
            }
            Ok(PsValue::Cim { class, properties })
        } else {
            Err(format!("pwshlib-sim does not run the command {name}"))
        }
    }

    /// `-Name value` pairs; a switch has no value.
    #[allow(clippy::type_complexity)]
    fn arguments(&self, command: Node) -> Result<Vec<(String, Option<PsValue>)>, String> {
        let mut out: Vec<(String, Option<PsValue>)> = Vec::new();
        let Some(elements) = command.child_by_field_name("command_elements") else {
            return Ok(out);
        };
        let mut cursor = elements.walk();
        for element in elements.named_children(&mut cursor) {
            match element.kind() {
                "command_argument_sep" | "comment" => {}
                "command_parameter" => {
                    let name = self.evaluator.text(element);
                    out.push((
                        name.trim_start_matches('-')
                            .trim_end_matches(':')
                            .to_owned(),
                        None,
                    ));
                }
                _ => {
                    let value = self.evaluator.eval(element)?;
                    match out.last_mut() {
                        Some((_, slot @ None)) => *slot = Some(value),
                        _ => {
                            return Err(format!(
                                "pwshlib-sim: positional argument `{}` not supported",
                                excerpt(self.evaluator.text(element))
                            ))
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

fn is_constructor(name: &str) -> bool {
    eq_ignore_case(name, "New-PsCredential") || eq_ignore_case(name, "New-CimInstance")
}

fn command_name(command: Node) -> Node {
    command
        .child_by_field_name("command_name")
        .unwrap_or(command)
}

/// Descends through single-child wrappers to the `variable` an assignment
/// targets.
fn single_variable(node: Node) -> Option<Node> {
    only_child_of_kind(node, "variable")
}

/// The command of a value that is one command and nothing else.
fn single_command(node: Node) -> Option<Node> {
    only_child_of_kind(node, "command")
}

/// `node`, or what it wraps through single-child nodes, if of `kind`.
fn only_child_of_kind<'tree>(node: Node<'tree>, kind: &str) -> Option<Node<'tree>> {
    let mut node = node;
    loop {
        if node.kind() == kind {
            return Some(node);
        }
        if node.child_count() != 1 {
            return None;
        }
        node = node.child(0)?;
    }
}

fn invocation_from(params: &PsValue) -> Result<Invocation, String> {
    if !matches!(params, PsValue::Hash(_)) {
        return Err("pwshlib-sim: $InvokeParams must be a hashtable literal".to_owned());
    }
    let resource = match params.get("Name") {
        Some(PsValue::Str(name)) if !name.trim().is_empty() => name.clone(),
        _ => return Err("pwshlib-sim: $InvokeParams has no Name".to_owned()),
    };
    let text = params.get("Method").and_then(PsValue::as_str);
    // ValidateSet compares the whole argument, ignoring case: no trimming
    // (DscMethod::parse trims, so the match is checked again untrimmed).
    let method = text.and_then(|m| DscMethod::parse(m).filter(|d| eq_ignore_case(m, d.as_str())));
    let Some(method) = method else {
        return Err(METHOD_REFUSAL.replace("{}", &format!("{:?}", text.unwrap_or(""))));
    };
    let properties = match params.get("Property") {
        Some(PsValue::Hash(entries)) => entries.clone(),
        None | Some(PsValue::Null) => Vec::new(),
        Some(_) => return Err("pwshlib-sim: $InvokeParams.Property must be a hashtable".to_owned()),
    };
    let module = params.get("ModuleName").cloned().unwrap_or(PsValue::Null);
    Ok(Invocation {
        resource,
        method,
        properties,
        module,
    })
}

// ---------------------------------------------------------------------------
// Running a call

/// Plays one invocation: log, faults, then the method against the state.
pub fn run(
    invocation: &Invocation,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Outcome {
    let state_path = env("PWSHLIB_SIM_STATE")
        .filter(|p| !p.trim().is_empty())
        .map(PathBuf::from);
    let method = invocation.method;
    let mut state = match State::open(state_path.as_deref()) {
        Ok(state) => state,
        Err(message) => return stdout_reply(failure_json(method, &message).to_string()),
    };
    let (outcome, fault) = play(invocation, timeout_ms, env, &mut state);
    // Logged while the state is still locked, so that lines from several
    // hosts sharing one state never interleave.
    if let Some(log_path) = env("PWSHLIB_SIM_LOG").filter(|p| !p.trim().is_empty()) {
        append_log(&log_path, invocation, fault);
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
    state: &mut State,
) -> (Outcome, Option<&'static str>) {
    let method = invocation.method;
    let resource = invocation.resource.as_str();
    let call = json_call(invocation);
    if let Some(message) = run_as_refusal(invocation, env) {
        let refused = stdout_reply(failure_json(method, &message).to_string());
        return (refused, Some("run_as_on_powershell_7"));
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
    let json = answer(state, &armed.call, method, reboot_required)
        .unwrap_or_else(|message| failure_json(method, &message));
    if armed.selected(armed.faults.malformed_json.as_ref()) {
        let malformed = stdout_reply(MALFORMED_STDOUT.to_owned());
        return (armed.with_latency(malformed), Some("malformed_json"));
    }
    (armed.with_latency(stdout_reply(json.to_string())), None)
}

/// The method's own result JSON (before any fault touches it).
fn answer(
    state: &mut State,
    call: &Call<'_>,
    method: DscMethod,
    reboot_required: bool,
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
    }
}

/// PowerShell 7 (PSDesiredStateConfiguration 2.x) cannot run a resource as
/// PsDscRunAsCredential: the prelude's Invoke-PwshlibDscResource throws
/// before Invoke-DscResource, naming the resource (issue 10, item 12), and
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

    fn with_latency(&self, outcome: Outcome) -> Outcome {
        if self.faults.latency_ms > 0 {
            Outcome::Sleep {
                millis: self.faults.latency_ms,
                then: Box::new(outcome),
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
            };
            return Some((hang, "hang"));
        }
        if faults.collisions > 0 && self.selected_or_unset(faults.collisions_selector.as_ref()) {
            let served = state.counter("collisions_served");
            if served < faults.collisions {
                state.set_counter("collisions_served", served + 1);
                return Some((self.with_latency(self.fail(COLLISION_MESSAGE)), "collision"));
            }
        }
        let configured = faults.logon_failure_user.as_deref()?;
        let user = run_as_user?;
        logon_user_matches(configured, user).then(|| {
            let failed = self.with_latency(self.fail(LOGON_FAILURE_MESSAGE));
            (failed, "logon_failure")
        })
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

fn get(
    state: &State,
    resource: &str,
    keys: Option<&[String]>,
    given: &JsonMap<String, Json>,
) -> Json {
    let has_ensure = state.has_ensure(resource);
    let found = keys.and_then(|keys| state.find(resource, keys, given));
    // Found: what is stored (Present unless it says otherwise); not
    // found: what was asked for, Absent.
    let (shown, ensure) = match found {
        Some((_, stored)) => (stored, "Present"),
        None => (given, "Absent"),
    };
    let mut out: JsonMap<String, Json> = shown
        .iter()
        .map(|(name, value)| (name.clone(), get_value(value)))
        .collect();
    let stored_ensure = found.is_some() && get_ci(&out, "Ensure").is_some_and(|e| !e.is_null());
    if has_ensure && !stored_ensure {
        let name = existing_name(&out, "Ensure");
        out.insert(name, json!(ensure));
    }
    Json::Object(out)
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

fn set(
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

fn test(
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

// ---------------------------------------------------------------------------
// Comparing values the way DSC resources (and the provider) do

fn is_empty(value: &Json) -> bool {
    match value {
        Json::Null => true,
        Json::String(s) => s.is_empty(),
        Json::Array(items) => items.is_empty(),
        Json::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Loose equality: strings without case, numbers and strings coerced,
/// arrays without order, hash keys without case, empty equals null,
/// date-times as instants. A credential's password must match exactly.
pub fn values_equal(a: &Json, b: &Json) -> bool {
    values_equal_at(a, b, 0)
}

fn values_equal_at(a: &Json, b: &Json, depth: usize) -> bool {
    if depth > 64 {
        return a == b;
    }
    if is_empty(a) && is_empty(b) {
        return true;
    }
    match (a, b) {
        (Json::String(x), Json::String(y)) => {
            eq_ignore_case(x, y)
                || match (
                    pwshlib_core::Timestamp::parse(x),
                    pwshlib_core::Timestamp::parse(y),
                ) {
                    (Some(tx), Some(ty)) => tx == ty,
                    _ => false,
                }
        }
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Number(n), Json::String(s)) | (Json::String(s), Json::Number(n)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Bool(x), Json::String(s)) | (Json::String(s), Json::Bool(x)) => s
            .trim()
            .eq_ignore_ascii_case(if *x { "true" } else { "false" }),
        (Json::Array(xs), Json::Array(ys)) => {
            if xs.len() != ys.len() {
                return false;
            }
            let mut used = vec![false; ys.len()];
            xs.iter().all(|x| {
                let hit = ys
                    .iter()
                    .enumerate()
                    .position(|(i, y)| !used[i] && values_equal_at(x, y, depth + 1));
                hit.map(|i| used[i] = true).is_some()
            })
        }
        // A single value equals a one-element array, as PowerShell unrolls.
        (Json::Array(xs), single) | (single, Json::Array(xs)) if xs.len() == 1 => {
            values_equal_at(&xs[0], single, depth + 1)
        }
        (Json::Object(x), Json::Object(y)) => objects_equal(x, y, depth),
        _ => false,
    }
}

fn objects_equal(x: &JsonMap<String, Json>, y: &JsonMap<String, Json>, depth: usize) -> bool {
    let names = x.keys().chain(y.keys());
    for name in names {
        let a = get_ci(x, name).unwrap_or(&Json::Null);
        let b = get_ci(y, name).unwrap_or(&Json::Null);
        let equal = if name.eq_ignore_ascii_case("password") {
            a == b
        } else if name.eq_ignore_ascii_case(CIM_INSTANCE_TYPE) {
            match (a.as_str(), b.as_str()) {
                (Some(p), Some(q)) => eq_ignore_case(p, q),
                _ => true,
            }
        } else {
            values_equal_at(a, b, depth + 1)
        };
        if !equal {
            return false;
        }
    }
    true
}

// ---------------------------------------------------------------------------
// The call log

fn append_log(path: &str, invocation: &Invocation, fault: Option<&str>) {
    use std::io::Write;
    let mut properties = JsonMap::new();
    let mut run_as_user = Json::Null;
    for (name, value) in &invocation.properties {
        if eq_ignore_case(name, RUN_AS) {
            if let PsValue::Credential { user, .. } = value {
                run_as_user = json!(user);
            }
        }
        properties.insert(name.clone(), value.to_json());
    }
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let line = json!({
        "method": invocation.method.as_str(),
        "resource": invocation.resource,
        "module": invocation.module.to_json(),
        "properties": properties,
        "run_as_user": run_as_user,
        "fault": fault,
        "pid": std::process::id(),
        "ts": ts,
    });
    // One write per line with O_APPEND. A log that cannot be written must
    // not fail the call it records.
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}
