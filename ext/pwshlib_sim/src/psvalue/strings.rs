//! PowerShell's string literals as the scripts write them: verbatim
//! (single-quoted, every quote kind), verbatim here-strings, and
//! double-quoted strings where nothing would expand.

use super::excerpt;

/// The quote characters PowerShell accepts for single-quoted strings:
/// `'` and the typographic U+2018..U+201B.
fn is_single_quote(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}')
}

fn is_double_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}' | '\u{201E}')
}

/// The text of a verbatim (single-quoted) string literal, with each doubled
/// quote read as one, as PowerShell's tokenizer does (it keeps the second
/// character of the pair).
pub fn unquote_verbatim(literal: &str) -> Result<String, String> {
    let mut chars = literal.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    };
    if !is_single_quote(first) || !is_single_quote(last) {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    }
    let mut out = String::with_capacity(literal.len());
    let mut inner = chars.peekable();
    while let Some(c) = inner.next() {
        if is_single_quote(c) {
            match inner.next() {
                Some(second) if is_single_quote(second) => out.push(second),
                _ => return Err(format!("unescaped quote in {}", excerpt(literal))),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A verbatim here-string `@'⏎…⏎'@`: the lines between the markers.
pub(super) fn unquote_here_string(literal: &str) -> Result<String, String> {
    let body = literal
        .strip_prefix("@'")
        .or_else(|| literal.strip_prefix("@\u{2019}"))
        .and_then(|rest| rest.split_once('\n').map(|(_, body)| body))
        .ok_or_else(|| format!("malformed here-string {}", excerpt(literal)))?;
    let body = body
        .rsplit_once('\n')
        .map(|(body, _)| body)
        .ok_or_else(|| format!("malformed here-string {}", excerpt(literal)))?;
    Ok(body.strip_suffix('\r').unwrap_or(body).to_owned())
}

/// A double-quoted string is only accepted when nothing in it would expand,
/// so that its value does not depend on runtime state.
pub(super) fn unquote_expandable(literal: &str) -> Result<String, String> {
    let mut chars = literal.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return Err(format!("malformed string literal {}", excerpt(literal)));
    };
    let inner = chars.as_str();
    if !is_double_quote(first) || !is_double_quote(last) || inner.contains(['$', '`']) {
        return Err(format!(
            "pwshlib-sim does not expand double-quoted strings with `$` or backticks: {}",
            excerpt(literal)
        ));
    }
    let mut out = String::new();
    let mut rest = inner.chars().peekable();
    while let Some(c) = rest.next() {
        if is_double_quote(c) {
            match rest.next() {
                Some(second) if is_double_quote(second) => out.push(second),
                _ => return Err(format!("unescaped quote in {}", excerpt(literal))),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_strings_undouble_every_quote_kind() {
        assert_eq!(unquote_verbatim("'p''ss'").unwrap(), "p'ss");
        assert_eq!(
            unquote_verbatim("'a\u{2019}\u{2019}b\u{2018}\u{2018}'").unwrap(),
            "a\u{2019}b\u{2018}"
        );
        assert_eq!(unquote_verbatim("''").unwrap(), "");
        assert!(unquote_verbatim("'a'b'").is_err());
        assert!(unquote_verbatim("'").is_err());
    }

    #[test]
    fn here_strings_keep_their_lines() {
        assert_eq!(
            unquote_here_string("@'\nline1\nit's\n'@").unwrap(),
            "line1\nit's"
        );
    }
}
