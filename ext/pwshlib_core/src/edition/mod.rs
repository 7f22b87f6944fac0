//! Which PowerShell a DSC module runs on: Windows PowerShell 5.1
//! (`Desktop`) or PowerShell 7 (`Core`), from what the module's manifest
//! declares (`CompatiblePSEditions`, `PowerShellVersion`), the agent's
//! `PWSHLIB_EDITIONS` (a module's edition, and `*`: the default for a
//! module that runs on both) and the platform. The binding asks once per
//! run per manifest ([`ManifestMemo`]) and hands the answer to the spine
//! with the call, which asks `Pwsh::Manager` for that edition's host.
//!
//! By job: this file the choice and its messages; `manifest.rs` the
//! manifest read as data.

pub mod manifest;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;

pub use manifest::{parse_manifest, DataValue};

use crate::call_data::DscCallData;

/// The agent's per-module editions: `Name=Desktop`, `Name=Core`, and `*=…`
/// for the default of a module that runs on both, separated by `,` or `;`.
pub const EDITIONS_VARIABLE: &str = "PWSHLIB_EDITIONS";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edition {
    /// Windows PowerShell 5.1 (`powershell.exe`).
    Desktop,
    /// PowerShell 7 (`pwsh`).
    Core,
}

impl Edition {
    /// `Desktop` or `Core`, as `$PSVersionTable.PSEdition` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Edition::Desktop => "Desktop",
            Edition::Core => "Core",
        }
    }

    fn parse(text: &str) -> Option<Edition> {
        [Edition::Desktop, Edition::Core]
            .into_iter()
            .find(|edition| edition.as_str().eq_ignore_ascii_case(text.trim()))
    }

    /// The PowerShell of the edition, for messages.
    pub fn product(self) -> &'static str {
        match self {
            Edition::Desktop => "Windows PowerShell 5.1",
            Edition::Core => "PowerShell 7",
        }
    }
}

/// What a manifest says about the editions a module runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// Neither key (or no manifest): the module runs as every module ran
    /// before editions were chosen.
    Nothing,
    /// Both editions.
    Either,
    /// One edition, and the declaration that says so (for messages).
    Only(Edition, String),
}

/// What a manifest's entries declare.
///
/// # Errors
/// An edition PowerShell does not know, a `PowerShellVersion` that is not
/// a version, or declarations that leave no edition.
pub fn declared_by(entries: &[(String, DataValue)]) -> Result<Declared, String> {
    let find = |key: &str| {
        entries
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    };
    let listed = find("CompatiblePSEditions")
        .map(listed_editions)
        .transpose()?;
    let needs_core = find("PowerShellVersion").map(needs_core).transpose()?;
    let listed = listed.filter(|editions| !editions.is_empty());
    match (listed, needs_core) {
        (None, None | Some(None)) => Ok(Declared::Nothing),
        (None, Some(Some(version))) => Ok(Declared::Only(
            Edition::Core,
            format!("PowerShellVersion = '{version}'"),
        )),
        (Some(editions), needs) => {
            let written = editions
                .iter()
                .map(|e| format!("'{}'", e.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            let declaration = format!("CompatiblePSEditions = @({written})");
            let core = editions.contains(&Edition::Core);
            match (editions.contains(&Edition::Desktop), needs) {
                (_, Some(Some(version))) if !core => Err(format!(
                    "{declaration} and PowerShellVersion = '{version}' leave no PowerShell to run on"
                )),
                (_, Some(Some(version))) => Ok(Declared::Only(
                    Edition::Core,
                    format!("{declaration} and PowerShellVersion = '{version}'"),
                )),
                (true, _) if core => Ok(Declared::Either),
                (true, _) => Ok(Declared::Only(Edition::Desktop, declaration)),
                (false, _) => Ok(Declared::Only(Edition::Core, declaration)),
            }
        }
    }
}

fn listed_editions(value: &DataValue) -> Result<Vec<Edition>, String> {
    let items = match value {
        DataValue::Array(items) => items.as_slice(),
        one => std::slice::from_ref(one),
    };
    let mut editions = Vec::new();
    for item in items {
        let DataValue::Text(text) = item else {
            return Err("CompatiblePSEditions holds something other than strings".into());
        };
        let edition = Edition::parse(text).ok_or_else(|| {
            format!("CompatiblePSEditions names '{text}', which is neither 'Desktop' nor 'Core'")
        })?;
        if !editions.contains(&edition) {
            editions.push(edition);
        }
    }
    Ok(editions)
}

/// `Some(version)` when `PowerShellVersion` asks for 6 or later, which
/// only PowerShell 7 (Core) is: Windows PowerShell stops at 5.1, whose
/// `Import-Module` refuses such a manifest (`ModuleCmdletBase`'s manifest
/// check, `Modules_InsufficientPowerShellVersion`).
fn needs_core(value: &DataValue) -> Result<Option<String>, String> {
    let text = match value {
        DataValue::Text(text) | DataValue::Number(text) => text.trim(),
        _ => return Err("PowerShellVersion is not a version".into()),
    };
    let major = text
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok())
        .filter(|_| {
            text.split('.')
                .skip(1)
                .all(|part| part.parse::<u32>().is_ok())
        })
        .ok_or_else(|| format!("PowerShellVersion '{text}' is not a version"))?;
    Ok((major >= 6).then(|| text.to_owned()))
}

/// The manifest of `call`'s module in its vendored folder: the call's own
/// (a MOF resource with a version), else `<folder>/<Name>/<Name>.psd1`,
/// else under a version folder. None when the module is not vendored (the
/// host finds it on PSModulePath) or has no manifest there.
pub fn manifest_path(call: &DscCallData) -> Option<String> {
    let folder = call.vendored_path.as_deref()?;
    let name = &call.module.name;
    let mut candidates = Vec::new();
    candidates.extend(call.module.path.clone());
    candidates.push(format!("{folder}/{name}/{name}.psd1"));
    if let Some(version) = &call.module.version {
        candidates.push(format!("{folder}/{name}/{version}/{name}.psd1"));
    }
    candidates
        .into_iter()
        .find(|path| Path::new(path).is_file())
}

/// What the manifest at `path` declares.
///
/// # Errors
/// The manifest cannot be read, or is not a data file pwshlib can read.
pub fn read_declared(path: &str) -> Result<Declared, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("its manifest {path} cannot be read: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    parse_manifest(text)
        .and_then(|entries| declared_by(&entries))
        .map_err(|e| format!("its manifest {path} is not a module manifest pwshlib can read: {e}"))
}

/// The manifests read in this run, by path: the binding empties it when a
/// run begins, so an upgraded module is read again.
#[derive(Debug, Default)]
pub struct ManifestMemo {
    by_path: HashMap<String, Result<Declared, String>>,
}

impl ManifestMemo {
    pub fn clear(&mut self) {
        self.by_path.clear();
    }

    /// What the manifest at `path` declares, read on its first ask.
    ///
    /// # Errors
    /// As [`read_declared`], remembered.
    pub fn declared(&mut self, path: &str) -> Result<Declared, String> {
        self.by_path
            .entry(path.to_owned())
            .or_insert_with(|| read_declared(path))
            .clone()
    }

    /// What `call`'s module declares, its manifest found and read on the
    /// first call of the module in the run (keyed by folder, name and
    /// version, so that later calls look nothing up on disk).
    ///
    /// # Errors
    /// As [`read_declared`], remembered.
    pub fn declared_for(&mut self, call: &DscCallData) -> Result<Declared, String> {
        let Some(folder) = call.vendored_path.as_deref() else {
            return Ok(Declared::Nothing);
        };
        let module = &call.module;
        let version = module.version.as_deref().unwrap_or("");
        let key = format!("{folder}\0{}\0{version}", module.name);
        self.by_path
            .entry(key)
            .or_insert_with(|| {
                manifest_path(call).map_or(Ok(Declared::Nothing), |path| read_declared(&path))
            })
            .clone()
    }

    /// How many manifests were read in this run.
    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

/// The agent's choices (`PWSHLIB_EDITIONS`): per module, and the default
/// for a module that runs on both editions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    modules: Vec<(String, Edition)>,
    default: Option<Edition>,
}

impl Overrides {
    /// `PWSHLIB_EDITIONS` as the agent has it now.
    ///
    /// # Errors
    /// As [`Overrides::parse`].
    pub fn from_env() -> Result<Overrides, String> {
        std::env::var(EDITIONS_VARIABLE).map_or(Ok(Overrides::default()), |text| Self::parse(&text))
    }

    /// `Name=Edition` entries separated by `,` or `;`; `*` is the default.
    ///
    /// # Errors
    /// An entry that is not `Name=Desktop` or `Name=Core`.
    pub fn parse(text: &str) -> Result<Overrides, String> {
        let mut overrides = Overrides::default();
        for entry in text
            .split([',', ';'])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let parsed = entry
                .split_once('=')
                .and_then(|(name, edition)| Some((name.trim(), Edition::parse(edition)?)))
                .filter(|(name, _)| !name.is_empty());
            let Some((name, edition)) = parsed else {
                return Err(format!(
                    "{EDITIONS_VARIABLE}: '{entry}' is not Module=Desktop or Module=Core"
                ));
            };
            if name == "*" {
                overrides.default = Some(edition);
            } else {
                overrides.modules.push((name.to_owned(), edition));
            }
        }
        Ok(overrides)
    }

    fn for_module(&self, module: &str) -> Option<Edition> {
        self.modules
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(module))
            .map(|(_, edition)| *edition)
    }
}

/// The host a module's calls go to, and why (for the message when that
/// PowerShell is not there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostChoice {
    pub module: String,
    pub edition: Edition,
    pub reason: String,
}

impl HostChoice {
    /// The failure of a call whose PowerShell is not installed:
    /// `not_found` is the manager's account of where it looked.
    pub fn unavailable(&self, not_found: &str) -> String {
        format!(
            "the DSC module '{}' runs on {} ({}), which was not found: {not_found}",
            self.module,
            self.edition.product(),
            self.reason
        )
    }
}

/// The edition `module`'s calls run on: the agent's choice for it, else
/// the one its manifest allows, else (both allowed) the agent's default,
/// else Windows PowerShell 5.1 on Windows and PowerShell 7 elsewhere (the
/// only one there is). None when the manifest declares nothing: the call
/// goes where every call went before ([`Declared::Nothing`]).
///
/// A Desktop-only module goes to 5.1 although PowerShell 7 would import
/// it: 7 checks `CompatiblePSEditions` only for modules in the System32
/// module path (PowerShell's `CompatiblePSEditions.Module.Tests.ps1`), and
/// such a module fails later, at its first call of WMI or of the .NET
/// Framework.
///
/// # Errors
/// The message the module's resources fail with: an unreadable manifest.
pub fn choose(
    module: &str,
    declared: impl FnOnce() -> Result<Declared, String>,
    overrides: &Overrides,
    on_windows: bool,
) -> Result<Option<HostChoice>, String> {
    let choice = |edition: Edition, reason: String| {
        Some(HostChoice {
            module: module.to_owned(),
            edition,
            reason,
        })
    };
    if let Some(edition) = overrides.for_module(module) {
        let reason = format!("{EDITIONS_VARIABLE} names {} for it", edition.as_str());
        return Ok(choice(edition, reason));
    }
    let declared = declared().map_err(|e| format!("the DSC module '{module}': {e}"))?;
    Ok(match declared {
        Declared::Nothing => None,
        Declared::Only(edition, declaration) => {
            choice(edition, format!("its manifest declares {declaration}"))
        }
        Declared::Either => match overrides.default {
            Some(edition) => choice(
                edition,
                format!(
                    "it runs on both, and {EDITIONS_VARIABLE} names {} for '*'",
                    edition.as_str()
                ),
            ),
            None if on_windows => choice(Edition::Desktop, "it runs on both".into()),
            None => choice(
                Edition::Core,
                "it runs on both; Windows PowerShell is Windows' only".into(),
            ),
        },
    })
}
