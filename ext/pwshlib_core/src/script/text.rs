//! A finished script: the real text for PowerShell, where its secrets sit,
//! and the two renderings made from that record (redacted for logs, marked
//! for the pwshlib 2.x Ruby methods).

use std::ops::Range;
use std::sync::OnceLock;

use uuid::Uuid;

use crate::bound::SecretBinding;
use crate::call_data::DscCallData;
use crate::error::{Error, Result};
use crate::literal::{read_single_quoted, TrackedText};
use crate::secrecy::{
    with_clean_marker, GUARDED_SECRET_CHARS, REDACTION_FALLBACK, REDACTION_MARKER,
};
use crate::templates;

/// A finished script: the lines of one DSC call, the secrets it refers to
/// by variable (bound by the host, `bound.rs`), and the plain texts of
/// those secrets.
///
/// Two forms come from it. The data form, [`Script::body`] with
/// [`Script::bindings`], is what a host that binds secrets receives: its
/// text holds no secret at all (issue 38). The inline form,
/// [`Script::text`], sets each bound variable by a literal in front of the
/// lines: for a manager that cannot bind, and, redacted, for `--debug`.
///
/// The prelude ([`templates::PRELUDE`], some 14 KB) is not copied in front
/// of each call's lines: a host holding it needs only the body, and the
/// whole text is joined on first use (a `--debug` dump, a manager that
/// takes whole scripts). Joining it on every call was a third of the cost
/// of an in-sync Get (`rake bench`).
#[derive(Debug, Default)]
pub struct Script {
    /// The lines of this call: the whole text when there is no prelude.
    body: String,
    /// Byte ranges of secret literals written into `body` itself: only in
    /// a script read from text (the pwshlib 2.x marked form); a built
    /// script binds its secrets instead.
    body_spans: Vec<Range<usize>>,
    /// The variables the body refers to, for the host to bind.
    bindings: Vec<SecretBinding>,
    /// The inline form's lines that set `bindings` by literals, and the
    /// byte ranges of those literals in it.
    prefix: String,
    prefix_spans: Vec<Range<usize>>,
    secrets: Vec<String>,
    /// Whether the text starts with the prelude, in front of `body`.
    with_prelude: bool,
    /// The prefix and the body, joined when first asked for.
    inline: OnceLock<String>,
    /// The prelude, the prefix and the body, joined when first asked for.
    joined: OnceLock<String>,
    /// The same call as data, which pwshlib's host receives instead of
    /// the text: a built script's; none for one read from text.
    call: Option<Box<DscCallData>>,
}

/// The joined texts are not copied: they are caches, made again on first
/// use. A `--debug` run joins the prelude (some 40 KB) into each script,
/// and the provider clones every call's script into its `DscScript`.
impl Clone for Script {
    fn clone(&self) -> Script {
        Script {
            body: self.body.clone(),
            body_spans: self.body_spans.clone(),
            bindings: self.bindings.clone(),
            prefix: self.prefix.clone(),
            prefix_spans: self.prefix_spans.clone(),
            secrets: self.secrets.clone(),
            with_prelude: self.with_prelude,
            inline: OnceLock::new(),
            joined: OnceLock::new(),
            call: self.call.clone(),
        }
    }
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.body == other.body
            && self.body_spans == other.body_spans
            && self.bindings == other.bindings
            && self.prefix == other.prefix
            && self.secrets == other.secrets
            && self.with_prelude == other.with_prelude
            && self.call == other.call
    }
}

impl Script {
    /// A script whose secrets, if any, are literals in its text.
    pub fn from_tracked(tracked: TrackedText) -> Script {
        let (body, body_spans, secrets) = tracked.into_parts();
        Script {
            body,
            body_spans,
            secrets,
            ..Script::default()
        }
    }

    /// A script whose body refers to `bindings` by variable; `secrets` are
    /// their plain texts (for the redaction's checks).
    pub(super) fn bound(
        body: String,
        bindings: Vec<SecretBinding>,
        secrets: Vec<String>,
    ) -> Result<Script> {
        let (prefix, prefix_spans, mut prefix_secrets) =
            super::inline::inline_lines(&bindings)?.into_parts();
        prefix_secrets.extend(secrets);
        Ok(Script {
            body,
            bindings,
            prefix,
            prefix_spans,
            secrets: prefix_secrets,
            ..Script::default()
        })
    }

    /// This script with [`templates::PRELUDE`] in front (it ends with a
    /// newline, a test checks, so the body starts right after it).
    pub(super) fn with_prelude(self) -> Script {
        Script {
            with_prelude: true,
            joined: OnceLock::new(),
            ..self
        }
    }

    /// This script with the call as data beside it.
    pub(super) fn with_call(self, call: DscCallData) -> Script {
        Script {
            call: Some(Box::new(call)),
            ..self
        }
    }

    /// Sets the resource's timeout in the call as data.
    pub fn set_call_timeout(&mut self, timeout_ms: Option<u64>) {
        if let Some(call) = self.call.as_deref_mut() {
            call.timeout_ms = timeout_ms;
        }
    }

    /// The call as data: what pwshlib's host receives (docs/protocol.md,
    /// "DSC calls as data"). None for a script read from text.
    pub fn call(&self) -> Option<&DscCallData> {
        self.call.as_deref()
    }

    /// How many leading bytes of [`Script::text`] are the prelude.
    fn prelude_len(&self) -> usize {
        if self.with_prelude {
            templates::PRELUDE.len()
        } else {
            0
        }
    }

    /// The whole text PowerShell runs when nothing is bound: the prelude,
    /// the lines that set the bound variables by literals, the body. Never
    /// log it.
    pub fn text(&self) -> &str {
        if !self.with_prelude {
            return self.inline_body();
        }
        self.joined.get_or_init(|| {
            let inline = self.inline_body();
            let mut text = String::with_capacity(templates::PRELUDE.len() + inline.len());
            text.push_str(templates::PRELUDE);
            text.push_str(inline);
            text
        })
    }

    /// True when the text starts with [`templates::PRELUDE`], so that a host
    /// holding the prelude needs only the body.
    pub fn has_prelude(&self) -> bool {
        self.with_prelude
    }

    /// The lines of this call alone, in the data form: the text after the
    /// prelude, referring to [`Script::bindings`] by variable. A built
    /// script holds no secret here.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The variables [`Script::body`] refers to, for the host to bind.
    pub fn bindings(&self) -> &[SecretBinding] {
        &self.bindings
    }

    /// The lines of this call in the inline form: the bound variables set
    /// by literals, then the body. What a manager that holds the prelude
    /// but cannot bind runs. Never log it.
    pub fn inline_body(&self) -> &str {
        if self.prefix.is_empty() {
            return &self.body;
        }
        self.inline.get_or_init(|| {
            let mut text = String::with_capacity(self.prefix.len() + self.body.len());
            text.push_str(&self.prefix);
            text.push_str(&self.body);
            text
        })
    }

    /// Byte ranges of the secret literals in [`Script::text`], in order.
    pub fn secret_spans(&self) -> Vec<Range<usize>> {
        let shift = self.prelude_len();
        let body_shift = shift + self.prefix.len();
        self.prefix_spans
            .iter()
            .map(|span| span.start + shift..span.end + shift)
            .chain(
                self.body_spans
                    .iter()
                    .map(|span| span.start + body_shift..span.end + body_shift),
            )
            .collect()
    }

    /// Byte ranges of the secret literals in [`Script::inline_body`], in
    /// order.
    pub fn inline_secret_spans(&self) -> Vec<Range<usize>> {
        let shift = self.prefix.len();
        self.prefix_spans
            .iter()
            .cloned()
            .chain(
                self.body_spans
                    .iter()
                    .map(|span| span.start + shift..span.end + shift),
            )
            .collect()
    }

    /// The text between the secrets: everything the redacted rendering keeps.
    pub fn public_pieces(&self) -> Vec<&str> {
        let text = self.text();
        let spans = self.secret_spans();
        let mut pieces = Vec::with_capacity(spans.len() + 1);
        let mut at = 0;
        for span in spans {
            pieces.push(&text[at..span.start]);
            at = span.end;
        }
        pieces.push(&text[at..]);
        pieces
    }

    /// The secrets that must not occur in a redacted rendering: those of at
    /// least [`GUARDED_SECRET_CHARS`] characters that the public text does
    /// not itself contain (a secret equal to a public value is public).
    /// Each line of a secret that spans lines counts too: a log may show
    /// one line alone.
    pub fn guarded_secrets(&self) -> Vec<&str> {
        let pieces = self.public_pieces();
        let mut guarded: Vec<&str> = self
            .secrets
            .iter()
            .flat_map(|s| {
                let lines = s
                    .contains(['\n', '\r'])
                    .then(|| s.split(['\n', '\r']).flat_map(|l| [l, l.trim()]))
                    .into_iter()
                    .flatten();
                std::iter::once(s.as_str()).chain(lines)
            })
            .filter(|s| s.chars().count() >= GUARDED_SECRET_CHARS)
            .filter(|s| !pieces.iter().any(|piece| piece.contains(s)))
            .collect();
        guarded.sort_unstable();
        guarded.dedup();
        guarded
    }

    /// Every secret span replaced by `marker`, whatever the marker.
    pub fn redacted_with(&self, marker: &str) -> String {
        self.public_pieces().join(marker)
    }

    /// The text for logs: every secret literal replaced by
    /// [`REDACTION_MARKER`], or, if a secret would then still show (say the
    /// secret is that marker text), by a random marker that lets none show.
    pub fn redacted(&self) -> String {
        if self.body_spans.is_empty() && self.prefix_spans.is_empty() {
            return self.text().to_owned();
        }
        let guarded = self.guarded_secrets();
        let clean = |candidate: &str| !guarded.iter().any(|s| candidate.contains(s));
        with_clean_marker(REDACTION_MARKER, |marker| self.redacted_with(marker), clean)
            .unwrap_or_else(|| REDACTION_FALLBACK.to_owned())
    }

    /// [`Script::redacted`] without the prelude in front: this call's own
    /// lines, for a `--debug` that shows the prelude once per host session.
    /// The prelude holds no secret (every span lies after it), so it is the
    /// redacted text's untouched start.
    pub fn redacted_body(&self) -> String {
        let whole = self.redacted();
        if !self.with_prelude {
            return whole;
        }
        match whole.strip_prefix(templates::PRELUDE) {
            Some(body) => body.to_owned(),
            None => whole,
        }
    }

    /// The "marked text" form, for the pwshlib 2.x Ruby methods that pass a
    /// script around as one String (`ps_script_content`, `redact_secrets`,
    /// `remove_secret_identifiers`): each secret literal sits between two
    /// copies of a block comment holding a per-process random token. It is
    /// still valid PowerShell. Fails only if the script itself contains the
    /// token, which would make the form ambiguous.
    pub fn marked(&self) -> Result<String> {
        let marker = secret_marker();
        let text = self.text();
        if text.contains(marker_token()) {
            return Err(Error::InvalidValue {
                attribute: "script".into(),
                message: "a value contains pwshlib's secret marker".into(),
            });
        }
        let spans = self.secret_spans();
        let mut out = String::with_capacity(text.len() + 2 * marker.len() * spans.len());
        let mut at = 0;
        for span in spans {
            out.push_str(&text[at..span.start]);
            out.push_str(marker);
            out.push_str(&text[span.clone()]);
            out.push_str(marker);
            at = span.end;
        }
        out.push_str(&text[at..]);
        Ok(out)
    }

    /// Reads the marked text form back. Text without markers is a script
    /// without secrets; an unpaired marker makes the rest of the text secret.
    pub fn from_marked(marked: &str) -> Script {
        let mut text = String::with_capacity(marked.len());
        let mut secret_spans = Vec::new();
        let mut secrets = Vec::new();
        for (index, part) in marked.split(secret_marker()).enumerate() {
            if index % 2 == 1 && !part.is_empty() {
                secret_spans.push(text.len()..text.len() + part.len());
                secrets.push(part.to_owned());
                if let Some((value, length)) = read_single_quoted(part) {
                    if length == part.len() {
                        secrets.push(value);
                    }
                }
            }
            text.push_str(part);
        }
        // A marked text that begins with this build's prelude (what
        // `ps_script_content` returns) keeps the split.
        let prelude_len = templates::PRELUDE.len();
        let with_prelude = text.starts_with(templates::PRELUDE)
            && secret_spans
                .first()
                .is_none_or(|span| span.start >= prelude_len);
        if !with_prelude {
            return Script {
                body: text,
                body_spans: secret_spans,
                secrets,
                ..Script::default()
            };
        }
        Script {
            body: text[prelude_len..].to_owned(),
            body_spans: secret_spans
                .into_iter()
                .map(|span| span.start - prelude_len..span.end - prelude_len)
                .collect(),
            secrets,
            with_prelude,
            ..Script::default()
        }
    }
}

fn marker_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| format!("PuppetSensitive:{}", Uuid::new_v4().simple()))
}

/// The block comment that brackets each secret in the marked text form.
pub fn secret_marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| format!("<#{}#>", marker_token()))
}
