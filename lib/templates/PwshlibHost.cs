// pwshlib's PowerShell host, in C#: compiled by host.ps1 with Add-Type from
// this file (shipped beside it in lib/templates/) once at start.
//
// Written for C# 5: Windows PowerShell 5.1 compiles Add-Type with the .NET
// Framework's csc (no => members, no ?., no string interpolation);
// spec/real_pwsh/dsc/host_csharp5_spec.rb compiles this file as C# 5
// against the 5.1 reference assemblies with warnings as errors.
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

namespace PwshlibHost
{
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

        public override string ReadLine() { throw NotInteractive(); }
        public override SecureString ReadLineAsSecureString() { throw NotInteractive(); }
        public override Dictionary<string, PSObject> Prompt(string caption, string message, Collection<FieldDescription> descriptions) { throw NotInteractive(); }
        public override int PromptForChoice(string caption, string message, Collection<ChoiceDescription> choices, int defaultChoice) { throw NotInteractive(); }
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName) { throw NotInteractive(); }
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName, PSCredentialTypes allowedCredentialTypes, PSCredentialUIOptions options) { throw NotInteractive(); }

        private static Exception NotInteractive()
        {
            return new PSNotSupportedException("The pwshlib host is not interactive: the code cannot prompt or read input");
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

    // JSON for the protocol's frames (docs/protocol.md). Objects read as
    // Dictionary<string, object>, arrays as List<object>, strings as string,
    // integers as long, other numbers as double. Written here rather than
    // taken from System.Text.Json (pwsh 7 only) or JavaScriptSerializer
    // (Windows PowerShell 5.1 only): one reader for both, which keeps every
    // string exactly as sent (pwsh 7's ConvertFrom-Json would turn an
    // ISO-date-like string into a DateTime).
    public static class Json
    {
        // Deeper than any message of the protocol (an env pair is at depth 3).
        private const int MaxDepth = 64;

        public static object Parse(string text)
        {
            int at = 0;
            object value = ParseValue(text, ref at, 0);
            SkipSpace(text, ref at);
            if (at != text.Length) { throw Fail("unexpected text after the value", at); }
            return value;
        }

        private static FormatException Fail(string what, int at)
        {
            return new FormatException(what + " at offset " + at.ToString(CultureInfo.InvariantCulture));
        }

        private static void SkipSpace(string text, ref int at)
        {
            while (at < text.Length)
            {
                char c = text[at];
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') { return; }
                at++;
            }
        }

        private static object ParseValue(string text, ref int at, int depth)
        {
            if (depth > MaxDepth) { throw Fail("nesting deeper than " + MaxDepth.ToString(CultureInfo.InvariantCulture), at); }
            SkipSpace(text, ref at);
            if (at >= text.Length) { throw Fail("unexpected end", at); }
            char c = text[at];
            if (c == '{') { return ParseObject(text, ref at, depth); }
            if (c == '[') { return ParseArray(text, ref at, depth); }
            if (c == '"') { return ParseString(text, ref at); }
            if (c == 't') { Literal(text, ref at, "true"); return true; }
            if (c == 'f') { Literal(text, ref at, "false"); return false; }
            if (c == 'n') { Literal(text, ref at, "null"); return null; }
            if (c == '-' || (c >= '0' && c <= '9')) { return ParseNumber(text, ref at); }
            throw Fail("unexpected character", at);
        }

        private static void Literal(string text, ref int at, string word)
        {
            if (string.CompareOrdinal(text, at, word, 0, word.Length) != 0) { throw Fail("unexpected character", at); }
            at += word.Length;
        }

        private static Dictionary<string, object> ParseObject(string text, ref int at, int depth)
        {
            Dictionary<string, object> result = new Dictionary<string, object>(StringComparer.Ordinal);
            at++;
            SkipSpace(text, ref at);
            if (at < text.Length && text[at] == '}') { at++; return result; }
            while (true)
            {
                SkipSpace(text, ref at);
                if (at >= text.Length || text[at] != '"') { throw Fail("expected a property name", at); }
                string name = ParseString(text, ref at);
                SkipSpace(text, ref at);
                if (at >= text.Length || text[at] != ':') { throw Fail("expected ':'", at); }
                at++;
                // A name given twice takes its last value.
                result[name] = ParseValue(text, ref at, depth + 1);
                SkipSpace(text, ref at);
                if (at < text.Length && text[at] == ',') { at++; continue; }
                if (at < text.Length && text[at] == '}') { at++; return result; }
                throw Fail("expected ',' or '}'", at);
            }
        }

        private static List<object> ParseArray(string text, ref int at, int depth)
        {
            List<object> result = new List<object>();
            at++;
            SkipSpace(text, ref at);
            if (at < text.Length && text[at] == ']') { at++; return result; }
            while (true)
            {
                result.Add(ParseValue(text, ref at, depth + 1));
                SkipSpace(text, ref at);
                if (at < text.Length && text[at] == ',') { at++; continue; }
                if (at < text.Length && text[at] == ']') { at++; return result; }
                throw Fail("expected ',' or ']'", at);
            }
        }

        private static string ParseString(string text, ref int at)
        {
            at++;
            StringBuilder result = null;
            int start = at;
            while (true)
            {
                if (at >= text.Length) { throw Fail("unterminated string", at); }
                char c = text[at];
                if (c == '"')
                {
                    string tail = text.Substring(start, at - start);
                    at++;
                    if (result == null) { return tail; }
                    return result.Append(tail).ToString();
                }
                if (c < ' ') { throw Fail("control character in a string", at); }
                if (c != '\\') { at++; continue; }
                if (result == null) { result = new StringBuilder(); }
                result.Append(text, start, at - start);
                at++;
                if (at >= text.Length) { throw Fail("unterminated escape", at); }
                char e = text[at];
                at++;
                switch (e)
                {
                    case '"': result.Append('"'); break;
                    case '\\': result.Append('\\'); break;
                    case '/': result.Append('/'); break;
                    case 'b': result.Append('\b'); break;
                    case 'f': result.Append('\f'); break;
                    case 'n': result.Append('\n'); break;
                    case 'r': result.Append('\r'); break;
                    case 't': result.Append('\t'); break;
                    case 'u':
                        int code;
                        if (at + 4 > text.Length || !int.TryParse(text.Substring(at, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                        {
                            throw Fail("bad \\u escape", at);
                        }
                        result.Append((char)code);
                        at += 4;
                        break;
                    default: throw Fail("bad escape", at - 1);
                }
                start = at;
            }
        }

        private static object ParseNumber(string text, ref int at)
        {
            int start = at;
            bool integral = true;
            if (text[at] == '-') { at++; }
            if (at < text.Length && text[at] == '0') { at++; }
            else if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            if (at < text.Length && text[at] == '.')
            {
                integral = false;
                at++;
                if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            }
            if (at < text.Length && (text[at] == 'e' || text[at] == 'E'))
            {
                integral = false;
                at++;
                if (at < text.Length && (text[at] == '+' || text[at] == '-')) { at++; }
                if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            }
            string literal = text.Substring(start, at - start);
            long whole;
            if (integral && long.TryParse(literal, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out whole))
            {
                return whole;
            }
            return double.Parse(literal, NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        private static bool Digits(string text, ref int at)
        {
            int start = at;
            while (at < text.Length && text[at] >= '0' && text[at] <= '9') { at++; }
            return at > start;
        }

        // Writes a message: an ordered list of fields whose values are
        // null, string, bool, int, long, string[] or another message.
        public static string Write(List<KeyValuePair<string, object>> message)
        {
            StringBuilder text = new StringBuilder(256);
            WriteValue(text, message);
            return text.ToString();
        }

        private static void WriteValue(StringBuilder text, object value)
        {
            if (value == null) { text.Append("null"); return; }
            string s = value as string;
            if (s != null) { WriteString(text, s); return; }
            if (value is bool) { text.Append((bool)value ? "true" : "false"); return; }
            if (value is int) { text.Append(((int)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is long) { text.Append(((long)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is double) { text.Append(((double)value).ToString("R", CultureInfo.InvariantCulture)); return; }
            string[] items = value as string[];
            if (items != null)
            {
                text.Append('[');
                for (int i = 0; i < items.Length; i++)
                {
                    if (i > 0) { text.Append(','); }
                    WriteValue(text, items[i]);
                }
                text.Append(']');
                return;
            }
            List<KeyValuePair<string, object>> fields = value as List<KeyValuePair<string, object>>;
            if (fields != null)
            {
                text.Append('{');
                for (int i = 0; i < fields.Count; i++)
                {
                    if (i > 0) { text.Append(','); }
                    WriteString(text, fields[i].Key);
                    text.Append(':');
                    WriteValue(text, fields[i].Value);
                }
                text.Append('}');
                return;
            }
            WriteString(text, Convert.ToString(value, CultureInfo.InvariantCulture));
        }

        // A UTF-16 surrogate without its partner (a resource that cut a
        // string in half) becomes U+FFFD: a strict JSON reader refuses an
        // escaped lone surrogate, and the frame's UTF-8 could not hold it.
        private static void WriteString(StringBuilder text, string value)
        {
            text.Append('"');
            for (int i = 0; i < value.Length; i++)
            {
                char c = value[i];
                if (char.IsHighSurrogate(c))
                {
                    if (i + 1 < value.Length && char.IsLowSurrogate(value[i + 1]))
                    {
                        text.Append(c).Append(value[i + 1]);
                        i++;
                    }
                    else
                    {
                        text.Append('\uFFFD');
                    }
                    continue;
                }
                if (char.IsLowSurrogate(c)) { text.Append('\uFFFD'); continue; }
                switch (c)
                {
                    case '"': text.Append("\\\""); break;
                    case '\\': text.Append("\\\\"); break;
                    case '\n': text.Append("\\n"); break;
                    case '\r': text.Append("\\r"); break;
                    case '\t': text.Append("\\t"); break;
                    default:
                        if (c < ' ')
                        {
                            text.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        }
                        else
                        {
                            text.Append(c);
                        }
                        break;
                }
            }
            text.Append('"');
        }
    }

    // A malformed frame: the host answers with an error frame and leaves.
    // A DSC call as data (docs/protocol.md, "DSC calls as data"; issue
    // 39): the manager sends the resource, the method, the module and the
    // properties, each value typed as the same literal of the script
    // would be, instead of the call's script text. A script whose text is
    // new (every resource's is) is parsed, compiled and bound anew; this
    // class builds $InvokeParams itself and sets it (as SecretValues sets
    // the secrets: SessionStateProxy.SetVariable, no PowerShell runs for
    // it), and every call runs the one constant Script below. PowerShell
    // caches a compiled script by its text (ScriptBlock's cache of parsed
    // scripts, which PowerShell.AddScript goes through), so that text is
    // parsed once per process. The call itself stays in the prelude
    // (Invoke-PwshlibDscResource), as for a script.
    public static class DscCall
    {
        // The body of every generated script, but for its $InvokeParams
        // line, with its optional parameters splatted.
        public const string Script = "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams @PwshlibDscArguments\n";

        // Sets $InvokeParams and $PwshlibDscArguments in the runspace (after
        // the secrets, which the values may name); returns the code to run.
        public static string Bind(Runspace runspace, object data)
        {
            Dictionary<string, object> call = data as Dictionary<string, object>;
            if (call == null) { throw new FormatException("protocol error: the request's dsc must be an object"); }
            Hashtable invokeParams = NewTable();
            invokeParams["Name"] = Text(call, "name");
            invokeParams["Method"] = Text(call, "method");
            Dictionary<string, object> properties = Member(call, "properties") as Dictionary<string, object>;
            if (properties == null) { throw new FormatException("protocol error: the request's dsc has no properties"); }
            invokeParams["Property"] = Table(runspace, properties);
            if (!call.ContainsKey("module")) { throw new FormatException("protocol error: the request's dsc has no module"); }
            invokeParams["ModuleName"] = Value(runspace, call["module"]);
            Hashtable arguments = NewTable();
            if (Member(call, "through_invoke_dsc_resource") is bool && (bool)Member(call, "through_invoke_dsc_resource"))
            {
                arguments["ThroughInvokeDscResource"] = true;
            }
            if (Member(call, "vendored_path") != null) { arguments["VendoredPath"] = Text(call, "vendored_path"); }
            runspace.SessionStateProxy.SetVariable("InvokeParams", invokeParams);
            runspace.SessionStateProxy.SetVariable("PwshlibDscArguments", arguments);
            return Script;
        }

        private static object Member(Dictionary<string, object> table, string name)
        {
            object value;
            return table.TryGetValue(name, out value) ? value : null;
        }

        private static string Text(Dictionary<string, object> table, string name)
        {
            string text = Member(table, name) as string;
            if (text == null) { throw new FormatException("protocol error: the request's dsc." + name + " must be a string"); }
            return text;
        }

        // As @{...} makes one: keys compared without case.
        private static Hashtable NewTable()
        {
            return new Hashtable(StringComparer.OrdinalIgnoreCase);
        }

        private static Hashtable Table(Runspace runspace, Dictionary<string, object> members)
        {
            Hashtable table = NewTable();
            foreach (KeyValuePair<string, object> member in members)
            {
                table[member.Key] = Value(runspace, member.Value);
            }
            return table;
        }

        // One value, as its literal in the script would be: @(...) an
        // object[], an integer Int32 when it fits (the JSON reader gives
        // Int64), a tagged object what its tag says.
        private static object Value(Runspace runspace, object node)
        {
            if (node is long)
            {
                long whole = (long)node;
                if (whole >= int.MinValue && whole <= int.MaxValue) { return (int)whole; }
                return whole;
            }
            List<object> items = node as List<object>;
            if (items != null)
            {
                object[] array = new object[items.Count];
                for (int i = 0; i < items.Count; i++) { array[i] = Value(runspace, items[i]); }
                return array;
            }
            Dictionary<string, object> tagged = node as Dictionary<string, object>;
            if (tagged == null) { return node; }
            if (tagged.Count != 1) { throw new FormatException("protocol error: a value of the request's dsc has no one tag"); }
            foreach (KeyValuePair<string, object> tag in tagged)
            {
                return Tagged(runspace, tag.Key, tag.Value);
            }
            return null;
        }

        private static object Tagged(Runspace runspace, string tag, object inner)
        {
            string text = inner as string;
            switch (tag)
            {
                case "hash":
                    Dictionary<string, object> members = inner as Dictionary<string, object>;
                    if (members != null) { return Table(runspace, members); }
                    break;
                case "int":
                    if (text != null) { return SecretValues.Integer("of the request's dsc", text); }
                    break;
                case "real":
                    double real;
                    if (text != null && double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
                    break;
                case "datetime":
                    // [DateTime]'...' and [DateTime]$var: PowerShell's cast,
                    // which converts with the invariant culture.
                    return LanguagePrimitives.ConvertTo(Value(runspace, inner), typeof(DateTime), CultureInfo.InvariantCulture);
                case "empty":
                    // [uint32[]]@(): the type name as PowerShell resolves it.
                    if (text != null)
                    {
                        Type arrayType = (Type)LanguagePrimitives.ConvertTo(text + "[]", typeof(Type), CultureInfo.InvariantCulture);
                        return Array.CreateInstance(arrayType.GetElementType(), 0);
                    }
                    break;
                case "var":
                    // A variable the request's secrets bound.
                    if (text != null) { return runspace.SessionStateProxy.GetVariable(text); }
                    break;
            }
            throw new FormatException("protocol error: a value of the request's dsc has an unknown tag '" + tag + "'");
        }
    }

    // A DSC call's secrets, bound as data (docs/protocol.md, "Secrets";
    // issue 38). PowerShell logs what it compiles and runs: script block
    // logging (event 4104) records every script's text, transcription the
    // commands, module logging (event 4103) every parameter a module's
    // command is bound to, and AMSI sees each script. A secret written into
    // the request's code as a literal, or handed to ConvertTo-SecureString
    // as a string, reaches them all. So the manager sends each secret in the
    // request's "secrets" and the code names it by variable; this class
    // sets those variables in the runspace (SessionStateProxy.SetVariable:
    // no PowerShell runs for it), and builds a credential's PSCredential,
    // its password a SecureString, here. The code then runs with no secret
    // in its text and passes no secret to a command as a string.
    public static class SecretValues
    {
        // Binds each secret of a request as a global variable of the
        // runspace, before the code runs. ResetRunspaceState after the
        // reply removes them with every other global variable.
        public static void Bind(Runspace runspace, object secrets)
        {
            if (secrets == null) { return; }
            List<object> list = secrets as List<object>;
            if (list == null) { throw new FormatException("the request's secrets must be a list"); }
            foreach (object item in list)
            {
                Dictionary<string, object> secret = item as Dictionary<string, object>;
                if (secret == null) { throw new FormatException("each of the request's secrets must be an object"); }
                string name = Member(secret, "name");
                if (name.Length == 0) { throw new FormatException("a secret of the request has no name"); }
                runspace.SessionStateProxy.SetVariable(name, ValueOf(name, secret));
            }
        }

        private static string Member(Dictionary<string, object> secret, string member)
        {
            object value;
            if (!secret.TryGetValue(member, out value) || value == null) { return string.Empty; }
            return value as string ?? Convert.ToString(value, CultureInfo.InvariantCulture);
        }

        // The value as the same literal would give it in PowerShell. No
        // message here quotes the value: only the variable's name and kind.
        private static object ValueOf(string name, Dictionary<string, object> secret)
        {
            string kind = Member(secret, "kind");
            string text = Member(secret, "value");
            switch (kind)
            {
                case "string":
                    return text;
                case "integer":
                    return Integer(name, text);
                case "real":
                    double real;
                    if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
                    throw new FormatException("the secret variable " + name + " is not a number");
                case "bool":
                    object flag;
                    if (secret.TryGetValue("value", out flag) && flag is bool) { return flag; }
                    throw new FormatException("the secret variable " + name + " is not a boolean");
                case "credential":
                    return Credential(Member(secret, "user"), Member(secret, "password"));
                default:
                    throw new FormatException("the secret variable " + name + " has an unknown kind '" + kind + "'");
            }
        }

        // As PowerShell types an integer literal: Int32, else Int64, else
        // Decimal, else Double (Parser's ScanNumber).
        internal static object Integer(string name, string text)
        {
            NumberStyles sign = NumberStyles.AllowLeadingSign;
            int small;
            if (int.TryParse(text, sign, CultureInfo.InvariantCulture, out small)) { return small; }
            long large;
            if (long.TryParse(text, sign, CultureInfo.InvariantCulture, out large)) { return large; }
            decimal huge;
            if (decimal.TryParse(text, sign, CultureInfo.InvariantCulture, out huge)) { return huge; }
            double real;
            if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
            throw new FormatException("the secret variable " + name + " is not an integer");
        }

        // A PSCredential whose password is a SecureString built here, char
        // by char: no ConvertTo-SecureString, which module logging records
        // with its -String. An empty password is an empty SecureString.
        public static PSCredential Credential(string user, string password)
        {
            SecureString secure = new SecureString();
            foreach (char c in password) { secure.AppendChar(c); }
            secure.MakeReadOnly();
            return new PSCredential(user, secure);
        }

        // An MSFT_Credential CIM instance from a credential, made as
        // New-CimInstance -ClientOnly makes one (CimCmdlets'
        // CimNewCimInstance: new CimInstance(className), then each entry
        // CimProperty.Create(name, value, CimFlags.None), which infers the
        // CIM type from the .NET value), but without handing the password
        // to a command as a string. Through reflection: this file compiles
        // against System.Management.Automation alone (5.1's Add-Type), and
        // Microsoft.Management.Infrastructure is loaded where CIM exists
        // (the GAC on Windows PowerShell 5.1, $PSHOME on pwsh 7; pwsh on
        // Linux has the assembly but no libmi, so the constructor throws
        // there, as New-CimInstance does).
        public static object NewCredentialInstance(PSCredential credential)
        {
            if (credential == null) { throw new ArgumentNullException("credential"); }
            Assembly mmi = CimAssembly();
            Type instanceType = mmi.GetType("Microsoft.Management.Infrastructure.CimInstance", true);
            Type propertyType = mmi.GetType("Microsoft.Management.Infrastructure.CimProperty", true);
            Type flagsType = mmi.GetType("Microsoft.Management.Infrastructure.CimFlags", true);
            object instance = Activator.CreateInstance(instanceType, new object[] { "MSFT_Credential" });
            object none = Enum.ToObject(flagsType, 0);
            MethodInfo create = propertyType.GetMethod("Create", new Type[] { typeof(string), typeof(object), flagsType });
            object properties = instanceType.GetProperty("CimInstanceProperties").GetValue(instance, null);
            MethodInfo add = properties.GetType().GetMethod("Add", new Type[] { propertyType });
            add.Invoke(properties, new object[] { create.Invoke(null, new object[] { "UserName", credential.UserName, none }) });
            add.Invoke(properties, new object[] { create.Invoke(null, new object[] { "Password", credential.GetNetworkCredential().Password, none }) });
            return instance;
        }

        // The PSCredential of an MSFT_Credential CIM instance (what a
        // class-based resource takes where the LCM would have converted it).
        public static PSCredential CredentialOf(object instance)
        {
            if (instance == null) { throw new ArgumentNullException("instance"); }
            object properties = instance.GetType().GetProperty("CimInstanceProperties").GetValue(instance, null);
            string user = string.Empty;
            string password = string.Empty;
            foreach (object property in (System.Collections.IEnumerable)properties)
            {
                Type type = property.GetType();
                string name = Convert.ToString(type.GetProperty("Name").GetValue(property, null), CultureInfo.InvariantCulture);
                string value = Convert.ToString(type.GetProperty("Value").GetValue(property, null), CultureInfo.InvariantCulture);
                if (string.Equals(name, "UserName", StringComparison.OrdinalIgnoreCase)) { user = value; }
                if (string.Equals(name, "Password", StringComparison.OrdinalIgnoreCase)) { password = value; }
            }
            return Credential(user, password);
        }

        private static Assembly CimAssembly()
        {
            foreach (Assembly loaded in AppDomain.CurrentDomain.GetAssemblies())
            {
                if (string.Equals(loaded.GetName().Name, "Microsoft.Management.Infrastructure", StringComparison.OrdinalIgnoreCase)) { return loaded; }
            }
            return Assembly.Load("Microsoft.Management.Infrastructure, Version=1.0.0.0, Culture=neutral, PublicKeyToken=31bf3856ad364e35");
        }
    }

    // Who connected to the host's endpoint: the manager alone may (issue
    // 41, item 10). The pipe's ACL admits every process of the agent's
    // user, so when Puppet runs elevated but not as SYSTEM a
    // medium-integrity process of that user could connect first and run
    // code elevated. host.ps1 knows the manager's pid (-ParentPid, the
    // Ruby process that started it and connects to it) and refuses any
    // other client: it hangs up and waits on, and the manager, which
    // retries while the one pipe instance is busy, connects next.
    // * A named pipe: GetNamedPipeClientProcessId (kernel32, Vista and
    //   later) on the server's handle gives the pid of the process that
    //   opened the client end. .NET's NamedPipeServerStream has no managed
    //   form of it (its GetImpersonationUserName is the user, not the
    //   process), so it is called on SafePipeHandle, which derives from
    //   SafeHandle: the marshaller keeps the handle alive for the call. A
    //   failure to identify the client refuses it.
    // * A Unix socket (Linux): getsockopt SO_PEERCRED (SOL_SOCKET 1,
    //   SO_PEERCRED 17) gives struct ucred { pid_t pid; uid_t uid; gid_t
    //   gid; }, the pid being the process that called connect(), recorded
    //   by the kernel then. .NET 5+'s Socket.GetRawSocketOption does the
    //   same but does not exist for Windows PowerShell 5.1's compiler, so
    //   libc's getsockopt is declared (never called on Windows). Elsewhere
    //   the socket's 0700 directory admits this user alone, as before.
    public static class PeerCheck
    {
        [System.Runtime.InteropServices.DllImport("kernel32.dll", SetLastError = true)]
        [return: System.Runtime.InteropServices.MarshalAs(System.Runtime.InteropServices.UnmanagedType.Bool)]
        private static extern bool GetNamedPipeClientProcessId(System.Runtime.InteropServices.SafeHandle pipe, out uint clientProcessId);

        [System.Runtime.InteropServices.DllImport("libc", SetLastError = true)]
        private static extern int getsockopt(IntPtr socket, int level, int optionName, byte[] optionValue, ref uint optionLength);

        private const int SolSocket = 1;
        private const int SoPeerCred = 17;

        // null when the connected pipe's client is the manager; else why it
        // is refused.
        public static string PipeClientRefusal(System.Runtime.InteropServices.SafeHandle pipe, int managerPid)
        {
            uint client;
            if (!GetNamedPipeClientProcessId(pipe, out client))
            {
                return "the client could not be identified (error " + System.Runtime.InteropServices.Marshal.GetLastWin32Error().ToString(CultureInfo.InvariantCulture) + ")";
            }
            return Refusal((long)client, managerPid);
        }

        // null when the accepted socket's peer is the manager; else why not.
        public static string SocketPeerRefusal(IntPtr socket, int managerPid)
        {
            byte[] credentials = new byte[12];
            uint length = (uint)credentials.Length;
            if (getsockopt(socket, SolSocket, SoPeerCred, credentials, ref length) != 0 || length < 4)
            {
                return "the client could not be identified (errno " + System.Runtime.InteropServices.Marshal.GetLastWin32Error().ToString(CultureInfo.InvariantCulture) + ")";
            }
            return Refusal((long)BitConverter.ToInt32(credentials, 0), managerPid);
        }

        private static string Refusal(long client, int managerPid)
        {
            if (client == managerPid) { return null; }
            return "pid " + client.ToString(CultureInfo.InvariantCulture) + " is not the manager (pid " + managerPid.ToString(CultureInfo.InvariantCulture) + ")";
        }
    }

    public sealed class ProtocolException : Exception
    {
        public ProtocolException(string message) : base(message) { }
    }

    // A runspace with a host of its own. Built from
    // InitialSessionState.CreateDefault2(): on Windows PowerShell 5.1,
    // RunspaceFactory.CreateRunspace() without a session state builds the
    // runspace from the legacy RunspaceConfiguration, its
    // InitialSessionState is null, and ResetRunspaceState() throws on every
    // call. CreateDefault2 loads the core engine commands; other modules
    // load on first use.
    public sealed class Session
    {
        private readonly PwshlibPSHost psHost;
        private readonly Runspace runspace;

        public Session()
        {
            psHost = new PwshlibPSHost();
            InitialSessionState state = InitialSessionState.CreateDefault2();
            runspace = RunspaceFactory.CreateRunspace(psHost, state);
            runspace.Open();
            ConsoleRouter.Register(runspace.InstanceId, psHost.Output, psHost.Errors);
        }

        public PwshlibPSHost Host { get { return psHost; } }
        public Runspace Runspace { get { return runspace; } }

        // Ends the session. A runspace whose pipeline did not stop in time
        // is left alone: disposing it would wait for that pipeline; it goes
        // with the process.
        public void Remove(bool abandon)
        {
            ConsoleRouter.Unregister(runspace.InstanceId);
            if (abandon) { return; }
            try { runspace.Dispose(); } catch (Exception) { }
        }
    }

    // A place requests run in (one for plain requests, two used in turn
    // for requests with a prelude): the session (null until built, or after it went), which
    // prelude text is defined in it, and whether its reset after the last
    // call in it is finished (Ready; the loop waits on it before the
    // session runs anything, is replaced or closed).
    internal sealed class Slot
    {
        public Session Session;
        // The Server's preludeGeneration whose text is defined in Session;
        // -1: none.
        public int PreludeGeneration = -1;
        public readonly ManualResetEvent Ready = new ManualResetEvent(true);
        // Set by the worker when the reset failed: the session is not used
        // again.
        public volatile bool Broken;
    }

    // What a request left to do once its result is sent.
    internal sealed class Outcome
    {
        public List<KeyValuePair<string, object>> Result;
        // The session the code ran in (null when it did not run).
        public Session Ran;
        // The slot that holds that session.
        public Slot Slot;
        public bool ForPrelude;
        // The session must go (the call failed, timed out, or left the
        // runspace in another state than Opened).
        public bool Rebuild;
        // A timed-out call: its stop request and pipeline.
        public IAsyncResult Stopping;
        public PowerShell Pipeline;
    }

    // The host loop (docs/protocol.md): reads execute requests one at a
    // time, runs each, answers, and only then does what the next request
    // needs but the answer does not (the runspace reset, the environment
    // and location restore, a rebuild after a failure or a timeout), before
    // it reads that next request: the manager is answered as soon as the
    // code is done, and the next request can never run before the cleanup
    // of the one before it is finished (one thread does both, in order).
    // Compiled C#, not PowerShell functions: per request the host runs no
    // interpreted PowerShell of its own, only the request's code.
    public sealed class Server
    {
        private const int ProtocolVersion = 1;
        // The prelude mechanism this host offers in its hello.
        private const int PreludeVersion = 1;
        // The secret binding this host offers in its hello (a request's
        // "secrets", bound by SecretValues before the code runs).
        private const int SecretsVersion = 1;
        // The DSC call as data this host offers in its hello (a request's
        // "dsc", made by DscCall).
        private const int DscVersion = 1;
        private const int MaxFrameLength = 268435456;
        // How host.ps1 got this assembly, told in the hello: "compiled"
        // at this start, or "cached" (loaded from its assembly cache).
        public static string AssemblySource = "compiled";
        // Reading: strict UTF-8, invalid bytes throw instead of becoming
        // U+FFFD. Writing: replacing (Json.WriteString already replaced lone
        // surrogates; nothing a call writes can end the host).
        private static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);
        private static readonly UTF8Encoding ReplacingUtf8 = new UTF8Encoding(false, false);

        private Stream stream;
        private readonly string hostScriptPath;
        private readonly string homeDirectory;
        private readonly bool homeHasWildcards;
        private readonly int stopWaitMs;
        private readonly StringComparer nameComparer;
        private readonly Dictionary<string, string> environmentSnapshot;

        // Two slots for requests with a prelude (the DSC calls of an agent
        // run, see docs/protocol.md, "Preludes"), used in turn: while a call
        // runs in one, the other's reset after the call before runs on a
        // worker thread, off the critical path even when the manager sends
        // each request the moment the previous reply arrives. Each slot's
        // session has the prelude defined in it, and whatever a call loads
        // per runspace (the DSC path's module cache) is loaded in each.
        // Plain requests keep one slot: a function or module a plain call
        // defines stays for the next plain call (ResetRunspaceState keeps
        // the function table; callers of Pwsh::Manager#execute may rely on
        // it), which a turn in another runspace would break. Their reset
        // still runs on the worker, overlapping the read of the next request.
        private readonly Slot[] plainSlots = new Slot[] { new Slot() };
        private readonly Slot[] preludeSlots = new Slot[] { new Slot(), new Slot() };
        private int plainNext;
        private int preludeNext;
        // The prelude this host session holds: its id and text, defined
        // lazily in each prelude slot's session (generation: which text a
        // session holds; a new text gives the slots new sessions).
        private string preludeId;
        private string preludeCode;
        private int preludeGeneration;
        // $HOME as a fresh runspace has it (ResetRunspaceState reads it from
        // the process environment, which a call in the other slot may have
        // changed while the reset runs; see Clean).
        private string homeVariable;
        // A timed-out pipeline was left running: it may still change the
        // environment, which is then restored before the next call too.
        private bool abandonedPipeline;
        // Shows error records under a $ErrorView the code chose.
        private readonly ErrorRenderer errorRenderer;

        // homeDirectory: where every call starts when its request names no
        // working directory (the ProviderPath of the directory the host
        // started in). stopWaitMs: how long a timed-out call's Stop may take
        // before its runspace is abandoned.
        public Server(string hostScriptPath, string homeDirectory, int stopWaitMs, bool onWindows)
        {
            this.hostScriptPath = hostScriptPath;
            this.homeDirectory = homeDirectory;
            homeHasWildcards = WildcardPattern.ContainsWildcardCharacters(homeDirectory);
            this.stopWaitMs = stopWaitMs;
            // Environment names compare as the platform compares them.
            nameComparer = onWindows ? StringComparer.OrdinalIgnoreCase : StringComparer.Ordinal;
            environmentSnapshot = new Dictionary<string, string>(nameComparer);
            foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                environmentSnapshot[(string)entry.Key] = (string)entry.Value;
            }
            plainSlots[0].Session = new Session();
            errorRenderer = new ErrorRenderer(plainSlots[0].Session.Runspace);
            homeVariable = Convert.ToString(plainSlots[0].Session.Runspace.SessionStateProxy.GetVariable("HOME"), CultureInfo.InvariantCulture);
        }

        // Greets the manager on the connection's stream, then serves until
        // exit, end of stream or a malformed frame. A broken connection
        // throws (nothing is left to tell the manager).
        public void Serve(Stream connection, string hostName, int processId)
        {
            stream = connection;
            List<KeyValuePair<string, object>> hello = new List<KeyValuePair<string, object>>();
            hello.Add(Field("type", "hello"));
            hello.Add(Field("protocol", ProtocolVersion));
            hello.Add(Field("pid", processId));
            hello.Add(Field("host", hostName));
            hello.Add(Field("prelude", PreludeVersion));
            hello.Add(Field("secrets", SecretsVersion));
            hello.Add(Field("assembly", AssemblySource));
            hello.Add(Field("dsc", DscVersion));
            WriteFrame(hello);
            while (true)
            {
                Dictionary<string, object> message;
                try
                {
                    message = ReadFrame();
                }
                catch (ProtocolException problem)
                {
                    WriteFrame(ErrorMessage(problem.Message));
                    return;
                }
                if (message == null) { return; }
                string type = Text(Get(message, "type"));
                if (type == "exit") { return; }
                if (type != "execute")
                {
                    WriteFrame(ErrorMessage("protocol error: unknown message type '" + type + "'"));
                    return;
                }
                if (Get(message, "code") == null || Get(message, "timeout_ms") == null)
                {
                    WriteFrame(ErrorMessage("protocol error: execute needs code and timeout_ms"));
                    return;
                }
                Outcome outcome = InvokeRequest(message);
                // Echo the request's id, so the manager never takes this
                // reply for another request's.
                outcome.Result.Add(Field("id", Get(message, "id")));
                WriteFrame(outcome.Result);
                AfterReply(outcome);
            }
        }

        // Ends every session (the host is leaving), each once its reset is
        // done; one whose reset does not finish within the stop wait is left
        // to go with the process.
        public void Close()
        {
            foreach (Slot slot in new Slot[] { plainSlots[0], preludeSlots[0], preludeSlots[1] })
            {
                bool done = slot.Ready.WaitOne(stopWaitMs);
                Drop(slot, !done);
            }
        }

        // The slot's session goes (abandoned: not disposed, see
        // Session.Remove). Only when its reset is not running.
        private static void Drop(Slot slot, bool abandon)
        {
            if (slot.Session != null) { slot.Session.Remove(abandon); }
            slot.Session = null;
            slot.PreludeGeneration = -1;
            slot.Broken = false;
        }

        private static KeyValuePair<string, object> Field(string name, object value)
        {
            return new KeyValuePair<string, object>(name, value);
        }

        private static List<KeyValuePair<string, object>> ErrorMessage(string text)
        {
            List<KeyValuePair<string, object>> message = new List<KeyValuePair<string, object>>();
            message.Add(Field("type", "error"));
            message.Add(Field("message", text));
            return message;
        }

        private static object Get(Dictionary<string, object> message, string name)
        {
            object value;
            if (message == null || !message.TryGetValue(name, out value)) { return null; }
            return value;
        }

        // A field as text, as PowerShell's [string] cast gave it: null is "".
        private static string Text(object value)
        {
            if (value == null) { return string.Empty; }
            if (value is bool) { return (bool)value ? "True" : "False"; }
            return Convert.ToString(value, CultureInfo.InvariantCulture);
        }

        // Reads exactly count bytes. Returns null if the stream ends before
        // the first byte (only allowed between frames); throws if it ends in
        // the middle. A large frame is read in chunks, so that a length that
        // lies costs no more memory than the bytes that came.
        private byte[] ReadExactly(int count, bool eofAllowed)
        {
            if (count <= 65536)
            {
                byte[] whole = new byte[count];
                int got = 0;
                while (got < count)
                {
                    int read = stream.Read(whole, got, count - got);
                    if (read <= 0)
                    {
                        if (eofAllowed && got == 0) { return null; }
                        throw EndedInside(got, count);
                    }
                    got += read;
                }
                return whole;
            }
            MemoryStream buffer = new MemoryStream();
            byte[] chunk = new byte[65536];
            while (buffer.Length < count)
            {
                int wanted = (int)Math.Min(chunk.Length, count - buffer.Length);
                int read = stream.Read(chunk, 0, wanted);
                if (read <= 0) { throw EndedInside(buffer.Length, count); }
                buffer.Write(chunk, 0, read);
            }
            return buffer.ToArray();
        }

        private static ProtocolException EndedInside(long got, int count)
        {
            return new ProtocolException("protocol error: stream ended inside a frame (" + got.ToString(CultureInfo.InvariantCulture) + " of " + count.ToString(CultureInfo.InvariantCulture) + " bytes)");
        }

        // One frame: a 4-byte big-endian length, then that many bytes of
        // UTF-8 JSON. Null means a clean end of stream.
        private Dictionary<string, object> ReadFrame()
        {
            byte[] prefix = ReadExactly(4, true);
            if (prefix == null) { return null; }
            long length = ((long)prefix[0] << 24) | ((long)prefix[1] << 16) | ((long)prefix[2] << 8) | prefix[3];
            if (length > MaxFrameLength)
            {
                throw new ProtocolException("protocol error: frame length " + length.ToString(CultureInfo.InvariantCulture) + " exceeds the maximum of " + MaxFrameLength.ToString(CultureInfo.InvariantCulture));
            }
            byte[] payload = ReadExactly((int)length, false);
            string text;
            try
            {
                text = StrictUtf8.GetString(payload);
            }
            catch (DecoderFallbackException)
            {
                throw new ProtocolException("protocol error: payload is not valid UTF-8");
            }
            object parsed;
            try
            {
                parsed = Json.Parse(text);
            }
            catch (FormatException problem)
            {
                throw new ProtocolException("protocol error: payload is not valid JSON: " + problem.Message);
            }
            Dictionary<string, object> message = parsed as Dictionary<string, object>;
            if (message == null || Get(message, "type") == null)
            {
                throw new ProtocolException("protocol error: payload is not a message object with a type");
            }
            return message;
        }

        // The length prefix and the payload in one write: one send, not two.
        private void WriteFrame(List<KeyValuePair<string, object>> message)
        {
            string text = Json.Write(message);
            int length = ReplacingUtf8.GetByteCount(text);
            byte[] frame = new byte[length + 4];
            frame[0] = (byte)(length >> 24);
            frame[1] = (byte)(length >> 16);
            frame[2] = (byte)(length >> 8);
            frame[3] = (byte)length;
            ReplacingUtf8.GetBytes(text, 0, text.Length, frame, 4);
            stream.Write(frame, 0, frame.Length);
            stream.Flush();
        }

        // Once the result is sent: what the next request needs. The process
        // directory and the environment go back to what they were at start
        // here, on the loop thread, before the next request is read: both
        // are the process's, shared by every runspace. A failed or timed-out
        // call's session goes (after a bounded wait for a stop); a
        // successful call's session is reset on a worker thread
        // (ResetRunspaceState: the global variables, preferences and
        // $LASTEXITCODE; the location back to where every call starts) while
        // the next request runs in the other slot, which waits for that reset
        // before its own next use (Acquire). The other slot's session is
        // built here when it has none yet (the first call of its kind).
        private void AfterReply(Outcome outcome)
        {
            // A new runspace takes its location from the process directory.
            try { Environment.CurrentDirectory = homeDirectory; } catch (Exception) { }
            RestoreEnvironment();
            if (outcome.Slot == null) { return; }
            if (outcome.Rebuild)
            {
                bool abandon = CompleteStop(outcome);
                if (abandon) { abandonedPipeline = true; }
                Drop(outcome.Slot, abandon);
                if (outcome.ForPrelude)
                {
                    // The result did not name the prelude: the manager sends
                    // its text with the next request that names it, which
                    // defines it in new sessions.
                    preludeId = null;
                    preludeCode = null;
                }
            }
            else if (outcome.Ran != null)
            {
                ResetInBackground(outcome.Slot);
            }
            Slot[] slots = outcome.ForPrelude ? preludeSlots : plainSlots;
            foreach (Slot other in slots)
            {
                if (other.Session == null && other.Ready.WaitOne(0))
                {
                    try { other.Session = new Session(); } catch (Exception) { other.Session = null; }
                }
                if (outcome.ForPrelude) { DefineInBackground(other); }
            }
        }

        // A prelude slot whose session lacks the current prelude gets it on
        // a thread-pool thread, as its reset would run: otherwise the first
        // call in the second slot of a fresh host (the second DSC call of
        // an agent run) defined it on its own critical path (issue 39). The
        // loop waits on Ready before it uses the slot, and GetPreludeSlot
        // defines the text again when the generation moved meanwhile.
        private void DefineInBackground(Slot slot)
        {
            string code = preludeCode;
            int generation = preludeGeneration;
            if (code == null || slot.Session == null || slot.Broken || slot.PreludeGeneration == generation || !slot.Ready.WaitOne(0))
            {
                return;
            }
            slot.Ready.Reset();
            ThreadPool.QueueUserWorkItem(delegate(object unused)
            {
                Runspace previous = Runspace.DefaultRunspace;
                try
                {
                    Runspace.DefaultRunspace = slot.Session.Runspace;
                    DefinePrelude(slot.Session, code);
                    slot.PreludeGeneration = generation;
                }
                catch (Exception)
                {
                    // Defined again, or the session built again, when used.
                    slot.Broken = true;
                }
                finally
                {
                    Runspace.DefaultRunspace = previous;
                    slot.Ready.Set();
                }
            });
        }

        // The slot's reset, on a thread-pool thread. Thread safety:
        // LocalRunspace.ResetRunspaceState refuses a runspace that is not
        // Opened and Available (never the case here: the slot's call has
        // ended and the loop waits on Ready before it runs anything there
        // again) and calls InitialSessionState.ResetRunspaceState(context)
        // with that runspace's own ExecutionContext, under the lock of its
        // own InitialSessionState (each Session builds its own with
        // CreateDefault2): it rebuilds that context's global variable table
        // (SessionStateInternal.InitializeSessionStateInternalSpecialVariables,
        // InitializeFixedVariables), its location (SetSessionStateDrive) and
        // its event, transaction and debug managers (ResetManagers), and
        // touches no other runspace's state, in pwsh 7's
        // System.Management.Automation (InitialSessionState.cs,
        // LocalRunspace.cs) and Windows PowerShell 5.1's alike. What it reads
        // of the process, the other slot's call may be changing meanwhile:
        // the process directory (SetSessionStateDrive sets the location to
        // Directory.GetCurrentDirectory()) and the HOME (USERPROFILE, or
        // HOMEDRIVE and HOMEPATH on 5.1) environment variable
        // (InitializeFixedVariables sets $HOME from it); Clean sets both
        // again from the host's own values. The thread's default runspace is
        // the one reset for the time of the reset, as on a pipeline thread,
        // so that anything written goes to that runspace's buffers (cleared
        // before its next call).
        private void ResetInBackground(Slot slot)
        {
            slot.Ready.Reset();
            ThreadPool.QueueUserWorkItem(delegate(object unused)
            {
                Runspace previous = Runspace.DefaultRunspace;
                try
                {
                    Runspace.DefaultRunspace = slot.Session.Runspace;
                    Clean(slot.Session);
                }
                catch (Exception)
                {
                    // A runspace that cannot be reset is not used again.
                    slot.Broken = true;
                }
                finally
                {
                    Runspace.DefaultRunspace = previous;
                    slot.Ready.Set();
                }
            });
        }

        // The slot to run the next request of a kind in: the one not used
        // last, once its reset is finished; its session built again when it
        // has none or its reset failed. Throws when a runspace cannot be
        // built.
        private Slot Acquire(Slot[] slots, ref int next)
        {
            Slot slot = slots[next];
            next = (next + 1) % slots.Length;
            slot.Ready.WaitOne();
            if (slot.Broken) { Drop(slot, false); }
            if (slot.Session == null) { slot.Session = new Session(); }
            return slot;
        }

        // A session's state back to where every call starts:
        // ResetRunspaceState rebuilds the global variable table and resets
        // the event, transaction and debug managers (functions and imported
        // modules stay). It also sets the location to the process's current
        // directory, which a call running in the other slot may have
        // changed meanwhile (InitialSessionState.SetSessionStateDrive, in
        // Windows PowerShell 5.1 and pwsh 7), and $HOME from the process
        // environment, which that call may have changed too: both are set
        // again here, the home directory escaped (SetLocation takes a
        // wildcard path; a directory named 'a[1]' is that directory).
        private void Clean(Session session)
        {
            session.Host.Reset();
            session.Runspace.ResetRunspaceState();
            // SetLocation costs about as much as the reset itself (0.5 ms on
            // pwsh 7.6): only when the location is not home already.
            if (homeHasWildcards || !string.Equals(session.Runspace.SessionStateProxy.Path.CurrentFileSystemLocation.ProviderPath, homeDirectory, StringComparison.Ordinal))
            {
                session.Runspace.SessionStateProxy.Path.SetLocation(WildcardPattern.Escape(homeDirectory));
            }
            string home = Convert.ToString(session.Runspace.SessionStateProxy.GetVariable("HOME"), CultureInfo.InvariantCulture);
            if (!string.Equals(home, homeVariable, StringComparison.Ordinal))
            {
                // $HOME is ReadOnly: only -Force sets it.
                PowerShell setter = PowerShell.Create();
                try
                {
                    setter.Runspace = session.Runspace;
                    setter.AddCommand("Microsoft.PowerShell.Utility\\Set-Variable").AddParameter("Name", "HOME").AddParameter("Value", homeVariable).AddParameter("Scope", "Global").AddParameter("Force");
                    setter.Invoke();
                }
                finally
                {
                    setter.Dispose();
                }
            }
        }

        // After a timed-out call: waits a bounded time for its pipeline to
        // stop. Returns whether its runspace must be abandoned (not
        // disposed: disposing waits for a pipeline that does not stop; it
        // goes with the process).
        private bool CompleteStop(Outcome outcome)
        {
            if (outcome.Stopping == null) { return false; }
            if (!outcome.Stopping.AsyncWaitHandle.WaitOne(stopWaitMs)) { return true; }
            try { outcome.Pipeline.Dispose(); } catch (Exception) { }
            return false;
        }

        // The process environment back to the start snapshot: variables
        // that were not there are removed, changed ones reset. SystemRoot is
        // never removed, even when a call added it: with Protected Event
        // Logging and script block logging on, PowerShell needs it and the
        // process dies without it. A name .NET refuses (the hidden "=C:"
        // entries on Windows) is skipped; restoring never stops the host.
        // SetEnvironmentVariable(name, null) removes the variable on every
        // .NET ("" would leave it defined, empty, on .NET Core).
        private void RestoreEnvironment()
        {
            List<string> added = new List<string>();
            foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                string name = (string)entry.Key;
                if (nameComparer.Equals(name, "SystemRoot") || environmentSnapshot.ContainsKey(name)) { continue; }
                added.Add(name);
            }
            foreach (string name in added)
            {
                try { Environment.SetEnvironmentVariable(name, null); } catch (Exception) { }
            }
            foreach (KeyValuePair<string, string> entry in environmentSnapshot)
            {
                if (!string.Equals(Environment.GetEnvironmentVariable(entry.Key), entry.Value, StringComparison.Ordinal))
                {
                    try { Environment.SetEnvironmentVariable(entry.Key, entry.Value); } catch (Exception) { }
                }
            }
        }

        // A request's env, applied inside the call's try, in order: a name
        // given twice takes its last value (as pwshlib 2.x, which set each in
        // turn). A bad entry (a name with '=' or NUL, a value over 32,767
        // characters, which the .NET Framework refuses) throws, and the call
        // fails with an error result.
        private static void SetRequestEnvironment(object pairs)
        {
            if (pairs == null) { return; }
            List<object> list = pairs as List<object>;
            if (list == null) { throw new InvalidOperationException("The request has a malformed env entry (a [name, value] pair is expected)"); }
            foreach (object item in list)
            {
                List<object> pair = item as List<object>;
                if (pair == null || pair.Count != 2)
                {
                    throw new InvalidOperationException("The request has a malformed env entry (a [name, value] pair is expected)");
                }
                string name = Text(pair[0]);
                try
                {
                    Environment.SetEnvironmentVariable(name, Text(pair[1]));
                }
                catch (Exception problem)
                {
                    throw new InvalidOperationException("The environment variable '" + name + "' could not be set: " + problem.Message);
                }
            }
        }

        // Runs one execute request: in the prelude's session when it names a
        // prelude (defining it first when it carries its text), else in the
        // plain session.
        private Outcome InvokeRequest(Dictionary<string, object> request)
        {
            Dictionary<string, object> prelude = null;
            object preludeValue = Get(request, "prelude");
            if (preludeValue != null)
            {
                prelude = preludeValue as Dictionary<string, object>;
                if (prelude == null) { prelude = new Dictionary<string, object>(); }
            }
            if (abandonedPipeline)
            {
                // The abandoned pipeline may have changed the environment
                // after the restore that followed its reply.
                RestoreEnvironment();
            }
            Slot slot;
            try
            {
                slot = prelude != null ? GetPreludeSlot(prelude) : Acquire(plainSlots, ref plainNext);
            }
            catch (Exception problem)
            {
                return Failed(prelude != null ? problem.Message : "The host could not create a runspace: " + problem.Message);
            }
            Outcome outcome = InvokeInSession(request, slot.Session, prelude != null);
            outcome.Slot = slot;
            outcome.ForPrelude = prelude != null;
            if (prelude != null && !outcome.Rebuild)
            {
                outcome.Result.Add(Field("prelude", Text(Get(prelude, "id"))));
            }
            return outcome;
        }

        private static Outcome Failed(string message)
        {
            Outcome outcome = new Outcome();
            outcome.Result = NewResult(1, null, null, null, message);
            return outcome;
        }

        // The slot for a request that names a prelude, after taking the
        // prelude's text when the request carries it, with the prelude
        // defined in its session: each of the two sessions gets the text
        // the first time it runs a request with it. A new text gives both
        // slots new sessions (the functions of an earlier text would survive
        // any reset).
        private Slot GetPreludeSlot(Dictionary<string, object> prelude)
        {
            string id = Text(Get(prelude, "id"));
            object code = Get(prelude, "code");
            if (code != null)
            {
                preludeId = id;
                preludeCode = Text(code);
                preludeGeneration++;
            }
            if (preludeId == null || !string.Equals(preludeId, id, StringComparison.OrdinalIgnoreCase))
            {
                throw new InvalidOperationException("The prelude '" + id + "' is not defined in this host session; send its code first");
            }
            Slot slot = preludeSlots[preludeNext];
            preludeNext = 1 - preludeNext;
            slot.Ready.WaitOne();
            if (slot.Broken || (slot.Session != null && slot.PreludeGeneration != preludeGeneration))
            {
                Drop(slot, false);
            }
            if (slot.Session == null)
            {
                try
                {
                    slot.Session = new Session();
                }
                catch (Exception problem)
                {
                    throw new InvalidOperationException("The host could not create a runspace: " + problem.Message);
                }
            }
            if (slot.PreludeGeneration != preludeGeneration)
            {
                try
                {
                    DefinePrelude(slot.Session, preludeCode);
                }
                catch (Exception problem)
                {
                    Drop(slot, false);
                    preludeId = null;
                    preludeCode = null;
                    throw new InvalidOperationException("The host could not define prelude '" + id + "': " + problem.Message);
                }
                slot.PreludeGeneration = preludeGeneration;
            }
            return slot;
        }

        // The prelude's functions defined in a session: its text is run
        // once in the runspace's global scope (AddScript without
        // useLocalScope runs in the runspace's current scope, the global
        // one); functions defined there survive every ResetRunspaceState.
        // The session is then reset like after any call, so that the first
        // call sees no variable the text set. Throws with the reason when the
        // text fails.
        private void DefinePrelude(Session session, string code)
        {
            PowerShell definer = PowerShell.Create();
            try
            {
                definer.Runspace = session.Runspace;
                definer.AddScript(code);
                definer.Invoke();
                if (definer.Streams.Error.Count > 0)
                {
                    throw new InvalidOperationException(definer.Streams.Error[0].ToString());
                }
                Clean(session);
            }
            finally
            {
                definer.Dispose();
            }
        }

        // Runs the request's code in the session, which the previous call's
        // AfterReply left clean (variables reset, location at home, the
        // environment the snapshot). Plain requests (forPrelude false): the
        // pipeline output goes through Out-String -Stream to the host
        // (PipelineSink), so that stdout is everything the code showed, in order
        // (pipeline output, native programs' output, Write-Host,
        // Write-Information, "WARNING: " lines, error records,
        // [Console]::Out). Requests with a prelude (the DSC invocation):
        // stdout is the pipeline output alone, the one line of JSON, and
        // whatever the code writes to the host or the console goes to
        // native_stdout, never into that line.
        private Outcome InvokeInSession(Dictionary<string, object> request, Session session, bool forPrelude)
        {
            Outcome outcome = new Outcome();
            PwshlibPSHost psHost = session.Host;
            Runspace runspace = session.Runspace;
            PowerShell ps = null;
            try
            {
                int timeoutMs = (int)Math.Min(Convert.ToDouble(Get(request, "timeout_ms"), CultureInfo.InvariantCulture), int.MaxValue);
                string workingDir = Text(Get(request, "working_dir"));
                // Relative to the process's current directory, which is the
                // home directory between calls, as is the runspace location.
                if (workingDir.Length > 0 && !Directory.Exists(workingDir))
                {
                    outcome.Result = NewResult(1, null, null, null, "Working directory '" + workingDir + "' does not exist");
                    return outcome;
                }
                outcome.Ran = session;
                SetRequestEnvironment(Get(request, "env"));
                if (workingDir.Length > 0)
                {
                    // SetLocation takes a wildcard path: '[' and ']' (and
                    // '*', '?', '`') are escaped so that a directory named
                    // 'a[1]' is that directory.
                    runspace.SessionStateProxy.Path.SetLocation(WildcardPattern.Escape(workingDir));
                    Environment.CurrentDirectory = workingDir;
                }
                psHost.Reset();
                SecretValues.Bind(runspace, Get(request, "secrets"));
                string code = Text(Get(request, "code"));
                object dsc = Get(request, "dsc");
                if (dsc != null)
                {
                    if (!forPrelude) { throw new FormatException("protocol error: a DSC call as data needs a prelude"); }
                    code = DscCall.Bind(runspace, dsc);
                }

                ps = PowerShell.Create();
                ps.Runspace = runspace;
                ps.AddScript(code);
                if (!forPrelude)
                {
                    // Module-qualified, so that a user's own function
                    // Out-String (which ResetRunspaceState keeps) is not
                    // called. The code's output is piped into Out-String,
                    // never left last in the pipeline: a native program
                    // there would inherit the host process's stdout (the
                    // null device) instead of being read (what
                    // NativeCommandProcessor does for the last command of a
                    // pipeline that ends in Out-Default). Out-String renders
                    // $PSStyle's ANSI escapes out of tables and lists (pwsh
                    // 7.2+, OutputRendering 'Host': no escapes outside a
                    // host). Its lines reach the host through PipelineSink.
                    ps.AddCommand("Microsoft.PowerShell.Utility\\Out-String").AddParameter("Stream");
                }
                ErrorSink errorSink = forPrelude
                    ? new ErrorSink(ps.Streams.Error, new SharedText(), null, null)
                    : new ErrorSink(ps.Streams.Error, psHost.Output, runspace, errorRenderer);
                PSDataCollection<PSObject> noInput = new PSDataCollection<PSObject>();
                noInput.Complete();
                PSDataCollection<PSObject> output = new PSDataCollection<PSObject>();
                if (!forPrelude) { new PipelineSink(output, psHost); }
                IAsyncResult running = ps.BeginInvoke<PSObject, PSObject>(noInput, output);

                if (!running.AsyncWaitHandle.WaitOne(timeoutMs))
                {
                    // Stop() waits until the pipeline notices, which code
                    // blocked in a native or .NET call never does: ask now,
                    // and wait (a bounded time, giving up on the runspace
                    // when it does not stop) only after the result is sent
                    // (AfterReply), so that the result reaches the manager
                    // well inside its grace even on a loaded machine.
                    outcome.Stopping = ps.BeginStop(null, null);
                    outcome.Pipeline = ps;
                    ps = null;
                    outcome.Rebuild = true;
                    // What the code wrote before the timeout, so that a user
                    // can see where it hung (as pwshlib 2.x).
                    string written = psHost.TakeOutput();
                    outcome.Result = NewResult(1, forPrelude ? null : NonEmpty(written), forPrelude ? NonEmpty(written) : null, StderrItems(errorSink, psHost),
                        "Catastrophic failure: PowerShell module timeout (" + timeoutMs.ToString(CultureInfo.InvariantCulture) + " ms) exceeded while executing");
                    return outcome;
                }

                string errorMessage = null;
                int exitCode = 0;
                try
                {
                    ps.EndInvoke(running);
                }
                catch (Exception problem)
                {
                    errorMessage = FailureText(problem);
                    exitCode = 1;
                    outcome.Rebuild = true;
                }
                if (runspace.RunspaceStateInfo.State != RunspaceState.Opened)
                {
                    outcome.Rebuild = true;
                }
                if (psHost.ShouldExit)
                {
                    // `exit N` at the top level (SetShouldExit).
                    exitCode = psHost.ExitCode;
                }
                else if (exitCode == 0)
                {
                    // A native program's exit code, when the code ended after
                    // one.
                    int lastExitCode;
                    if (TryInt(runspace.SessionStateProxy.GetVariable("LASTEXITCODE"), out lastExitCode))
                    {
                        exitCode = lastExitCode;
                    }
                }

                string hostText = psHost.TakeOutput();
                string stdout;
                string native = null;
                if (forPrelude)
                {
                    // The DSC prelude leaves its lines in a variable rather
                    // than the pipeline, which transcription records.
                    object kept = runspace.SessionStateProxy.GetVariable(DscOutputVariable);
                    PSObject wrapped = kept as PSObject;
                    string[] held = (wrapped != null ? wrapped.BaseObject : kept) as string[];
                    if (held != null)
                    {
                        runspace.SessionStateProxy.SetVariable(DscOutputVariable, null);
                        stdout = OutLines(held, output.Count > 0 ? OutString(runspace, output) : null);
                    }
                    else
                    {
                        stdout = output.Count > 0 ? OutString(runspace, output) : null;
                    }
                    native = hostText;
                }
                else
                {
                    stdout = hostText;
                }
                outcome.Result = NewResult(exitCode, NonEmpty(stdout), NonEmpty(native), StderrItems(errorSink, psHost), errorMessage);
                return outcome;
            }
            catch (Exception problem)
            {
                outcome.Result = NewResult(1, null, null, null, problem.Message);
                return outcome;
            }
            finally
            {
                if (ps != null) { ps.Dispose(); }
            }
        }

        // The global variable where the DSC prelude's
        // Invoke-PwshlibDscResource leaves its lines of JSON (string[]) in
        // this host: not in the pipeline, whose output transcription
        // records, and a Get's result may hold what the system keeps secret
        // (issue 38).
        private const string DscOutputVariable = "PwshlibDscOutput";

        // The prelude's lines after whatever else the code wrote to the
        // pipeline, each ended as Out-String ends a string.
        private static string OutLines(string[] lines, string before)
        {
            StringBuilder text = new StringBuilder(before ?? string.Empty);
            foreach (string line in lines) { text.Append(line).Append(Environment.NewLine); }
            return text.ToString();
        }

        // $LASTEXITCODE -as [int]: null, or a value that does not convert,
        // is no exit code.
        private static bool TryInt(object value, out int result)
        {
            result = 0;
            if (value == null) { return false; }
            try
            {
                result = (int)LanguagePrimitives.ConvertTo(value, typeof(int), CultureInfo.InvariantCulture);
                return true;
            }
            catch (Exception)
            {
                return false;
            }
        }

        // The pipeline output as Out-String renders it (what a request with a
        // prelude answers: the one line of JSON). A string renders as itself
        // and a line end (the platform's), which is all the DSC prelude
        // writes; anything else goes through Out-String in the session.
        private static string OutString(Runspace runspace, PSDataCollection<PSObject> output)
        {
            StringBuilder text = new StringBuilder();
            bool allStrings = true;
            foreach (PSObject item in output)
            {
                string line = item == null ? null : item.BaseObject as string;
                if (line == null) { allStrings = false; break; }
                text.Append(line).Append(Environment.NewLine);
            }
            if (allStrings) { return text.ToString(); }
            PowerShell formatter = PowerShell.Create();
            try
            {
                formatter.Runspace = runspace;
                formatter.AddCommand("Microsoft.PowerShell.Utility\\Out-String");
                StringBuilder rendered = new StringBuilder();
                foreach (PSObject piece in formatter.Invoke(output))
                {
                    if (piece != null) { rendered.Append(piece.BaseObject as string); }
                }
                return rendered.ToString();
            }
            finally
            {
                formatter.Dispose();
            }
        }

        private static string NonEmpty(string text)
        {
            return string.IsNullOrEmpty(text) ? null : text;
        }

        // The result's stderr elements: the error records (a native
        // program's lines in a row as one), then [Console]::Error and the
        // host UI's WriteErrorLine, one element per line.
        private static string[] StderrItems(ErrorSink sink, PwshlibPSHost psHost)
        {
            List<string> items = new List<string>(sink.Take());
            string rest = psHost.TakeErrors();
            int start = 0;
            while (start < rest.Length)
            {
                int end = rest.IndexOf('\n', start);
                if (end < 0) { end = rest.Length - 1; }
                items.Add(rest.Substring(start, end - start + 1));
                start = end + 1;
            }
            return items.ToArray();
        }

        // stderr_items: the elements of the manager's stderr Array, each with
        // its line end; stderr: their text joined, for a manager that does
        // not read stderr_items.
        private static List<KeyValuePair<string, object>> NewResult(int exitCode, string stdout, string nativeStdout, string[] stderrItems, string errorMessage)
        {
            if (stderrItems == null) { stderrItems = new string[0]; }
            List<KeyValuePair<string, object>> result = new List<KeyValuePair<string, object>>();
            result.Add(Field("type", "result"));
            result.Add(Field("exitcode", exitCode));
            result.Add(Field("stdout", stdout));
            result.Add(Field("stderr", string.Concat(stderrItems)));
            result.Add(Field("stderr_items", stderrItems));
            result.Add(Field("errormessage", errorMessage));
            result.Add(Field("native_stdout", nativeStdout));
            return result;
        }

        // The text of a terminating error, with where it happened when
        // PowerShell knows ("At line:1 char:...", as pwshlib 2.x gave it): the
        // innermost exception's message, and the position of the innermost
        // error record in the chain that has one. A position in host.ps1 is
        // never the user's; a ParseException's message already says where,
        // for each error.
        private string FailureText(Exception exception)
        {
            string position = null;
            Exception failure = exception;
            while (true)
            {
                IContainsErrorRecord holder = failure as IContainsErrorRecord;
                if (holder != null && holder.ErrorRecord != null)
                {
                    InvocationInfo invocation = holder.ErrorRecord.InvocationInfo;
                    if (invocation != null && !string.IsNullOrEmpty(invocation.PositionMessage) && invocation.ScriptName != hostScriptPath)
                    {
                        position = invocation.PositionMessage;
                    }
                }
                if (failure.InnerException == null) { break; }
                failure = failure.InnerException;
            }
            if (position != null && !(failure is ParseException))
            {
                return failure.Message + "\n" + position;
            }
            return failure.Message;
        }
    }
}
