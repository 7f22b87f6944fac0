//! The simulator's DSC engine: recognises the invocation scripts the
//! provider generates (docs/behavior.md §7), plays Get, Set and Test
//! against the state file, injects the configured faults, and answers with
//! the result JSON of docs/behavior.md §4, one compressed line on stdout.
//!
//! The main loop calls [`handle`] for every execute request; `None` means
//! "not a DSC invocation", and echo mode takes over.

mod call_log;
mod data;
mod export;
mod lcm;
mod manifest_version;
mod methods;
mod reading;
mod running;

pub use crate::comparing::values_equal;
pub use reading::{read_invocation, read_invocation_bound, read_invocation_in, Edition};
pub use running::{run, PLAYED_CORE_VERSION, PSVERSION_VARIABLE};

use pwshlib_core::script::DscMethod;
use pwshlib_pslint as pslint;
use pwshlib_transport::protocol::BoundSecret;
use serde_json::{json, Value as Json};
use tree_sitter::Tree;

use crate::outcome::Outcome;
use crate::psvalue::PsValue;

/// The property that carries the run-as account; never stored.
const RUN_AS: &str = "PsDscRunAsCredential";
/// The variable the provider's script assigns the Invoke-DscResource
/// parameters to.
const INVOKE_PARAMS: &str = "InvokeParams";
/// When the grammar cannot be loaded (a build problem, never the script).
const NO_PARSER: &str = "pwshlib-sim: the PowerShell parser gave up on this script";

/// One Invoke-DscResource call, as read from a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub resource: String,
    pub method: DscMethod,
    pub properties: Vec<(String, PsValue)>,
    pub module: PsValue,
    /// The script asks for the call through Invoke-DscResource
    /// (`-ThroughInvokeDscResource`); otherwise the prelude calls the
    /// resource directly where it can.
    pub through_invoke_dsc_resource: bool,
    /// The script asks for the call through the LCM unless the host runs
    /// as SYSTEM (`-LcmUnlessSystem`, the agent's `PWSHLIB_DSC_DIRECT=system`).
    pub lcm_unless_system: bool,
    /// The script's `-VendoredPath`: the folder the prelude puts on
    /// PSModulePath (and, for a call through the 5.1 LCM, on the
    /// machine-level value).
    pub vendored_path: Option<String>,
}

/// How the prelude makes a call, as the call log names it: `direct` (the
/// resource's class or `<Method>-TargetResource`, loaded once per host
/// session) or `invoke_dsc_resource`. The simulated resources all count
/// as implemented in PowerShell files, so only the script's switch, a
/// run-as credential on Windows PowerShell 5.1 (whose LCM starts the
/// resource as that account) and `-LcmUnlessSystem` on 5.1 in a host that
/// is not SYSTEM (`not_system`) send a call through Invoke-DscResource, as
/// the prelude's Invoke-PwshlibDscResource decides.
pub fn call_kind(invocation: &Invocation, edition: Edition, not_system: bool) -> &'static str {
    let run_as = invocation
        .properties
        .iter()
        .any(|(name, _)| crate::psvalue::eq_ignore_case(name, RUN_AS));
    let desktop = edition == Edition::Desktop;
    if invocation.through_invoke_dsc_resource
        || (run_as && desktop)
        || (invocation.lcm_unless_system && desktop && not_system)
    {
        "invoke_dsc_resource"
    } else {
        "direct"
    }
}

/// The main loop's entry point: `tree` is the parse of `code` (which the
/// main loop has checked); reads the environment of the process.
pub fn handle(code: &str, tree: &Tree, timeout_ms: u64) -> Option<Outcome> {
    handle_bound(code, tree, timeout_ms, &[], &[])
}

/// [`handle`] with the variables the request binds (its `secrets`) and
/// the functions of the prelude it runs with.
pub fn handle_bound(
    code: &str,
    tree: &Tree,
    timeout_ms: u64,
    bound: &[BoundSecret],
    functions: &[String],
) -> Option<Outcome> {
    let env = |name: &str| std::env::var(name).ok();
    handle_parsed(code, tree, timeout_ms, bound, functions, &env)
}

/// [`handle`] with an explicit environment, for tests (the process
/// environment is shared by parallel tests); parses `code` itself.
pub fn handle_with_env(
    code: &str,
    timeout_ms: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Outcome> {
    match pslint::parse_tree(code) {
        Some(tree) => handle_parsed(code, &tree, timeout_ms, &[], &[], env),
        None => Some(Outcome::error(NO_PARSER.to_owned())),
    }
}

fn handle_parsed(
    code: &str,
    tree: &Tree,
    timeout_ms: u64,
    bound: &[BoundSecret],
    functions: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Outcome> {
    // Reading a script evaluates its literals; a script that never names
    // $InvokeParams cannot be an invocation, and big echo-mode scripts
    // (megabytes of text) would otherwise be evaluated for nothing.
    if !contains_ignore_ascii_case(code, INVOKE_PARAMS) {
        return None;
    }
    let invocation = match read_invocation_bound(code, tree, running::edition(env), bound) {
        Ok(None) => return None,
        Ok(Some(invocation)) => invocation,
        // Real PowerShell would stop the script before Invoke-DscResource:
        // a terminating error, reported by the host, not in the result JSON.
        Err(message) => return Some(Outcome::error(message)),
    };
    // The functions defined for the call: its prelude's, or the script's
    // own (the inline form carries the whole prelude).
    let defined = |name: &str| {
        functions
            .iter()
            .chain(pwshlib_core::templates::defined_functions(code).iter())
            .any(|f| f.eq_ignore_ascii_case(name))
    };
    Some(run(&invocation, timeout_ms, env, &defined))
}

/// A DSC call as data (the request's `dsc`, with its `secrets` and the
/// functions of its prelude), played as the host makes it.
pub fn handle_data(
    data: &Json,
    timeout_ms: u64,
    bound: &[BoundSecret],
    functions: &[String],
) -> Outcome {
    let env = |name: &str| std::env::var(name).ok();
    let invocation = match data::invocation_of(data, running::edition(&env), bound) {
        Ok(invocation) => invocation,
        Err(message) => return Outcome::error(message),
    };
    let defined = |name: &str| functions.iter().any(|f| f.eq_ignore_ascii_case(name));
    run(&invocation, timeout_ms, &env, &defined)
}

fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// The postscript writes its JSON with a line end.
fn stdout_reply(text: String) -> Outcome {
    Outcome::stdout(text + "\n")
}

/// The result JSON of a failed call, as the postscript prints it: Test
/// gets its own shape, Get and Set the `$Response` of the preamble, Export
/// no instances.
fn failure_json(method: DscMethod, message: &str) -> Json {
    match method {
        DscMethod::Test => json!({"indesiredstate": false, "errormessage": message}),
        DscMethod::Export => json!({"instances": null, "errormessage": message}),
        DscMethod::Get | DscMethod::Set => {
            json!({"indesiredstate": false, "rebootrequired": false, "errormessage": message})
        }
    }
}
