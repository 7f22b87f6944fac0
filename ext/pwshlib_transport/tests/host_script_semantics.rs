//! What lib/templates/host.ps1 and the C# host it compiles
//! (lib/templates/PwshlibHost*.cs) do for Windows PowerShell 5.1 and pwsh 7.
//! There is no PowerShell here,
//! so these tests read the script through tree-sitter-powershell and the C#
//! as text: each finds the function or method that must carry a fix and
//! checks its exact statements, in order where order matters. The simulated
//! host's side of the same behaviour is tested in ext/pwshlib_sim and
//! spec/pwsh; the real pwsh runs both in spec/real_pwsh.

use std::path::PathBuf;

use tree_sitter::Node;

fn host_script() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates/host.ps1");
    std::fs::read_to_string(path).expect("lib/templates/host.ps1")
}

/// host_compile.ps1, which a start that finds no cached assembly runs.
fn compile_script() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates/host_compile.ps1");
    std::fs::read_to_string(path).expect("lib/templates/host_compile.ps1")
}

/// The C# of the host, its files joined as host_compile.ps1 joins them
/// before it hands the text whole to Add-Type.
fn host_source() -> String {
    let templates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates");
    host_source_names(&compile_script())
        .iter()
        .map(|name| std::fs::read_to_string(templates.join(name)).expect(name))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The host's C# files, in the order host_compile.ps1 reads them
/// (Get-PwshlibHostSource).
fn host_source_names(script: &str) -> Vec<String> {
    let line = script
        .lines()
        .find_map(|line| {
            line.split_once("foreach ($Name in @(")
                .map(|(_, rest)| rest)
        })
        .expect("host_compile.ps1 names its C# files");
    line.trim_end_matches(")) {")
        .split(", ")
        .map(|name| name.trim_matches('\'').to_owned())
        .collect()
}

/// host_compile.ps1 compiles every PwshlibHost*.cs shipped, each once, starting
/// with PwshlibHost.cs (the one that says what each part does).
#[test]
fn the_host_compiles_every_part_of_its_csharp() {
    let names = host_source_names(&compile_script());
    let templates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/templates");
    let mut shipped: Vec<String> = std::fs::read_dir(templates)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("PwshlibHost") && name.ends_with(".cs"))
        .collect();
    shipped.sort();
    let mut listed = names.clone();
    listed.sort();
    listed.dedup();
    assert_eq!(listed, shipped);
    assert_eq!(names.len(), shipped.len());
    assert_eq!(names[0], "PwshlibHost.cs");
    // Each part compiles on its own as the joined text does: its using
    // directives are inside its namespace block, none before it.
    for name in &names {
        let text = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../lib/templates")
                .join(name),
        )
        .unwrap();
        assert!(
            !text.lines().any(|line| line.starts_with("using ")),
            "{name}: a using directive outside the namespace"
        );
    }
}

/// The C# member whose declaration line starts with `signature` (after
/// indentation), from that line to its closing brace.
fn member(source: &str, signature: &str) -> String {
    let starts: Vec<usize> = source
        .match_indices('\n')
        .map(|(at, _)| at + 1)
        .filter(|&at| source[at..].trim_start_matches(' ').starts_with(signature))
        .collect();
    assert_eq!(starts.len(), 1, "one declaration {signature:?}");
    let text = &source[starts[0]..];
    let mut depth = 0usize;
    let mut opened = false;
    for (at, c) in text.char_indices() {
        match c {
            '{' => {
                depth += 1;
                opened = true;
            }
            '}' => {
                depth -= 1;
                if opened && depth == 0 {
                    return text[..=at].to_owned();
                }
            }
            _ => {}
        }
    }
    panic!("{signature:?} has no closing brace");
}

/// The body of `function <name> { … }`, found in the syntax tree.
fn function_body(script: &str, name: &str) -> String {
    pwshlib_pslint::with_tree(script, |tree| {
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

/// Every statement line (trimmed, comments and blank lines left out; `#`
/// comments in PowerShell, `//` in C#).
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("//"))
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

/// Item 1: on 5.1, CreateRunspace() without a session state leaves
/// InitialSessionState null and ResetRunspaceState throws; every runspace
/// the host runs requests in comes from CreateDefault2.
#[test]
fn runspaces_are_built_from_create_default2_with_the_custom_host() {
    let source = host_source();
    let session = lines(&member(&source, "public Session()"));
    let host = position(&session, "psHost = new PwshlibPSHost();");
    let state = position(
        &session,
        "InitialSessionState state = InitialSessionState.CreateDefault2();",
    );
    let create = position(
        &session,
        "runspace = RunspaceFactory.CreateRunspace(psHost, state);",
    );
    assert!(host < create && state < create);
    // No other runspace is created anywhere (host.ps1's parent watcher runs
    // in [PowerShell]::Create()'s own and never resets it).
    assert_eq!(
        lines(&source).join("\n").matches("CreateRunspace(").count(),
        1
    );
    assert!(!lines(&host_script()).join("\n").contains("CreateRunspace"));
    // Each slot's session, plain or prelude, is a Session (the
    // prelude requests alternate between two slots).
    let prelude = lines(&member(&source, "private Slot GetPreludeSlot("));
    position(&prelude, "slot.Session = new Session();");
    let acquire = lines(&member(&source, "private Slot Acquire("));
    position(
        &acquire,
        "if (slot.Session == null) { slot.Session = new Session(); }",
    );
}

/// Every session trusts the root drive '/' once it is open, so
/// that its lookups stop reading the mount table (PowerShell marks it
/// auto-mounted when the first mount is not a disk). Only a file system
/// drive named '/' and rooted at '/' is touched, and a PowerShell without
/// the internal property is left alone.
#[test]
fn each_session_trusts_the_root_drive_and_no_other() {
    let source = host_source();
    let session = lines(&member(&source, "public Session()"));
    let open = position(&session, "runspace.Open();");
    assert_eq!(session[open + 1], "TrustRootDrive(runspace);");
    let trust = lines(&member(
        &source,
        "private static void TrustRootDrive(Runspace runspace)",
    ));
    holds_each(
        &trust,
        &[
            "if (autoMounted == null) { return; }",
            "foreach (PSDriveInfo drive in runspace.SessionStateProxy.Drive.GetAllForProvider(\"FileSystem\"))",
            "if (drive.Name == \"/\" && drive.Root == \"/\" && (bool)autoMounted.GetValue(drive, null))",
            "autoMounted.SetValue(drive, false, null);",
        ],
    );
    assert_eq!(source.matches("autoMounted.SetValue(").count(), 1);
}

/// Item 2: `exit N` at the top level reaches the host as SetShouldExit(N);
/// the result's exit code is the host's.
#[test]
fn exit_codes_come_from_the_custom_hosts_set_should_exit() {
    let script = host_script();
    let source = host_source();
    let body = lines(&member(
        &source,
        "public override void SetShouldExit(int exitCode)",
    ));
    holds_each(
        &body,
        &["this.exitCode = exitCode;", "this.shouldExit = true;"],
    );
    holds_each(
        &lines(&member(&source, "public void Reset()")),
        &["shouldExit = false;"],
    );
    // Compiled once, at start (C# 5 for the .NET Framework's csc), and
    // optimized: on pwsh 7 through -CompilerOptions, whose Add-Type
    // otherwise marks the assembly [Debuggable(DisableOptimizations)];
    // Windows PowerShell 5.1's has no such parameter (its Add-Type gives
    // csc /optimize+ already). One function compiles, for the cache and in
    // memory alike, and is the only Add-Type of the host's source.
    let compile_script = compile_script();
    let compile = lines(&member(&compile_script, "function Add-PwshlibHostType {"));
    let optimized_if_core = position(
        &compile,
        "if ($PSVersionTable.PSEdition -eq 'Core') { $Output.CompilerOptions = '-optimize+' }",
    );
    let added = position(
        &compile,
        "Add-Type -TypeDefinition (Get-PwshlibHostSource) -Language CSharp @Output",
    );
    assert!(optimized_if_core < added);
    let script_lines = lines(&compile_script);
    let to_cache = position(
        &script_lines,
        "Add-PwshlibHostType @{ OutputAssembly = $Temporary; OutputType = 'Library' }",
    );
    let in_memory = position(&script_lines, "Add-PwshlibHostType");
    assert!(to_cache < in_memory);
    assert_eq!(
        compile_script.matches("Add-Type -TypeDefinition").count(),
        1
    );
    // host.ps1 compiles nothing itself: it runs host_compile.ps1.
    assert!(!script.contains("Add-Type"));
    // (Its statements: the comments name what is left out.)
    let code = lines(&source).join("\n");
    assert!(!code.contains("=>") && !code.contains("?.") && !code.contains("$\""));

    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let reset_call = position(&invoke, "psHost.Reset();");
    let begin = position(
        &invoke,
        "running = ps.BeginInvoke<PSObject, PSObject>(noInput, output);",
    );
    let asked = position(&invoke, "if (psHost.ShouldExit)");
    let taken = position(&invoke, "exitCode = psHost.ExitCode;");
    assert!(reset_call < begin && begin < asked && asked + 2 == taken);
}

/// A plain request's output is written by the host's own command
/// until its first object that is not a plain line, and by Out-String
/// -Stream (module-qualified) from that one on.
#[test]
fn plain_output_goes_through_out_string_from_the_first_object_not_a_plain_line() {
    let source = host_source();
    let text = lines(&member(&source, "public sealed class OutTextCommand"));
    position(
        &text,
        "internal static readonly CmdletInfo Info = new CmdletInfo(\"Out-PwshlibText\", typeof(OutTextCommand));",
    );
    let formatter = position(
        &text,
        "formatter = ScriptBlock.Create(\"Microsoft.PowerShell.Utility\\\\Out-String -Stream\").GetSteppablePipeline();",
    );
    assert_eq!(text[formatter + 1], "formatter.Begin(this);");
    assert_eq!(text[formatter + 3], "formatter.Process(InputObject);");
    // Once started, Out-String takes every later object (tables group).
    assert_eq!(text[formatter - 9], "if (formatter == null)");
    position(&text, "if (formatter != null) { formatter.End(); }");
}

/// Item 3: Write-Host, Write-Information, Write-Warning and [Console]::Out
/// land in stdout in order with the pipeline output (Out-Default through
/// the host UI) for plain requests; a DSC request's stdout stays the
/// pipeline output alone.
#[test]
fn host_writes_reach_stdout_in_order_and_dsc_stdout_stays_the_json_line() {
    let script = host_script();
    let source = host_source();
    let ui = member(
        &source,
        "public sealed class PwshlibUI : PSHostUserInterface",
    );
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
    let information = member(
        &source,
        "public override void WriteInformation(InformationRecord record)",
    );
    assert!(information.contains("record.Tags.Contains(\"PSHOST\")"));
    assert!(information.contains("Out(text + \"\\n\");"));

    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let plain = position(&invoke, "if (!forPrelude)");
    // The code's output piped into a command of the host's own (a native
    // program's output is read, not left to the host's null stdout), which renders it as Out-String -Stream does, through
    // Out-String itself, module-qualified (a user's Out-String is not
    // called: item 6), from the first object that is not a plain line.
    // Its lines reach the host UI as they are written (no Out-Default
    // formatting them a second time).
    assert_eq!(
        invoke[plain + 2..plain + 4],
        ["ps.AddCommand(OutTextCommand.Info);", "}",]
    );
    let output = position(&invoke, "output = new PSDataCollection<PSObject>();");
    assert_eq!(
        invoke[output + 1],
        "if (!forPrelude) { new PipelineSink(output, psHost); }"
    );
    let sink = lines(&member(&source, "public sealed class PipelineSink"));
    holds_each(
        &sink,
        &[
            "items.DataAdded += OnAdded;",
            "psHost.WritePipelineLine(line != null ? line : item.ToString());",
        ],
    );
    position(
        &lines(&source),
        "public void WritePipelineLine(string line) { ui.WriteLine(line); }",
    );
    // [Console]::Out is routed once, for the life of the host, to the
    // buffer of the runspace that writes: by the host's
    // start, which host.ps1 calls once.
    position(
        &lines(&member(&source, "public static Server Start(")),
        "Console.SetOut(new ConsoleRouter(false, Console.Out));",
    );
    assert_eq!(source.matches("Console.SetOut(").count(), 1);
    assert_eq!(script.matches("$Launcher.Start(").count(), 1);
    position(
        &lines(&member(&source, "public Session()")),
        "ConsoleRouter.Register(runspace.InstanceId, psHost.Output, psHost.Errors);",
    );
}

/// Item 3, the DSC side: a request with a prelude answers the pipeline
/// output alone, as Out-String renders it; what the code wrote to the host
/// goes to native_stdout.
#[test]
fn dsc_stdout_is_the_pipeline_output_as_out_string_renders_it() {
    let source = host_source();
    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let dsc = position(&invoke, "string hostText = psHost.TakeOutput();");
    assert_eq!(
        invoke[dsc + 1..dsc + 26],
        [
            "string stdout;",
            "string native = null;",
            // A call made in compiled code (DirectDsc) answers
            // the lines Finish writes, the prelude's variable otherwise.
            "if (direct != null)",
            "{",
            "stdout = OutLines(DirectDsc.Finish(direct, runspace, output), null);",
            "native = hostText;",
            "}",
            "else if (forPrelude)",
            "{",
            // The DSC prelude's lines come from a variable, not
            // the pipeline, whose output transcription records.
            "object kept = runspace.SessionStateProxy.GetVariable(DscOutputVariable);",
            "PSObject wrapped = kept as PSObject;",
            "string[] held = (wrapped != null ? wrapped.BaseObject : kept) as string[];",
            "if (held != null)",
            "{",
            "runspace.SessionStateProxy.SetVariable(DscOutputVariable, null);",
            "stdout = OutLines(held, output.Count > 0 ? OutString(runspace, output) : null);",
            "}",
            "else",
            "{",
            "stdout = output.Count > 0 ? OutString(runspace, output) : null;",
            "}",
            "native = hostText;",
            "}",
            "else",
            "{",
        ]
    );
    // The pipeline output as Out-String renders it: a string as itself and
    // the platform's line end, anything else through Out-String itself.
    let out_string = lines(&member(&source, "private static string OutString("));
    holds_each(
        &out_string,
        &[
            "text.Append(line).Append(Environment.NewLine);",
            "formatter.AddCommand(\"Microsoft.PowerShell.Utility\\\\Out-String\");",
        ],
    );
    position(
        &lines(&member(&source, "private Outcome InvokeRequest(")),
        "Outcome outcome = InvokeInSession(request, slot.Session, prelude != null);",
    );
}

/// Item 4: a snapshot at start, restored after every call's reply (SystemRoot
/// never removed); the request's env applied inside the try, a bad entry
/// failing the call only.
#[test]
fn the_environment_is_restored_from_the_start_snapshot_after_each_call() {
    let source = host_source();
    let server = lines(&member(&source, "public Server(string hostScriptPath"));
    let snapshot = position(
        &server,
        "environmentSnapshot = new Dictionary<string, string>(nameComparer);",
    );
    assert_eq!(
        server[snapshot + 1..snapshot + 4],
        [
            "foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())",
            "{",
            "environmentSnapshot[(string)entry.Key] = (string)entry.Value;",
        ]
    );
    let restore = lines(&member(&source, "private void RestoreEnvironment()"));
    holds_each(
        &restore,
        &[
            "if (nameComparer.Equals(name, \"SystemRoot\") || environmentSnapshot.ContainsKey(name)) { continue; }",
            "try { Environment.SetEnvironmentVariable(name, null); } catch (Exception) { }",
            "try { Environment.SetEnvironmentVariable(entry.Key, entry.Value); } catch (Exception) { }",
        ],
    );
    // Restored after every call, whatever it did, before the next request
    // is read: a plain one's before its reply is sent, one with a prelude
    // first thing after it; and before the reset, which reads the
    // process's HOME.
    let put_back = lines(&member(&source, "private void PutBack(Outcome outcome)"));
    let restored = position(&put_back, "RestoreEnvironment();");
    assert_eq!(restored, 4);
    // What a DSC call (a request with a prelude) that ran left in the
    // environment joins the snapshot just before: the run's later DSC
    // calls see it, as in the LCM's one process; a plain call's never.
    assert_eq!(
        put_back[restored - 1],
        "if (outcome.ForPrelude && outcome.Ran != null && !outcome.Rebuild) { KeepEnvironment(outcome.RequestEnvironment); }"
    );
    let not_kept = lines(&member(&source, "private bool NotKept("));
    holds_each(
        &not_kept,
        &[
            "if (nameComparer.Equals(name, \"PSModulePath\") || nameComparer.Equals(name, \"SystemRoot\")) { return true; }",
            "if (nameComparer.Equals(name, given)) { return true; }",
        ],
    );
    assert!(restored < position(&put_back, "ResetInBackground(outcome.Slot, outcome);"));
    let before = lines(&member(
        &source,
        "private void BeforeReply(Outcome outcome)",
    ));
    assert_eq!(before[2], "if (!outcome.ForPrelude) { PutBack(outcome); }");
    let after = lines(&member(&source, "private void AfterReply(Outcome outcome)"));
    assert_eq!(after[2], "if (outcome.ForPrelude) { PutBack(outcome); }");

    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let try_at = invoke.iter().position(|line| line == "try").unwrap();
    let applied = position(
        &invoke,
        "SetRequestEnvironment(Get(request, \"env\"), outcome.RequestEnvironment);",
    );
    let run = position(
        &invoke,
        "running = ps.BeginInvoke<PSObject, PSObject>(noInput, output);",
    );
    assert!(try_at < applied && applied < run);
    // The try's catch turns a refused entry into an error result.
    let catch = invoke
        .iter()
        .rposition(|line| line == "catch (Exception problem)")
        .unwrap();
    assert!(catch > run);
    assert_eq!(
        invoke[catch + 2],
        "outcome.Result = NewResult(1, null, null, null, problem.Message);"
    );

    // Set in order: a name given twice takes its last value.
    let set = lines(&member(
        &source,
        "private static void SetRequestEnvironment(",
    ));
    holds_each(
        &set,
        &["Environment.SetEnvironmentVariable(name, Text(pair[1]));"],
    );
    assert!(!set.iter().any(|line| line.contains("more than once")));
}

/// The snapshot is taken before the host listens, so before any request:
/// the server is built by Start, which host.ps1 calls before it listens,
/// and after the runtime's settings are out of the environment.
#[test]
fn the_start_snapshot_is_taken_before_listening_without_runtime_settings() {
    let script = host_script();
    let source = host_source();
    let top = lines(&script);
    let started = position(&top, "$HostLoop = $Launcher.Start($ExecutionContext, $PSCommandPath, $HostAssembly, $FirstLine, $RuntimeVariables, $OnWindows, $ParentPid, $PipePath, $AssemblyCache)");
    assert!(
        started
            < position(
                &top,
                "$stream = $HostLoop.AcceptUnix($PipePath, $ParentPid, $IsLinux)"
            )
    );
    assert!(started < position(&top, "$stream = New-PwshlibPipeServer"));
    let start = lines(&member(&source, "public static Server Start("));
    let built = position(
        &start,
        "Server server = new Server(hostScriptPath, home, onWindows);",
    );
    assert!(position(&start, "Environment.SetEnvironmentVariable(name, null);") < built);
    assert!(
        built
            < position(
                &lines(&member(&source, "public Stream AcceptUnix(")),
                "listener.Listen(1);"
            ) + start.len()
    );
}

/// Item 5: a failed or timed-out call's session is replaced; Stop() is
/// waited for a bounded time, and the timeout is reported either way.
/// A successful call's reset (ResetRunspaceState, the location)
/// also comes after its reply, and before the next request is read.
#[test]
fn a_failed_or_timed_out_call_gets_a_fresh_runspace_and_stop_is_bounded() {
    let script = host_script();
    let source = host_source();
    let stop_wait: u64 = lines(&source)
        .iter()
        .find_map(|line| {
            line.strip_prefix("public const int StopWaitMs = ")
                .and_then(|rest| rest.strip_suffix(';'))
        })
        .expect("a bounded Stop wait")
        .parse()
        .unwrap();
    // The result must reach the manager within its grace after the timeout.
    assert!(stop_wait < pwshlib_transport::host::READ_GRACE_MS);

    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let waited = position(&invoke, "if (!finished)");
    // Both ways a call runs (a new pipeline, a standby) wait the timeout:
    // the standby for its pipeline's end or its call's return.
    position(
        &invoke,
        "finished = running.AsyncWaitHandle.WaitOne(timeoutMs);",
    );
    position(&invoke, "int signalled = WaitHandle.WaitAny(new WaitHandle[] { running.AsyncWaitHandle, standby.CallDone }, timeoutMs);");
    position(&invoke, "finished = signalled != WaitHandle.WaitTimeout;");
    // Stop is asked for at once and waited for after the reply is sent
    // (CompleteStop), so the reply never waits for it.
    assert_eq!(
        invoke[waited + 2..waited + 6],
        [
            "outcome.Stopping = ps.BeginStop(null, null);",
            "outcome.Pipeline = ps;",
            "ps = null;",
            "outcome.Rebuild = true;",
        ]
    );
    let complete = lines(&member(
        &source,
        "private bool CompleteStop(Outcome outcome)",
    ));
    holds_each(
        &complete,
        &[
            "if (!outcome.Stopping.AsyncWaitHandle.WaitOne(StopWaitMs)) { return true; }",
            "try { outcome.Pipeline.Dispose(); } catch (Exception) { }",
        ],
    );
    // What was written before the timeout goes with it.
    let timed_out = &invoke[waited + 6..];
    let reply = timed_out
        .iter()
        .position(|line| line.contains("\"Catastrophic failure: PowerShell module timeout (\""))
        .expect("the timeout result");
    assert_eq!(timed_out[0], "string written = psHost.TakeOutput();");
    assert!(timed_out[1].contains("forPrelude ? null : NonEmpty(written)"));
    assert_eq!(timed_out[reply + 1], "return outcome;");
    assert!(!source.contains(".Stop()") && !script.contains(".Stop()"));
    // A failed call's runspace goes, but for a resource that threw in a
    // call made in compiled code: that is the call's answer, as the
    // prelude's catch makes it, and the runspace stays.
    let failed = position(&invoke, "ps.EndInvoke(running);");
    let handled = &invoke[failed..failed + 14];
    let compiled = position(handled, "direct.Failure = problem;");
    let rebuilt = position(handled, "outcome.Rebuild = true;");
    assert!(compiled < rebuilt && handled[compiled + 2] == "else");
}

/// A slot's background work (its reset, a prelude defined ahead) runs on
/// the slot's own thread, the slot not Ready from before the work is
/// handed over until it is done, whatever it did; a throw leaves it Broken.
#[test]
fn a_slots_background_work_keeps_it_busy_until_done() {
    let source = host_source();
    let on_thread = lines(&member(
        &source,
        "private static void OnSlotThread(Slot slot, Action work)",
    ));
    let run = position(&on_thread, "slot.Resetter.Run(delegate");
    let work = position(&on_thread, "work();");
    assert!(position(&on_thread, "slot.Ready.Reset();") < run);
    assert_eq!(on_thread[work + 4], "slot.Broken = true;");
    let finally = position(&on_thread, "finally");
    assert!(work < finally && on_thread[finally + 3] == "slot.Ready.Set();");
}

/// The session is rebuilt, or reset, after the result is sent:
/// the reply comes first, then AfterReply, then the
/// next request is read; a prelude is named only when its session is kept.
#[test]
fn the_reset_or_rebuild_comes_after_the_reply_and_before_the_next_request() {
    let source = host_source();
    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let request = lines(&member(&source, "private Outcome InvokeRequest("));
    position(&request, "if (prelude != null && !outcome.Rebuild)");
    assert!(!request.iter().any(|line| line.contains("ResetSession")));
    assert!(!invoke
        .iter()
        .any(|line| line.contains("ResetRunspaceState")));
    let serve = lines(&member(&source, "private void ServeRequests()"));
    let sent = position(&serve, "WriteFrame(outcome.Result);");
    assert_eq!(serve[sent - 1], "BeforeReply(outcome);");
    // Only the opt-in trace's point (a no-op without PWSHLIB_HOST_TRACE)
    // comes between.
    assert_eq!(serve[sent + 1], "Trace(\"reply written\");");
    assert_eq!(serve[sent + 2], "AfterReply(outcome);");
    assert_eq!(serve[sent + 3], "}");
    // A call that ran and did not fail: its slot reset on the slot's own
    // thread (PutBack: a plain request's once its result is built, so that
    // the reset overlaps the reply's writing), which the next use of that
    // slot waits for (Acquire, GetPreludeSlot). Any other: its session
    // dropped after the reply (a stop waited for there, off the result's
    // way).
    let put_back = lines(&member(&source, "private void PutBack(Outcome outcome)"));
    let ran = position(
        &put_back,
        "if (outcome.Slot != null && !outcome.Rebuild && outcome.Ran != null)",
    );
    assert_eq!(
        put_back[ran + 2..ran + 4],
        [
            "outcome.Resetting = true;",
            "ResetInBackground(outcome.Slot, outcome);"
        ]
    );
    let after = lines(&member(&source, "private void AfterReply(Outcome outcome)"));
    let rebuild = position(&after, "if (!outcome.Resetting && outcome.Rebuild)");
    assert_eq!(
        after[rebuild + 2..rebuild + 5],
        [
            "bool abandon = CompleteStop(outcome);",
            "if (abandon) { abandonedPipeline = true; }",
            "Drop(outcome.Slot, abandon);",
        ]
    );
    // Once the reset's worker owns the outcome, the loop never ends its
    // pipeline itself.
    position(&after, "if (!outcome.Resetting && outcome.Ending != null)");
    assert!(!after.iter().any(|line| line.contains("ResetInBackground")));
    let worker = lines(&member(
        &source,
        "private void ResetInBackground(Slot slot, Outcome outcome)",
    ));
    let cleaned = position(&worker, "Clean(slot.Session);");
    // A standby's pipeline that was still ending after its call ends first.
    assert!(position(&worker, "EndPipeline(outcome);") < cleaned);
    assert!(position(&worker, "OnSlotThread(slot, delegate") < cleaned);
    let acquire = lines(&member(&source, "private Slot Acquire("));
    assert!(position(&acquire, "slot.Ready.WaitOne();") < acquire.len() - 3);
    let clean = lines(&member(&source, "private void Clean(Session session)"));
    assert_eq!(
        clean[2..5],
        [
            "session.Host.Reset();",
            "session.Runspace.ResetRunspaceState();",
            "SetLocationHome(session);",
        ]
    );
    // $HOME again from the host's own value: the reset read it from the
    // process environment, which the other slot's call may be changing.
    position(
        &clean,
        "if (!string.Equals(home, homeVariable, StringComparison.Ordinal))",
    );
    // ResetRunspaceState takes the location from the process directory,
    // which goes home first, whatever the call did.
    assert_eq!(
        put_back[2],
        "try { Environment.CurrentDirectory = homeDirectory; } catch (Exception) { }"
    );
    // A failed rebuild leaves no dead session: null, built on demand when
    // the slot is next used.
    position(
        &after,
        "try { other.Session = new Session(); } catch (Exception) { other.Session = null; }",
    );
    let acquire_at = position(
        &request,
        "slot = prelude != null ? GetPreludeSlot(prelude) : Acquire(plainSlots, ref plainNext);",
    );
    assert!(acquire_at > 0);
}

/// The location home again after the reset: a home with wildcard
/// characters is always set; any other only when the location's
/// ProviderPath is not home (cheap once the root drive is trusted),
/// the path escaped for SetLocation.
#[test]
fn the_location_goes_home_after_a_reset_when_it_is_not_home() {
    let source = host_source();
    let home = lines(&member(
        &source,
        "private void SetLocationHome(Session session)",
    ));
    let asked = position(
        &home,
        "if (homeHasWildcards || !string.Equals(path.CurrentFileSystemLocation.ProviderPath, homeDirectory, StringComparison.Ordinal))",
    );
    assert_eq!(
        home[asked + 2],
        "path.SetLocation(WildcardPattern.Escape(homeDirectory));"
    );
    assert_eq!(source.matches("path.SetLocation(").count(), 1);
}

/// Item 6: wildcard characters in the working directory, lone surrogates
/// in the output, and pwsh 7's date parsing of JSON strings.
#[test]
fn brackets_lone_surrogates_and_date_like_strings_are_handled() {
    let script = host_script();
    let source = host_source();
    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    holds_each(
        &invoke,
        &[
            "runspace.SessionStateProxy.Path.SetLocation(WildcardPattern.Escape(workingDir));",
            "Environment.CurrentDirectory = workingDir;",
        ],
    );
    // The default is a plain path even in a UNC directory: PathInfo.Path
    // is provider-qualified there ("Microsoft.PowerShell.Core\FileSystem::
    // \\server\share"), which [Environment]::CurrentDirectory refuses;
    // ProviderPath is the file system's own.
    position(
        &lines(&member(&source, "public static Server Start(")),
        "string home = context.SessionState.Path.CurrentFileSystemLocation.ProviderPath;",
    );

    // Writing replaces, reading stays strict.
    holds_each(
        &lines(&source),
        &[
            "private static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);",
            "private static readonly UTF8Encoding ReplacingUtf8 = new UTF8Encoding(false, false);",
        ],
    );
    let write = lines(&member(&source, "private void WriteFrame("));
    position(
        &write,
        "ReplacingUtf8.GetBytes(text, 0, text.Length, frame, 4);",
    );
    // Every string written goes through WriteString, which replaces a lone
    // surrogate with U+FFFD.
    let string = member(&source, "private static void WriteString(");
    assert_eq!(string.matches("text.Append('\\uFFFD');").count(), 2);
    let value = lines(&member(&source, "private static void WriteValue("));
    position(&value, "if (s != null) { WriteString(text, s); return; }");

    // The JSON reader keeps strings as text: no date conversion anywhere,
    // no ConvertFrom-Json (pwsh 7 parses date-like strings into DateTime).
    // Only a DSC call as data makes a DateTime, of a value tagged so
    // (docs/protocol.md, "DSC calls as data").
    let dsc_call = member(&source, "internal sealed class ValueReader");
    assert!(dsc_call.contains("case \"datetime\":"));
    // DirectResult writes a DateTime of a Get's result as its ISO text
    // (as ConvertTo-PwshlibCanonicalValue does), and makes none.
    let result = member(&source, "public static class DirectResult");
    assert!(!result.contains("typeof(DateTime)") && !result.contains("DateTime.Parse"));
    // And the host's start reads the clock for its trace.
    let start = member(&source, "public static Server Start(");
    assert!(!start.contains("Parse"));
    // The launcher host.ps1 starts it through passes the same on.
    let launcher = member(&source, "public sealed class Launcher");
    let outside = source
        .replace(&dsc_call, "")
        .replace(&result, "")
        .replace(&start, "")
        .replace(&launcher, "");
    assert!(!lines(&outside).join("\n").contains("DateTime"));
    let cmdlet = regex::Regex::new(r"(?i)ConvertFrom-Json\b").unwrap();
    assert!(!cmdlet.is_match(&lines(&script).join("\n")));
    position(
        &lines(&member(&source, "private static object ParseValue(")),
        "if (c == '\"') { return ParseString(text, ref at); }",
    );
}

/// Item 7 (host side): on Windows the pipe's ACL grants the current user
/// alone and denies NETWORK, on every .NET the host may run on; the deny
/// entry only when the host's own token lacks NETWORK (in a
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

/// Only the manager stays connected. Linux pwsh cannot
/// serve a named pipe, so the pipe's side is read here: after each
/// connection host.ps1 asks GetNamedPipeClientProcessId (kernel32) for the
/// client's pid and, unless it is -ParentPid (or cannot be told), hangs up
/// and waits again. The socket's side runs on the real pwsh
/// (spec/real_pwsh/manager_peer_spec.rb).
#[test]
fn a_client_that_is_not_the_manager_is_hung_up_on() {
    let source = host_source();
    let check = member(&source, "public static class PeerCheck");
    let declared = lines(&check);
    holds_each(
        &declared,
        &[
            "[System.Runtime.InteropServices.DllImport(\"kernel32.dll\", SetLastError = true)]",
            "private static extern bool GetNamedPipeClientProcessId(System.Runtime.InteropServices.SafeHandle pipe, out uint clientProcessId);",
            "private const int SolSocket = 1;",
            "private const int SoPeerCred = 17;",
            "if (client == managerPid) { return null; }",
        ],
    );
    let pipe = lines(&member(&check, "public static string PipeClientRefusal"));
    let failed = position(&pipe, "if (!GetNamedPipeClientProcessId(pipe, out client))");
    assert!(
        pipe[failed + 2].starts_with("return \"the client could not be identified"),
        "a client that cannot be identified is refused: {pipe:#?}"
    );
    assert_eq!(
        pipe[pipe.len() - 2],
        "return Refusal((long)client, managerPid);"
    );
    let top = lines(&host_script());
    let order = [
        "$server.WaitForConnection()",
        "if ($ParentPid -le 0) { break }",
        "$refusal = [PwshlibHost.PeerCheck]::PipeClientRefusal($server.SafePipeHandle, $ParentPid)",
        "$server.Disconnect()",
        "return $server",
    ];
    let at: Vec<usize> = order.iter().map(|line| position(&top, line)).collect();
    assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{at:?}");
    assert_eq!(top[at[0] - 1], "while ($true) {");
    assert_eq!(top[at[2] + 1], "if ($null -eq $refusal) { break }");
}

/// A request's secrets are bound in the runspace before its code
/// starts, and the hello offers the binding the codec speaks.
#[test]
fn secrets_are_bound_before_the_code_runs() {
    let source = host_source();
    let invoke = lines(&member(&source, "private Outcome InvokeInSession("));
    let bind = position(
        &invoke,
        "SecretValues.Bind(state, Get(request, \"secrets\"));",
    );
    let create = position(&invoke, "ps = PowerShell.Create();");
    assert!(
        bind < create,
        "the secrets are bound before the pipeline exists"
    );
    // The first steps (the binding among them) run before a new pipeline
    // is built, or are handed to a standby pipeline before its call.
    assert!(position(&invoke, "firstSteps(new RunspaceGlobals(runspace));") < create);
    assert!(
        position(&invoke, "standby.Give(firstSteps);")
            < position(&invoke, "if (finished && !standby.Called)")
    );
    assert!(source.contains(&format!(
        "private const int SecretsVersion = {};",
        pwshlib_transport::protocol::SECRETS_VERSION
    )));
    // The password goes into a SecureString in C#, never through a cmdlet.
    let credential = lines(&member(&source, "public static PSCredential Credential("));
    position(
        &credential,
        "foreach (char c in password) { secure.AppendChar(c); }",
    );
    let code = lines(&source).join("\n");
    assert!(!code.contains("ConvertTo-SecureString"));
}

/// A fresh host's first call: on the way to listening (the
/// assembly loaded from its cache) host.ps1 runs no cmdlet of a module,
/// whose first use auto-loads it and pays the process's first command
/// discovery (some 180 ms on pwsh 7.6.9), and no SHA-256 (the manager
/// checked the cached files and computed the source's key); compiling
/// afresh may (it takes seconds anyway). Its functions run only on a
/// cache miss or on Windows (the pipe). The parent watcher is a thread of
/// the C#, not a runspace running Start-Sleep and Get-Process.
#[test]
fn the_cached_start_runs_no_module_cmdlet_before_listening() {
    // The text as it is: a function's closing brace alone starts a line.
    let script = host_script();
    let mut start = script[..script
        .find("$HostLoop.Serve(")
        .expect("the start, up to serving")]
        .to_owned();
    // The functions: only their definitions run on the way.
    while let Some(from) = start.find("\nfunction ") {
        let to = from + start[from..].find("\n}").expect("a function's end") + 2;
        start.replace_range(from..to, "");
    }
    let compile_from = start
        .find("if (-not $Launcher) {")
        .expect("the cache-miss branch");
    // To the end of the fallbacks after a miss (the language mode check,
    // the compile in memory): the next statement is the server's start.
    let compile_to = start
        .find("$OnWindows = [System.IO.Path]::DirectorySeparatorChar -eq '\\'")
        .expect("the start after the assembly");
    let cached: String = format!("{}{}", &start[..compile_from], &start[compile_to..])
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for cmdlet in [
        "Join-Path",
        "Get-Location",
        "New-Object",
        "Split-Path",
        "Test-Path",
        "SHA256",
        "Get-PwshlibHostSource",
    ] {
        assert!(!cached.contains(cmdlet), "{cmdlet} before listening");
    }
    assert!(cached
        .contains("[System.Reflection.Assembly]::Load([System.IO.File]::ReadAllBytes($File))"));
    assert!(!script.contains("Get-Process") && !script.contains("Start-Sleep"));
    let source = host_source();
    position(
        &lines(&member(&source, "public static Server Start(")),
        "if (parentPid > 0) { WatchParent(parentPid, pipePath, onWindows); }",
    );
    position(
        &lines(&member(&source, "private static bool ParentRunning(")),
        "using (Process parent = Process.GetProcessById(parentPid))",
    );
}
