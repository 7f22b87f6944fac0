//! Reading a module manifest (`.psd1`) as data, never by running it: the
//! restricted language PowerShell's own `Import-PowerShellDataFile` and
//! `Test-ModuleManifest` accept (`Parser.ParseFile`, then
//! `Ast.SafeGetValue`: hashtables, arrays, strings, numbers and `$true`,
//! `$false`, `$null`), with nothing evaluated. Only the two keys that say
//! which PowerShell a module runs on are kept; the rest is parsed to be
//! skipped, so that a manifest PowerShell would refuse is refused here too,
//! with the line it fails on.

use std::iter::Peekable;
use std::str::CharIndices;

/// A value of the data language, as far as the edition needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum DataValue {
    Text(String),
    Number(String),
    Constant(String),
    Array(Vec<DataValue>),
    Table(Vec<(String, DataValue)>),
}

/// The top-level hashtable of a manifest: its keys (as written) and values.
///
/// # Errors
/// Where the text is not a data file: the line and what was expected.
pub fn parse_manifest(text: &str) -> Result<Vec<(String, DataValue)>, String> {
    let mut reader = Reader {
        text,
        chars: text.char_indices().peekable(),
    };
    reader.skip_space(true)?;
    let table = match reader.value()? {
        DataValue::Table(entries) => entries,
        _ => return Err(reader.fail("the manifest is not one hashtable @{ … }")),
    };
    reader.skip_space(true)?;
    if reader.chars.peek().is_some() {
        return Err(reader.fail("text after the manifest's hashtable"));
    }
    Ok(table)
}

struct Reader<'t> {
    text: &'t str,
    chars: Peekable<CharIndices<'t>>,
}

impl Reader<'_> {
    fn offset(&mut self) -> usize {
        self.chars.peek().map_or(self.text.len(), |(at, _)| *at)
    }

    fn fail(&mut self, what: &str) -> String {
        let at = self.offset();
        let line = self.text[..at].matches('\n').count() + 1;
        format!("line {line}: {what}")
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|(_, c)| *c)
    }

    fn eat(&mut self, wanted: char) -> bool {
        let found = self.peek() == Some(wanted);
        if found {
            self.chars.next();
        }
        found
    }

    /// Blanks and comments (`# …`, `<# … #>`); newlines too when asked.
    fn skip_space(&mut self, newlines: bool) -> Result<(), String> {
        loop {
            match self.peek() {
                Some('\n' | '\r') if !newlines => return Ok(()),
                Some(c) if c.is_whitespace() => {
                    self.chars.next();
                }
                // A backtick at the end of a line continues it.
                Some('`') => {
                    self.chars.next();
                    if !matches!(self.peek(), Some('\n' | '\r')) {
                        return Err(self.fail("a stray backtick"));
                    }
                    while matches!(self.peek(), Some('\n' | '\r')) {
                        self.chars.next();
                    }
                }
                Some('#') => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.chars.next();
                    }
                }
                Some('<') => {
                    let rest = &self.text[self.offset()..];
                    if !rest.starts_with("<#") {
                        return Ok(());
                    }
                    let Some(end) = rest.find("#>") else {
                        return Err(self.fail("a block comment <# without its #>"));
                    };
                    let stop = self.offset() + end + 2;
                    while self.offset() < stop {
                        self.chars.next();
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// One value: an item, or items separated by commas (an array).
    fn value(&mut self) -> Result<DataValue, String> {
        let first = self.item()?;
        self.skip_space(false)?;
        if self.peek() != Some(',') {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(',') {
            self.skip_space(true)?;
            items.push(self.item()?);
            self.skip_space(false)?;
        }
        Ok(DataValue::Array(items))
    }

    fn item(&mut self) -> Result<DataValue, String> {
        match self.peek() {
            Some('\'' | '"') => self.quoted().map(DataValue::Text),
            Some('@') => self.at_form(),
            Some('$') => {
                self.chars.next();
                let name = self.word();
                if ["true", "false", "null"]
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&name))
                {
                    Ok(DataValue::Constant(name.to_ascii_lowercase()))
                } else {
                    Err(self.fail(&format!(
                        "the variable ${name}, which a data file may not use"
                    )))
                }
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let number = self.word();
                if number.parse::<f64>().is_ok() || number.starts_with("0x") {
                    Ok(DataValue::Number(number))
                } else {
                    Err(self.fail(&format!("'{number}' is not a number")))
                }
            }
            Some(c) => Err(self.fail(&format!("'{c}' where a value was expected"))),
            None => Err(self.fail("the end of the file where a value was expected")),
        }
    }

    fn word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek() {
            if !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')) {
                break;
            }
            word.push(c);
            self.chars.next();
        }
        word
    }

    /// `'…'` (a doubled quote is one) or `"…"` (backtick escapes; nothing
    /// expanded: the editions' values are plain words).
    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.chars.next().map(|(_, c)| c);
        let mut text = String::new();
        loop {
            match self.chars.next().map(|(_, c)| c) {
                None => return Err(self.fail("a string without its closing quote")),
                Some(c) if Some(c) == quote => {
                    if self.peek() == quote {
                        self.chars.next();
                        text.push(c);
                    } else {
                        return Ok(text);
                    }
                }
                Some('`') if quote == Some('"') => {
                    if let Some((_, escaped)) = self.chars.next() {
                        text.push(escaped);
                    }
                }
                Some(c) => text.push(c),
            }
        }
    }

    /// `@{ … }`, `@( … )`, or a here-string `@' … '@` / `@" … "@`.
    fn at_form(&mut self) -> Result<DataValue, String> {
        self.chars.next();
        match self.peek() {
            Some('{') => {
                self.chars.next();
                self.table().map(DataValue::Table)
            }
            Some('(') => {
                self.chars.next();
                self.array().map(DataValue::Array)
            }
            Some(quote @ ('\'' | '"')) => {
                let rest = &self.text[self.offset()..];
                let close = format!("\n{quote}@");
                let Some(end) = rest.find(&close) else {
                    return Err(self.fail("a here-string without its closing line"));
                };
                let body = rest[1..end].trim_start_matches(['\r', '\n']).to_owned();
                let stop = self.offset() + end + close.len();
                while self.offset() < stop {
                    self.chars.next();
                }
                Ok(DataValue::Text(body))
            }
            _ => Err(self.fail("'@' not followed by {, ( or a quote")),
        }
    }

    fn array(&mut self) -> Result<Vec<DataValue>, String> {
        let mut items = Vec::new();
        loop {
            self.skip_space(true)?;
            if self.eat(')') {
                return Ok(items);
            }
            match self.value()? {
                DataValue::Array(more) => items.extend(more),
                one => items.push(one),
            }
            self.skip_space(false)?;
            if !(self.eat(';') || matches!(self.peek(), Some('\n' | '\r' | ')'))) {
                return Err(self.fail("an array item not followed by a comma, a newline or )"));
            }
        }
    }

    fn table(&mut self) -> Result<Vec<(String, DataValue)>, String> {
        let mut entries = Vec::new();
        loop {
            self.skip_space(true)?;
            if self.eat('}') {
                return Ok(entries);
            }
            while self.eat(';') {
                self.skip_space(true)?;
            }
            if self.eat('}') {
                return Ok(entries);
            }
            let key = match self.peek() {
                Some('\'' | '"') => self.quoted()?,
                _ => self.word(),
            };
            if key.is_empty() {
                return Err(self.fail("a hashtable key was expected"));
            }
            self.skip_space(false)?;
            if !self.eat('=') {
                return Err(self.fail(&format!("'=' after the key {key}")));
            }
            self.skip_space(true)?;
            let value = self.value()?;
            entries.push((key, value));
            self.skip_space(false)?;
            if !(self.eat(';') || matches!(self.peek(), Some('\n' | '\r' | '}'))) {
                return Err(self.fail("an entry not followed by ;, a newline or }"));
            }
        }
    }
}
