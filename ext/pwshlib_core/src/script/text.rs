//! A finished script: the real text for PowerShell, where its secrets sit,
//! and the two renderings made from that record (redacted for logs, marked
//! for the pwshlib 2.x Ruby methods).

use std::ops::Range;
use std::sync::OnceLock;

use uuid::Uuid;

use super::inline::inline_lines;
use super::render::render;
use crate::bound::SecretBinding;
use crate::call_data::DscCallData;
use crate::error::{Error, Result};
use crate::literal::{read_single_quoted, TrackedText};
use crate::secrecy::{
    with_clean_marker, GUARDED_SECRET_CHARS, REDACTION_FALLBACK, REDACTION_MARKER,
};
use crate::templates;

/// A finished script: one DSC call, as data or as text.
///
/// A built script is the call as data ([`Script::call`]) and nothing
/// else: pwshlib's host receives that value, and nothing renders text for
/// it. Its text is rendered from the value on first use (`render.rs`),
/// only where text is the interface: [`Script::body`] with
/// [`Script::bindings`] for a manager that binds secrets but takes text,
/// [`Script::text`] (the bound variables set by literals in front) for
/// one that cannot bind, and the marked form for the pwshlib 2.x methods.
///
/// A script read from text (the pwshlib 2.x marked form, a formatted
/// value) has no call: its text is all there is, its secrets literals in
/// it.
///
/// The prelude ([`templates::PRELUDE`]) is not copied in front of each
/// call's lines: the whole text is joined on first use.
#[derive(Debug, Default)]
pub struct Script {
    /// The call as data: a built script's; none for one read from text.
    call: Option<Box<DscCallData>>,
    /// The lines of this call: rendered from `call` when first asked for,
    /// or the text read.
    body: OnceLock<String>,
    /// Byte ranges of secret literals written into `body` itself: only in
    /// a script read from text; a built script binds its secrets instead.
    body_spans: Vec<Range<usize>>,
    /// The plain texts of a read script's secrets.
    body_secrets: Vec<String>,
    /// The inline form's lines that set the bindings by literals, the
    /// byte ranges of those literals in them, and the secrets' plain texts:
    /// made when first asked for.
    prefix: OnceLock<Inline>,
    /// Whether the text starts with the prelude, in front of `body`.
    with_prelude: bool,
    /// The prefix and the body, joined when first asked for.
    inline: OnceLock<String>,
    /// The prelude, the prefix and the body, joined when first asked for.
    joined: OnceLock<String>,
}

#[derive(Debug, Default)]
struct Inline {
    text: String,
    spans: Vec<Range<usize>>,
    secrets: Vec<String>,
}

/// The rendered texts are not copied: they are caches, made again on
/// first use.
impl Clone for Script {
    fn clone(&self) -> Script {
        let body = match &self.call {
            Some(_) => OnceLock::new(),
            None => self.body.clone(),
        };
        Script {
            call: self.call.clone(),
            body,
            body_spans: self.body_spans.clone(),
            body_secrets: self.body_secrets.clone(),
            prefix: OnceLock::new(),
            with_prelude: self.with_prelude,
            inline: OnceLock::new(),
            joined: OnceLock::new(),
        }
    }
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.call == other.call
            && self.with_prelude == other.with_prelude
            && (self.call.is_some()
                || (self.body == other.body
                    && self.body_spans == other.body_spans
                    && self.body_secrets == other.body_secrets))
    }
}

impl Script {
    /// A script whose secrets, if any, are literals in its text.
    pub fn from_tracked(tracked: TrackedText) -> Script {
        let (body, body_spans, body_secrets) = tracked.into_parts();
        Script {
            body: OnceLock::from(body),
            body_spans,
            body_secrets,
            ..Script::default()
        }
    }

    /// The script of `call`, the prelude in front of its text.
    pub fn from_call(call: DscCallData) -> Script {
        Script {
            call: Some(Box::new(call)),
            with_prelude: true,
            ..Script::default()
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

    fn prefix(&self) -> &Inline {
        self.prefix.get_or_init(|| {
            // Every text of a built call was checked for NUL when the call
            // was made (`calling.rs`), so the literals can all be written.
            let (text, spans, secrets) = inline_lines(self.bindings())
                .map(TrackedText::into_parts)
                .unwrap_or_default();
            Inline {
                text,
                spans,
                secrets,
            }
        })
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
        self.body.get_or_init(|| match &self.call {
            Some(call) => render(call).body(call.route),
            None => String::new(),
        })
    }

    /// The variables [`Script::body`] refers to, for the host to bind.
    pub fn bindings(&self) -> &[SecretBinding] {
        self.call.as_deref().map_or(&[], |call| &call.secrets)
    }

    /// The lines of this call in the inline form: the bound variables set
    /// by literals, then the body. What a manager that holds the prelude
    /// but cannot bind runs. Never log it.
    pub fn inline_body(&self) -> &str {
        let prefix = &self.prefix().text;
        if prefix.is_empty() {
            return self.body();
        }
        self.inline.get_or_init(|| {
            let body = self.body();
            let mut text = String::with_capacity(prefix.len() + body.len());
            text.push_str(prefix);
            text.push_str(body);
            text
        })
    }

    /// Byte ranges of the secret literals in [`Script::text`], in order.
    pub fn secret_spans(&self) -> Vec<Range<usize>> {
        let shift = self.prelude_len();
        let prefix = self.prefix();
        let body_shift = shift + prefix.text.len();
        prefix
            .spans
            .iter()
            .map(|span| span.start + shift..span.end + shift)
            .chain(
                self.body_spans
                    .iter()
                    .map(|span| span.start + body_shift..span.end + body_shift),
            )
            .collect()
    }

    /// The secret literals of [`Script::inline_body`], in order, without
    /// rendering the call's text: those of the lines that set the bound
    /// variables, then those written into a read script's text.
    pub fn secret_literals(&self) -> Vec<&str> {
        let prefix = self.prefix();
        let body = if self.body_spans.is_empty() {
            ""
        } else {
            self.body()
        };
        prefix
            .spans
            .iter()
            .map(|span| &prefix.text[span.clone()])
            .chain(self.body_spans.iter().map(|span| &body[span.clone()]))
            .collect()
    }

    /// Byte ranges of the secret literals in [`Script::inline_body`], in
    /// order.
    pub fn inline_secret_spans(&self) -> Vec<Range<usize>> {
        let prefix = self.prefix();
        let shift = prefix.text.len();
        prefix
            .spans
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
            .prefix()
            .secrets
            .iter()
            .chain(&self.body_secrets)
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
        if self.body_spans.is_empty() && self.prefix().spans.is_empty() {
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
                body: OnceLock::from(text),
                body_spans: secret_spans,
                body_secrets: secrets,
                ..Script::default()
            };
        }
        Script {
            body: OnceLock::from(text[prelude_len..].to_owned()),
            body_spans: secret_spans
                .into_iter()
                .map(|span| span.start - prelude_len..span.end - prelude_len)
                .collect(),
            body_secrets: secrets,
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
