//! A PowerShell syntax check over `tree-sitter-powershell`. There is no
//! PowerShell on the build machines, so this grammar is the judge of whether
//! the scripts we generate and the `.ps1` templates we ship are well formed.
//! The simulated host uses it to reject malformed scripts, as PowerShell would.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

thread_local! {
    // A parser is cheap to reuse and costly to build; property tests parse
    // tens of thousands of scripts, so keep one per thread.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `script`, handing the syntax tree to `inspect`. Returns None only
/// if the grammar could not be loaded (a build problem, never input-related).
pub fn with_tree<T>(script: &str, inspect: impl FnOnce(&Tree) -> T) -> Option<T> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_powershell::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut()?;
        let tree = parser.parse(script, None)?;
        Some(inspect(&tree))
    })
}

/// Every ERROR and MISSING node of the parse, as `line:column: what` (1-based
/// line and column, column in bytes). Empty means the script parses cleanly.
pub fn parse_errors(script: &str) -> Vec<String> {
    with_tree(script, |tree| {
        let mut errors = Vec::new();
        collect_errors(tree.root_node(), script, &mut errors);
        errors
    })
    .unwrap_or_else(|| vec!["the PowerShell grammar could not be loaded".to_owned()])
}

/// True when [`parse_errors`] finds nothing.
pub fn parses_cleanly(script: &str) -> bool {
    parse_errors(script).is_empty()
}

fn collect_errors(node: Node<'_>, script: &str, out: &mut Vec<String>) {
    if !node.has_error() {
        return;
    }
    if node.is_error() || node.is_missing() {
        let position = node.start_position();
        let what = if node.is_missing() {
            format!("missing {}", node.kind())
        } else {
            let excerpt: String = script
                .get(node.byte_range())
                .unwrap_or_default()
                .chars()
                .take(40)
                .collect();
            format!("unexpected {excerpt:?}")
        };
        out.push(format!(
            "{}:{}: {what}",
            position.row + 1,
            position.column + 1
        ));
        if node.is_error() {
            // An ERROR node's children are the tokens it swallowed; a
            // MISSING node inside it would only repeat the same complaint.
            return;
        }
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_errors(child, script, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_script_has_no_errors() {
        assert_eq!(
            parse_errors("$x = @{a = 1; 'b c' = @('d', $true)}\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_unterminated_string_is_reported() {
        let errors = parse_errors("$x = 'abc\n$y = 1\n");
        assert!(!errors.is_empty());
        assert!(errors[0].starts_with("1:"), "{errors:?}");
    }

    #[test]
    fn a_missing_brace_is_reported() {
        assert!(!parse_errors("$x = @{a = 1\n").is_empty());
        assert!(!parse_errors("function f { $x = 1\n").is_empty());
    }
}
