//! The value of an expression in echo mode's subset, as text: literals
//! (single-quoted, here-strings, plain double-quoted), numbers, variables
//! (`$env:`, `$PID`, `$PWD`, the script's own) and the current location;
//! and whether an expression is `$null`.

use tree_sitter::Node;

use super::{single_named_child, Run};

impl Run<'_> {
    /// The value of an expression in the subset, as text.
    pub(super) fn value(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "string_literal" if !text.starts_with('"') => string_literal(text),
            "string_literal" | "expandable_string_literal" => {
                // Double-quoted text without expansions or escapes only.
                let inner = text.strip_prefix('"')?.strip_suffix('"')?;
                (!inner.contains(['$', '`', '"'])).then(|| inner.to_owned())
            }
            "integer_literal" | "decimal_integer_literal" | "real_literal" | "generic_token" => {
                Some(text.to_owned())
            }
            "variable" => self.variable(text),
            "parenthesized_expression" | "sub_expression" => {
                // `(Get-Location)` and friends: the location's text.
                let compact: String = text
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase();
                matches!(
                    compact.as_str(),
                    "(get-location)" | "$(get-location)" | "(pwd)"
                )
                .then(current_dir)
            }
            "member_access" => {
                let compact: String = text
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase();
                matches!(compact.as_str(), "(get-location).path" | "$pwd.path").then(current_dir)
            }
            _ => single_named_child(node).and_then(|child| self.value(child)),
        }
    }

    /// True for an expression that is `$null`: `$null` itself, an unset
    /// `$env:NAME`, or a variable this script has not set.
    pub(super) fn is_null(&self, node: Node<'_>) -> bool {
        let mut node = node;
        while node.kind() != "variable" {
            match single_named_child(node) {
                Some(child) => node = child,
                None => return false,
            }
        }
        let name = self.text(node).trim_start_matches('$');
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("env:") {
            return std::env::var_os(&name[4..]).is_none();
        }
        match lower.as_str() {
            "null" => true,
            "pid" | "pwd" | "true" | "false" => false,
            _ => !self.variables.contains_key(&lower),
        }
    }

    fn variable(&self, text: &str) -> Option<String> {
        let name = text.strip_prefix('$')?;
        let lower = name.to_ascii_lowercase();
        if let Some(env_name) = lower.strip_prefix("env:") {
            // Case-insensitive, like Windows; `$env:UNSET` is $null, which
            // outputs nothing (here: an empty value).
            let env_name = &name[name.len() - env_name.len()..];
            return Some(std::env::var(env_name).unwrap_or_default());
        }
        match lower.as_str() {
            "pid" => Some(std::process::id().to_string()),
            "pwd" => Some(current_dir()),
            "true" => Some("True".into()),
            "false" => Some("False".into()),
            "null" => Some(String::new()),
            _ => Some(self.variables.get(&lower).cloned().unwrap_or_default()),
        }
    }
}

/// `'…'` with `''` unescaped, and `@'…'@` here-strings (contents between the
/// header line and the closing line, verbatim).
fn string_literal(text: &str) -> Option<String> {
    if let Some(body) = text.strip_prefix("@'") {
        let body = body.strip_suffix("'@")?;
        let body = body
            .strip_prefix("\r\n")
            .or_else(|| body.strip_prefix('\n'))?;
        let body = body
            .strip_suffix("\r\n")
            .or_else(|| body.strip_suffix('\n'))
            .unwrap_or(body);
        return Some(body.to_owned());
    }
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    Some(inner.replace("''", "'"))
}

pub(super) fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

pub(super) fn current_dir() -> String {
    std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default()
}
