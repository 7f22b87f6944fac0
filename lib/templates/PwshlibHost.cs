// pwshlib's PowerShell host, in C#: compiled by host.ps1 with Add-Type from
// this file and its parts (shipped beside it in lib/templates/) once at start.
//
// Written for C# 5: Windows PowerShell 5.1 compiles Add-Type with the .NET
// Framework's csc (no => members, no ?., no string interpolation);
// spec/real_pwsh/dsc/host_csharp5_spec.rb compiles these files as C# 5
// against the 5.1 reference assemblies with warnings as errors.
//
// It is twelve files, one job each, which host.ps1 reads in this order and
// joins into one source (each file's using directives are inside its
// namespace block, so the joined text is valid C# as it is):
// * PwshlibHost.cs (this file): the PowerShell host and the output it
//   collects (SharedText, ConsoleRouter, ErrorSink, ErrorRenderer,
//   PipelineSink, the UI and PwshlibPSHost);
// * PwshlibHost.Json.cs: the JSON the frames carry;
// * PwshlibHost.Dsc.cs: DSC calls as data (DscCall) and secrets bound as
//   variables (SecretValues);
// * PwshlibHost.Direct.cs: a DSC call made in compiled code once the
//   prelude has resolved its resource (DirectDsc);
// * PwshlibHost.ModuleIndex.cs: the prelude's module index in compiled
//   code (DscModuleIndex) and a root module's [DscResource()] classes,
//   kept between hosts (DscClasses);
// * PwshlibHost.Standby.cs: the pipeline started ahead of a runspace's
//   next direct call (Standby);
// * PwshlibHost.DirectResult.cs: a Get's result written as JSON in
//   compiled code (DirectResult);
// * PwshlibHost.Start.cs: the host's start after host.ps1 has loaded this
//   assembly (Server.Start), the Unix socket it listens on, the peer
//   check, the parent watcher and the opt-in timing trace;
// * PwshlibHost.Server.cs: sessions, and the host loop's connection and
//   frames (Server);
// * PwshlibHost.Requests.cs: Server's runspace slots, cleanup after each
//   call (on the slot's Resetter thread), the environment and the prelude;
// * PwshlibHost.Invoke.cs: Server running one request in a runspace and
//   the result it answers; OutTextCommand, a plain request's output;
// * PwshlibHost.Export.cs: a DSC call of the method Export, which lists a
//   resource's instances (ExportDsc).
//
// What is here:
// * Server: the host loop of docs/protocol.md (frames, JSON, each call,
//   and the cleanup after each reply), so that a request runs no
//   interpreted PowerShell of the host's own, only the request's code.
// * PwshlibPSHost: the PowerShell host the code runs under (one instance
//   per runspace). Windows PowerShell 5.1 and pwsh 7 both need it for two
//   things:
//   - exit codes: `exit 7` at the top level of the code throws
//     ExitException, which the pipeline (LocalPipeline.InvokeHelper)
//     catches and hands to the host as SetShouldExit(7); it sets no
//     $LASTEXITCODE. The default host's SetShouldExit does nothing, so
//     without a host of our own every `exit N` would read as 0.
//     (PSInvocationSettings.ExposeFlowControlExceptions would surface the
//     ExitException too, but not the host writes below.)
//   - output in order: Write-Host (an information record tagged PSHOST,
//     which MshCommandRuntime.WriteInformation passes to the host UI's
//     Write or WriteLine), Write-Warning (the UI's WriteWarningLine),
//     Write-Verbose and Write-Debug when their preference shows them, the
//     pipeline output (rendered by Out-String -Stream, each line passed to
//     the UI's WriteLine as it comes: PipelineSink) and [Console]::Out
//     (pointed at the same buffer during a call) all land in one buffer, in
//     the order they happen. Other
//     information records reach the UI's WriteInformation even when
//     $InformationPreference is SilentlyContinue
//     (InternalHostUserInterface.WriteInformationRecord); they are shown
//     as pwshlib 2.x showed them. The UI is not interactive: prompts and
//     Read-Host throw.
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Collections.ObjectModel;
    using System.Diagnostics;
    using System.Globalization;
    using System.IO;
    using System.Management.Automation;
    using System.Management.Automation.Host;
    using System.Management.Automation.Runspaces;
    using System.Reflection;
    using System.Security;
    using System.Text;
    using System.Threading;

    // A buffer that several writers share; PowerShell may write from more
    // than one thread (a cmdlet's own threads), so every append is locked.
    public sealed class SharedText
    {
        private readonly StringBuilder text = new StringBuilder();
        private readonly object gate = new object();

        public void Append(string value)
        {
            if (value == null) { return; }
            lock (gate) { text.Append(value); }
        }

        public string Take()
        {
            lock (gate)
            {
                string value = text.ToString();
                text.Length = 0;
                return value;
            }
        }
    }

    // [Console]::Out and [Console]::Error for the whole process, set once:
    // each write goes to the buffer of the runspace whose pipeline thread
    // writes it (Runspace.DefaultRunspace, which LocalPipeline's
    // InvokeThreadProc sets on the thread that runs a pipeline, "Put
    // Execution Context In TLS", in 5.1 and 7 alike), else to the console
    // it replaced. So a
    // pipeline abandoned after a timeout, still running on its own thread,
    // writes into its own (dropped) buffer and never into a later call's
    // (the review's N16). A thread the code starts itself has no default
    // runspace: what it writes goes to the host's own (null) output.
    public sealed class ConsoleRouter : TextWriter
    {
        private static readonly Dictionary<Guid, SharedText> Outputs = new Dictionary<Guid, SharedText>();
        private static readonly Dictionary<Guid, SharedText> Errors = new Dictionary<Guid, SharedText>();
        private readonly bool forErrors;
        private readonly TextWriter fallback;

        public ConsoleRouter(bool forErrors, TextWriter fallback)
        {
            this.forErrors = forErrors;
            this.fallback = fallback;
            this.CoreNewLine = new char[] { '\n' };
        }

        public static void Register(Guid runspace, SharedText output, SharedText errors)
        {
            lock (Outputs)
            {
                Outputs[runspace] = output;
                Errors[runspace] = errors;
            }
        }

        public static void Unregister(Guid runspace)
        {
            lock (Outputs)
            {
                Outputs.Remove(runspace);
                Errors.Remove(runspace);
            }
        }

        private SharedText Target()
        {
            Runspace current = Runspace.DefaultRunspace;
            if (current == null) { return null; }
            SharedText target;
            lock (Outputs)
            {
                (forErrors ? Errors : Outputs).TryGetValue(current.InstanceId, out target);
            }
            return target;
        }

        private void Send(string value)
        {
            if (value == null) { return; }
            SharedText target = Target();
            if (target != null)
            {
                target.Append(value);
                return;
            }
            try { fallback.Write(value); } catch (Exception) { }
        }

        public override Encoding Encoding { get { return Encoding.UTF8; } }
        public override void Write(char value) { Send(value.ToString()); }
        public override void Write(string value) { Send(value); }
        public override void Write(char[] buffer, int index, int count) { Send(new string(buffer, index, count)); }
        public override void WriteLine(string value) { Send(value + "\n"); }
    }

    // The error records of one call, as the code writes them: DataAdded
    // fires on the writing thread, in order with the host writes. Each is
    // also shown in stdout (pwshlib 2.x merged the error stream into its
    // output), except a native program's stderr, which 2.x never showed
    // there. For the result's stderr, the lines one native program wrote in
    // a row stay one element, as 2.x read them from the process's stderr.
    // In stdout a record reads as its message, unless the code chose
    // another $ErrorView than the session's default (ErrorRenderer).
    public sealed class ErrorSink
    {
        private readonly PSDataCollection<ErrorRecord> records;
        private readonly SharedText output;
        private readonly List<string> items = new List<string>();
        private readonly Runspace runspace;
        private readonly ErrorRenderer renderer;
        private bool lastWasNative;

        // runspace and renderer: null for a call whose stdout is not shown
        // (the DSC prelude's).
        public ErrorSink(PSDataCollection<ErrorRecord> records, SharedText output, Runspace runspace, ErrorRenderer renderer)
        {
            this.records = records;
            this.output = output;
            this.runspace = runspace;
            this.renderer = renderer;
            records.DataAdded += OnAdded;
        }

        // pwsh 7 and Windows PowerShell 5.1 both turn each stderr line of a
        // native program into an ErrorRecord whose FullyQualifiedErrorId is
        // NativeCommandError (the first line) or NativeCommandErrorMessage
        // (NativeCommandProcessor.ProcessOutputRecord).
        private static bool IsNative(ErrorRecord record)
        {
            string id = record.FullyQualifiedErrorId;
            return id != null && id.StartsWith("NativeCommandError", StringComparison.Ordinal);
        }

        private void OnAdded(object sender, DataAddedEventArgs e)
        {
            ErrorRecord record;
            try { record = records[e.Index]; } catch (Exception) { return; }
            if (record == null) { return; }
            string text = record.ToString();
            bool native = IsNative(record);
            lock (items)
            {
                if (native && lastWasNative && items.Count > 0)
                {
                    items[items.Count - 1] = items[items.Count - 1] + text + "\n";
                }
                else
                {
                    items.Add(text + "\n");
                }
                lastWasNative = native;
            }
            if (!native)
            {
                string shown = renderer == null ? null : renderer.Render(runspace, record);
                output.Append((shown ?? text) + "\n");
            }
        }

        public string[] Take()
        {
            lock (items)
            {
                string[] taken = items.ToArray();
                items.Clear();
                lastWasNative = false;
                return taken;
            }
        }
    }

    // An error record as PowerShell shows it under the $ErrorView the code
    // chose, when that is not the session's default (ConciseView on pwsh 7,
    // NormalView on Windows PowerShell 5.1): pwshlib 2.x ended the pipeline
    // in Out-Default with the error stream merged in, so a code that set
    // $ErrorView = 'NormalView' read PowerShell's NormalView record in
    // stdout ("<command> : <message>", the position, CategoryInfo,
    // FullyQualifiedErrorId), which callers match. The default view stays
    // the record's message, as before. Rendered by PowerShell itself (its
    // ErrorInstance view through Out-String) in a runspace of its own,
    // built at the first such record: the call's runspace is busy running
    // the code. The call's $ErrorView is read on the pipeline thread, where
    // DataAdded fires (Runspace.DefaultRunspace is the call's there), by a
    // script block: SessionStateProxy refuses any call while a pipeline
    // runs ("Concurrent SessionStateProxy method calls are not allowed"),
    // and a script block run there changes neither $? nor $Error (tried on
    // pwsh 7.6). The global one: what Out-Default at the end of 2.x's
    // pipeline read, and where the code's own top level sets it. Any
    // failure falls back to the message.
    public sealed class ErrorRenderer
    {
        private readonly string defaultView;
        private readonly object gate = new object();
        private Session formatter;

        // fresh: a runspace no code has run in, which holds the default.
        public ErrorRenderer(Runspace fresh)
        {
            object view = null;
            try { view = fresh.SessionStateProxy.GetVariable("ErrorView"); } catch (Exception) { }
            defaultView = ViewName(view);
        }

        private static object ReadView(Runspace runspace)
        {
            if (Runspace.DefaultRunspace != runspace) { return null; }
            try { return ScriptBlock.Create("$global:ErrorView").InvokeReturnAsIs(); } catch (Exception) { return null; }
        }

        private static string ViewName(object view)
        {
            PSObject wrapped = view as PSObject;
            object value = wrapped != null ? wrapped.BaseObject : view;
            return value == null ? null : Convert.ToString(value, CultureInfo.InvariantCulture);
        }

        // The record's text under the call's view, or null for the message.
        public string Render(Runspace runspace, ErrorRecord record)
        {
            if (runspace == null) { return null; }
            object view = ReadView(runspace);
            string name = ViewName(view);
            if (string.IsNullOrEmpty(name) || string.Equals(name, defaultView, StringComparison.OrdinalIgnoreCase)) { return null; }
            lock (gate)
            {
                try
                {
                    if (formatter == null) { formatter = new Session(); }
                    formatter.Runspace.SessionStateProxy.SetVariable("ErrorView", view);
                    PowerShell ps = PowerShell.Create();
                    try
                    {
                        ps.Runspace = formatter.Runspace;
                        ps.AddCommand("Microsoft.PowerShell.Utility\\Out-String");
                        StringBuilder text = new StringBuilder();
                        foreach (PSObject piece in ps.Invoke(new object[] { record }))
                        {
                            if (piece != null) { text.Append(piece.BaseObject as string); }
                        }
                        string rendered = text.ToString().Trim('\r', '\n');
                        return rendered.Length > 0 ? rendered : null;
                    }
                    finally
                    {
                        ps.Dispose();
                    }
                }
                catch (Exception)
                {
                    return null;
                }
            }
        }
    }

    // The pipeline output of a plain request, each line (what Out-String
    // -Stream writes) shown through the host UI the moment it is written:
    // DataAdded fires on the writing pipeline thread, in order with the
    // host writes. What Out-Default did at the end of the pipeline, without
    // its second pass through the formatter for lines that are already text
    // (Out-Default writes a string as one WriteLine, long lines unwrapped).
    public sealed class PipelineSink
    {
        private readonly PSDataCollection<PSObject> items;
        private readonly PwshlibPSHost psHost;

        public PipelineSink(PSDataCollection<PSObject> items, PwshlibPSHost psHost)
        {
            this.items = items;
            this.psHost = psHost;
            items.DataAdded += OnAdded;
        }

        private void OnAdded(object sender, DataAddedEventArgs e)
        {
            PSObject item;
            try { item = items[e.Index]; } catch (Exception) { return; }
            if (item == null) { return; }
            string line = item.BaseObject as string;
            psHost.WritePipelineLine(line != null ? line : item.ToString());
        }
    }

    public sealed class PwshlibRawUI : PSHostRawUserInterface
    {
        private ConsoleColor background = ConsoleColor.Black;
        private ConsoleColor foreground = ConsoleColor.White;
        private Size bufferSize = new Size(120, 9999);
        private Coordinates cursor = new Coordinates(0, 0);
        private Coordinates windowPosition = new Coordinates(0, 0);
        private Size windowSize = new Size(120, 50);
        private int cursorSize = 25;
        private string title = "pwshlib";

        public override ConsoleColor BackgroundColor { get { return background; } set { background = value; } }
        public override ConsoleColor ForegroundColor { get { return foreground; } set { foreground = value; } }
        public override Size BufferSize { get { return bufferSize; } set { bufferSize = value; } }
        public override Coordinates CursorPosition { get { return cursor; } set { cursor = value; } }
        public override int CursorSize { get { return cursorSize; } set { cursorSize = value; } }
        public override bool KeyAvailable { get { return false; } }
        public override Size MaxPhysicalWindowSize { get { return windowSize; } }
        public override Size MaxWindowSize { get { return windowSize; } }
        public override Coordinates WindowPosition { get { return windowPosition; } set { windowPosition = value; } }
        public override Size WindowSize { get { return windowSize; } set { windowSize = value; } }
        public override string WindowTitle { get { return title; } set { title = value; } }
        public override void FlushInputBuffer() { }
        public override BufferCell[,] GetBufferContents(Rectangle rectangle) { throw new NotSupportedException("The pwshlib host has no screen buffer"); }
        public override KeyInfo ReadKey(ReadKeyOptions options) { throw new NotSupportedException("The pwshlib host is not interactive"); }
        public override void ScrollBufferContents(Rectangle source, Coordinates destination, Rectangle clip, BufferCell fill) { }
        public override void SetBufferContents(Coordinates origin, BufferCell[,] contents) { }
        public override void SetBufferContents(Rectangle rectangle, BufferCell fill) { }
    }

    public sealed class PwshlibUI : PSHostUserInterface
    {
        private readonly PwshlibRawUI raw = new PwshlibRawUI();
        private readonly SharedText output;
        private readonly SharedText errors;
        // The text of the last non-host information record: with
        // $InformationPreference = 'Continue' PowerShell also passes it to
        // WriteLine right after WriteInformation, from inside
        // MshCommandRuntime.WriteInformation (which first calls the UI's
        // WriteInformation for every record, then WriteLine for Write-Host's
        // PSHOST records and, under Continue, for the others); it is shown
        // once. Only that echo is dropped: the same text from Write-Host or
        // from the pipeline output is real output.
        private string echoedInformation;

        public PwshlibUI(SharedText output, SharedText errors)
        {
            this.output = output;
            this.errors = errors;
        }

        public override PSHostRawUserInterface RawUI { get { return raw; } }

        private void Out(string value)
        {
            echoedInformation = null;
            output.Append(value);
        }

        public override void Write(string value) { Out(value); }
        public override void Write(ConsoleColor foregroundColor, ConsoleColor backgroundColor, string value) { Out(value); }

        public override void WriteLine(string value)
        {
            if (echoedInformation != null && string.Equals(value, echoedInformation, StringComparison.Ordinal) && CalledFromWriteInformation())
            {
                echoedInformation = null;
                return;
            }
            Out(value + "\n");
        }

        // True when MshCommandRuntime.WriteInformation (the information
        // stream's writer, in pwsh 7 and Windows PowerShell 5.1) is on the
        // stack: the WriteLine is its echo of a record already shown.
        private static bool CalledFromWriteInformation()
        {
            StackFrame[] frames = new StackTrace(false).GetFrames();
            if (frames == null) { return false; }
            foreach (StackFrame frame in frames)
            {
                MethodBase method = frame.GetMethod();
                if (method != null && method.Name == "WriteInformation" && method.DeclaringType != null && method.DeclaringType.Name == "MshCommandRuntime")
                {
                    return true;
                }
            }
            return false;
        }

        public override void WriteLine() { WriteLine(string.Empty); }
        public override void WriteLine(ConsoleColor foregroundColor, ConsoleColor backgroundColor, string value) { WriteLine(value); }
        public override void WriteErrorLine(string value) { errors.Append(value + "\n"); }
        public override void WriteWarningLine(string message) { Out("WARNING: " + message + "\n"); }
        public override void WriteVerboseLine(string message) { Out("VERBOSE: " + message + "\n"); }
        public override void WriteDebugLine(string message) { Out("DEBUG: " + message + "\n"); }
        public override void WriteProgress(long sourceId, ProgressRecord record) { }

        public override void WriteInformation(InformationRecord record)
        {
            if (record == null || record.Tags.Contains("PSHOST"))
            {
                // Write-Host: its text comes through Write or WriteLine,
                // never as an echo of an earlier record.
                echoedInformation = null;
                return;
            }
            string text = record.ToString();
            Out(text + "\n");
            echoedInformation = text;
        }

        // The host refuses to prompt as a -NonInteractive PowerShell does,
        // with a PSInvalidOperationException: PowerShell turns that one
        // (and a HostException or a NotImplementedException, never any
        // other) into its own error for a missing mandatory parameter,
        // which names the command and the parameter
        // (CmdletParameterBinderController.PromptForMissingMandatoryParameters,
        // PowerShell 7 and Windows PowerShell 5.1 alike). Every other
        // refusal names what asked: Read-Host reads a line (or prompts,
        // given -Prompt), Get-Credential asks for a credential, a
        // confirmation asks for a choice.
        public override string ReadLine() { throw NotInteractive("read a line of input (Read-Host)"); }
        public override SecureString ReadLineAsSecureString() { throw NotInteractive("read a secure string (Read-Host -AsSecureString)"); }
        public override Dictionary<string, PSObject> Prompt(string caption, string message, Collection<FieldDescription> descriptions) { throw NotInteractive("prompt for " + FieldNames(descriptions) + Asking(caption, message)); }
        public override int PromptForChoice(string caption, string message, Collection<ChoiceDescription> choices, int defaultChoice) { throw NotInteractive("prompt for a choice" + Asking(caption, message)); }
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName) { throw NotInteractive("prompt for a credential" + Asking(caption, message)); }
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName, PSCredentialTypes allowedCredentialTypes, PSCredentialUIOptions options) { throw NotInteractive("prompt for a credential" + Asking(caption, message)); }

        private static Exception NotInteractive(string what)
        {
            return new PSInvalidOperationException("PowerShell is in NonInteractive mode (the pwshlib host): it cannot " + what);
        }

        private static string FieldNames(Collection<FieldDescription> descriptions)
        {
            List<string> names = new List<string>();
            if (descriptions != null)
            {
                foreach (FieldDescription field in descriptions)
                {
                    if (field != null) { names.Add("'" + field.Name + "'"); }
                }
            }
            return names.Count == 0 ? "input" : string.Join(", ", names.ToArray());
        }

        // What a prompt's caption and message say of what asked.
        private static string Asking(string caption, string message)
        {
            List<string> parts = new List<string>();
            if (!string.IsNullOrEmpty(caption)) { parts.Add(caption); }
            if (!string.IsNullOrEmpty(message)) { parts.Add(message); }
            return parts.Count == 0 ? string.Empty : " (" + string.Join(": ", parts.ToArray()) + ")";
        }
    }

    public sealed class PwshlibPSHost : PSHost
    {
        private readonly Guid id = Guid.NewGuid();
        private readonly CultureInfo culture = CultureInfo.CurrentCulture;
        private readonly CultureInfo uiCulture = CultureInfo.CurrentUICulture;
        private readonly PwshlibUI ui;
        private readonly SharedText output = new SharedText();
        private readonly SharedText errors = new SharedText();
        private volatile bool shouldExit;
        private volatile int exitCode;

        public PwshlibPSHost()
        {
            ui = new PwshlibUI(output, errors);
        }

        public override CultureInfo CurrentCulture { get { return culture; } }
        public override CultureInfo CurrentUICulture { get { return uiCulture; } }
        public override Guid InstanceId { get { return id; } }
        public override string Name { get { return "pwshlib"; } }
        public override Version Version { get { return new Version(1, 0); } }
        public override PSHostUserInterface UI { get { return ui; } }

        // Called by the pipeline for `exit N` at the top level of the code.
        public override void SetShouldExit(int exitCode)
        {
            this.exitCode = exitCode;
            this.shouldExit = true;
        }

        public bool ShouldExit { get { return shouldExit; } }
        public int ExitCode { get { return exitCode; } }
        public SharedText Output { get { return output; } }
        public SharedText Errors { get { return errors; } }

        // Before each call: no exit requested, nothing written yet.
        public void Reset()
        {
            shouldExit = false;
            exitCode = 0;
            output.Take();
            errors.Take();
        }

        public string TakeOutput() { return output.Take(); }

        // A line of the pipeline output, shown as Out-Default would show it:
        // through the UI's WriteLine.
        public void WritePipelineLine(string line) { ui.WriteLine(line); }
        public string TakeErrors() { return errors.Take(); }

        public override void EnterNestedPrompt() { throw new PSNotSupportedException("The pwshlib host has no nested prompt"); }
        public override void ExitNestedPrompt() { throw new PSNotSupportedException("The pwshlib host has no nested prompt"); }
        public override void NotifyBeginApplication() { }
        public override void NotifyEndApplication() { }
    }
}
