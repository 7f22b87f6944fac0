//! The PowerShell we ship, as real `.ps1` files under `lib/templates/`,
//! embedded at build time so that no call reads them from disk.

use std::sync::OnceLock;

/// The DSC prelude: `New-PsCredential`, the PSModulePath helpers, the
/// Get-result canonicalization and `Invoke-PwshlibDscResource` (the one DSC
/// call and its JSON outcome). It only defines functions, so a host can
/// define it once per session (docs/protocol.md, "Preludes").
///
/// One text from six files (lib/templates/dsc_prelude_*.ps1, one job
/// each, each under the 600-line cap), in this order, joined by the blank
/// line that separates two functions: values passed in, the
/// Invoke-DscResource cmdlet's side (machine PSModulePath, run-as user),
/// Get-result canonicalization, finding, indexing and importing a
/// resource's module, the direct path, the call itself.
pub const FUNCTIONS: &str = concat!(
    include_str!("../../../lib/templates/dsc_prelude_values.ps1"),
    "\n",
    include_str!("../../../lib/templates/dsc_prelude_cmdlet.ps1"),
    "\n",
    include_str!("../../../lib/templates/dsc_prelude_results.ps1"),
    "\n",
    include_str!("../../../lib/templates/dsc_prelude_modules.ps1"),
    "\n",
    include_str!("../../../lib/templates/dsc_prelude_direct.ps1"),
    "\n",
    include_str!("../../../lib/templates/dsc_prelude_call.ps1"),
);

/// The prelude's files, in [`FUNCTIONS`]' order, for the checks that read
/// them by name.
pub const PRELUDE_FILES: [&str; 6] = [
    "dsc_prelude_values.ps1",
    "dsc_prelude_cmdlet.ps1",
    "dsc_prelude_results.ps1",
    "dsc_prelude_modules.ps1",
    "dsc_prelude_direct.ps1",
    "dsc_prelude_call.ps1",
];

/// The prelude every invocation script relies on (the functions template).
pub const PRELUDE: &str = FUNCTIONS;

/// The name callers give `Pwsh::Manager#execute_with_prelude` for [`PRELUDE`].
pub const PRELUDE_NAME: &str = "dsc";

/// Names this build's prelude on the wire: its name and a hash of its text,
/// so that a host never runs a body against another build's functions.
pub fn prelude_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{PRELUDE_NAME}-{:016x}", fnv1a_64(PRELUDE.as_bytes())))
}

/// The functions the prelude defines, in order (`function Name {` lines).
pub fn prelude_function_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| defined_functions(PRELUDE))
}

/// The names of the top-level `function Name` definitions in `text`.
pub fn defined_functions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("function "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.trim_end_matches('{').to_owned())
        .filter(|name| !name.is_empty())
        .collect()
}

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is not).
fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Every template with its file name, for the parse checks: the prelude
/// whole (each file parses alone too: `tests/shipped_templates.rs`).
pub const ALL: [(&str, &str); 1] = [("dsc_prelude_*.ps1", FUNCTIONS)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_cleanly() {
        for (name, text) in ALL {
            let errors = pwshlib_pslint::parse_errors(text);
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }

    #[test]
    fn the_prelude_defines_the_call_and_the_helpers() {
        assert!(PRELUDE.contains("Invoke-DscResource @InvokeParams"));
        assert!(PRELUDE.contains("ConvertTo-Json -InputObject $PwshlibOutput -Compress"));
        assert_eq!(
            prelude_function_names(),
            [
                "New-PsCredential",
                "New-PwshlibEmbeddedInstance",
                "New-PwshlibCredentialInstance",
                "New-PwshlibEmbeddedInstanceArray",
                "Add-PwshlibVendoredModulePath",
                "Get-PwshlibModulePathKey",
                "Get-PwshlibProcessStamp",
                "Test-PwshlibModulePathOwner",
                "Remove-PwshlibModulePathEntry",
                "Clear-PwshlibStaleModulePath",
                "Add-PwshlibMachineModulePath",
                "Restore-PwshlibVendoredModulePath",
                "Invoke-PwshlibDscResourceCmdlet",
                "Get-PwshlibNonSystemUser",
                "ConvertTo-PwshlibPlainString",
                "ConvertTo-PwshlibCanonicalValue",
                "ConvertTo-PwshlibCanonicalResult",
                "Get-PwshlibDirectCache",
                "Get-PwshlibFileStamp",
                "Find-PwshlibDscModule",
                "Get-PwshlibDscModuleIndex",
                "Get-PwshlibDscModuleLayout",
                "Get-PwshlibDscModuleIndexInPowerShell",
                "Get-PwshlibFilesUnder",
                "Import-PwshlibDscModule",
                "Get-PwshlibDscClassType",
                "Resolve-PwshlibDscResource",
                "Assert-PwshlibRunnableResource",
                "Get-PwshlibUnresolvedMessage",
                "ConvertFrom-PwshlibCimValue",
                "Get-PwshlibGetTargetResourceParameter",
                "Test-PwshlibGetReturnsThis",
                "Select-PwshlibGetTargetResourceProperty",
                "Invoke-PwshlibDirect",
                "Invoke-PwshlibClassMethod",
                "Invoke-PwshlibScriptMethod",
                "Wait-PwshlibDirectCall",
                "Invoke-PwshlibDscCall",
                "Invoke-PwshlibDscCallThroughCmdlet",
                "Split-PwshlibStreams",
                "Invoke-PwshlibDscResource",
                "Assert-PwshlibRunAsCredential",
                "Assert-PwshlibNoResourceError",
                "Get-PwshlibMethodOutcome",
                "Get-PwshlibFailureOutcome"
            ]
        );
    }

    /// Defined once per session, the prelude must do nothing but define
    /// functions: every top-level line is a comment, blank, or inside a
    /// function.
    #[test]
    fn the_prelude_only_defines_functions() {
        let mut depth = 0isize;
        for line in PRELUDE.lines() {
            let trimmed = line.trim();
            if depth == 0 {
                assert!(
                    trimmed.is_empty()
                        || trimmed.starts_with('#')
                        || trimmed.starts_with("function "),
                    "top-level statement in the prelude: {line}"
                );
            }
            depth +=
                line.matches('{').count().cast_signed() - line.matches('}').count().cast_signed();
        }
        assert_eq!(depth, 0);
    }

    /// Every prelude file in lib/templates is in the prelude, in order,
    /// and nothing else is.
    #[test]
    fn the_prelude_is_its_files_joined_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates");
        let texts: Vec<String> = PRELUDE_FILES
            .iter()
            .map(|name| std::fs::read_to_string(dir.join(name)).expect(name))
            .collect();
        assert_eq!(PRELUDE, texts.join("\n"));
        let mut shipped: Vec<String> = std::fs::read_dir(&dir)
            .expect("lib/templates")
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with("dsc_prelude_") && name.ends_with(".ps1"))
            .collect();
        shipped.sort();
        let mut listed: Vec<String> = PRELUDE_FILES
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        listed.sort();
        assert_eq!(shipped, listed);
    }

    #[test]
    fn the_prelude_id_names_this_text() {
        assert!(prelude_id().starts_with("dsc-"));
        assert_eq!(prelude_id().len(), "dsc-".len() + 16);
        assert_ne!(fnv1a_64(b"a"), fnv1a_64(b"b"));
    }
}
