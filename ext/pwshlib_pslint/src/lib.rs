//! A PowerShell syntax check over `tree-sitter-powershell`. There is no
//! PowerShell on the build machines, so this grammar is the judge of whether
//! the scripts we generate and the `.ps1` templates we ship are well formed.
//! The simulated host parses every request once with [`parse`], refuses what
//! it reports and reads the tree it returns, so the check is the same
//! everywhere.
//!
//! Two rules go beyond the grammar:
//! - NUL. tree-sitter's lexers read a NUL byte as the end of input, so the
//!   rest of the script would silently vanish from the tree. PowerShell's
//!   tokenizer only ends at a NUL that is the last character; anywhere else
//!   it is a character. We parse a copy with every NUL as a space (the byte
//!   offsets stay the same), accept a NUL inside a string literal or a
//!   comment (where PowerShell keeps it as text), and refuse one anywhere
//!   else: there PowerShell would read it as part of a bare word (a command
//!   name or argument), which never means what a generated script intends.
//! - Blank input. The grammar wants at least one statement; PowerShell runs
//!   an empty or blank script and prints nothing (`pwsh -Command ' '`).
//!
//! Nothing here recurses over the tree: hostile input can nest deeper than
//! the stack allows.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use tree_sitter::{Node, Parser, Point, Tree};

thread_local! {
    // A parser is cheap to reuse and costly to build; property tests parse
    // tens of thousands of scripts, so keep one per thread.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Node kinds inside which a NUL is text, not code.
const TEXT_KINDS: [&str; 6] = [
    "string_literal",
    "expandable_string_literal",
    "expandable_here_string_literal",
    "verbatim_string_characters",
    "verbatim_here_string_characters",
    "comment",
];

/// Where a script stops being PowerShell, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
    /// Byte offset into the script (orders errors).
    pub offset: usize,
    pub kind: SyntaxErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// A token the grammar needed is not there (tree-sitter's MISSING node).
    Missing(String),
    /// Text the grammar could not place (an ERROR node), up to 40 characters.
    Unexpected(String),
    /// A NUL character outside a string literal or comment.
    Nul,
    /// The grammar could not be loaded (a build problem, never the input).
    NoGrammar,
}

impl SyntaxError {
    /// True for a missing token, false for anything unexpected.
    pub fn is_missing(&self) -> bool {
        matches!(self.kind, SyntaxErrorKind::Missing(_))
    }

    fn no_grammar() -> Self {
        SyntaxError {
            line: 1,
            column: 1,
            offset: 0,
            kind: SyntaxErrorKind::NoGrammar,
        }
    }
}

impl fmt::Display for SyntaxError {
    /// `line:column: what`, the form [`parse_errors`] lists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.line, self.column)?;
        match &self.kind {
            SyntaxErrorKind::Missing(kind) => write!(f, "missing {kind}"),
            SyntaxErrorKind::Unexpected(excerpt) => write!(f, "unexpected {excerpt:?}"),
            SyntaxErrorKind::Nul => f.write_str("a NUL character outside a string"),
            SyntaxErrorKind::NoGrammar => f.write_str("the PowerShell grammar could not be loaded"),
        }
    }
}

impl std::error::Error for SyntaxError {}

/// Parses `script` into its syntax tree, whatever it holds (NULs read as
/// spaces). None only if the grammar could not be loaded.
pub fn parse_tree(script: &str) -> Option<Tree> {
    let for_parser: Cow<'_, str> = if script.contains('\0') {
        script.replace('\0', " ").into()
    } else {
        script.into()
    };
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_powershell::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(for_parser.as_bytes(), None)
    })
}

/// The tree of a script that parses, or its first error (by position).
pub fn parse(script: &str) -> Result<Tree, SyntaxError> {
    let tree = parse_tree(script).ok_or_else(SyntaxError::no_grammar)?;
    match first_error(&tree, script) {
        Some(error) => Err(error),
        None => Ok(tree),
    }
}

/// Parses `script`, handing the syntax tree to `inspect` (errors or not).
/// Returns None only if the grammar could not be loaded.
pub fn with_tree<T>(script: &str, inspect: impl FnOnce(&Tree) -> T) -> Option<T> {
    parse_tree(script).map(|tree| inspect(&tree))
}

/// The first error of `tree`, the parse of `script`, by position.
pub fn first_error(tree: &Tree, script: &str) -> Option<SyntaxError> {
    // Grammar errors come in document order, as do NULs: the earlier wins.
    let grammar = grammar_errors(tree, script, true).pop();
    let nul = nul_errors(tree, script, true).pop();
    match (grammar, nul) {
        (Some(a), Some(b)) => Some(if b.offset < a.offset { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Every error of `tree`, the parse of `script`, in document order.
pub fn errors(tree: &Tree, script: &str) -> Vec<SyntaxError> {
    let mut all = grammar_errors(tree, script, false);
    all.extend(nul_errors(tree, script, false));
    all.sort_by_key(|error| error.offset);
    all
}

/// Every error of the parse, as `line:column: what` (1-based line and
/// column, column in bytes). Empty means the script parses cleanly.
pub fn parse_errors(script: &str) -> Vec<String> {
    match parse_tree(script) {
        Some(tree) => errors(&tree, script)
            .iter()
            .map(ToString::to_string)
            .collect(),
        None => vec![SyntaxError::no_grammar().to_string()],
    }
}

/// ERROR and MISSING nodes in document order (the first only, if `first`).
/// The walk goes down only into subtrees that hold an error, and not into an
/// ERROR node: its children are the tokens it swallowed, and a MISSING node
/// among them would only repeat the same complaint.
fn grammar_errors(tree: &Tree, script: &str, first: bool) -> Vec<SyntaxError> {
    let mut out = Vec::new();
    if script.trim().is_empty() {
        return out;
    }
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        let is_error = node.is_error() || node.is_missing();
        if is_error {
            out.push(grammar_error(node, script));
            if first {
                return out;
            }
        }
        let descend = node.has_error() && !node.is_error();
        if !(descend && cursor.goto_first_child()) {
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return out;
                }
            }
        }
    }
}

fn grammar_error(node: Node<'_>, script: &str) -> SyntaxError {
    let kind = if node.is_missing() {
        SyntaxErrorKind::Missing(node.kind().to_owned())
    } else {
        let excerpt: String = script
            .get(node.byte_range())
            .unwrap_or_default()
            .chars()
            .take(40)
            .collect();
        SyntaxErrorKind::Unexpected(excerpt)
    };
    at(node.start_position(), node.start_byte(), kind)
}

/// NULs outside string literals and comments, in document order.
fn nul_errors(tree: &Tree, script: &str, first: bool) -> Vec<SyntaxError> {
    let mut out = Vec::new();
    let root = tree.root_node();
    for (offset, _) in script.match_indices('\0') {
        let is_text = root
            .descendant_for_byte_range(offset, offset + 1)
            .is_some_and(within_text);
        if !is_text {
            out.push(at(point_of(script, offset), offset, SyntaxErrorKind::Nul));
            if first {
                break;
            }
        }
    }
    out
}

/// True when `node` or an ancestor is a string literal or a comment.
fn within_text(node: Node<'_>) -> bool {
    let mut node = Some(node);
    while let Some(current) = node {
        if TEXT_KINDS.contains(&current.kind()) {
            return true;
        }
        node = current.parent();
    }
    false
}

/// Row and byte column of `offset`, as tree-sitter counts them (0-based).
fn point_of(script: &str, offset: usize) -> Point {
    let before = &script.as_bytes()[..offset];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    Point::new(row, offset - line_start)
}

fn at(position: Point, offset: usize, kind: SyntaxErrorKind) -> SyntaxError {
    SyntaxError {
        line: position.row + 1,
        column: position.column + 1,
        offset,
        kind,
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

    #[test]
    fn blank_scripts_parse() {
        for blank in ["", "  ", "\n\t\n"] {
            assert_eq!(parse_errors(blank), Vec::<String>::new(), "{blank:?}");
            assert!(parse(blank).is_ok(), "{blank:?}");
        }
    }

    #[test]
    fn a_nul_in_a_string_or_comment_is_text() {
        for script in [
            "Write-Output 'a\0b'",
            "Write-Output \"a\0b\"",
            "Write-Output @'\na\0b\n'@",
            "# a\0b\nWrite-Output 1",
        ] {
            assert_eq!(parse_errors(script), Vec::<String>::new(), "{script:?}");
        }
    }

    #[test]
    fn a_nul_in_code_is_an_error_where_it_stands() {
        let script = "$a = 1\n\0$InvokeParams = @{Name = 'R'}\n";
        assert_eq!(
            parse_errors(script),
            ["2:1: a NUL character outside a string"]
        );
        let error = parse(script).unwrap_err();
        assert_eq!((error.line, error.column), (2, 1));
        assert_eq!(error.kind, SyntaxErrorKind::Nul);
        // Without the NUL rule the rest of the script would vanish: the tree
        // holds the assignment after it.
        let tree = parse_tree(script).unwrap();
        assert!(tree.root_node().to_sexp().matches("assignment").count() >= 2);
    }

    #[test]
    fn the_first_error_is_the_earliest() {
        let error = parse("\0\n$x = 'abc\n").unwrap_err();
        assert_eq!(error.kind, SyntaxErrorKind::Nul);
        let error = parse("$x = @{a = 1\n\0").unwrap_err();
        assert_ne!(error.kind, SyntaxErrorKind::Nul);
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        // Unclosed, so every level holds the error the walk looks for.
        let script = "@(".repeat(50_000);
        assert!(!parse_errors(&script).is_empty());
        assert!(parse(&script).is_err());
    }
}
