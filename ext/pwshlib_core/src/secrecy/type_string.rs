//! The Puppet type strings of a resource's attributes, read just far enough
//! to tell where `Sensitive` sits in them.

use super::Secrecy;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
