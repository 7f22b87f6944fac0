//! The host's parse check: every script must parse as PowerShell. The check
//! itself is `pwshlib_pslint` (the same for every caller); this gives
//! its refusal the host's wording.

use pwshlib_pslint::{self as pslint, SyntaxError, SyntaxErrorKind};

/// The script's syntax tree, or why PowerShell would refuse it (a message
/// saying where).
pub fn parse(code: &str) -> Result<tree_sitter::Tree, String> {
    pslint::parse(code).map_err(|error| refusal(&error))
}

/// The host's error message for a script that does not parse.
pub fn refusal(error: &SyntaxError) -> String {
    let what = match error.kind {
        SyntaxErrorKind::NoGrammar => {
            return format!("pwshlib-sim: cannot load the PowerShell grammar ({error})")
        }
        SyntaxErrorKind::Missing(_) => "missing token",
        SyntaxErrorKind::Unexpected(_) => "syntax error",
        SyntaxErrorKind::Nul => "NUL character",
    };
    format!(
        "pwshlib-sim: the script does not parse as PowerShell ({what} at line {}, column {})",
        error.line, error.column
    )
}
