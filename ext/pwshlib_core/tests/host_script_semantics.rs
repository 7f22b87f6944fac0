//! What lib/templates/host.ps1 does for Windows PowerShell 5.1 and pwsh 7
//! (issue 10, items 1 to 7). There is no PowerShell here, so these tests
//! read the script through tree-sitter-powershell: each finds the function
//! (or top-level statement) that must carry a fix and checks its exact
//! statements, in order where order matters. The simulated host's side of
//! the same behaviour is tested in ext/pwshlib_sim and spec/pwsh.

use std::path::PathBuf;

use tree_sitter::Node;

fn host_script() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates/host.ps1");
    std::fs::read_to_string(path).expect("lib/templates/host.ps1")
}

/// The body of `function <name> { … }`, found in the syntax tree.
fn function_body(script: &str, name: &str) -> String {
    pwshlib_core::pslint::with_tree(script, |tree| {
        let mut found = Vec::new();
        collect_functions(tree.root_node(), script, name, &mut found);
        assert_eq!(found.len(), 1, "host.ps1 defines function {name} once");
        found.remove(0)
    })
    .expect("the PowerShell grammar loads")
}

fn collect_functions(node: Node<'_>, script: &str, name: &str, out: &mut Vec<String>) {
    if node.kind() == "function_statement" {
        let mut cursor = node.walk();
        let named = node
            .named_children(&mut cursor)
            .find(|child| child.kind() == "function_name")
            .map(|child| &script[child.byte_range()]);
        if named.is_some_and(|n| n.eq_ignore_ascii_case(name)) {
            out.push(script[node.byte_range()].to_owned());
        }
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        collect_functions(child, script, name, out);
    }
}

/// Every statement line (trimmed, comments and blank lines left out).
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The index of `wanted` among `lines`, which must hold it exactly once.
fn position(lines: &[String], wanted: &str) -> usize {
    let found: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.as_str() == wanted)
        .map(|(index, _)| index)
        .collect();
    assert_eq!(found.len(), 1, "exactly one line {wanted:?} in {lines:#?}");
    found[0]
}

/// Each of `wanted` is among `lines`, exactly once.
fn holds_each(lines: &[String], wanted: &[&str]) {
    for line in wanted {
        position(lines, line);
    }
}

/// The C# source of the custom host (the here-string Add-Type compiles).
fn host_source(script: &str) -> String {
    let start = script
        .find("$script:HostSource = @'\n")
        .expect("the host source here-string")
        + "$script:HostSource = @'\n".len();
    let end = start + script[start..].find("\n'@").expect("its end");
    script[start..end].to_owned()
}

/// Item 1: on 5.1, CreateRunspace() without a session state leaves
/// InitialSessionState null and ResetRunspaceState throws; every runspace
/// the host runs requests in comes from CreateDefault2.
#[test]
fn runspaces_are_built_from_create_default2_with_the_custom_host() {
    let script = host_script();
    let new_session = lines(&function_body(&script, "New-Session"));
    let state = position(
        &new_session,
        "$state = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()",
    );
    let create = position(
        &new_session,
        "$runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace($pshost, $state)",
    );
    let host = position(
        &new_session,
        "$pshost = New-Object PwshlibHost.PwshlibPSHost",
    );
    assert!(host < create && state < create);
    // No other runspace is created anywhere (the parent watcher runs in
    // [PowerShell]::Create()'s own and never resets it).
    let statements = lines(&script).join("\n");
    assert_eq!(statements.matches("CreateRunspace(").count(), 1);
    for user in ["Invoke-InSession", "New-PreludeSession"] {
        let body = function_body(&script, user);
        assert!(!body.contains("CreateRunspace"), "{user}");
    }
    let prelude = lines(&function_body(&script, "New-PreludeSession"));
    position(&prelude, "$session = New-Session");
}

/// Item 2: `exit N` at the top level reaches the host as SetShouldExit(N);
/// the result's exit code is the host's.
#[test]
fn exit_codes_come_from_the_custom_hosts_set_should_exit() {
    let script = host_script();
    let source = host_source(&script);
    let set_should_exit = source
        .find("public override void SetShouldExit(int exitCode)")
        .expect("the host overrides SetShouldExit");
    let body = &source[set_should_exit..];
    let body = &body[..body.find("}\n").unwrap()];
    assert!(body.contains("this.exitCode = exitCode;"), "{body}");
    assert!(body.contains("this.shouldExit = true;"), "{body}");
    let reset = &source[source.find("public void Reset()").unwrap()..];
    assert!(reset[..reset.find("}\n").unwrap()].contains("shouldExit = false;"));
    // Compiled once, at start (C# 5 for the .NET Framework's csc).
    assert!(lines(&script)
        .contains(&"Add-Type -TypeDefinition $script:HostSource -Language CSharp".to_owned()));
    assert!(!source.contains("=>") && !source.contains("?.") && !source.contains("$\""));

    let invoke = lines(&function_body(&script, "Invoke-InSession"));
    let reset_call = position(&invoke, "$pshost.Reset()");
    let begin = position(&invoke, "$pending = $ps.BeginInvoke($noInput, $output)");
    let asked = position(&invoke, "if ($pshost.ShouldExit) {");
    let taken = position(&invoke, "$exitCode = $pshost.ExitCode");
    assert!(reset_call < begin && begin < asked && asked + 1 == taken);
}

/// Item 3: Write-Host, Write-Information, Write-Warning and [Console]::Out
/// land in stdout in order with the pipeline output (Out-Default through
/// the host UI) for plain requests; a DSC request's stdout stays the
/// pipeline output alone.
#[test]
fn host_writes_reach_stdout_in_order_and_dsc_stdout_stays_the_json_line() {
    let script = host_script();
    let source = host_source(&script);
    let ui = &source[source
        .find("public sealed class PwshlibUI : PSHostUserInterface")
        .expect("the host UI class")..];
    let ui = &ui[..ui
        .find("public sealed class PwshlibPSHost")
        .expect("the host class")];
    for (method, shown) in [
        (
            "public override void WriteWarningLine(string message)",
            "Out(\"WARNING: \" + message + \"\\n\");",
        ),
        (
            "public override void WriteVerboseLine(string message)",
            "Out(\"VERBOSE: \" + message + \"\\n\");",
        ),
        (
            "public override void WriteDebugLine(string message)",
            "Out(\"DEBUG: \" + message + \"\\n\");",
        ),
        ("public override void Write(string value)", "Out(value);"),
        (
            "public override void WriteErrorLine(string value)",
            "errors.Append(value + \"\\n\");",
        ),
    ] {
        let line = ui
            .lines()
            .find(|line| line.trim().starts_with(method))
            .unwrap_or_else(|| panic!("{method}"));
        assert!(line.contains(shown), "{line}");
    }
    let information = &source[source
        .find("public override void WriteInformation(InformationRecord record)")
        .unwrap()..];
    let information = &information[..information.find("\n        }\n").unwrap()];
    assert!(information.contains("record.Tags.Contains(\"PSHOST\")"));
    assert!(information.contains("Out(text + \"\\n\");"));

    let invoke = lines(&function_body(&script, "Invoke-InSession"));
    let plain = position(&invoke, "if (-not $ForDsc) {");
    // Module-qualified (a user's Out-Default is not called), and through
    // Out-String -Stream (a native program's output is read, not left to
    // the host's null stdout): issue 31, items 5 and 6.
    assert_eq!(
        invoke[plain + 1..plain + 3],
        [
            "$ps.AddCommand('Microsoft.PowerShell.Utility\\Out-String').AddParameter('Stream') | Out-Null",
            "$ps.AddCommand('Microsoft.PowerShell.Core\\Out-Default') | Out-Null",
        ]
    );
    // [Console]::Out is routed once, for the life of the host, to the
    // buffer of the runspace that writes (issue 31, N16).
    let top = lines(&script);
    position(
        &top,
        "[Console]::SetOut((New-Object PwshlibHost.ConsoleRouter -ArgumentList $false, ([Console]::Out)))",
    );
    let new_session = lines(&function_body(&script, "New-Session"));
    position(
        &new_session,
        "[PwshlibHost.ConsoleRouter]::Register($runspace.InstanceId, $pshost.Output, $pshost.Errors)",
    );
    assert!(!invoke.iter().any(|line| line.contains("SetOut")));
    let dsc = position(&invoke, "$hostText = $pshost.TakeOutput()") + 1;
    assert_eq!(invoke[dsc], "if ($ForDsc) {");
    assert_eq!(
        invoke[dsc + 1..dsc + 9],
        [
            "$stdout = $null",
            "if ($output.Count -gt 0) {",
            "$stdout = ($output | Out-String)",
            "}",
            "$native = $hostText",
            "} else {",
            "$stdout = $hostText",
            "$native = $null",
        ]
    );
    let request = lines(&function_body(&script, "Invoke-Request"));
    position(
        &request,
        "$outcome = Invoke-InSession -Request $Request -Session $session -ForDsc ($null -ne $preludeId)",
    );
}

/// Item 4: a snapshot at start, restored before every call (SystemRoot
/// never removed); the request's env applied inside the try, a bad entry
/// failing the call only.
#[test]
fn the_environment_is_restored_from_the_start_snapshot_before_each_call() {
    let script = host_script();
    let top = lines(&script);
    let snapshot = position(
        &top,
        "$script:EnvironmentSnapshot = New-Object System.Collections.Hashtable -ArgumentList $script:NameComparer",
    );
    assert_eq!(
        top[snapshot + 1..snapshot + 3],
        [
            "foreach ($entry in [Environment]::GetEnvironmentVariables().GetEnumerator()) {",
            "$script:EnvironmentSnapshot[[string]$entry.Key] = [string]$entry.Value",
        ]
    );
    // Taken before any request is served.
    assert!(snapshot < position(&top, "$outcome = Invoke-Request -Request $message"));

    let restore = lines(&function_body(&script, "Restore-Environment"));
    holds_each(
        &restore,
        &[
            "if ($name -eq 'SystemRoot' -or $script:EnvironmentSnapshot.ContainsKey($name)) {",
            "[Environment]::SetEnvironmentVariable($name, [NullString]::Value)",
            "[Environment]::SetEnvironmentVariable($entry.Key, $entry.Value)",
        ],
    );

    let invoke = lines(&function_body(&script, "Invoke-InSession"));
    let try_at = invoke.iter().position(|line| line == "try {").unwrap();
    let restored = position(&invoke, "Restore-Environment");
    let applied = position(&invoke, "Set-RequestEnvironment -Pairs $Request.env");
    let run = position(&invoke, "$pending = $ps.BeginInvoke($noInput, $output)");
    assert!(try_at < restored && restored < applied && applied < run);
    // The try's catch turns a refused entry into an error result.
    let catch = invoke.iter().rposition(|line| line == "} catch {").unwrap();
    assert!(catch > run);
    assert_eq!(
        invoke[catch + 1],
        "$outcome.Result = New-Result -ExitCode 1 -ErrorMessage $_.Exception.Message"
    );

    // Set in order: a name given twice takes its last value (issue 31,
    // item 2).
    let set = lines(&function_body(&script, "Set-RequestEnvironment"));
    holds_each(
        &set,
        &["[Environment]::SetEnvironmentVariable($name, [string]$pair[1])"],
    );
    assert!(!set.iter().any(|line| line.contains("more than once")));
}

/// Item 5: a failed or timed-out call's session is replaced; Stop() is
/// waited for a bounded time, and the timeout is reported either way.
#[test]
fn a_failed_or_timed_out_call_gets_a_fresh_runspace_and_stop_is_bounded() {
    let script = host_script();
    let top = lines(&script);
    let stop_wait: u64 = top
        .iter()
        .find_map(|line| line.strip_prefix("$script:StopWaitMs = "))
        .expect("a bounded Stop wait")
        .parse()
        .unwrap();
    // The result must reach the manager within its grace after the timeout.
    assert!(stop_wait < pwshlib_core::host::READ_GRACE_MS);

    let invoke = lines(&function_body(&script, "Invoke-InSession"));
    let waited = position(
        &invoke,
        "if (-not $pending.AsyncWaitHandle.WaitOne($timeoutMs)) {",
    );
    // Stop is asked for at once and waited for after the reply is sent
    // (Complete-Stop), so the reply never waits for it.
    assert_eq!(
        invoke[waited + 1..waited + 5],
        [
            "$outcome.Stopping = $ps.BeginStop($null, $null)",
            "$outcome.Pipeline = $ps",
            "$ps = $null",
            "$outcome.Rebuild = $true",
        ]
    );
    let complete = lines(&function_body(&script, "Complete-Stop"));
    holds_each(
        &complete,
        &[
            "if (-not $Outcome.Stopping.AsyncWaitHandle.WaitOne($script:StopWaitMs)) {",
            "return $true",
            "$Outcome.Pipeline.Dispose()",
        ],
    );
    // What was written before the timeout goes with it (issue 31, item 7).
    let timed_out = &invoke[waited + 5..];
    let reply = timed_out
        .iter()
        .position(|line| {
            line.contains("Catastrophic failure: PowerShell module timeout ($timeoutMs ms)")
        })
        .expect("the timeout result");
    assert!(timed_out[..reply].contains(&"$stdout = $pshost.TakeOutput()".to_owned()));
    assert!(timed_out[reply].contains("-Stdout (Get-NonEmpty $stdout)"));
    assert_eq!(timed_out[reply + 1], "return $outcome");
    assert!(!script.contains("$ps.Stop()"));
    let failed = position(&invoke, "$ps.EndInvoke($pending) | Out-Null");
    let caught = &invoke[failed..];
    assert!(caught[..12].contains(&"$outcome.Rebuild = $true".to_owned()));

    // The session is rebuilt after the result is sent (issue 31, N5), and
    // a prelude is named only when its session is kept.
    let request = lines(&function_body(&script, "Invoke-Request"));
    position(
        &request,
        "if ($null -ne $preludeId -and -not $outcome.Rebuild) {",
    );
    assert!(!request.iter().any(|line| line.contains("Reset-Session")));
    let top = lines(&script);
    let sent = position(&top, "Write-Frame -Stream $stream -Message $result");
    assert_eq!(
        top[sent + 1..sent + 5],
        [
            "if ($outcome.Rebuild) {",
            "$abandon = Complete-Stop -Outcome $outcome",
            "Reset-Session -Prelude $outcome.Prelude -Abandon $abandon",
            "}",
        ]
    );
    // A failed rebuild leaves no dead session: null, built on demand by the
    // next plain request (issue 31, N13).
    let reset = lines(&function_body(&script, "Reset-Session"));
    let built = position(&reset, "$script:Session = New-Session");
    assert_eq!(
        reset[built + 1..built + 3],
        ["} catch {", "$script:Session = $null"]
    );
    let on_demand = position(&request, "if ($null -eq $script:Session) {");
    assert_eq!(request[on_demand + 2], "$script:Session = New-Session");
}

/// Item 6: wildcard characters in the working directory, lone surrogates
/// in the output, and pwsh 7's date parsing of JSON strings.
#[test]
fn brackets_lone_surrogates_and_date_like_strings_are_handled() {
    let script = host_script();
    let invoke = lines(&function_body(&script, "Invoke-InSession"));
    holds_each(
        &invoke,
        &[
            "$runspace.SessionStateProxy.Path.SetLocation([System.Management.Automation.WildcardPattern]::Escape($workingDir)) | Out-Null",
            "[Environment]::CurrentDirectory = $workingDir",
        ],
    );
    // The default is a plain path even in a UNC directory: PathInfo.Path
    // is provider-qualified there ("Microsoft.PowerShell.Core\FileSystem::
    // \\server\share"), which [Environment]::CurrentDirectory refuses;
    // ProviderPath is the file system's own (issue 31, N14).
    position(
        &lines(&script),
        "$script:HomeDirectory = (Get-Location).ProviderPath",
    );

    let top = lines(&script);
    position(
        &top,
        "$script:Utf8Out = New-Object System.Text.UTF8Encoding -ArgumentList $false, $false",
    );
    let write = lines(&function_body(&script, "Write-Frame"));
    position(
        &write,
        "$bytes = $script:Utf8Out.GetBytes((ConvertTo-Frame -Message $Message))",
    );
    // Reading stays strict.
    position(
        &top,
        "$script:Utf8 = New-Object System.Text.UTF8Encoding -ArgumentList $false, $true",
    );
    let result = lines(&function_body(&script, "New-Result"));
    for field in ["stdout", "stderr", "errormessage", "native_stdout"] {
        assert!(
            result
                .iter()
                .any(|line| line.starts_with(field) && line.contains("= Repair-Text $")),
            "{field}: {result:?}"
        );
    }

    let from = lines(&function_body(&script, "ConvertFrom-Frame"));
    position(
        &from,
        "$document = [System.Text.Json.JsonDocument]::Parse($Text, (New-Object System.Text.Json.JsonDocumentOptions))",
    );
    // No ConvertFrom-Json (pwsh 7 parses date-like strings into DateTime).
    let cmdlet = regex::Regex::new(r"(?i)ConvertFrom-Json\b").unwrap();
    assert!(!cmdlet.is_match(&lines(&script).join("\n")));
    let element = lines(&function_body(&script, "ConvertFrom-JsonElement"));
    position(&element, "'String' { return $Element.GetString() }");
}

/// Item 7 (host side): on Windows the pipe's ACL grants the current user
/// alone and denies NETWORK, on every .NET the host may run on; the deny
/// entry only when the host's own token lacks NETWORK (issue 31, N1: in a
/// network logon it would refuse the manager, the same logon).
#[test]
fn the_pipe_acl_grants_the_current_user_and_denies_network() {
    let script = host_script();
    let security = lines(&function_body(&script, "New-PipeSecurity"));
    assert_eq!(
        security[1..],
        [
            "$identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()",
            "$user = $identity.User",
            "$network = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-2'",
            "$networkLogon = @($identity.Groups | Where-Object { $_.Value -eq 'S-1-5-2' }).Count -gt 0",
            "$security = New-Object System.IO.Pipes.PipeSecurity",
            "$security.SetAccessRuleProtection($true, $false)",
            "if (-not $networkLogon) {",
            "$security.AddAccessRule((New-Object System.IO.Pipes.PipeAccessRule -ArgumentList $network, ([System.IO.Pipes.PipeAccessRights]::FullControl), ([System.Security.AccessControl.AccessControlType]::Deny)))",
            "}",
            "$security.AddAccessRule((New-Object System.IO.Pipes.PipeAccessRule -ArgumentList $user, ([System.IO.Pipes.PipeAccessRights]::FullControl), ([System.Security.AccessControl.AccessControlType]::Allow)))",
            "return $security",
            "}",
        ]
    );
    let top = lines(&script);
    let servers: Vec<&String> = top
        .iter()
        .filter(|line| line.starts_with("$server = ") && line.contains("Pipe"))
        .collect();
    assert_eq!(servers.len(), 3, "{servers:#?}");
    assert!(
        servers[0].ends_with(", 0, 0, (New-PipeSecurity)"),
        "{}",
        servers[0]
    );
    assert!(
        servers[1].ends_with(", 0, 0, (New-PipeSecurity))"),
        "{}",
        servers[1]
    );
    assert!(
        servers[2].ends_with("([System.IO.Pipes.PipeOptions]::CurrentUserOnly)"),
        "{}",
        servers[2]
    );
    // Every server is made with one instance (FILE_FLAG_FIRST_PIPE_INSTANCE).
    for server in servers {
        assert!(
            server.contains("$pipeName, $direction, 1, $mode"),
            "{server}"
        );
    }
}
