//! Windows PowerShell 5.1 refusing a module written for a newer
//! PowerShell. `Import-Module` reads the manifest's `PowerShellVersion` and
//! stops when it is above the running version (ModuleCmdletBase's manifest
//! check: the message `ModuleManifestInsufficientPowerShellVersion`, the
//! error id `Modules_InsufficientPowerShellVersion`, the category
//! ResourceUnavailable), so every resource of such a module fails on a 5.1
//! host, directly and through Invoke-DscResource alike. `CompatiblePSEditions`
//! is not checked there (PowerShell 7 checks it, for System32's modules
//! only), so only the version is. docs/proven-where.md, "each module on its
//! edition".

use std::path::Path;

use pwshlib_core::edition::manifest::{parse_manifest, DataValue};
use serde_json::Value as Json;

use super::Invocation;
use crate::state::get_ci;

/// The Windows PowerShell 5.1 the simulator plays, as `$PSVersionTable`
/// reports it on Windows Server 2019.
pub const PLAYED_DESKTOP_VERSION: &str = "5.1.17763.1";

/// The error 5.1's `Import-Module` gives for the call's module, or None
/// when its manifest (in the vendored folder) asks for no newer version.
pub fn insufficient_version(invocation: &Invocation) -> Option<String> {
    let path = manifest_of(invocation)?;
    let text = std::fs::read_to_string(&path).ok()?;
    let entries = parse_manifest(text.strip_prefix('\u{feff}').unwrap_or(&text)).ok()?;
    let required = entries
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("PowerShellVersion"))
        .and_then(|(_, value)| match value {
            DataValue::Text(text) | DataValue::Number(text) => Some(text.trim().to_owned()),
            _ => None,
        })?;
    (numbers(&required) > numbers(PLAYED_DESKTOP_VERSION)).then(|| {
        format!(
            "The version of Windows PowerShell on this computer is '{PLAYED_DESKTOP_VERSION}'. The module '{path}' requires a minimum Windows PowerShell version of '{required}' to run. Verify that you have the minimum required version of Windows PowerShell installed, and then try again."
        )
    })
}

/// `7.0` as `[7, 0]`; a part that is not a number ends it.
fn numbers(version: &str) -> Vec<u32> {
    version
        .split('.')
        .map_while(|part| part.trim().parse().ok())
        .collect()
}

/// The manifest `Import-Module` would read: the ModuleName when it is a
/// `.psd1`, else `<vendored>/<Name>/<Name>.psd1` or under its version.
fn manifest_of(invocation: &Invocation) -> Option<String> {
    let module = invocation.module.to_json();
    let (name, version) = match &module {
        Json::Object(map) => (
            get_ci(map, "ModuleName").and_then(Json::as_str)?,
            get_ci(map, "ModuleVersion").and_then(Json::as_str),
        ),
        other => (other.as_str()?, None),
    };
    if name.to_ascii_lowercase().ends_with(".psd1") {
        return Some(name.to_owned());
    }
    let folder = invocation.vendored_path.as_deref()?;
    let mut candidates = vec![format!("{folder}/{name}/{name}.psd1")];
    candidates.extend(version.map(|version| format!("{folder}/{name}/{version}/{name}.psd1")));
    candidates
        .into_iter()
        .find(|path| Path::new(path).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psvalue::PsValue;
    use pwshlib_core::script::DscMethod;

    fn invocation_of(folder: &Path, module: &str) -> Invocation {
        Invocation {
            resource: "Thing".into(),
            method: DscMethod::Get,
            properties: Vec::new(),
            module: PsValue::Str(module.into()),
            through_invoke_dsc_resource: false,
            lcm_unless_system: false,
            vendored_path: Some(folder.to_string_lossy().into_owned()),
        }
    }

    fn module_declaring(folder: &Path, name: &str, declaration: &str) {
        let dir = folder.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = format!("@{{\n    ModuleVersion = '1.0.0'\n    {declaration}\n}}\n");
        std::fs::write(dir.join(format!("{name}.psd1")), manifest).unwrap();
    }

    #[test]
    fn a_module_for_powershell_7_is_refused_as_5_1_refuses_it() {
        let folder =
            std::env::temp_dir().join(format!("pwshlib-sim-manifest-{}", std::process::id()));
        module_declaring(&folder, "CoreOnly", "PowerShellVersion = '7.0'");
        module_declaring(&folder, "Classic", "PowerShellVersion = '5.1'");
        module_declaring(&folder, "EditionsOnly", "CompatiblePSEditions = @('Core')");
        let refused = insufficient_version(&invocation_of(&folder, "CoreOnly")).unwrap();
        assert!(
            refused.contains("requires a minimum Windows PowerShell version of '7.0'"),
            "{refused}"
        );
        assert!(refused.contains("CoreOnly.psd1"), "{refused}");
        assert_eq!(
            insufficient_version(&invocation_of(&folder, "Classic")),
            None
        );
        assert_eq!(
            insufficient_version(&invocation_of(&folder, "EditionsOnly")),
            None
        );
        assert_eq!(
            insufficient_version(&invocation_of(&folder, "NotThere")),
            None
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
