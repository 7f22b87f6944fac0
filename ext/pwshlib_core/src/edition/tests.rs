use super::*;

fn declared(text: &str) -> Result<Declared, String> {
    parse_manifest(text).and_then(|entries| declared_by(&entries))
}

/// A Gallery-shaped manifest around `keys`: comments, a here-string, the
/// nested PrivateData, arrays over lines.
fn gallery_manifest(keys: &str) -> String {
    format!(
        r#"<#
    Module manifest for module 'SampleDsc' # with a '#' inside
#>
@{{
    RootModule = 'SampleDsc.psm1'
    ModuleVersion = '9.1.0'
    GUID = 'b3239f27-d7d3-4ae6-a5d2-d9a1c97d6ae4'
    Description = @'
A module whose text has 'quotes', "doubles" and a # mark.
'@
    {keys}
    FunctionsToExport = @()
    DscResourcesToExport = @(
        'SampleResource',
        'OtherResource'
    )
    RequiredModules = @(@{{ ModuleName = 'Dep'; ModuleVersion = '1.0' }}); Copyright = "(c) `"us`""
    PrivateData = @{{
        PSData = @{{
            Tags = 'DSC', 'DSCResourceKit'
            Prerelease = ''
            IsPrerelease = $false
        }}
    }}
}}
"#
    )
}

#[test]
fn a_manifest_that_lists_both_editions_runs_on_either() {
    let text = gallery_manifest("CompatiblePSEditions = @('Desktop', 'Core')");
    assert_eq!(declared(&text), Ok(Declared::Either));
    let text =
        gallery_manifest("CompatiblePSEditions = 'Core','Desktop'\n PowerShellVersion = '5.1'");
    assert_eq!(declared(&text), Ok(Declared::Either));
}

#[test]
fn a_manifest_that_lists_one_edition_runs_on_it_alone() {
    let text = gallery_manifest("CompatiblePSEditions = @('Desktop')");
    assert_eq!(
        declared(&text),
        Ok(Declared::Only(
            Edition::Desktop,
            "CompatiblePSEditions = @('Desktop')".into()
        ))
    );
    let text = gallery_manifest("compatiblepseditions = 'core'");
    assert_eq!(
        declared(&text),
        Ok(Declared::Only(
            Edition::Core,
            "CompatiblePSEditions = @('Core')".into()
        ))
    );
}

#[test]
fn a_manifest_that_declares_nothing_runs_as_before() {
    assert_eq!(declared(&gallery_manifest("")), Ok(Declared::Nothing));
    assert_eq!(
        declared(&gallery_manifest("CompatiblePSEditions = @()")),
        Ok(Declared::Nothing)
    );
    assert_eq!(
        declared(&gallery_manifest("PowerShellVersion = '5.1'")),
        Ok(Declared::Nothing)
    );
}

#[test]
fn a_powershell_version_of_6_or_later_is_core_alone() {
    for version in ["7.0", "6.1", "7.4.2"] {
        let text = gallery_manifest(&format!("PowerShellVersion = '{version}'"));
        assert_eq!(
            declared(&text),
            Ok(Declared::Only(
                Edition::Core,
                format!("PowerShellVersion = '{version}'")
            )),
            "{version}"
        );
    }
    let text =
        gallery_manifest("PowerShellVersion = '7.2'\nCompatiblePSEditions = 'Desktop','Core'");
    assert!(matches!(
        declared(&text),
        Ok(Declared::Only(Edition::Core, _))
    ));
}

#[test]
fn a_malformed_manifest_is_refused_with_its_line() {
    let cases = [
        ("@{ CompatiblePSEditions = 'Desktop'", "line 1"),
        ("@{\n  A = 'x'\n  B = Get-Date\n}", "line 3"),
        ("@{ A = $env:TEMP }", "variable"),
        ("@{ A = 'unterminated }", "closing quote"),
        ("Write-Host 'hi'", "line 1"),
        ("@{ A = 1 } @{ B = 2 }", "after the manifest"),
    ];
    for (text, expected) in cases {
        let error = declared(text).expect_err(text);
        assert!(error.contains(expected), "{text}: {error}");
    }
    let cases = [
        (
            "CompatiblePSEditions = 'Nano'",
            "neither 'Desktop' nor 'Core'",
        ),
        ("CompatiblePSEditions = @{ A = 1 }", "other than strings"),
        ("PowerShellVersion = 'seven'", "not a version"),
        (
            "CompatiblePSEditions = 'Desktop'\n PowerShellVersion = '7.0'",
            "leave no PowerShell",
        ),
    ];
    for (keys, expected) in cases {
        let error = declared(&gallery_manifest(keys)).expect_err(keys);
        assert!(error.contains(expected), "{keys}: {error}");
    }
}

#[test]
fn the_agents_choice_comes_before_the_manifest() {
    let overrides = Overrides::parse("OtherDsc=Core; sampledsc = Desktop, *=Core").unwrap();
    let unread = || -> Result<Declared, String> { panic!("the manifest is not read") };
    let choice = choose("SampleDsc", unread, &overrides, false)
        .unwrap()
        .unwrap();
    assert_eq!(choice.edition, Edition::Desktop);
    assert!(
        choice.reason.contains(EDITIONS_VARIABLE),
        "{}",
        choice.reason
    );
    let either = choose("ThirdDsc", || Ok(Declared::Either), &overrides, true).unwrap();
    assert_eq!(either.map(|c| c.edition), Some(Edition::Core));
    let error = Overrides::parse("SampleDsc=Seven").unwrap_err();
    assert!(error.contains("'SampleDsc=Seven'"), "{error}");
}

#[test]
fn a_module_on_both_runs_on_the_default_of_its_platform() {
    let none = Overrides::default();
    let on = |windows| choose("M", || Ok(Declared::Either), &none, windows).unwrap();
    assert_eq!(on(true).map(|c| c.edition), Some(Edition::Desktop));
    assert_eq!(on(false).map(|c| c.edition), Some(Edition::Core));
    assert_eq!(choose("M", || Ok(Declared::Nothing), &none, true), Ok(None));
    let only = || {
        Ok(Declared::Only(
            Edition::Core,
            "CompatiblePSEditions = @('Core')".into(),
        ))
    };
    let choice = choose("M", only, &none, true).unwrap().unwrap();
    let message = choice.unavailable("searched /usr/bin/pwsh");
    assert_eq!(
        message,
        "the DSC module 'M' runs on PowerShell 7 (its manifest declares CompatiblePSEditions = @('Core')), which was not found: searched /usr/bin/pwsh"
    );
    let broken = choose(
        "M",
        || Err("its manifest x.psd1 is not …".into()),
        &none,
        true,
    );
    assert_eq!(
        broken,
        Err("the DSC module 'M': its manifest x.psd1 is not …".into())
    );
}

#[test]
fn the_memo_reads_each_manifest_once_a_run() {
    let dir = std::env::temp_dir().join(format!("pwshlib-edition-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("M.psd1");
    std::fs::write(&path, "\u{feff}@{ CompatiblePSEditions = 'Core' }").unwrap();
    let path = path.to_string_lossy().into_owned();
    let mut memo = ManifestMemo::default();
    let first = memo.declared(&path);
    assert!(
        matches!(first, Ok(Declared::Only(Edition::Core, _))),
        "{first:?}"
    );
    std::fs::write(&path, "@{ CompatiblePSEditions = 'Desktop' }").unwrap();
    assert_eq!(memo.declared(&path), first);
    assert_eq!(memo.len(), 1);
    memo.clear();
    assert!(matches!(
        memo.declared(&path),
        Ok(Declared::Only(Edition::Desktop, _))
    ));
    let missing = memo.declared(&format!("{path}.gone")).unwrap_err();
    assert!(missing.contains("cannot be read"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}
