//! One `Invoke-DscResource` call: its script, the resource's timeout, the
//! run-as credential whose logon failed earlier, the checks of what came
//! back, and the retries after a collision with another DSC run.

use std::time::Instant;

use super::dsc_failure::{failure_kind, FailureKind};
use super::redaction::{add_known_state, redactor_for};
use super::{
    debug_lazy, title_of_map, ExecuteOutput, Provider, COLLISION_MAX_RETRIES, COLLISION_MESSAGE,
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
/// account: warned about once per run, not per resource.
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

/// What one sending of a call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The result's JSON, read.
    Data(Value),
    /// The call failed; the error is reported.
    Failed,
    /// Another DSC run was in progress: wait and send it again
    /// ([`collision_wait`]).
    Collision,
}

/// One DSC call, ready to send (and to send again after a collision): what
/// reading its answer needs. Owned, so that the binding can keep it in the
/// Ruby object the spine holds while the manager runs the call.
#[derive(Debug, Clone)]
pub struct DscCall {
    title: Option<Value>,
    credential: Option<Value>,
    method: DscMethod,
    timeout_ms: Option<u64>,
    /// Scrubs every message of the invocation's secrets.
    redactor: Redactor,
    /// The call's name_hash and props: where they hold Sensitive values,
    /// what the system reports is secret too.
    desired: [Map; 2],
    /// When the call was last sent, moved on by the time its script took
    /// to show (for the debug line of its time).
    started: Instant,
    /// Debug messages are kept: the spine has the script shown
    /// ([`show_script`]) before it sends it.
    shows_script: bool,
}

/// `invoke_dsc_resource`'s first step: the call of `method` for the
/// resource `name_hash` with `props`, and its script; None when it is not
/// made (an account that failed to log on earlier, a script that cannot be
/// built: reported).
pub fn dsc_call<P: Provider>(
    provider: &P,
    name_hash: &Map,
    props: &Map,
    method: DscMethod,
) -> Result<Option<(DscCall, Script)>, P::Error> {
    let title = title_of_map(name_hash);
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
        provider.err(title.as_ref(), &message)?;
        return Ok(None);
    }
    let timeout_ms = specify_dsc_timeout(name_hash);
    let typedef = provider.typedef()?;
    let mut redactor = redactor_for(&typedef, &[name_hash, props]);
    let mut script = match provider.build_script(&typedef, props, method)? {
        Ok(script) => script,
        Err(e) => {
            provider.err(title.as_ref(), &redactor.scrub(&e.to_string()))?;
            return Ok(None);
        }
    };
    redactor.add_script(&script);
    script.set_call_timeout(timeout_ms);
    debug_lazy(provider, || {
        format!(
            "Invoke-DscResource {} for {} ({} {}), properties: {}",
            method.as_str(),
            title.clone().unwrap_or(Value::Nil),
            typedef.friendly_name,
            typedef.module_version.as_deref().unwrap_or("(no version)"),
            shown_resource(&typedef, props)
        )
    })?;
    let shows_script = provider.debug_enabled();
    let call = DscCall {
        title,
        credential,
        method,
        timeout_ms,
        redactor,
        desired: [name_hash.clone(), props.clone()],
        started: Instant::now(),
        shows_script,
    };
    Ok(Some((call, script)))
}

/// `invoke_dsc_resource`'s second step: what the host answered (`Err`: the
/// message of the error the manager raised), judged.
pub fn dsc_outcome<P: Provider>(
    provider: &P,
    call: &DscCall,
    output: Result<ExecuteOutput, String>,
) -> Result<Outcome, P::Error> {
    let elapsed = call.started.elapsed();
    let method = call.method.as_str();
    // To ten microseconds: a direct call takes a couple of milliseconds,
    // and bench/direct_dsc_bench.rb and bench/fresh_host_bench.rb read
    // their times from this line, against targets tighter than a tenth.
    debug_lazy(provider, || {
        format!(
            "Invoke-DscResource {method} took {:.5} s",
            elapsed.as_secs_f64()
        )
    })?;
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            let message = call.error_redactor(provider).scrub(&error);
            let message = format!("Invoke-DscResource {method} failed: {message}");
            provider.err(call.title(), &message)?;
            return Ok(Outcome::Failed);
        }
    };
    let Some(data) = call.read_output(provider, &output)? else {
        return Ok(Outcome::Failed);
    };
    call.judge(provider, data)
}

/// After the `attempt`th collision (from 1): the seconds to wait before
/// sending the call again, or None when the retries ran out (reported).
pub fn collision_wait<P: Provider>(
    provider: &P,
    call: &DscCall,
    attempt: u32,
) -> Result<Option<f64>, P::Error> {
    let title = call.title();
    if attempt <= 1 {
        provider.notice(title, COLLISION_NOTICE)?;
    } else {
        let failed = attempt - 1;
        provider.notice(
            title,
            &format!("Attempt {failed} of {COLLISION_MAX_RETRIES} failed."),
        )?;
    }
    if attempt > COLLISION_MAX_RETRIES {
        let method = call.method.as_str();
        let retries = COLLISION_MAX_RETRIES;
        let what = format!("Invoke-DscResource {method} still collided after {retries} retries");
        provider.err(title, &format!("{what}: {COLLISION_MESSAGE}"))?;
        return Ok(None);
    }
    let wait = provider.with_state(|s| s.collision_wait_seconds);
    provider.notice(title, &format!("Sleeping for {wait} seconds."))?;
    Ok(Some(wait))
}

/// `--debug`'s account of what a call sends, which the Ruby spine asks for
/// when the call [`DscCall::shows_script`], naming the host session the
/// manager sends it to (its endpoint, new for each host process): the
/// prelude by id and files once per host session and run (its text is
/// in `lib/templates`, never in the log); then, for every call, one line
/// summing up its data (`DscCallData::summary`): resource, method, route,
/// properties, each secret as the redaction marker. Without a session (a
/// stand-in manager) the prelude line shows with every call.
pub fn show_script<P: Provider>(
    provider: &P,
    call: &mut DscCall,
    script: &Script,
    host_session: Option<&str>,
) -> Result<(), P::Error> {
    // The dump is --debug's own work, which a run without --debug never
    // does: no part of the call's time (the "took" line). A host started
    // for this call (the manager's first) still is.
    let dumping = Instant::now();
    let shown = show_sent(provider, call, script, host_session);
    call.started += dumping.elapsed();
    shown
}

fn show_sent<P: Provider>(
    provider: &P,
    call: &DscCall,
    script: &Script,
    host_session: Option<&str>,
) -> Result<(), P::Error> {
    let Some(data) = script.call() else {
        return provider.debug(&format!("Script:\n{}", script.redacted()));
    };
    if script.has_prelude() {
        let first = host_session
            .is_none_or(|session| provider.first_in_run(&format!("prelude shown to {session}")));
        if first {
            provider.debug(&format!(
                "Prelude {} (lib/templates/{}; sent once per PowerShell host session)",
                templates::prelude_id(),
                templates::PRELUDE_FILES.join(", ")
            ))?;
        }
    }
    provider.debug(&format!(
        "Sending Invoke-DscResource {}",
        call.redactor.scrub(&data.summary())
    ))
}

/// Notes that the call is sent again, the `attempt`th time (from 1), after
/// the wait.
pub fn retrying<P: Provider>(
    provider: &P,
    call: &mut DscCall,
    attempt: u32,
) -> Result<(), P::Error> {
    call.started = Instant::now();
    provider.notice(
        call.title(),
        &format!("Retrying: attempt {attempt} of {COLLISION_MAX_RETRIES}."),
    )
}

impl DscCall {
    /// The timeout of the resource's calls, in ms.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    pub fn method(&self) -> DscMethod {
        self.method
    }

    /// Whether `--debug` shows the call's script ([`show_script`]).
    pub fn shows_script(&self) -> bool {
        self.shows_script
    }

    fn title(&self) -> Option<&Value> {
        self.title.as_ref()
    }

    fn desired_refs(&self) -> [&Map; 2] {
        [&self.desired[0], &self.desired[1]]
    }

    /// The invocation's redactor, knowing the resource's system state as
    /// well: an error may quote what the system holds (a rotated secret's
    /// old value), which the desired state does not. Made only when there
    /// is an error to scrub.
    fn error_redactor<P: Provider>(&self, provider: &P) -> Redactor {
        let mut redactor = self.redactor.clone();
        add_known_state(&mut redactor, provider, &self.desired_refs());
        redactor
    }

    /// The JSON the call printed, or None when it printed nothing or no
    /// JSON (reported, with the host's error or an excerpt).
    fn read_output<P: Provider>(
        &self,
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
            provider.err(self.title(), &message)?;
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
                provider.err(self.title(), &message)?;
                Ok(None)
            }
        }
    }

    /// Shows at debug, line by line and scrubbed, what the call wrote to
    /// the console: the host keeps it apart from the result's stdout.
    fn show_console<P: Provider>(
        &self,
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
        let title = self.title().map(super::title_text).unwrap_or_default();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            provider.debug(&format!("{title}: DSC resource console: {line}"))?;
        }
        Ok(())
    }

    /// Shows what the resource wrote, from the line of stream records the
    /// prelude prints before its result when there are any
    /// (`{"pwshlib_streams":[{"kind":…,"text":…}…]}`):
    /// a warning as a Puppet warning on this resource, everything else
    /// (verbose, debug, information, Write-Host, non-terminating errors)
    /// at debug, in order, each scrubbed of the resource's secrets as its
    /// errors are. Returns the rest of the output: the result's line.
    fn show_streams<'o, P: Provider>(
        &self,
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
                provider.warning(self.title(), &text)?;
            } else {
                let title = self.title().map(super::title_text).unwrap_or_default();
                provider.debug(&format!("{title}: DSC resource {kind}: {text}"))?;
            }
        }
        Ok(rest.trim())
    }

    /// Data, a collision to retry, or a failure that DSC reported in
    /// `errormessage` (a logon failure is remembered for the run).
    fn judge<P: Provider>(&self, provider: &P, data: Value) -> Result<Outcome, P::Error> {
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
        let marked = mark_result(provider.typedef()?.as_ref(), &data, &self.desired_refs());
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
        let kind = failure_kind(&data, error);
        if kind == FailureKind::Collision {
            return Ok(Outcome::Collision);
        }
        if kind == FailureKind::LogonFailure {
            if let Some((user, password)) = self.credential.as_ref().and_then(logon_key) {
                let message =
                    format!("PSDscRunAsCredential account specified ({user}) {LOGON_RIGHTS_HINT}");
                provider.err(self.title(), &redactor.scrub(&message))?;
                provider.remember_logon_failure((user, password));
                return Ok(Outcome::Failed);
            }
        }
        provider.err(self.title(), &redactor.scrub(error))?;
        Ok(Outcome::Failed)
    }
}
