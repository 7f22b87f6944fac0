//! One `Invoke-DscResource` call: its script, the resource's timeout, the
//! run-as credential whose logon failed earlier, the checks of what came
//! back, and the retries after a collision with another DSC run.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::redaction::{add_known_state, redactor_for};
use super::{
    debug_lazy, title_of_map, ExecuteOutput, ProviderCallbacks, COLLISION_MAX_RETRIES,
    COLLISION_MESSAGE,
};
use crate::munge::parse_json;
use crate::redact::{mark_result, shown_resource, Redactor};
use crate::script::{DscMethod, Script};
use crate::templates;
use crate::value::{Map, Value};

/// 2.x `specify_dsc_timeout`: the resource's `dsc_timeout` in ms, for this
/// resource's calls only.
pub fn specify_dsc_timeout(name_hash: &Map) -> Option<u64> {
    match name_hash.get_named("dsc_timeout") {
        Some(Value::Int(secs)) if *secs > 0 => {
            u64::try_from(*secs).ok().map(|v| v.saturating_mul(1000))
        }
        Some(Value::Float(secs)) if *secs > 0.0 => Some(millis_of_positive_seconds(*secs)),
        Some(Value::Str(s)) => s.trim().parse::<u64>().ok().map(|v| v.saturating_mul(1000)),
        _ => None,
    }
}

// `as` from a float to an integer saturates (Rust reference, "Numeric
// cast"): a fraction of a millisecond is dropped and a timeout beyond
// u64::MAX ms becomes u64::MAX, which is what a huge timeout should mean.
// The caller passes only positive seconds, so no sign is lost.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn millis_of_positive_seconds(secs: f64) -> u64 {
    (secs * 1000.0) as u64
}

/// The (user, password) pair of a credential hash: the key of the
/// process-wide memo of accounts that failed to log on in this run.
pub fn logon_key(value: &Value) -> Option<(String, String)> {
    let map = value.as_map()?;
    let text = |v: &Value| match v.unwrap_sensitive() {
        Value::Str(s) => Some(s),
        _ => None,
    };
    Some((
        text(map.get_named("user")?)?,
        text(map.get_named("password")?).unwrap_or_default(),
    ))
}

/// The hint after the account's name when a call fails to log on.
const LOGON_RIGHTS_HINT: &str = "does not have appropriate logon rights; are they an administrator? Later calls with this account are skipped in this run.";
const RUN_AS_ACCOUNT: &str = "the PSDscRunAsCredential account";
/// Why a call with an account that failed to log on is not made.
const LOGON_FAILED_EARLIER: &str = "failed to log on earlier in this run";
const COLLISION_NOTICE: &str = "Invoke-DscResource collision detected: Please stagger the timing of your Puppet runs as this can lead to unexpected behaviour.";
/// How the prelude's line of stream records starts.
const STREAMS_PREFIX: &str = "{\"pwshlib_streams\":";

/// The record the prelude adds to the streams line of a direct call made
/// on Windows PowerShell 5.1 by a host that is not SYSTEM, its text the
/// account (issue 41, item 5): warned about once per run, not per resource.
const IDENTITY_KIND: &str = "identity";

/// The warning for [`IDENTITY_KIND`]: who runs the resources now, what the
/// LCM did, and the setting that sends such runs through the LCM.
fn identity_warning(account: &str) -> String {
    format!(
        "DSC resources run as {account}, not as SYSTEM as the LCM ran them: they see that account's registry (HKCU), profile and rights. Run the agent as its service (SYSTEM), or set PWSHLIB_DSC_DIRECT=system in the agent's environment to send the calls of a run that is not SYSTEM through the LCM's Invoke-DscResource (which needs the LCM's RefreshMode Disabled)."
    )
}
/// How much of an unreadable output an error quotes, in characters.
const EXCERPT_CHARS: usize = 120;

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(EXCERPT_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

fn is_timeout_report(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.contains("timeout") && lower.contains("exceeded")
}

enum Outcome {
    Data(Value),
    Failed,
    Collision,
}

pub fn invoke_dsc_resource<P: ProviderCallbacks>(
    provider: &P,
    name_hash: &Map,
    props: &Map,
    method: DscMethod,
) -> Result<Option<Value>, P::Error> {
    let title = title_of_map(name_hash);
    let title = title.as_ref();
    let credential = name_hash
        .get_named("dsc_psdscrunascredential")
        .filter(|c| !c.is_nil())
        .cloned();
    if let Some((user, _)) = credential
        .as_ref()
        .and_then(logon_key)
        .filter(|pair| provider.logon_failed_already(pair))
    {
        let method = method.as_str();
        let message = format!(
            "Skipping Invoke-DscResource {method}: {RUN_AS_ACCOUNT} '{user}' {LOGON_FAILED_EARLIER}"
        );
        provider.err(title, &message)?;
        return Ok(None);
    }
    let timeout_ms = specify_dsc_timeout(name_hash);
    let typedef = provider.typedef()?;
    let mut redactor = redactor_for(&typedef, &[name_hash, props]);
    let script = match provider.build_script(&typedef, props, method)? {
        Ok(script) => script,
        Err(e) => {
            provider.err(title, &redactor.scrub(&e.to_string()))?;
            return Ok(None);
        }
    };
    redactor.add_script(&script);
    debug_lazy(provider, || {
        format!(
            "Invoke-DscResource {} for {} ({} {}), properties: {}",
            method.as_str(),
            title.cloned().unwrap_or(Value::Nil),
            typedef.friendly_name,
            typedef.module_version.as_deref().unwrap_or("(no version)"),
            shown_resource(&typedef, props)
        )
    })?;
    debug_script(provider, &script)?;
    let desired = [name_hash, props];
    let invocation = Invocation {
        title,
        credential: credential.as_ref(),
        script: &script,
        method,
        timeout_ms,
        redactor: &redactor,
        desired: &desired,
    };
    match invocation.run_once(provider)? {
        Outcome::Data(data) => Ok(Some(data)),
        Outcome::Failed => Ok(None),
        Outcome::Collision => invocation.retry_after_collision(provider),
    }
}

/// The host sessions whose prelude `--debug` has shown, by
/// [`ProviderCallbacks::host_session`]: one entry per host process this
/// Ruby process started, shared by every provider (they share the hosts).
static PRELUDE_SHOWN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// True the first time `session` is seen; always true without a session.
fn first_in_session(session: Option<String>) -> bool {
    let Some(session) = session else {
        return true;
    };
    let mut shown = PRELUDE_SHOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if shown.contains(&session) {
        return false;
    }
    shown.push(session);
    true
}

/// The `--debug` dump of a call's script: the prelude (some 770 lines) once
/// per host session, with its id, as the transport sends it (docs/protocol.md,
/// "Preludes"); then, for every call, its own lines, redacted.
fn debug_script<P: ProviderCallbacks>(provider: &P, script: &Script) -> Result<(), P::Error> {
    if !provider.debug_enabled() {
        return Ok(());
    }
    if !script.has_prelude() {
        return provider.debug(&format!("Script:\n{}", script.redacted()));
    }
    let id = templates::prelude_id();
    if first_in_session(provider.host_session()?) {
        provider.debug(&format!(
            "Prelude {id} (sent once per PowerShell host session; each call's script runs after it):\n{}",
            templates::PRELUDE
        ))?;
    }
    provider.debug(&format!(
        "Script (after prelude {id}):\n{}",
        script.redacted_body()
    ))
}

/// One DSC call, ready to send (and to send again after a collision).
#[derive(Clone, Copy)]
struct Invocation<'a> {
    title: Option<&'a Value>,
    credential: Option<&'a Value>,
    script: &'a Script,
    method: DscMethod,
    timeout_ms: Option<u64>,
    /// Scrubs every message of the invocation's secrets.
    redactor: &'a Redactor,
    /// The call's name_hash and props: where they hold Sensitive values,
    /// what the system reports is secret too.
    desired: &'a [&'a Map],
}

impl Invocation<'_> {
    /// The invocation's redactor, knowing the resource's system state as
    /// well: an error may quote what the system holds (a rotated secret's
    /// old value), which the desired state does not. Made only when there
    /// is an error to scrub.
    fn error_redactor<P: ProviderCallbacks>(self, provider: &P) -> Redactor {
        let mut redactor = self.redactor.clone();
        add_known_state(&mut redactor, provider, self.desired);
        redactor
    }

    /// Sends the script once and judges what came back.
    fn run_once<P: ProviderCallbacks>(self, provider: &P) -> Result<Outcome, P::Error> {
        let Some(output) = self.send(provider)? else {
            return Ok(Outcome::Failed);
        };
        let Some(data) = self.read_output(provider, &output)? else {
            return Ok(Outcome::Failed);
        };
        self.judge(provider, data)
    }

    /// The host's answer, or None when the call failed (reported).
    fn send<P: ProviderCallbacks>(self, provider: &P) -> Result<Option<ExecuteOutput>, P::Error> {
        let method = self.method.as_str();
        let started = Instant::now();
        let output = provider.execute_script(self.script, self.timeout_ms);
        let elapsed = started.elapsed();
        // To a tenth of a millisecond: a direct call takes a few, and
        // bench/direct_dsc_bench.rb reads its times from this line.
        debug_lazy(provider, || {
            format!(
                "Invoke-DscResource {method} took {:.4} s",
                elapsed.as_secs_f64()
            )
        })?;
        match output {
            Ok(output) => Ok(Some(output)),
            Err(e) => {
                let message = self
                    .error_redactor(provider)
                    .scrub(&provider.describe_error(&e));
                let message = format!("Invoke-DscResource {method} failed: {message}");
                provider.err(self.title, &message)?;
                Ok(None)
            }
        }
    }

    /// The JSON the call printed, or None when it printed nothing or no
    /// JSON (reported, with the host's error or an excerpt).
    fn read_output<P: ProviderCallbacks>(
        self,
        provider: &P,
        output: &ExecuteOutput,
    ) -> Result<Option<Value>, P::Error> {
        let method = self.method.as_str();
        let stdout = output.stdout.as_deref().map(str::trim).unwrap_or_default();
        if stdout.is_empty() {
            let mut message = format!("Nothing returned by Invoke-DscResource {method}.");
            let report = output
                .errormessage
                .as_deref()
                .filter(|m| !m.trim().is_empty());
            if let Some(report) = report {
                if is_timeout_report(report) {
                    message.push_str(" The PowerShell host reported a timeout:");
                }
                message.push(' ');
                message.push_str(&self.error_redactor(provider).scrub(report));
            }
            provider.err(self.title, &message)?;
            return Ok(None);
        }
        self.show_console(provider, output)?;
        let stdout = self.show_streams(provider, stdout)?;
        match parse_json(stdout) {
            Ok(data) => Ok(Some(data)),
            Err(e) => {
                let start = self.error_redactor(provider).scrub(&excerpt(stdout));
                let what = format!("Invoke-DscResource {method} returned invalid JSON ({e})");
                let message = format!("{what}; the output starts with: {start}");
                provider.err(self.title, &message)?;
                Ok(None)
            }
        }
    }

    /// Shows at debug, line by line and scrubbed, what the call wrote to
    /// the console: the host keeps it apart from the result's stdout.
    fn show_console<P: ProviderCallbacks>(
        self,
        provider: &P,
        output: &ExecuteOutput,
    ) -> Result<(), P::Error> {
        let Some(console) = output
            .native_stdout
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        else {
            return Ok(());
        };
        if !provider.debug_enabled() {
            return Ok(());
        }
        let text = self.error_redactor(provider).scrub(console);
        let title = self.title.map(super::title_text).unwrap_or_default();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            provider.debug(&format!("{title}: DSC resource console: {line}"))?;
        }
        Ok(())
    }

    /// Shows what the resource wrote, from the line of stream records the
    /// prelude prints before its result when there are any
    /// (`{"pwshlib_streams":[{"kind":…,"text":…}…]}`, issue 32 item 4):
    /// a warning as a Puppet warning on this resource, everything else
    /// (verbose, debug, information, Write-Host, non-terminating errors)
    /// at debug, in order, each scrubbed of the resource's secrets as its
    /// errors are. Returns the rest of the output: the result's line.
    fn show_streams<'o, P: ProviderCallbacks>(
        self,
        provider: &P,
        stdout: &'o str,
    ) -> Result<&'o str, P::Error> {
        let Some((first, rest)) = stdout.split_once('\n') else {
            return Ok(stdout);
        };
        if !first.starts_with(STREAMS_PREFIX) {
            return Ok(stdout);
        }
        let Ok(streams) = parse_json(first) else {
            return Ok(rest.trim());
        };
        let records = streams
            .as_map()
            .and_then(|m| m.get_named("pwshlib_streams"))
            .and_then(Value::as_array)
            .unwrap_or_default();
        let debug = provider.debug_enabled();
        let mut redactor: Option<Redactor> = None;
        for record in records {
            let Some(record) = record.as_map() else {
                continue;
            };
            let field = |name: &str| {
                record
                    .get_named(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            let kind = field("kind");
            if kind == IDENTITY_KIND {
                if provider.first_in_run(IDENTITY_KIND) {
                    provider.warning(None, &identity_warning(field("text")))?;
                }
                continue;
            }
            let warning = kind == "warning";
            if !warning && !debug {
                continue;
            }
            let redactor = redactor.get_or_insert_with(|| self.error_redactor(provider));
            let text = redactor.scrub(field("text"));
            if warning {
                provider.warning(self.title, &text)?;
            } else {
                let title = self.title.map(super::title_text).unwrap_or_default();
                provider.debug(&format!("{title}: DSC resource {kind}: {text}"))?;
            }
        }
        Ok(rest.trim())
    }

    /// Data, a collision to retry, or a failure that DSC reported in
    /// `errormessage` (a logon failure is remembered for the run).
    fn judge<P: ProviderCallbacks>(self, provider: &P, data: Value) -> Result<Outcome, P::Error> {
        let reported_error = data
            .as_map()
            .and_then(|m| m.get_named("errormessage"))
            .and_then(Value::as_str)
            .is_some_and(|error| !error.trim().is_empty());
        // Data, with nothing to show: no marked copy of it is needed (most
        // Gets of a run).
        if !reported_error && !provider.debug_enabled() {
            return Ok(Outcome::Data(data));
        }
        // What the system reports for a Sensitive-typed attribute, or where
        // the desired state holds a Sensitive value (a rotated secret's old
        // value), is as secret as what the manifest says: marked before it
        // is shown, and scrubbed from the error messages that follow.
        let marked = mark_result(provider.typedef()?.as_ref(), &data, self.desired);
        let mut redactor = if reported_error {
            self.error_redactor(provider)
        } else {
            self.redactor.clone()
        };
        redactor.add_value(&marked);
        debug_lazy(provider, || {
            format!("raw data received: {}", redactor.scrub(&marked.to_string()))
        })?;
        let error = data
            .as_map()
            .and_then(|m| m.get_named("errormessage"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if error.trim().is_empty() {
            return Ok(Outcome::Data(data));
        }
        if error.contains(COLLISION_MESSAGE) {
            return Ok(Outcome::Collision);
        }
        if error.to_lowercase().contains("logon failure") {
            if let Some((user, password)) = self.credential.and_then(logon_key) {
                let message =
                    format!("PSDscRunAsCredential account specified ({user}) {LOGON_RIGHTS_HINT}");
                provider.err(self.title, &redactor.scrub(&message))?;
                provider.remember_logon_failure((user, password));
                return Ok(Outcome::Failed);
            }
        }
        provider.err(self.title, &redactor.scrub(error))?;
        Ok(Outcome::Failed)
    }

    fn retry_after_collision<P: ProviderCallbacks>(
        self,
        provider: &P,
    ) -> Result<Option<Value>, P::Error> {
        let Invocation { title, method, .. } = self;
        provider.notice(title, COLLISION_NOTICE)?;
        let wait = provider.with_state(|s| s.collision_wait_seconds);
        for attempt in 1..=COLLISION_MAX_RETRIES {
            provider.notice(title, &format!("Sleeping for {wait} seconds."))?;
            provider.sleep(wait)?;
            provider.notice(
                title,
                &format!("Retrying: attempt {attempt} of {COLLISION_MAX_RETRIES}."),
            )?;
            match self.run_once(provider)? {
                Outcome::Data(data) => return Ok(Some(data)),
                Outcome::Failed => return Ok(None),
                Outcome::Collision => {
                    provider.notice(
                        title,
                        &format!("Attempt {attempt} of {COLLISION_MAX_RETRIES} failed."),
                    )?;
                }
            }
        }
        let method = method.as_str();
        let retries = COLLISION_MAX_RETRIES;
        let what = format!("Invoke-DscResource {method} still collided after {retries} retries");
        let message = format!("{what}: {COLLISION_MESSAGE}");
        provider.err(title, &message)?;
        Ok(None)
    }
}
