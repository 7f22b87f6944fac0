//! One `Invoke-DscResource` call: its script, the resource's timeout, the
//! run-as credential whose logon failed earlier, the checks of what came
//! back, and the retries after a collision with another DSC run.

use std::time::Instant;

use super::redaction::redactor_for;
use super::{
    debug_lazy, title_of_map, ProviderCallbacks, COLLISION_MAX_RETRIES, COLLISION_MESSAGE,
};
use crate::munge::parse_json;
use crate::redact::{mark_value, shown_resource, Redactor};
use crate::script::{DscMethod, Script};
use crate::value::{Map, Value};

/// 2.x `specify_dsc_timeout`: the resource's `dsc_timeout` in ms, for this
/// resource's calls only.
pub fn specify_dsc_timeout(name_hash: &Map) -> Option<u64> {
    match name_hash.get_named("dsc_timeout") {
        Some(Value::Int(secs)) if *secs > 0 => Some((*secs as u64).saturating_mul(1000)),
        Some(Value::Float(secs)) if *secs > 0.0 => Some((*secs * 1000.0) as u64),
        Some(Value::Str(s)) => s.trim().parse::<u64>().ok().map(|v| v.saturating_mul(1000)),
        _ => None,
    }
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

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(120).collect();
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
    if let Some(credential) = &credential {
        if logon_key(credential).is_some_and(|pair| provider.logon_failed_already(&pair)) {
            let user = logon_key(credential).map(|p| p.0).unwrap_or_default();
            provider.err(
                title,
                &format!("Skipping Invoke-DscResource {}: the PSDscRunAsCredential account '{user}' failed to log on earlier in this run", method.as_str()),
            )?;
            return Ok(None);
        }
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
    debug_lazy(provider, || format!("Script:\n{}", script.redacted()))?;
    let invocation = Invocation {
        title,
        credential: credential.as_ref(),
        script: &script,
        method,
        timeout_ms,
        redactor: &redactor,
    };
    match invocation.run_once(provider)? {
        Outcome::Data(data) => Ok(Some(data)),
        Outcome::Failed => Ok(None),
        Outcome::Collision => invocation.retry_after_collision(provider),
    }
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
}

impl Invocation<'_> {
    fn run_once<P: ProviderCallbacks>(self, provider: &P) -> Result<Outcome, P::Error> {
        let Invocation {
            title,
            credential,
            script,
            method,
            timeout_ms,
            redactor,
        } = self;
        let started = Instant::now();
        let output = provider.execute_script(script, timeout_ms);
        let elapsed = started.elapsed();
        debug_lazy(provider, || {
            format!(
                "Invoke-DscResource {} took {:.3} s",
                method.as_str(),
                elapsed.as_secs_f64()
            )
        })?;
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                let message = redactor.scrub(&provider.describe_error(&e));
                provider.err(
                    title,
                    &format!("Invoke-DscResource {} failed: {message}", method.as_str()),
                )?;
                return Ok(Outcome::Failed);
            }
        };
        let stdout = output.stdout.as_deref().map(str::trim).unwrap_or_default();
        if stdout.is_empty() {
            let mut message = format!(
                "Nothing returned by Invoke-DscResource {}.",
                method.as_str()
            );
            if let Some(report) = output
                .errormessage
                .as_deref()
                .filter(|m| is_timeout_report(m))
            {
                message.push_str(&format!(
                    " The PowerShell host reported a timeout: {}",
                    redactor.scrub(report)
                ));
            } else if let Some(report) = output
                .errormessage
                .as_deref()
                .filter(|m| !m.trim().is_empty())
            {
                message.push_str(&format!(" {}", redactor.scrub(report)));
            }
            provider.err(title, &message)?;
            return Ok(Outcome::Failed);
        }
        let data = match parse_json(stdout) {
            Ok(data) => data,
            Err(e) => {
                provider.err(
                    title,
                    &format!(
                    "Invoke-DscResource {} returned invalid JSON ({e}); the output starts with: {}",
                    method.as_str(),
                    redactor.scrub(&excerpt(stdout))
                ),
                )?;
                return Ok(Outcome::Failed);
            }
        };
        // What the system reports for a Sensitive-typed attribute is as
        // secret as what the manifest says: marked before it is shown, and
        // scrubbed from the error messages that follow.
        let marked = mark_value(provider.typedef()?.as_ref(), &data);
        let mut redactor = redactor.clone();
        redactor.add_value(&marked);
        let redactor = &redactor;
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
            if let Some((user, password)) = credential.and_then(logon_key) {
                provider.err(
                title,
                &redactor.scrub(&format!("PSDscRunAsCredential account specified ({user}) does not have appropriate logon rights; are they an administrator? Later calls with this account are skipped in this run.")),
            )?;
                provider.remember_logon_failure((user, password));
                return Ok(Outcome::Failed);
            }
        }
        provider.err(title, &redactor.scrub(error))?;
        Ok(Outcome::Failed)
    }

    fn retry_after_collision<P: ProviderCallbacks>(
        self,
        provider: &P,
    ) -> Result<Option<Value>, P::Error> {
        let Invocation { title, method, .. } = self;
        provider.notice(
        title,
        "Invoke-DscResource collision detected: Please stagger the timing of your Puppet runs as this can lead to unexpected behaviour.",
    )?;
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
        provider.err(
        title,
        &format!("Invoke-DscResource {} still collided after {COLLISION_MAX_RETRIES} retries: {COLLISION_MESSAGE}", method.as_str()),
    )?;
        Ok(None)
    }
}
