//! The core's modules import each other in one direction only:
//! no `use` circle, and `secrecy`, the home of everything about secrets, is
//! a leaf that the others use and that uses none of them but `value`.
//!
//! Read from the sources: each top-level module's `crate::<module>` paths in
//! its production code (before `#[cfg(test)]`, outside `//` comments, so a
//! doc link to another module is not an import).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// Module → the other top-level modules its production code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src/");
        let module = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a UTF-8 name")
            .trim_end_matches(".rs")
            .to_owned();
        let name = relative.to_string_lossy();
        // The crate root and what is compiled only for tests are not layers.
        if module == "lib" || module == "test_support" || name.ends_with("tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a readable source file");
        let production = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        let named = graph.entry(module.clone()).or_default();
        for line in production.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let target = &rest[..end];
                if !target.is_empty() && target != module {
                    named.insert(target.to_owned());
                }
            }
        }
    }
    graph
}

/// A circle of imports starting at `start`, if there is one.
fn circle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    for next in graph
        .get(path.last().expect("a path"))
        .into_iter()
        .flatten()
    {
        if next == start {
            let mut circle = path.clone();
            circle.push(next.clone());
            return Some(circle);
        }
        if !path.contains(next) {
            path.push(next.clone());
            if let Some(circle) = circle_from(graph, start, path) {
                return Some(circle);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = imports();
    assert!(graph.len() > 10, "the core's modules were found: {graph:?}");
    for module in graph.keys() {
        let circle = circle_from(&graph, module, &mut vec![module.clone()]);
        assert_eq!(circle, None, "an import circle in the core");
    }
}

#[test]
fn secrecy_is_a_leaf_that_the_secret_handling_modules_use() {
    let graph = imports();
    let secrecy = graph.get("secrecy").expect("the secrecy module");
    assert_eq!(secrecy.iter().collect::<Vec<_>>(), ["value"]);
    for user in ["typedef", "script", "redact", "literal"] {
        assert!(
            graph[user].contains("secrecy"),
            "{user} takes its secrets from secrecy"
        );
    }
}

#[test]
fn the_circle_check_sees_a_circle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert("a".into(), ["b".to_owned()].into());
    graph.insert("b".into(), ["c".to_owned()].into());
    graph.insert("c".into(), ["a".to_owned()].into());
    assert_eq!(
        circle_from(&graph, "a", &mut vec!["a".to_owned()]),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
