//! Where a Puppet module keeps its vendored DSC resources:
//! `lib/puppet_x/<puppetized module name>/dsc_resources`, or the older
//! `lib/puppet_x/dsc_resources`, found through Ruby's load path.

use std::path::Path;

use crate::error::{Error, Result};

/// The Puppet module name of a PowerShell module: lowercase, every character
/// outside `[a-z0-9_]` replaced by `_`, and an `a` before a leading digit
/// (`PowerShellGet` → `powershellget`, `xWeb-Admin` → `xweb_admin`, `7Zip` →
/// `a7zip`).
pub fn puppetize_name(name: &str) -> String {
    let mut out: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'a');
    }
    out
}

/// Finds `puppet_x/<puppetized>/dsc_resources` under the entries of Ruby's
/// load path, in load path order; failing that, the older
/// `puppet_x/dsc_resources` that holds a folder for the module, preferring
/// the entry of the Puppet module named like it. Paths are joined with `/`,
/// which both Ruby and PowerShell accept on Windows.
pub fn vendored_modules_path(load_path: &[String], module_name: &str) -> Result<String> {
    let puppetized = puppetize_name(module_name);
    let join = |entry: &str, rest: &str| format!("{}/{rest}", entry.trim_end_matches(['/', '\\']));
    let current = format!("puppet_x/{puppetized}/dsc_resources");
    if let Some(found) = load_path
        .iter()
        .map(|entry| join(entry, &current))
        .find(|candidate| Path::new(candidate).is_dir())
    {
        return Ok(found);
    }
    let module_lib = format!("/{puppetized}/lib");
    let older = |entry: &&String| {
        let candidate = join(entry, "puppet_x/dsc_resources");
        Path::new(&candidate).join(module_name).is_dir()
    };
    let preferred = load_path
        .iter()
        .filter(|entry| {
            entry
                .replace('\\', "/")
                .trim_end_matches('/')
                .ends_with(&module_lib)
        })
        .find(older);
    if let Some(entry) = preferred.or_else(|| load_path.iter().find(older)) {
        return Ok(join(entry, "puppet_x/dsc_resources"));
    }
    Err(Error::MissingVendoredPath {
        module: module_name.to_owned(),
        searched: searched_description(load_path, &current),
    })
}

/// The folders looked at, for the error: every load path entry would make a
/// message hundreds of lines long in a real agent run, so show a few.
fn searched_description(load_path: &[String], current: &str) -> String {
    const SHOWN: usize = 5;
    if load_path.is_empty() {
        return format!("{current} (the Ruby load path is empty)");
    }
    let mut shown: Vec<String> = load_path
        .iter()
        .take(SHOWN)
        .map(|entry| format!("{}/{current}", entry.trim_end_matches(['/', '\\'])))
        .collect();
    if load_path.len() > SHOWN {
        shown.push(format!(
            "and {current} under {} more load path entries",
            load_path.len() - SHOWN
        ));
    }
    format!(
        "{} (nor puppet_x/dsc_resources, the older layout)",
        shown.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn puppetizes_names() {
        assert_eq!(puppetize_name("PowerShellGet"), "powershellget");
        assert_eq!(puppetize_name("xWeb-Admin.Dsc"), "xweb_admin_dsc");
        assert_eq!(puppetize_name("7Zip"), "a7zip");
        assert_eq!(puppetize_name("Snake_Case9"), "snake_case9");
        assert_eq!(puppetize_name("Äpfel"), "_pfel");
    }

    fn temp_root(name: &str) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!(
            "pwshlib-vendored-{name}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn finds_the_current_layout_first() {
        let root = temp_root("current");
        let old = root.join("old/lib");
        let new = root.join("new/lib");
        fs::create_dir_all(old.join("puppet_x/dsc_resources/PowerShellGet")).unwrap();
        fs::create_dir_all(new.join("puppet_x/powershellget/dsc_resources")).unwrap();
        let load_path = vec![old.display().to_string(), format!("{}/", new.display())];
        assert_eq!(
            vendored_modules_path(&load_path, "PowerShellGet").unwrap(),
            format!("{}/puppet_x/powershellget/dsc_resources", new.display())
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn falls_back_to_the_older_layout_that_holds_the_module() {
        let root = temp_root("older");
        let other = root.join("other/lib");
        let mine = root.join("mine/lib");
        fs::create_dir_all(other.join("puppet_x/dsc_resources/Unrelated")).unwrap();
        fs::create_dir_all(mine.join("puppet_x/dsc_resources/PowerShellGet")).unwrap();
        let load_path = vec![other.display().to_string(), mine.display().to_string()];
        assert_eq!(
            vendored_modules_path(&load_path, "PowerShellGet").unwrap(),
            format!("{}/puppet_x/dsc_resources", mine.display())
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_missing_folder_is_a_clear_error() {
        let load_path = vec!["/nonexistent/a/lib".to_string(), "/nonexistent/b".into()];
        let err = vendored_modules_path(&load_path, "My-Module").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("'My-Module'"), "{message}");
        assert!(
            message.contains("/nonexistent/a/lib/puppet_x/my_module/dsc_resources"),
            "{message}"
        );
        let long: Vec<String> = (0..50).map(|i| format!("/nowhere/{i}")).collect();
        let message = vendored_modules_path(&long, "M").unwrap_err().to_string();
        assert!(message.contains("45 more load path entries"), "{message}");
    }
}
