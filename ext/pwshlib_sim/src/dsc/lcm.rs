//! Where the prelude takes a resource's answer as the 5.1 LCM did on
//! Windows PowerShell 5.1 and as PSDesiredStateConfiguration 2.x does on
//! PowerShell 7: a resource that writes a
//! non-terminating error, and a Test that returns no single boolean. The
//! faults `nonterminating_error` and `test_output` make a simulated
//! resource do so; the real pwsh shows the prelude's two branches in
//! spec/real_pwsh/dsc/lcm_semantics_spec.rb. And how ConvertTo-Json writes
//! a string that carries ETS members before PowerShell 7.2 (item 4).

use pwshlib_core::script::DscMethod;
use serde_json::{json, Value as Json};

use super::{failure_json, Edition, Invocation};

/// What a simulated resource writes to its error stream.
pub const NONTERMINATING_ERROR_TEXT: &str = "pwshlib-sim: a non-terminating error";

/// The answer of a call whose resource misbehaved as the faults say, with
/// the streams line the prelude writes before it; `None` when no fault
/// applies (the class methods of a class-based resource cannot do either:
/// `Test()` returns a `[bool]`, and a `Write-Error` in a method reaches
/// no stream, only `$Error`, tried on pwsh 7.6.9).
pub(super) fn answer(
    invocation: &Invocation,
    edition: Edition,
    writes_error: bool,
    stray_test_output: bool,
    json: &Json,
) -> Option<(String, &'static str)> {
    let script_based = script_based(invocation);
    let writes_error = writes_error && script_based;
    let stray = stray_test_output && script_based && invocation.method == DscMethod::Test;
    if !writes_error && !stray {
        return None;
    }
    let method = invocation.method;
    let resource = &invocation.resource;
    let strict = edition == Edition::Desktop;
    let (result, fault) = if stray {
        let result = if strict {
            failure_json(method, &format!(
                "The DSC resource '{resource}' returned 1 value(s) from Test-TargetResource (String), not one boolean: \
                 Windows PowerShell 5.1 takes exactly one $true or $false, as its LCM did."
            ))
        } else {
            // [bool] 'stray output'
            json!({"indesiredstate": true, "errormessage": ""})
        };
        (result, "test_output")
    } else if strict {
        let message = format!(
            "The PowerShell DSC resource '{resource}' threw one or more non-terminating errors while running \
             the {}-TargetResource functionality: {NONTERMINATING_ERROR_TEXT}",
            method.as_str()
        );
        (failure_json(method, &message), "nonterminating_error")
    } else {
        (json.clone(), "nonterminating_error")
    };
    let mut text = String::new();
    if writes_error {
        let streams =
            json!({"pwshlib_streams": [{"kind": "error", "text": NONTERMINATING_ERROR_TEXT}]});
        text.push_str(&streams.to_string());
        text.push('\n');
    }
    text.push_str(&result.to_string());
    Some((text, fault))
}

/// A script-based resource is named by the path of its module's `.psd1`;
/// a class-based one by the module's name.
pub(super) fn script_based(invocation: &Invocation) -> bool {
    let module = invocation.module.to_json();
    let module_name = match &module {
        Json::Object(map) => crate::state::get_ci(map, "ModuleName").and_then(Json::as_str),
        other => other.as_str(),
    };
    module_name.is_some_and(|name| name.to_ascii_lowercase().ends_with(".psd1"))
}

/// The note properties Get-Content gives each line it reads, as Windows
/// PowerShell 5.1 does (PSDrive and PSProvider, objects, left out).
const GET_CONTENT_MEMBERS: [(&str, &str); 3] = [
    (
        "PSPath",
        "Microsoft.PowerShell.Core\\FileSystem::C:\\pwshlib-sim\\content.txt",
    ),
    (
        "PSParentPath",
        "Microsoft.PowerShell.Core\\FileSystem::C:\\pwshlib-sim",
    ),
    ("PSChildName", "content.txt"),
];

/// A Get whose resource read its strings with Get-Content (the
/// `ets_strings` fault): before PowerShell 7.2 ConvertTo-Json writes each
/// such string as `{"value": …, "PSPath": …, …}` (fixed in 7.2 by
/// PowerShell/PowerShell#15665), unless the prelude the call runs with
/// copies them first (`ConvertTo-PwshlibPlainString`, which a string
/// instance without members needs: PowerShell keeps a reference type's
/// members beside the object). At the top level and in arrays.
pub(super) fn ets_strings(json: &mut Json, version: &str, defined: &dyn Fn(&str) -> bool) {
    let mut parts = version
        .trim()
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(5), parts.next().unwrap_or(0));
    let fixed = major > 7 || (major == 7 && minor >= 2);
    if fixed || defined("ConvertTo-PwshlibPlainString") {
        return;
    }
    let Json::Object(result) = json else {
        return;
    };
    for value in result.values_mut() {
        match value {
            Json::String(_) => with_members(value),
            Json::Array(items) => items
                .iter_mut()
                .filter(|i| i.is_string())
                .for_each(with_members),
            _ => {}
        }
    }
}

fn with_members(value: &mut Json) {
    let mut object = serde_json::Map::new();
    object.insert("value".to_owned(), value.take());
    for (name, member) in GET_CONTENT_MEMBERS {
        object.insert(name.to_owned(), json!(member));
    }
    object.insert("ReadCount".to_owned(), json!(1));
    *value = Json::Object(object);
}
