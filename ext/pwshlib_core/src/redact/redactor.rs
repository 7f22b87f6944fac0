//! The last line of defence: every form of a known secret scrubbed from text.

use aho_corasick::{AhoCorasick, MatchKind};

use crate::literal::escape_quotes;
use crate::script::Script;
use crate::secrecy::{
    with_clean_marker, GUARDED_SECRET_CHARS, REDACTED_SENSITIVE, REDACTION_FALLBACK,
};
use crate::value::Value;

/// A JSON or debug rendering of a string without its enclosing quotes.
fn unquote(rendered: &str) -> &str {
    rendered
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(rendered)
}

/// Replaces every form of every known secret in text that came back from
/// PowerShell or is about to be shown: the plain text; the quote-doubled
/// form a single-quoted literal holds (`p''ss`, doubled smart quotes); the
/// JSON and Rust-debug escaped forms; each line of a secret that spans lines
/// (PowerShell quotes one line of the script in its errors); and the exact
/// literal text of every secret span of the script.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// The forms that must not appear in the output (those at least
    /// [`GUARDED_SECRET_CHARS`] long): the marker is chosen so that it does
    /// not spell one out again.
    guarded: Vec<String>,
    /// Every text to replace.
    forms: Vec<String>,
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// A redactor for the secrets inside these values (Sensitive anywhere).
    pub fn for_values<'v>(values: impl IntoIterator<Item = &'v Value>) -> Redactor {
        let mut redactor = Redactor::new();
        for value in values {
            redactor.add_value(value);
        }
        redactor
    }

    pub fn add_value(&mut self, value: &Value) {
        let mut texts = Vec::new();
        value.secret_texts(&mut texts);
        for text in texts {
            self.add_secret(&text);
        }
    }

    pub fn add_secret(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let escaped = escape_quotes(secret);
        if secret.chars().count() < GUARDED_SECRET_CHARS {
            // One to three characters occur in any text (`\` in every
            // Windows path): blanking them out everywhere would wreck every
            // message and, by the gaps, spell out the secret. Where the
            // secret stands as a whole quoted value it is replaced, however
            // it is quoted: a PowerShell literal (quotes doubled), a plain
            // double-quoted text, and a JSON string or a value in a log line
            // (escaped: `\` shows as "\\"). The positions that hold a
            // secret are marked before they are shown (redact::mark_result),
            // which hides them whatever their length.
            let json = serde_json::to_string(secret).unwrap_or_default();
            let debug = format!("{secret:?}");
            for form in [format!("'{escaped}'"), format!("\"{secret}\""), json, debug] {
                self.add_form(&form);
            }
        }
        // Each form by its own length, not the secret's: doubling quotes
        // makes a short secret (a smart quote, CR, LF) a form long enough
        // to be guarded, which a script excerpt can show whole.
        for form in [secret.to_owned(), escaped] {
            if form.chars().count() >= GUARDED_SECRET_CHARS {
                self.add_form(&form);
            }
            self.add_lines(&form);
        }
    }

    /// The literal text of every secret span of the script, as PowerShell
    /// may quote it back.
    pub fn add_script(&mut self, script: &Script) {
        for literal in script.secret_literals() {
            self.add_form(literal);
            self.add_lines(literal);
        }
    }

    /// A form as it is, and as it shows inside a JSON string (the host's
    /// output) or a string in a log line (Rust's debug escapes).
    fn add_form(&mut self, form: &str) {
        let json = serde_json::to_string(form).unwrap_or_default();
        let debug = format!("{form:?}");
        for variant in [form, unquote(&json), unquote(&debug)] {
            if variant.is_empty() || self.forms.iter().any(|f| f == variant) {
                continue;
            }
            if variant.chars().count() >= GUARDED_SECRET_CHARS {
                self.guarded.push(variant.to_owned());
            }
            self.forms.push(variant.to_owned());
        }
    }

    /// The lines of a text that spans lines, each as it may be quoted alone.
    /// Short lines are left alone: a two-letter line is no secret by itself
    /// and would blank out every word that holds it.
    fn add_lines(&mut self, form: &str) {
        if !form.contains(['\n', '\r']) {
            return;
        }
        for line in form.split(['\n', '\r']) {
            for piece in [line, line.trim()] {
                if piece.chars().count() >= GUARDED_SECRET_CHARS {
                    self.add_form(piece);
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every form of every secret replaced by the redaction
    /// marker, in one pass (so a marker is never searched again), longest
    /// form first. If the marker itself would let a secret show (a secret
    /// that spells out part of it), a random marker is used instead.
    pub fn scrub(&self, text: &str) -> String {
        if self.forms.is_empty() {
            return text.to_owned();
        }
        let Ok(searcher) = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&self.forms)
        else {
            return REDACTION_FALLBACK.to_owned();
        };
        let with = |marker: &str| {
            let markers = vec![marker; self.forms.len()];
            searcher.replace_all(text, &markers)
        };
        let clean = |candidate: &str| !self.guarded.iter().any(|s| candidate.contains(s.as_str()));
        with_clean_marker(REDACTED_SENSITIVE, with, clean)
            .unwrap_or_else(|| with(REDACTION_FALLBACK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbing_replaces_escaped_and_split_forms_in_one_pass() {
        let mut redactor = Redactor::new();
        redactor.add_secret("p'ss\u{2019}word\nsecond line");
        let message =
            "At line:3 char:9\n+ ... -Password 'p''ss\u{2019}\u{2019}word\n+ second line' ...";
        let scrubbed = redactor.scrub(message);
        assert!(!scrubbed.contains("p''ss"), "{scrubbed}");
        assert!(!scrubbed.contains("second line"), "{scrubbed}");
        assert!(
            scrubbed.starts_with("At line:3 char:9\n+ ... -Password '"),
            "{scrubbed}"
        );
    }

    #[test]
    fn a_secret_that_spells_the_marker_gets_another_marker() {
        let mut redactor = Redactor::new();
        redactor.add_secret(REDACTED_SENSITIVE);
        redactor.add_secret("value");
        let scrubbed = redactor.scrub(&format!("x {REDACTED_SENSITIVE} value y"));
        assert!(!scrubbed.contains(REDACTED_SENSITIVE), "{scrubbed}");
        assert!(!scrubbed.contains("value"), "{scrubbed}");
        assert!(
            scrubbed.starts_with("x ") && scrubbed.ends_with(" y"),
            "{scrubbed}"
        );
    }
}
