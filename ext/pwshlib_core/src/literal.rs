//! PowerShell literals, written into a [`TrackedText`] that records where
//! every secret lands while the text is written. Nothing here ever searches
//! finished text for secrets.

use std::collections::HashMap;
use std::ops::Range;

use crate::cim_type::CimType;
use crate::error::{Error, Result};
use crate::secrecy::peel;
use crate::value::{Map, Timestamp, Value};

/// The characters PowerShell's tokenizer treats as a single quote. Inside a
/// single-quoted literal each must be doubled, or it ends the literal.
pub const SINGLE_QUOTES: [char; 5] = ['\'', '\u{2018}', '\u{2019}', '\u{201A}', '\u{201B}'];

pub fn is_single_quote(c: char) -> bool {
    SINGLE_QUOTES.contains(&c)
}

/// Doubles every single-quote character, so the text can sit between `'…'`.
pub fn escape_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_escaped(&mut out, text);
    out
}

/// Appends `text` to `out` with every single-quote character doubled.
pub fn push_escaped(out: &mut String, text: &str) {
    // Every single quote but `'` is a non-ASCII character whose UTF-8 form
    // starts with the byte 0xE2: a text with neither byte has nothing to
    // double and is copied whole (most values: paths, names, words), not
    // character by character.
    if !text.bytes().any(|byte| byte == b'\'' || byte == 0xE2) {
        out.push_str(text);
        return;
    }
    let mut copied = 0;
    for (index, c) in text.char_indices() {
        if is_single_quote(c) {
            let end = index + c.len_utf8();
            out.push_str(&text[copied..end]);
            out.push(c);
            copied = end;
        }
    }
    out.push_str(&text[copied..]);
}

/// `text` as one single-quoted PowerShell literal. NUL cannot be written in a
/// single-quoted literal that the grammar accepts, so it is an error.
pub fn quote(text: &str) -> std::result::Result<String, NulInString> {
    if text.contains('\0') {
        return Err(NulInString);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    push_escaped(&mut out, text);
    out.push('\'');
    Ok(out)
}

/// A string held a NUL character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NulInString;

/// What PowerShell reads out of the single-quoted literal at the start of
/// `literal`: its value and the byte length of the literal. This is the
/// tokenizer's rule (a quote followed by a quote is one quote character, any
/// other quote ends the literal); tests use it to check [`quote`].
pub fn read_single_quoted(literal: &str) -> Option<(String, usize)> {
    let mut chars = literal.char_indices().peekable();
    match chars.next() {
        Some((_, c)) if is_single_quote(c) => {}
        _ => return None,
    }
    let mut value = String::new();
    while let Some((index, c)) = chars.next() {
        if is_single_quote(c) {
            match chars.peek() {
                Some(&(_, next)) if is_single_quote(next) => {
                    value.push(next);
                    chars.next();
                }
                _ => return Some((value, index + c.len_utf8())),
            }
        } else {
            value.push(c);
        }
    }
    None
}

/// Hashtable keys are written bare when PowerShell (and the grammar) read
/// them as a simple name; anything else is quoted.
pub fn is_bare_key(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A float in a form PowerShell parses back to the same double: Rust's
/// shortest round-trip text (`1.5`, `1e-7`, `1e300`). NaN and infinities have
/// no literal and Puppet cannot produce them, so they are refused.
pub fn format_float(value: f64) -> Option<String> {
    value.is_finite().then(|| format!("{value:?}"))
}

/// The PowerShell type that holds a CIM type, for typed arrays:
/// `String` → `string`, `UInt32` → `uint32`, an instance → `CimInstance`,
/// a name this library does not know → `object`.
pub fn powershell_type(cim_type: &CimType) -> &'static str {
    match cim_type {
        CimType::String => "string",
        CimType::Boolean => "bool",
        CimType::UInt8 => "byte",
        CimType::SInt8 => "sbyte",
        CimType::UInt16 => "uint16",
        CimType::SInt16 => "int16",
        CimType::UInt32 => "uint32",
        CimType::SInt32 => "int32",
        CimType::UInt64 => "uint64",
        CimType::SInt64 => "int64",
        CimType::Real32 => "single",
        CimType::Real64 => "double",
        CimType::Char16 => "char",
        CimType::DateTime => "DateTime",
        CimType::Credential => "PSCredential",
        CimType::Instance(_) => "CimInstance",
        CimType::Unknown(_) => "object",
    }
}

/// Text under construction plus the byte ranges of every secret written into
/// it and the plain texts of those secrets (for the redaction checks).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrackedText {
    text: String,
    spans: Vec<Range<usize>>,
    secrets: Vec<String>,
    secret_depth: usize,
    secret_start: usize,
}

impl TrackedText {
    pub fn new() -> Self {
        TrackedText::default()
    }

    /// Room for `capacity` bytes of text from the start, where the size is
    /// known: a script is grown once, not a doubling at a time.
    pub fn with_capacity(capacity: usize) -> Self {
        TrackedText {
            text: String::with_capacity(capacity),
            ..TrackedText::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn spans(&self) -> &[Range<usize>] {
        &self.spans
    }

    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn into_parts(self) -> (String, Vec<Range<usize>>, Vec<String>) {
        (self.text, self.spans, self.secrets)
    }

    /// True while a secret is being written.
    pub fn in_secret(&self) -> bool {
        self.secret_depth > 0
    }

    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends another tracked text, keeping its secret spans.
    pub fn append(&mut self, other: TrackedText) {
        let offset = self.text.len();
        let TrackedText {
            text,
            spans,
            secrets,
            ..
        } = other;
        self.text.push_str(&text);
        self.spans
            .extend(spans.into_iter().map(|r| r.start + offset..r.end + offset));
        self.secrets.extend(secrets);
    }

    /// Writes whatever `write` writes as one secret span (or as part of the
    /// enclosing one, when already inside a secret).
    pub fn secret<T>(&mut self, write: impl FnOnce(&mut Self) -> T) -> T {
        if self.secret_depth == 0 {
            self.secret_start = self.text.len();
        }
        self.secret_depth += 1;
        let result = write(self);
        self.secret_depth -= 1;
        if self.secret_depth == 0 && self.text.len() > self.secret_start {
            self.spans.push(self.secret_start..self.text.len());
        }
        result
    }

    /// Like [`TrackedText::secret`] when `is_secret`, else plain writing.
    pub fn maybe_secret<T>(&mut self, is_secret: bool, write: impl FnOnce(&mut Self) -> T) -> T {
        if is_secret {
            self.secret(write)
        } else {
            write(self)
        }
    }

    /// Notes the plain text of a secret leaf, so that redaction can check that
    /// no trace of it survives. Outside a secret it does nothing.
    fn note(&mut self, plain: &str) {
        if self.in_secret() && !plain.is_empty() {
            self.secrets.push(plain.to_owned());
        }
    }

    /// A single-quoted string literal. `attribute` names the value in errors.
    pub fn string(&mut self, text: &str, attribute: &str) -> Result<()> {
        let literal = quote(text).map_err(|NulInString| Error::InvalidValue {
            attribute: attribute.to_owned(),
            message: "a string with a NUL character cannot be passed to PowerShell".into(),
        })?;
        self.note(text);
        if self.in_secret() {
            // The escaped form is what an inline script holds; guard it too.
            let escaped = &literal[1..literal.len() - 1];
            if escaped != text {
                self.secrets.push(escaped.to_owned());
            }
        }
        self.push(&literal);
        Ok(())
    }

    /// A string that is a secret whatever it is wrapped in (passwords).
    pub fn secret_string(&mut self, text: &str, attribute: &str) -> Result<()> {
        self.secret(|w| w.string(text, attribute))
    }

    /// `[DateTime]'<ISO-8601>'`.
    pub fn datetime(&mut self, timestamp: Timestamp) {
        let iso = timestamp.to_iso8601();
        self.note(&iso);
        self.push("[DateTime]");
        let literal = format!("'{iso}'");
        self.push(&literal);
    }

    /// `[DateTime]'<text>'` for a date-time given as text.
    pub fn datetime_text(&mut self, text: &str, attribute: &str) -> Result<()> {
        self.push("[DateTime]");
        self.string(text, attribute)
    }

    /// A hashtable key: bare when it is a simple name and not a secret.
    pub fn key(&mut self, key: &Value, attribute: &str) -> Result<()> {
        match key {
            Value::Str(name) | Value::Symbol(name) if is_bare_key(name) && !self.in_secret() => {
                self.push(name);
                Ok(())
            }
            other => self.value(other, attribute),
        }
    }

    /// Any Puppet value as a PowerShell literal, with no type information:
    /// `$null`, `$true`, numbers, `'strings'`, `@(…)`, `@{…}`, `[DateTime]'…'`.
    /// Sensitive values at any depth become secret spans.
    pub fn value(&mut self, value: &Value, attribute: &str) -> Result<()> {
        match value {
            Value::Nil => self.push("$null"),
            Value::Bool(true) => self.push("$true"),
            Value::Bool(false) => self.push("$false"),
            Value::Int(i) => {
                let text = i.to_string();
                self.note(&text);
                self.push(&text);
            }
            Value::BigInt(text) => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Error::InvalidValue {
                        attribute: attribute.to_owned(),
                        message: "an integer that is not a decimal number".into(),
                    });
                }
                self.note(text);
                self.push(text);
            }
            Value::Float(f) => {
                let text = format_float(*f).ok_or_else(|| Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: format!("the number {f} has no PowerShell literal"),
                })?;
                self.note(&text);
                self.push(&text);
            }
            Value::Str(s) | Value::Symbol(s) => self.string(s, attribute)?,
            Value::Timestamp(t) => self.datetime(*t),
            Value::Sensitive(inner) => self.secret(|w| w.value(inner, attribute))?,
            Value::Array(items) => {
                self.push("@(");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.value(item, attribute)?;
                }
                self.push(")");
            }
            Value::Hash(map) => {
                self.refuse_case_duplicate_keys(map, attribute)?;
                self.push("@{");
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        self.push("; ");
                    }
                    self.key(k, attribute)?;
                    self.push(" = ");
                    let child = match k.key_name() {
                        Some(name) => format!("{attribute}.{name}"),
                        None => attribute.to_owned(),
                    };
                    self.value(v, &child)?;
                }
                self.push("}");
            }
        }
        Ok(())
    }
}

impl TrackedText {
    /// PowerShell compares hashtable keys without case: `@{Key = 1; key = 2}`
    /// is a parse error, and a CIM instance cannot hold both either. Refused
    /// here, naming the attribute path (and the keys, unless they are
    /// secret), rather than sent for PowerShell to reject.
    pub fn refuse_case_duplicate_keys(&self, map: &Map, attribute: &str) -> Result<()> {
        let Some((first, second)) = case_duplicate_keys(map) else {
            return Ok(());
        };
        let keys = if self.in_secret() {
            "two keys of a Sensitive hash".to_owned()
        } else {
            format!(
                "the keys {} and {}",
                quoted_name(first),
                quoted_name(second)
            )
        };
        Err(Error::InvalidValue {
            attribute: attribute.to_owned(),
            message: format!(
                "{keys} differ only in case; PowerShell compares hashtable keys without case, so it would refuse them"
            ),
        })
    }
}

fn quoted_name(name: &str) -> String {
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('\'');
    push_escaped(&mut quoted, name);
    quoted.push('\'');
    quoted
}

/// The first two String/Symbol keys of `map` that are equal without case
/// (Unicode lowercase, as PowerShell's case-insensitive comparer sees
/// letters beyond ASCII too).
pub fn case_duplicate_keys(map: &Map) -> Option<(&str, &str)> {
    let names = map.keys().filter_map(|key| peel(key).0.key_name());
    // The hashtables of one invocation have a few keys: each is compared
    // with those before it, with no lowered copies. A large one (a CIM
    // instance's hash, say) is indexed by its lowered keys instead.
    if map.len() <= SMALL_HASHTABLE {
        let names: Vec<&str> = names.collect();
        for (index, name) in names.iter().enumerate() {
            if let Some(first) = names[..index]
                .iter()
                .find(|earlier| same_name(earlier, name))
            {
                return Some((first, name));
            }
        }
        return None;
    }
    let mut seen: HashMap<String, &str> = HashMap::with_capacity(map.len());
    for name in names {
        if let Some(first) = seen.insert(name.to_lowercase(), name) {
            return Some((first, name));
        }
    }
    None
}

const SMALL_HASHTABLE: usize = 16;

/// Equal without case, as [`case_duplicate_keys`] compares (Unicode
/// lowercase; two ASCII names compared in place).
fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

/// Formats one value on its own (the Ruby `format` method).
pub fn format_value(value: &Value) -> Result<TrackedText> {
    let mut out = TrackedText::new();
    out.value(value, "value")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Map;

    fn text(value: &Value) -> String {
        format_value(value).unwrap().text().to_owned()
    }

    #[test]
    fn case_duplicates_found_alike_in_small_and_large_hashtables() {
        let map_of = |names: &[&str]| {
            Map(names
                .iter()
                .map(|n| (Value::Str((*n).into()), Value::Nil))
                .collect())
        };
        let filler: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
        for (names, expected) in [
            (vec!["A", "b", "c"], None),
            (vec!["Key", "other", "key"], Some(("Key", "key"))),
            (vec!["ÄRGER", "x", "ärger"], Some(("ÄRGER", "ärger"))),
            (vec!["a", "B", "b", "A"], Some(("B", "b"))),
        ] {
            assert_eq!(case_duplicate_keys(&map_of(&names)), expected, "{names:?}");
            // The same keys among enough others to take the indexed path.
            let mut large: Vec<&str> = filler.iter().map(String::as_str).collect();
            large.extend(names.iter().copied());
            assert!(large.len() > SMALL_HASHTABLE);
            assert_eq!(case_duplicate_keys(&map_of(&large)), expected, "{large:?}");
        }
    }

    #[test]
    fn strings_double_every_quote_character() {
        assert_eq!(quote("it's").unwrap(), "'it''s'");
        assert_eq!(
            quote("\u{2018}a\u{2019}b\u{201A}c\u{201B}").unwrap(),
            "'\u{2018}\u{2018}a\u{2019}\u{2019}b\u{201A}\u{201A}c\u{201B}\u{201B}'"
        );
        assert_eq!(quote("").unwrap(), "''");
        assert_eq!(quote("a\0b"), Err(NulInString));
        assert_eq!(escape_quotes("x'y"), "x''y");
        // Other characters whose UTF-8 starts as the curly quotes' does
        // (0xE2: the dash, the euro sign, U+201C) are copied once.
        assert_eq!(
            escape_quotes("\u{2014}\u{20AC}\u{201C}\u{2019}x"),
            "\u{2014}\u{20AC}\u{201C}\u{2019}\u{2019}x"
        );
        assert_eq!(escape_quotes("C:\\plain path"), "C:\\plain path");
    }

    #[test]
    fn reading_back_follows_the_tokenizer() {
        assert_eq!(read_single_quoted("'a''b' rest"), Some(("a'b".into(), 6)));
        assert_eq!(
            read_single_quoted("'a\u{2019}\u{2018}b'"),
            Some(("a\u{2018}b".into(), 10))
        );
        assert_eq!(read_single_quoted("'open"), None);
    }

    #[test]
    fn scalars() {
        assert_eq!(text(&Value::Nil), "$null");
        assert_eq!(text(&Value::Bool(true)), "$true");
        assert_eq!(text(&Value::Bool(false)), "$false");
        assert_eq!(text(&Value::Int(-42)), "-42");
        assert_eq!(
            text(&Value::BigInt("123456789012345678901234567890".into())),
            "123456789012345678901234567890"
        );
        assert_eq!(text(&Value::Float(1.5)), "1.5");
        assert_eq!(text(&Value::Float(1e-7)), "1e-7");
        assert_eq!(text(&Value::Float(2.0)), "2.0");
        assert!(format_value(&Value::Float(f64::NAN)).is_err());
        assert!(format_value(&Value::BigInt("12a".into())).is_err());
        assert_eq!(text(&Value::sym("abc")), "'abc'");
        assert_eq!(
            text(&Value::Timestamp(
                Timestamp::parse("2024-01-02T03:04:05Z").unwrap()
            )),
            "[DateTime]'2024-01-02T03:04:05Z'"
        );
    }

    #[test]
    fn arrays_and_hashtables() {
        let hash = Value::Hash(Map(vec![
            (Value::str("simple_key"), Value::Int(1)),
            (Value::str("needs quoting"), Value::Array(vec![])),
            (
                Value::sym("nested"),
                Value::Array(vec![Value::str("a"), Value::Nil]),
            ),
        ]));
        assert_eq!(
            text(&hash),
            "@{simple_key = 1; 'needs quoting' = @(); nested = @('a', $null)}"
        );
        assert_eq!(text(&Value::Hash(Map::new())), "@{}");
    }

    #[test]
    fn sensitive_values_become_spans_with_their_plain_texts() {
        let value = Value::Array(vec![
            Value::str("public"),
            Value::Sensitive(Box::new(Value::str("pa'ss"))),
            Value::Sensitive(Box::new(Value::Array(vec![
                Value::Int(1234),
                Value::Sensitive(Box::new(Value::str("deep"))),
            ]))),
        ]);
        let out = format_value(&value).unwrap();
        assert_eq!(out.text(), "@('public', 'pa''ss', @(1234, 'deep'))");
        let spans: Vec<&str> = out.spans().iter().map(|r| &out.text()[r.clone()]).collect();
        assert_eq!(spans, ["'pa''ss'", "@(1234, 'deep')"]);
        assert_eq!(out.secrets(), ["pa'ss", "pa''ss", "1234", "deep"]);
    }

    #[test]
    fn a_sensitive_key_is_quoted_inside_a_span() {
        let value = Value::Hash(Map(vec![(
            Value::Sensitive(Box::new(Value::str("secretkey"))),
            Value::Int(1),
        )]));
        let out = format_value(&value).unwrap();
        assert_eq!(out.text(), "@{'secretkey' = 1}");
        assert_eq!(&out.text()[out.spans()[0].clone()], "'secretkey'");
    }

    #[test]
    fn bare_keys() {
        assert!(is_bare_key("abc_1"));
        assert!(is_bare_key("_x"));
        assert!(!is_bare_key("1abc"));
        assert!(!is_bare_key("a-b"));
        assert!(!is_bare_key(""));
        assert!(!is_bare_key("é"));
    }

    #[test]
    fn powershell_types_for_empty_arrays() {
        use crate::cim_type::MofType;
        let element = |mof_type: &str, embedded: bool| {
            powershell_type(MofType::parse(mof_type, embedded).element())
        };
        assert_eq!(element("String[]", false), "string");
        assert_eq!(element("UInt32[]", false), "uint32");
        assert_eq!(element("MSFT_Foo[]", true), "CimInstance");
        assert_eq!(element("Weird[]", false), "object");
    }
}
