//! The PowerShell we ship, as real `.ps1` files under `lib/templates/`,
//! embedded at build time so that no call reads them from disk.

/// `New-PsCredential`, the PSModulePath helpers and the Get-result
/// canonicalization (`ConvertTo-PwshlibCanonicalResult`).
pub const FUNCTIONS: &str =
    include_str!("../../../lib/templates/invoke_dsc_resource_functions.ps1");

/// `$Response` (the Set/Test/failure outcome) and the PSModulePath restore slot.
pub const PREAMBLE: &str = include_str!("../../../lib/templates/invoke_dsc_resource_preamble.ps1");

/// `Invoke-DscResource @InvokeParams` in try/catch/finally, then one line of
/// compressed JSON.
pub const POSTSCRIPT: &str =
    include_str!("../../../lib/templates/invoke_dsc_resource_postscript.ps1");

/// Every template with its file name, for the parse checks.
pub const ALL: [(&str, &str); 3] = [
    ("invoke_dsc_resource_functions.ps1", FUNCTIONS),
    ("invoke_dsc_resource_preamble.ps1", PREAMBLE),
    ("invoke_dsc_resource_postscript.ps1", POSTSCRIPT),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_cleanly() {
        for (name, text) in ALL {
            let errors = crate::pslint::parse_errors(text);
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }

    #[test]
    fn the_postscript_makes_the_one_call_and_emits_json() {
        assert!(POSTSCRIPT.contains("Invoke-DscResource @InvokeParams"));
        assert!(POSTSCRIPT.contains("ConvertTo-Json -InputObject $PwshlibOutput -Compress"));
        assert!(FUNCTIONS.contains("function New-PsCredential"));
    }
}
