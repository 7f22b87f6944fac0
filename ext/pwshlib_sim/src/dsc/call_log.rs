//! The call log (`PWSHLIB_SIM_LOG`): one JSON line per DSC call.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map as JsonMap, Value as Json};

use super::{Edition, Invocation, RUN_AS};
use crate::psvalue::{eq_ignore_case, PsValue};

/// `kind`: how the prelude made the call (`direct` or
/// `invoke_dsc_resource`, [`super::call_kind`]), so that tests can count
/// each; `machine_module_path`: whether the prelude wrote the machine-level
/// PSModulePath for it (through the 5.1 LCM only);
/// `edition`: the PowerShell the host played (`Desktop` or `Core`), so
/// that a test sees which host ran each module.
pub(super) fn append_log(
    path: &str,
    invocation: &Invocation,
    fault: Option<&str>,
    kind: &str,
    machine_module_path: bool,
    edition: Edition,
) {
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
        "kind": kind,
        "machine_module_path": machine_module_path,
        "resource": invocation.resource,
        "module": invocation.module.to_json(),
        "properties": properties,
        "run_as_user": run_as_user,
        "fault": fault,
        "edition": edition.as_str(),
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
