//! The shipped prelude and the generated script, checked through their
//! syntax trees (tree-sitter-powershell): the branches that matter
//! are where PowerShell reaches them, not merely somewhere in the text.
//! There is no PowerShell here; each check names the behaviour it relies on.
//! Only what the real pwsh on Linux cannot show is left here: the Windows
//! PowerShell 5.1 branches (CIM instances, the machine-level PSModulePath
//! in the registry). What pwsh 7 runs is shown on it instead
//! (`spec/real_pwsh/dsc/prelude_results_spec.rb`, `lcm_semantics_spec.rb`).

mod common;

use common::*;
use pwshlib_core::script::DscMethod;
use pwshlib_core::templates;
use pwshlib_pslint::with_tree;
use tree_sitter::Node;

/// Whitespace collapsed, so that checks do not depend on line breaks.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text<'a>(code: &'a str, node: Node) -> &'a str {
    &code[node.byte_range()]
}

/// Every node of `kind` under `node`, in document order.
fn all<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == kind {
            found.push(n);
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    found
}

/// The definition of function `name` in the prelude.
fn function<'t>(code: &str, root: Node<'t>, name: &str) -> Node<'t> {
    all(root, "function_statement")
        .into_iter()
        .find(|f| {
            let mut cursor = f.walk();
            let found = f
                .children(&mut cursor)
                .find(|c| c.kind() == "function_name")
                .is_some_and(|n| text(code, n).eq_ignore_ascii_case(name));
            found
        })
        .unwrap_or_else(|| panic!("the prelude defines no {name}"))
}

/// The `if` statements directly in a function body (not nested in other
/// blocks): the order PowerShell tries them in.
fn top_level_ifs<'t>(code: &str, function: Node<'t>) -> Vec<(String, Node<'t>)> {
    let body = all(function, "script_block_body")[0];
    let list = body.child_by_field_name("statement_list").unwrap();
    let mut cursor = list.walk();
    let ifs: Vec<(String, Node<'t>)> = list
        .named_children(&mut cursor)
        .filter(|s| s.kind() == "if_statement")
        .map(|s| {
            let condition = s.child_by_field_name("condition").unwrap();
            (flat(text(code, condition)), s)
        })
        .collect();
    ifs
}

/// The statements of an `if`'s own block (its first statement_block).
fn block_statements(code: &str, statement: Node) -> Vec<String> {
    let mut cursor = statement.walk();
    let block = statement
        .children(&mut cursor)
        .find(|c| c.kind() == "statement_block")
        .unwrap();
    let list = block.child_by_field_name("statement_list").unwrap();
    let mut cursor = list.walk();
    let statements: Vec<String> = list
        .named_children(&mut cursor)
        .filter(|s| s.kind() != "comment")
        .map(|s| flat(text(code, s)))
        .collect();
    statements
}

fn position(ifs: &[(String, Node)], condition: &str) -> usize {
    ifs.iter()
        .position(|(c, _)| c == condition)
        .unwrap_or_else(|| {
            panic!(
                "no `if ({condition})`; the conditions are {:?}",
                ifs.iter().map(|(c, _)| c).collect::<Vec<_>>()
            )
        })
}

/// Item 9: an MSFT_Credential CIM instance (how 5.1's Invoke-DscResource
/// returns a credential) reads as `{user, password = $null}`, tried before
/// the generic CIM instance branch (which would copy UserName and Password
/// out as they are). Its block never reads the Password property.
#[test]
fn canonical_values_read_an_msft_credential_as_its_user_alone() {
    let code = templates::PRELUDE;
    with_tree(code, |tree| {
        let convert = function(code, tree.root_node(), "ConvertTo-PwshlibCanonicalValue");
        let ifs = top_level_ifs(code, convert);
        let credential = position(
            &ifs,
            "$Value -is [Microsoft.Management.Infrastructure.CimInstance] -and $Value.CimSystemProperties.ClassName -eq 'MSFT_Credential'",
        );
        let generic = position(
            &ifs,
            "$Value -is [Microsoft.Management.Infrastructure.CimInstance]",
        );
        assert!(credential < generic);
        let statements = block_statements(code, ifs[credential].1);
        assert_eq!(
            statements.last().unwrap(),
            "return @{ user = $User; password = $null }"
        );
        let block = statements.join("\n");
        assert!(block.contains("if ($Property.Name -eq 'UserName')"), "{block}");
        assert!(!block.contains("'Password'"), "{block}");
        // A PSCredential (PowerShell 7, class-based resources) reads the same.
        let pscredential = position(
            &ifs,
            "$Value -is [System.Management.Automation.PSCredential]",
        );
        assert_eq!(
            block_statements(code, ifs[pscredential].1),
            ["return @{ user = $Value.UserName; password = $null }"]
        );
    })
    .unwrap();
}

/// The review's N6: a CIM instance's class is read from
/// `CimSystemProperties.ClassName`, never `CimClass`. New-CimInstance
/// -ClientOnly (PowerShell's
/// src/Microsoft.Management.Infrastructure.CimCmdlets/CimNewCimInstance.cs,
/// `CreateCimInstance(string className, …)`) makes the instance with
/// `new CimInstance(className, cimNamespace)` and writes it out without
/// asking a server for the class, so it has no CimClass (null); its
/// CimSystemProperties.ClassName is the className given. With CimClass a
/// nested instance's cim_instance_type read null and an MSFT_Credential was
/// not recognised, so its Password went into the JSON that --debug logs.
/// pwsh on Linux has no CIM (no libmi), so this is checked here, on the
/// text, and the reasoning rests on that source.
#[test]
fn cim_class_names_come_from_cim_system_properties() {
    let code = templates::PRELUDE;
    assert!(!code.contains(".CimClass."), "the prelude reads CimClass");
    with_tree(code, |tree| {
        let convert = function(code, tree.root_node(), "ConvertTo-PwshlibCanonicalValue");
        let ifs = top_level_ifs(code, convert);
        let generic = position(
            &ifs,
            "$Value -is [Microsoft.Management.Infrastructure.CimInstance]",
        );
        let statements = block_statements(code, ifs[generic].1);
        assert!(
            statements.contains(
                &"$Instance['cim_instance_type'] = $Value.CimSystemProperties.ClassName".to_owned()
            ),
            "{statements:?}"
        );
    })
    .unwrap();
}

/// The embedded-instance helpers choose by
/// `$PSVersionTable.PSEdition` (Desktop on Windows PowerShell 5.1, absent
/// before it; Core on 6 and 7): New-CimInstance and `CimInstance[]` unless
/// Core.
#[test]
fn embedded_instances_are_cim_instances_unless_on_powershell_core() {
    let code = templates::PRELUDE;
    with_tree(code, |tree| {
        let root = tree.root_node();
        let single = function(code, root, "New-PwshlibEmbeddedInstance");
        let ifs = top_level_ifs(code, single);
        assert_eq!(ifs[0].0, "$PSVersionTable.PSEdition -ne 'Core'");
        assert_eq!(
            block_statements(code, ifs[0].1),
            ["return New-CimInstance -ClientOnly -ClassName $ClassName -Property $Property"]
        );
        let array = function(code, root, "New-PwshlibEmbeddedInstanceArray");
        let ifs = top_level_ifs(code, array);
        assert_eq!(ifs[0].0, "$PSVersionTable.PSEdition -ne 'Core'");
        assert_eq!(
            block_statements(code, ifs[0].1),
            ["return , [Microsoft.Management.Infrastructure.CimInstance[]] $Instances"]
        );
    })
    .unwrap();
}

/// Item 11, the functions: the process value always; the machine value
/// only on 5.1 (a `return $null` for PSVersion.Major above 5 comes before
/// any registry access), through Microsoft.Win32.Registry with
/// DoNotExpandEnvironmentNames and the value's own kind; no
/// [Environment]::SetEnvironmentVariable anywhere. The
/// process value's function touches no registry; the machine value is
/// taken back by removing the entry from the value as it is then, never by
/// writing back a value saved before the call.
#[test]
fn the_machine_psmodulepath_is_touched_only_on_5_1_through_the_registry() {
    let code = templates::PRELUDE;
    with_tree(code, |tree| {
        let root = tree.root_node();
        let calls_in = |node: Node| -> Vec<String> {
            all(node, "invokation_expression")
                .into_iter()
                .map(|n| flat(text(code, n)))
                .collect()
        };
        assert!(
            !calls_in(root).iter().any(|c| c.contains("SetEnvironmentVariable")),
            "no broadcast"
        );
        let process = function(code, root, "Add-PwshlibVendoredModulePath");
        let process_text = text(code, process);
        assert!(process_text.contains("$env:PSModulePath = "));
        assert!(!process_text.contains("[Microsoft.Win32.Registry]"));
        let add = function(code, root, "Add-PwshlibMachineModulePath");
        let add_text = text(code, add);
        let ifs = top_level_ifs(code, add);
        let edition = position(&ifs, "$PSVersionTable.PSVersion.Major -gt 5");
        assert_eq!(block_statements(code, ifs[edition].1), ["return $null"]);
        let edition_end = ifs[edition].1.end_byte() - add.start_byte();
        let first_registry = add_text.find("[Microsoft.Win32.Registry]").unwrap();
        assert!(edition_end < first_registry);
        let add_calls = calls_in(add);
        for wanted in [
            "$Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)",
            "$Key.GetValueKind('PSModulePath')",
            "$Key.SetValue('PSModulePath', $Munged, $Kind)",
        ] {
            assert!(add_calls.iter().any(|c| c == wanted), "{wanted}: {add_calls:?}");
        }
        // The owner is noted before the entry is added.
        let noted = add_text.find("$Owners.SetValue($Path, ").unwrap();
        assert!(noted < add_text.find("$Key.SetValue('PSModulePath'").unwrap());
        let restore = function(code, root, "Restore-PwshlibVendoredModulePath");
        let restore_text = flat(text(code, restore));
        assert!(restore_text.contains("Remove-PwshlibModulePathEntry -Key $Key -Path $Previous.Path"));
        assert!(!restore_text.contains("$Previous.Value"), "{restore_text}");
        let remove = function(code, root, "Remove-PwshlibModulePathEntry");
        let remove_calls = calls_in(remove);
        for wanted in [
            "$Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)",
            "$Key.SetValue('PSModulePath', $Rest, $Kind)",
            "$Key.DeleteValue('PSModulePath', $false)",
        ] {
            assert!(remove_calls.iter().any(|c| c == wanted), "{wanted}: {remove_calls:?}");
        }
    })
    .unwrap();
}

/// Item 11, the generated script: for every resource (MOF too) the call
/// carries the vendored folder, and nothing before it touches
/// PSModulePath: the credential, CIM instance and `[DateTime]` lines run
/// first, with nothing to undo if they fail. The prelude's
/// `Invoke-PwshlibDscResource` adds the folder inside its try, whose
/// finally restores the machine value: PowerShell runs `finally` when its
/// try block ends by a terminating error or by being stopped.
#[test]
fn the_call_adds_the_vendored_path_and_its_finally_restores_it() {
    let def = kitchen_sink(Some("MOF"), Some("1.2.0"));
    let should = resource(vec![
        ("dsc_name", s("x")),
        ("dsc_when", s("2024-01-01 10:00")),
        (
            "dsc_password",
            hash(vec![("user", s("u")), ("password", secret(s("pw-1234")))]),
        ),
        ("dsc_single", hash(vec![("value", s("one"))])),
    ]);
    let script = build(&def, &should, DscMethod::Set);
    let body = script.body();
    with_tree(body, |tree| {
        let list = tree.root_node().named_child(0).unwrap();
        assert_eq!(list.kind(), "statement_list");
        let mut cursor = list.walk();
        let statements: Vec<Node> = list.named_children(&mut cursor).collect();
        let texts: Vec<String> = statements.iter().map(|s| flat(text(body, *s))).collect();
        assert!(texts[0].starts_with("$script:ErrorActionPreference = 'Stop'"));
        assert_eq!(
            texts.last().unwrap(),
            &format!(
                "Invoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath '{VENDORED}'"
            )
        );
        for before in &texts[..texts.len() - 1] {
            assert!(!before.contains("PSModulePath"), "{before}");
        }
        assert!(all(tree.root_node(), "try_statement").is_empty(), "{body}");
    })
    .unwrap();
    let code = templates::PRELUDE;
    with_tree(code, |tree| {
        // The machine value only around Invoke-DscResource
        // (the LCM), in Invoke-PwshlibDscResourceCmdlet's try, whose finally
        // takes it back; the direct path never reaches it.
        let cmdlet = function(code, tree.root_node(), "Invoke-PwshlibDscResourceCmdlet");
        let attempts = all(cmdlet, "try_statement");
        assert_eq!(attempts.len(), 1);
        let finally = all(attempts[0], "finally_clause");
        let taken_back = flat(text(code, finally[0]));
        assert!(
            taken_back.contains("Restore-PwshlibVendoredModulePath -Previous $Previous"),
            "{taken_back}"
        );
        let block = flat(text(code, attempts[0].child(1).unwrap()));
        assert!(
            block.contains("$Previous = Add-PwshlibMachineModulePath -Path $VendoredPath"),
            "{block}"
        );
        assert!(block.contains("Invoke-DscResource @InvokeParams"), "{block}");
        let call = flat(text(code, function(code, tree.root_node(), "Invoke-PwshlibDscCall")));
        assert!(call.contains(
            "Invoke-PwshlibDscCallThroughCmdlet -InvokeParams $InvokeParams -VendoredPath $VendoredPath"
        ));
        assert!(!call.contains("Invoke-DscResource @InvokeParams"), "{call}");
        let through = flat(text(code, function(code, tree.root_node(), "Invoke-PwshlibDscCallThroughCmdlet")));
        assert!(through.contains(
            "& { Invoke-PwshlibDscResourceCmdlet -InvokeParams $InvokeParams -VendoredPath $VendoredPath } *>&1"
        ));
        assert!(!through.contains("Invoke-DscResource @InvokeParams"), "{through}");
        for name in ["Invoke-PwshlibDscResource", "Invoke-PwshlibDirect", "Resolve-PwshlibDscResource"] {
            let body = text(code, function(code, tree.root_node(), name));
            assert!(!body.contains("Add-PwshlibMachineModulePath"), "{name}");
        }
    })
    .unwrap();
}
