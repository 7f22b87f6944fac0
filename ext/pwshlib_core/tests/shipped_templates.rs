//! Every PowerShell file we ship (lib/templates/*.ps1, including the host
//! script) must parse under tree-sitter-powershell: there is no PowerShell
//! here to run them. The host script's side of the protocol is checked in
//! `ext/pwshlib_transport/tests/host_script_protocol.rs`.

use std::path::PathBuf;

fn templates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates")
}

/// Every ERROR or MISSING node, through the shared check (`pslint`).
fn syntax_problems(code: &str) -> Vec<String> {
    pwshlib_pslint::parse_errors(code)
}

#[test]
fn every_shipped_template_parses_clean() {
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(templates_dir()).expect("lib/templates exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("ps1") {
            continue;
        }
        let code = std::fs::read_to_string(&path).unwrap();
        let problems = syntax_problems(&code);
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            path.display(),
            problems.join("\n")
        );
        checked.push(path);
    }
    assert!(
        checked.iter().any(|p| p.ends_with("host.ps1")),
        "host.ps1 was checked: {checked:?}"
    );
}

#[test]
fn the_check_catches_broken_scripts() {
    assert!(!syntax_problems("function f { Write-Output 'x'").is_empty());
    assert!(!syntax_problems("$x = @{ a = ").is_empty());
    assert!(syntax_problems("Write-Output 'fine'").is_empty());
}
