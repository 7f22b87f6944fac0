//! Keeping secrets out of logs, errors and change messages.
//!
//! Two halves. [`mark_attributes`] finds the secrets in a resource hash or a
//! DSC result by the type schema: every value whose attribute (at any depth:
//! top level, Struct member, CIM instance member, credential password) is
//! `Sensitive`-typed is wrapped in [`Value::Sensitive`], so that rendering
//! it shows the redaction marker. That covers what the machine reports,
//! which the manifest never held. [`Redactor`] is the last line of defence
//! for text that came back from PowerShell (error messages that quote the
//! script): it replaces every form in which a secret can appear there.

use aho_corasick::{AhoCorasick, MatchKind};

use crate::literal::escape_quotes;
use crate::script::{random_marker, Script, GUARDED_SECRET_CHARS, REDACTION_FALLBACK};
use crate::typedef::TypeDef;
use crate::value::{Map, Value, REDACTED_SENSITIVE};

/// Where the secrets sit inside the values of one Puppet type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Secrecy {
    /// The whole value is secret (`Sensitive[…]`).
    pub whole: bool,
    /// Struct members by lowercase name.
    pub members: Vec<(String, Secrecy)>,
    /// Array elements and Hash values.
    pub items: Option<Box<Secrecy>>,
}

impl Secrecy {
    fn whole() -> Secrecy {
        Secrecy {
            whole: true,
            ..Secrecy::default()
        }
    }

    pub fn is_public(&self) -> bool {
        !self.whole
            && self.members.iter().all(|(_, s)| s.is_public())
            && self.items.as_deref().is_none_or(Secrecy::is_public)
    }

    /// What is secret under either (Variant alternatives, Tuple elements).
    fn merge(mut self, other: Secrecy) -> Secrecy {
        self.whole |= other.whole;
        for (name, secrecy) in other.members {
            match self.members.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = std::mem::take(&mut slot.1).merge(secrecy),
                None => self.members.push((name, secrecy)),
            }
        }
        self.items = match (self.items.take(), other.items) {
            (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
            (a, b) => a.or(b),
        };
        self
    }

    fn member(&self, name: &str) -> Option<&Secrecy> {
        self.members
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, s)| s)
    }
}

/// The secrecy of a Puppet type string such as
/// `Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]`.
/// A type string this parser cannot read is secret as a whole when it
/// mentions `Sensitive` at all: guessing wrong must not show a secret.
pub fn secrecy_of_type(type_string: &str) -> Secrecy {
    // Only `Sensitive` makes anything secret (the name is case-sensitive in
    // Puppet, as in the parser below): a type that does not mention it is
    // public throughout, and most attributes are. Not parsing those keeps
    // the per-call marking of a resource cheap.
    if !type_string.contains("Sensitive") {
        return Secrecy::default();
    }
    let tokens = tokenize(type_string);
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
    };
    match parser.expr() {
        Some(expr) if parser.at == tokens.len() => secrecy_of(&expr),
        _ if type_string.contains("Sensitive") => Secrecy::whole(),
        _ => Secrecy::default(),
    }
}

/// The secrecy of one attribute: its type's, and for a credential the
/// password too, whatever the type says.
pub fn attribute_secrecy(typedef: &TypeDef, name: &str) -> Secrecy {
    let Some(attribute) = typedef.attribute(name) else {
        return Secrecy::default();
    };
    let secrecy = secrecy_of_type(&attribute.type_string);
    if attribute.is_credential() && secrecy.member("password").is_none() {
        return secrecy.merge(Secrecy {
            members: vec![("password".into(), Secrecy::whole())],
            ..Secrecy::default()
        });
    }
    secrecy
}

/// `value` with every part that `secrecy` calls secret wrapped in
/// Sensitive. A hash member named `password` is secret at any depth: a
/// credential nested in a CIM instance has no type of its own to say so.
pub fn mark(value: &Value, secrecy: &Secrecy) -> Value {
    match value {
        Value::Nil | Value::Sensitive(_) => value.clone(),
        _ if secrecy.whole => Value::Sensitive(Box::new(value.clone())),
        Value::Hash(map) => Value::Hash(
            map.iter()
                .map(|(key, item)| {
                    let name = key.key_name().unwrap_or_default();
                    let item = match secrecy.member(name).or(secrecy.items.as_deref()) {
                        Some(member) => mark(item, member),
                        None => mark(item, &Secrecy::default()),
                    };
                    let item = if name.eq_ignore_ascii_case("password") {
                        mark(&item, &Secrecy::whole())
                    } else {
                        item
                    };
                    (key.clone(), item)
                })
                .collect(),
        ),
        Value::Array(items) => {
            // An array where the type has a Struct (a CIM instance given as
            // a one-element list) keeps the members' secrecy.
            let each = secrecy.items.as_deref().unwrap_or(secrecy);
            Value::Array(items.iter().map(|item| mark(item, each)).collect())
        }
        _ => value.clone(),
    }
}

/// A resource hash (`dsc_x` keys) or a DSC result (`X` keys, DSC property
/// names) with every Sensitive-typed value marked; see [`mark`].
pub fn mark_attributes(typedef: &TypeDef, map: &Map) -> Map {
    map.iter()
        .map(|(key, value)| {
            let secrecy = match key.key_name() {
                Some(name) if typedef.attribute(name).is_some() => attribute_secrecy(typedef, name),
                Some(name) => attribute_secrecy(typedef, &format!("dsc_{}", name.to_lowercase())),
                None => Secrecy::default(),
            };
            let is_password = key
                .key_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("password"));
            let secrecy = if is_password {
                Secrecy::whole()
            } else {
                secrecy
            };
            (key.clone(), mark(value, &secrecy))
        })
        .collect()
}

/// [`mark_attributes`] for any value: hashes are marked, the rest kept.
pub fn mark_value(typedef: &TypeDef, value: &Value) -> Value {
    match value {
        Value::Hash(map) => Value::Hash(mark_attributes(typedef, map)),
        other => mark(other, &Secrecy::default()),
    }
}

/// A resource hash as a log shows it: secrets as the redaction marker.
pub fn shown_resource(typedef: &TypeDef, map: &Map) -> String {
    shown(&Value::Hash(mark_attributes(typedef, map)))
}

/// A value as a log shows it: each Sensitive part as the redaction marker,
/// or, should a secret spell out the marker, as a marker that shows none.
pub fn shown(value: &Value) -> String {
    Redactor::for_values([value]).scrub(&value.to_string())
}

// ------------------------------------------------------------ type strings

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    OpenBrace,
    CloseBrace,
    Comma,
    Arrow,
    Text(String),
    Word(String),
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '[' => tokens.push(Token::Open),
            ']' => tokens.push(Token::Close),
            '{' => tokens.push(Token::OpenBrace),
            '}' => tokens.push(Token::CloseBrace),
            ',' => tokens.push(Token::Comma),
            '=' if chars.peek() == Some(&'>') => {
                chars.next();
                tokens.push(Token::Arrow);
            }
            '\'' | '"' | '/' => {
                // Quoted strings and regular expressions (`Pattern[/…/]`).
                let mut body = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => body.extend(chars.next()),
                        d if d == c => break,
                        d => body.push(d),
                    }
                }
                tokens.push(Token::Text(body));
            }
            c => {
                let mut word = c.to_string();
                while let Some(&d) = chars.peek() {
                    if d.is_alphanumeric() || matches!(d, '_' | ':' | '-' | '.') {
                        word.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    tokens
}

#[derive(Debug)]
enum Expr {
    /// `Name` or `Name[args]`.
    Type(String, Vec<Expr>),
    Text(String),
    Hash(Vec<(Expr, Expr)>),
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Token> {
        let token = self.tokens.get(self.at)?;
        self.at += 1;
        Some(token)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn expr(&mut self) -> Option<Expr> {
        match self.next()?.clone() {
            Token::Text(text) => Some(Expr::Text(text)),
            Token::Word(name) => {
                let mut args = Vec::new();
                if self.peek() == Some(&Token::Open) {
                    self.at += 1;
                    args = self.list(&Token::Close, |p| p.expr())?;
                }
                Some(Expr::Type(name, args))
            }
            Token::OpenBrace => {
                let entries = self.list(&Token::CloseBrace, |p| {
                    let key = p.expr()?;
                    (p.next()? == &Token::Arrow).then_some(())?;
                    Some((key, p.expr()?))
                })?;
                Some(Expr::Hash(entries))
            }
            _ => None,
        }
    }

    /// Comma-separated items up to `close` (a trailing comma allowed).
    fn list<T>(&mut self, close: &Token, item: impl Fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                return Some(items);
            }
            items.push(item(self)?);
            match self.next()? {
                Token::Comma => {}
                t if t == close => return Some(items),
                _ => return None,
            }
        }
    }
}

fn secrecy_of(expr: &Expr) -> Secrecy {
    let Expr::Type(name, args) = expr else {
        return Secrecy::default();
    };
    let arg = |i: usize| args.get(i).map(secrecy_of).unwrap_or_default();
    match name.as_str() {
        "Sensitive" => Secrecy::whole(),
        "Optional" | "NotUndef" => arg(0),
        "Array" => Secrecy {
            items: Some(Box::new(arg(0))),
            ..Secrecy::default()
        },
        "Hash" => Secrecy {
            items: Some(Box::new(arg(1))),
            ..Secrecy::default()
        },
        "Struct" => match args.first() {
            Some(Expr::Hash(entries)) => Secrecy {
                members: entries
                    .iter()
                    .filter_map(|(key, value)| Some((key_name(key)?, secrecy_of(value))))
                    .collect(),
                ..Secrecy::default()
            },
            _ => Secrecy::default(),
        },
        "Variant" => args
            .iter()
            .map(secrecy_of)
            .fold(Secrecy::default(), Secrecy::merge),
        "Tuple" => Secrecy {
            items: Some(Box::new(
                args.iter()
                    .map(secrecy_of)
                    .fold(Secrecy::default(), Secrecy::merge),
            )),
            ..Secrecy::default()
        },
        _ => Secrecy::default(),
    }
}

/// A Struct key: `name`, `'name'`, `Optional['name']`, `NotUndef[name]`.
fn key_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Text(text) => Some(text.to_lowercase()),
        Expr::Type(name, args) if args.is_empty() => Some(name.to_lowercase()),
        Expr::Type(name, args) if matches!(name.as_str(), "Optional" | "NotUndef") => {
            key_name(args.first()?)
        }
        _ => None,
    }
}

// ---------------------------------------------------------------- redactor

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
            // One to three characters occur in any text: blanking them out
            // everywhere would wreck every message and hide nothing. Their
            // quoted forms are replaced, the way a value is quoted in a
            // script, a JSON text or a log.
            for form in [format!("'{escaped}'"), format!("\"{secret}\"")] {
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
        for span in script.secret_spans() {
            let literal = &script.text()[span.clone()];
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
        let standard = with(REDACTED_SENSITIVE);
        if clean(&standard) {
            return standard;
        }
        (0..64)
            .map(|attempt| with(&random_marker(attempt)))
            .find(|candidate| clean(candidate))
            .unwrap_or_else(|| with(REDACTION_FALLBACK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::secret_typedef;

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    #[test]
    fn type_strings_give_their_secrets_at_every_depth() {
        assert!(secrecy_of_type("Optional[Sensitive[String]]").whole);
        assert!(secrecy_of_type("Sensitive").whole);
        assert!(secrecy_of_type("Optional[String[1]]").is_public());
        let credential = secrecy_of_type(
            "Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]",
        );
        assert!(credential.member("Password").unwrap().whole);
        assert!(credential.member("user").unwrap().is_public());
        let cim = secrecy_of_type(
            "Optional[Array[Struct[{ protocol => Enum['http', 'https'], Optional[apikey] => Optional[Sensitive[String]], 'inner' => Optional[Struct[{ token => Sensitive[String] }]] }]]]",
        );
        let element = cim.items.as_deref().unwrap();
        assert!(element.member("apikey").unwrap().whole);
        assert!(element.member("protocol").unwrap().is_public());
        assert!(
            element
                .member("inner")
                .unwrap()
                .member("token")
                .unwrap()
                .whole
        );
        assert!(
            secrecy_of_type("Hash[String, Sensitive[String]]")
                .items
                .unwrap()
                .whole
        );
        assert!(secrecy_of_type("Variant[String, Sensitive[String]]").whole);
        assert!(secrecy_of_type("Optional[Pattern[/^a]b$/, /,/]]").is_public());
        // Unreadable, but it says Sensitive: all of it is secret.
        assert!(secrecy_of_type("Struct[{ x => Sensitive[String] ").whole);
    }

    #[test]
    fn marking_wraps_the_secret_parts_of_a_dsc_result() {
        let def = secret_typedef();
        let result = Map(vec![
            (s("VaultName"), s("v1")),
            (s("Secret"), s("top-secret")),
            (
                s("Settings"),
                Value::Hash(Map(vec![(s("Label"), s("l")), (s("Token"), s("in-hash"))])),
            ),
            (
                s("Endpoints"),
                Value::Array(vec![Value::Hash(Map(vec![
                    (s("Address"), s("a")),
                    (s("ApiKey"), s("in-cim")),
                    (
                        s("Login"),
                        Value::Hash(Map(vec![(s("User"), s("u")), (s("Password"), s("nested"))])),
                    ),
                ]))]),
            ),
            (
                s("Credential"),
                Value::Hash(Map(vec![(s("user"), s("u")), (s("password"), s("cred"))])),
            ),
        ]);
        let shown = Value::Hash(mark_attributes(&def, &result)).to_string();
        for secret in ["top-secret", "in-hash", "in-cim", "nested", "cred"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        for public in ["v1", "\"l\"", "\"a\"", "\"u\""] {
            assert!(shown.contains(public), "{public} not in {shown}");
        }
    }

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
