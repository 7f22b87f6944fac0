//! The host's parse check: every script must parse as PowerShell.

/// Parses with the real PowerShell grammar; a script with any ERROR or
/// MISSING node is refused with a message saying where.
pub fn parse(code: &str) -> Result<tree_sitter::Tree, String> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_powershell::LANGUAGE.into())
        .map_err(|e| format!("pwshlib-sim: cannot load the PowerShell grammar: {e}"))?;
    // tree-sitter reads NUL as the end of input, PowerShell reads it as a
    // character: parse a copy with each NUL as a space (same byte offsets).
    let for_parser: std::borrow::Cow<'_, str> = if code.contains('\0') {
        code.replace('\0', " ").into()
    } else {
        code.into()
    };
    let tree = parser
        .parse(for_parser.as_bytes(), None)
        .ok_or("pwshlib-sim: the PowerShell parser gave up")?;
    if code.trim().is_empty() {
        // The grammar refuses an empty program; PowerShell runs it (no output).
        return Ok(tree);
    }
    if let Some(bad) = first_error(tree.root_node()) {
        let at = bad.start_position();
        return Err(format!(
            "pwshlib-sim: the script does not parse as PowerShell ({} at line {}, column {})",
            if bad.is_missing() {
                "missing token"
            } else {
                "syntax error"
            },
            at.row + 1,
            at.column + 1
        ));
    }
    Ok(tree)
}

fn first_error(node: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    if !node.has_error() {
        return None;
    }
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<_> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error).or(Some(node))
}
