//! One DSC call: built once as data ([`crate::call_data::DscCallData`],
//! `calling.rs`, where every value is typed and checked), and rendered as
//! script text from that value only where text is the interface
//! (`render.rs`; docs/behavior.md §7 shows its shape). Secrets are bound
//! variables in both; nothing ever searches finished text for secrets.
//!
//! By job: `resource.rs` the [`InvocableResource`] a call is built from
//! (and its pwshlib 2.x hash); `calling.rs` the call as data; `shapes.rs`
//! what a Puppet value is as a DSC property; `render.rs` its text;
//! `inline.rs` the bound secrets set by literals, for a manager that
//! cannot bind; `text.rs` the [`Script`] (the call, and its text, secret
//! spans, redacted and marked renderings made on first use); `parts.rs`
//! the entry points ([`script_for`], [`build_script`]) and the
//! [`ScriptParts`] the pwshlib 2.x section methods return.

mod calling;
mod inline;
mod parts;
mod render;
mod resource;
mod shapes;
mod text;

pub use crate::call_data::{DscMethod, Route};
pub use calling::call_data;
pub use parts::{build_script, build_script_with, script_for, BoundText, ScriptParts};
pub use render::{render, Rendered, Section};
pub use resource::{passed_to_get, InvocableResource, InvokeParameter};
pub use text::{secret_marker, Script};

use uuid::Uuid;

/// The first line of every script.
pub const HEADER: &str =
    "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n";

/// The last line of every script: the prelude's function makes the call
/// and prints the outcome.
pub const INVOKE_CALL: &str = "Invoke-PwshlibDscResource -InvokeParams $InvokeParams";

/// Appended to [`INVOKE_CALL`] when the agent's environment says
/// `PWSHLIB_DSC_DIRECT=0`: the prelude then calls `Invoke-DscResource`
/// instead of the resource itself (the escape hatch). Carried
/// in the script because the host restores its own start environment
/// before every call, so it never sees the agent's current one.
pub const THROUGH_INVOKE_DSC_RESOURCE: &str = " -ThroughInvokeDscResource";

/// Appended to [`INVOKE_CALL`] when the agent's environment says
/// `PWSHLIB_DSC_DIRECT=system`: on Windows PowerShell
/// 5.1 a host that does not run as SYSTEM sends the call through
/// `Invoke-DscResource`, whose LCM runs the resource as SYSTEM, as pwshlib
/// 2.x did; as SYSTEM, and on PowerShell 7, the call stays direct.
pub const LCM_UNLESS_SYSTEM: &str = " -LcmUnlessSystem";

/// The agent's environment variable that turns direct invocation off.
pub const DIRECT_VARIABLE: &str = "PWSHLIB_DSC_DIRECT";

/// [`Route`] of the agent's `PWSHLIB_DSC_DIRECT`, read on every call.
pub fn route_by_env() -> Route {
    std::env::var(DIRECT_VARIABLE).map_or(Route::Direct, |value| route_by(&value))
}

/// [`Route`] of a given value of `PWSHLIB_DSC_DIRECT`.
pub fn route_by(value: &str) -> Route {
    if direct_disabled_by(value) {
        Route::Through
    } else if value.trim().eq_ignore_ascii_case("system") {
        Route::LcmUnlessSystem
    } else {
        Route::Direct
    }
}

/// Whether a value of `PWSHLIB_DSC_DIRECT` (read on every call, so a
/// change made by Ruby's `ENV` applies to the next call) asks for
/// `Invoke-DscResource`: `0`, `false`, `no` or `off`, in any case.
pub fn direct_disabled_by(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    )
}

/// Appended to [`INVOKE_CALL`], with the quoted folder, when the
/// resource's vendored folder is known: `Invoke-PwshlibDscResource` adds
/// it to PSModulePath for the call and puts the machine-level value back
/// in its own `finally` (the prelude's `Add-PwshlibVendoredModulePath` and
/// `Restore-PwshlibVendoredModulePath`). The lines before the call
/// (credentials, CIM instances) need no module, so nothing is changed
/// until the call starts. One command rather than an `Add` line and a
/// `try`/`finally` around the script: each command and block of a script
/// whose text is new to the host (every resource's is) is parsed and
/// bound anew, some 0.3 ms apiece on pwsh 7.6.9.
pub const VENDORED_PATH_PARAMETER: &str = " -VendoredPath ";

/// A fresh PowerShell variable name: `prefix` + a simple UUID.
pub fn random_variable_name(prefix: &str) -> String {
    format!("{prefix}{}", Uuid::new_v4().simple())
}
