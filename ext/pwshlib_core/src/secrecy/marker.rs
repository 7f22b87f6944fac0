//! The texts that stand where a secret was, and the rules for choosing one
//! that does not spell a secret out again.

use uuid::Uuid;

/// The text Puppet's `Sensitive#to_s` prints. Written once, here, for the
/// two constants below: the `#[doc]` of each says where it is used.
macro_rules! sensitive_text {
    () => {
        "#<Sensitive [value redacted]>"
    };
}

/// What a Sensitive value shows as in logs, errors and change messages
/// (Puppet's own rendering of one), and what [`crate::redact::Redactor`]
/// puts where a secret stood in text from PowerShell.
pub const REDACTED_SENSITIVE: &str = sensitive_text!();

/// What replaces a secret literal in the redacted rendering of a script:
/// [`REDACTED_SENSITIVE`] as a single-quoted string literal, so the redacted
/// script still reads as PowerShell.
pub const REDACTION_MARKER: &str = concat!("'", sensitive_text!(), "'");

/// The redacted rendering when every marker tried would let a secret show
/// (only crafted secrets that spell out marker fragments get here). Shorter
/// than the shortest guarded secret, so nothing can leak through it.
pub const REDACTION_FALLBACK: &str = "<#>";

/// Random markers tried after the standard one before giving up.
const MARKER_ATTEMPTS: usize = 64;

/// Secrets shorter than this are not guarded: `true` and `1` occur anywhere.
pub const GUARDED_SECRET_CHARS: usize = 4;

/// A marker that no text can predict, for when the standard marker would
/// spell a secret out. The `attempt` varies its first and last characters
/// too: a secret can straddle public text and a marker's fixed edges.
fn random_marker(attempt: usize) -> String {
    let id = Uuid::new_v4();
    match attempt % 3 {
        0 => format!("'{}'", id.simple()),
        1 => id.as_u128().to_string(),
        _ => format!("\"{}\"", id.simple()),
    }
}

/// The rendering `render` makes with the first marker that `clean` accepts:
/// `standard`, then up to `MARKER_ATTEMPTS` random markers. None when all
/// fail; the caller then shows [`REDACTION_FALLBACK`] in its own way.
pub fn with_clean_marker(
    standard: &str,
    render: impl Fn(&str) -> String,
    clean: impl Fn(&str) -> bool,
) -> Option<String> {
    let rendered = render(standard);
    if clean(&rendered) {
        return Some(rendered);
    }
    (0..MARKER_ATTEMPTS)
        .map(|attempt| render(&random_marker(attempt)))
        .find(|candidate| clean(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_marker_is_the_shown_marker_quoted() {
        assert_eq!(REDACTION_MARKER, format!("'{REDACTED_SENSITIVE}'"));
        assert_eq!(REDACTED_SENSITIVE, "#<Sensitive [value redacted]>");
        assert!(REDACTION_FALLBACK.chars().count() < GUARDED_SECRET_CHARS);
    }

    #[test]
    fn a_marker_that_shows_a_secret_is_replaced_by_a_random_one() {
        let render = |marker: &str| format!("x {marker} y");
        let standard = with_clean_marker("m", render, |_| true).unwrap();
        assert_eq!(standard, "x m y");
        let other = with_clean_marker("m", render, |text| !text.contains('m')).unwrap();
        assert!(other.starts_with("x ") && !other.contains(" m "), "{other}");
        assert_eq!(with_clean_marker("m", render, |_| false), None);
    }
}
