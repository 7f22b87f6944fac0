<#
.SYNOPSIS
    pwshlib's persistent PowerShell host: serves docs/protocol.md (version 1).

.DESCRIPTION
    Pwsh::Manager starts this script once per manager:
        pwsh <args> -File host.ps1 -PipePath <endpoint> -ParentPid <ruby pid>
    It listens on a named pipe (Windows) or a Unix socket (elsewhere), greets
    the manager with a hello frame, then answers execute requests one at a
    time until an exit request or the end of the stream.

    Every frame is a 4-byte big-endian length followed by that many bytes of
    UTF-8 JSON. A malformed frame gets an error frame, then the host leaves.
#>
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)]
    [string] $PipePath,

    [int] $ParentPid = 0
)

$ErrorActionPreference = 'Stop'

# Constrained language mode (AppLocker or WDAC enforcing, and this script
# neither allowed nor signed): Add-Type below would throw and the host
# would exit before listening, leaving the manager to say only that it
# exited. Leave at once with an exit code of our own instead (86, which
# nothing else here uses); the manager then says what to do (the review's
# N10). The check needs nothing CLM forbids: a property of
# $ExecutionContext and a comparison.
if ($ExecutionContext.SessionState.LanguageMode -ne 'FullLanguage') {
    exit 86
}

$script:ProtocolVersion = 1
$script:HostScriptPath = $PSCommandPath
# The prelude mechanism this host offers in its hello (docs/protocol.md).
$script:PreludeVersion = 1
$script:MaxFrameLength = 268435456
# Reading: strict UTF-8, invalid bytes throw instead of becoming U+FFFD.
$script:Utf8 = New-Object System.Text.UTF8Encoding -ArgumentList $false, $true
# Writing: a replacing encoder. Output text may hold a lone UTF-16 surrogate
# (a resource that cut a string in half); a strict encoder would throw in
# Write-Frame and end the host, this one writes U+FFFD instead.
$script:Utf8Out = New-Object System.Text.UTF8Encoding -ArgumentList $false, $false
$script:OnWindows = [System.IO.Path]::DirectorySeparatorChar -eq '\'
$script:ModernJson = $PSVersionTable.PSVersion.Major -ge 6
# How long a timed-out call's Stop() may take before the host gives up on
# that runspace (PowerShell.Stop waits for the pipeline to notice, which a
# native call or a .NET method never does). The wait comes after the
# timeout result is sent, but before the next request is read: kept well
# under the manager's 1 s grace, so that a next request sent at once still
# has its own time.
$script:StopWaitMs = 500

if ($script:ModernJson) {
    # pwsh 7's ConvertFrom-Json turns strings that look like ISO dates into
    # DateTime (Newtonsoft's DateParseHandling), so an env value or code
    # such as '2024-01-02T03:04:05' would come back reformatted.
    # System.Text.Json (in .NET Core 3.0 and later, so in every pwsh 7)
    # leaves strings alone; the assembly is loaded by name first because
    # pwsh resolves type literals only in loaded assemblies.
    Add-Type -AssemblyName System.Text.Json
} else {
    # Windows PowerShell's ConvertFrom-Json refuses large documents.
    # JavaScriptSerializer turns only the text "\/Date(n)\/" (with the
    # escaped slashes) into a DateTime; the manager's JSON writer never
    # escapes '/', so every string arrives as the exact text sent.
    Add-Type -AssemblyName System.Web.Extensions
    $script:Serializer = New-Object System.Web.Script.Serialization.JavaScriptSerializer
    $script:Serializer.MaxJsonLength = [int]::MaxValue
}

# The PowerShell host the code runs under (one instance per runspace).
# Windows PowerShell 5.1 and pwsh 7 both need it for two things:
# * exit codes: `exit 7` at the top level of the code throws ExitException,
#   which the pipeline (LocalPipeline.InvokeHelper) catches and hands to
#   the host as SetShouldExit(7); it sets no $LASTEXITCODE. The default
#   host's SetShouldExit does nothing, so without a host of our own every
#   `exit N` would read as 0. (PSInvocationSettings.ExposeFlowControlExceptions
#   would surface the ExitException too, but not the host writes below.)
# * output in order: Write-Host (an information record tagged PSHOST,
#   which MshCommandRuntime.WriteInformation passes to the host UI's Write
#   or WriteLine), Write-Warning (the UI's WriteWarningLine), Write-Verbose
#   and Write-Debug when their preference shows them, Out-Default (which
#   formats the pipeline output through the UI's WriteLine) and
#   [Console]::Out (pointed at the same buffer during a call) all land in
#   one buffer, in the order they happen. Other information records reach
#   the UI's WriteInformation even when $InformationPreference is
#   SilentlyContinue (InternalHostUserInterface.WriteInformationRecord);
#   they are shown as pwshlib 2.x showed them. The UI is not interactive:
#   prompts and Read-Host throw.
# Written for C# 5: Windows PowerShell 5.1 compiles Add-Type with the .NET
# Framework's csc (no => members, no ?., no string interpolation).
$script:HostSource = @'
using System;
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
    public sealed class ErrorSink
    {
        private readonly PSDataCollection<ErrorRecord> records;
        private readonly SharedText output;
        private readonly List<string> items = new List<string>();
        private bool lastWasNative;

        public ErrorSink(PSDataCollection<ErrorRecord> records, SharedText output)
        {
            this.records = records;
            this.output = output;
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
                output.Append(text + "\n");
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
        public string TakeErrors() { return errors.Take(); }

        public override void EnterNestedPrompt() { throw new PSNotSupportedException("The pwshlib host has no nested prompt"); }
        public override void ExitNestedPrompt() { throw new PSNotSupportedException("The pwshlib host has no nested prompt"); }
        public override void NotifyBeginApplication() { }
        public override void NotifyEndApplication() { }
    }
}
'@
Add-Type -TypeDefinition $script:HostSource -Language CSharp

# Native programs' output is decoded with [Console]::OutputEncoding, which
# on Windows is the OEM code page unless set: UTF-8, as pwshlib 2.x set it
# (the review's N9). Best effort: without a console Windows may refuse it.
# Set before the writers below: .NET drops its own console writer when the
# encoding changes, but leaves one set through SetOut alone.
try {
    [Console]::OutputEncoding = New-Object System.Text.UTF8Encoding -ArgumentList $false
} catch {
}
# [Console]::Out and [Console]::Error go, for the whole life of the host,
# to the buffer of the runspace writing (see ConsoleRouter).
[Console]::SetOut((New-Object PwshlibHost.ConsoleRouter -ArgumentList $false, ([Console]::Out)))
[Console]::SetError((New-Object PwshlibHost.ConsoleRouter -ArgumentList $true, ([Console]::Error)))

function ConvertFrom-JsonElement {
    param($Element)
    switch ($Element.ValueKind.ToString()) {
        'Object' {
            $table = @{}
            foreach ($property in $Element.EnumerateObject()) {
                $table[$property.Name] = ConvertFrom-JsonElement -Element $property.Value
            }
            return $table
        }
        'Array' {
            $items = New-Object 'System.Collections.Generic.List[object]'
            foreach ($item in $Element.EnumerateArray()) {
                $items.Add((ConvertFrom-JsonElement -Element $item))
            }
            return , $items.ToArray()
        }
        'String' { return $Element.GetString() }
        'Number' {
            $integer = [long]0
            if ($Element.TryGetInt64([ref]$integer)) {
                return $integer
            }
            return $Element.GetDouble()
        }
        'True' { return $true }
        'False' { return $false }
        default { return $null }
    }
}

function ConvertFrom-Frame {
    param([string] $Text)
    if ($script:ModernJson) {
        $document = [System.Text.Json.JsonDocument]::Parse($Text, (New-Object System.Text.Json.JsonDocumentOptions))
        try {
            return ConvertFrom-JsonElement -Element $document.RootElement
        } finally {
            $document.Dispose()
        }
    }
    return $script:Serializer.DeserializeObject($Text)
}

function ConvertTo-Frame {
    param([hashtable] $Message)
    if ($script:ModernJson) {
        return ($Message | ConvertTo-Json -Compress -Depth 4)
    }
    return $script:Serializer.Serialize($Message)
}

# Reads exactly $Count bytes. Returns $null if the stream ends before the
# first byte (only allowed between frames); throws if it ends in the middle.
function Read-Exactly {
    param($Stream, [int] $Count, [bool] $EofAllowed)
    $buffer = New-Object System.IO.MemoryStream
    $chunk = New-Object byte[] ([Math]::Min($Count, 65536))
    while ($buffer.Length -lt $Count) {
        $wanted = [Math]::Min($chunk.Length, $Count - $buffer.Length)
        $read = $Stream.Read($chunk, 0, $wanted)
        if ($read -le 0) {
            if ($EofAllowed -and $buffer.Length -eq 0) {
                return $null
            }
            throw "protocol error: stream ended inside a frame ($($buffer.Length) of $Count bytes)"
        }
        $buffer.Write($chunk, 0, $read)
    }
    return , $buffer.ToArray()
}

# Protocol step: read one frame. $null means a clean end of stream.
function Read-Frame {
    param($Stream)
    $prefix = Read-Exactly -Stream $Stream -Count 4 -EofAllowed $true
    if ($null -eq $prefix) {
        return $null
    }
    $length = ([long]$prefix[0] -shl 24) -bor ([long]$prefix[1] -shl 16) -bor ([long]$prefix[2] -shl 8) -bor [long]$prefix[3]
    if ($length -gt $script:MaxFrameLength) {
        throw "protocol error: frame length $length exceeds the maximum of $($script:MaxFrameLength)"
    }
    $payload = Read-Exactly -Stream $Stream -Count $length -EofAllowed $false
    try {
        $text = $script:Utf8.GetString($payload)
    } catch {
        throw 'protocol error: payload is not valid UTF-8'
    }
    try {
        $message = ConvertFrom-Frame -Text $text
    } catch {
        throw "protocol error: payload is not valid JSON: $($_.Exception.Message)"
    }
    if ($null -eq $message -or $null -eq $message.type) {
        throw 'protocol error: payload is not a message object with a type'
    }
    return $message
}

# Protocol step: write one frame (length prefix, then the UTF-8 JSON).
function Write-Frame {
    param($Stream, [hashtable] $Message)
    $bytes = $script:Utf8Out.GetBytes((ConvertTo-Frame -Message $Message))
    $length = $bytes.Length
    $prefix = [byte[]]@((($length -shr 24) -band 255), (($length -shr 16) -band 255), (($length -shr 8) -band 255), ($length -band 255))
    $Stream.Write($prefix, 0, 4)
    $Stream.Write($bytes, 0, $length)
    $Stream.Flush()
}

# A UTF-16 surrogate without its partner, anywhere in a string (.NET
# regular expressions match UTF-16 code units, so they can see one).
$script:LoneSurrogate = New-Object System.Text.RegularExpressions.Regex -ArgumentList '[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]'

# Text for the manager: a lone surrogate becomes U+FFFD before the JSON
# writer sees it (JavaScriptSerializer would escape it as \uD800, which a
# strict JSON reader refuses; the replacing encoder covers the rest).
function Repair-Text {
    param($Text)
    if ($null -eq $Text) {
        return $null
    }
    return $script:LoneSurrogate.Replace([string]$Text, [string][char]0xFFFD)
}

# -StderrItems: the elements of the manager's stderr Array, each with its
# line end (a native program's lines in a row are one element); -Stderr is
# their text joined, for a manager that does not read stderr_items.
function New-Result {
    param([int] $ExitCode, $Stdout, [string] $Stderr, $ErrorMessage, $NativeStdout, [string[]] $StderrItems)
    if ($null -eq $StderrItems) {
        $StderrItems = @()
    }
    $items = New-Object 'System.Collections.Generic.List[string]'
    foreach ($item in $StderrItems) {
        $items.Add((Repair-Text $item))
    }
    if (-not $Stderr) {
        $Stderr = $items -join ''
    }
    return @{
        type          = 'result'
        exitcode      = $ExitCode
        stdout        = Repair-Text $Stdout
        stderr        = Repair-Text $Stderr
        stderr_items  = $items.ToArray()
        errormessage  = Repair-Text $ErrorMessage
        native_stdout = Repair-Text $NativeStdout
    }
}

# The environment as it was when the host started. Before every call the
# process environment is put back to it (Restore-Environment), so that
# nothing a call sets ($env:X, a longer PATH, a request's env) reaches a
# later call. Names compare as the platform compares them: case-insensitive
# on Windows, exact elsewhere.
$script:NameComparer = if ($script:OnWindows) { [StringComparer]::OrdinalIgnoreCase } else { [StringComparer]::Ordinal }
$script:EnvironmentSnapshot = New-Object System.Collections.Hashtable -ArgumentList $script:NameComparer
foreach ($entry in [Environment]::GetEnvironmentVariables().GetEnumerator()) {
    $script:EnvironmentSnapshot[[string]$entry.Key] = [string]$entry.Value
}

# SystemRoot is never removed, even when a call added it: with Protected
# Event Logging and script block logging on, PowerShell needs it and the
# process dies without it. A name .NET refuses (the hidden "=C:" entries on
# Windows) is skipped; restoring never stops the host.
function Restore-Environment {
    foreach ($name in @([Environment]::GetEnvironmentVariables().Keys)) {
        $name = [string]$name
        if ($name -eq 'SystemRoot' -or $script:EnvironmentSnapshot.ContainsKey($name)) {
            continue
        }
        # [NullString]::Value, not $null: PowerShell passes $null to a
        # [string] .NET parameter as "", and SetEnvironmentVariable(name, "")
        # leaves the variable defined (empty) on pwsh 7 (.NET Core removes
        # only for null); null removes it on every .NET.
        try {
            [Environment]::SetEnvironmentVariable($name, [NullString]::Value)
        } catch {
        }
    }
    foreach ($entry in $script:EnvironmentSnapshot.GetEnumerator()) {
        if ([Environment]::GetEnvironmentVariable($entry.Key) -cne $entry.Value) {
            try {
                [Environment]::SetEnvironmentVariable($entry.Key, $entry.Value)
            } catch {
            }
        }
    }
}

# A request's env, applied inside the call's try, in order: a name given
# twice takes its last value (as pwshlib 2.x, which set each in turn). A bad
# entry (a name with '=' or NUL, a value over 32,767 characters, which the
# .NET Framework refuses) throws, and the call fails with an error result.
function Set-RequestEnvironment {
    param($Pairs)
    foreach ($pair in @($Pairs)) {
        if ($null -eq $pair -or @($pair).Count -ne 2) {
            throw 'The request has a malformed env entry (a [name, value] pair is expected)'
        }
        $name = [string]$pair[0]
        try {
            [Environment]::SetEnvironmentVariable($name, [string]$pair[1])
        } catch {
            throw "The environment variable '$name' could not be set: $($_.Exception.Message)"
        }
    }
}

# A runspace with a host of its own (PwshlibHost.PwshlibPSHost).
# Built from InitialSessionState.CreateDefault2(): on Windows PowerShell
# 5.1, RunspaceFactory.CreateRunspace() without a session state builds the
# runspace from the legacy RunspaceConfiguration, its InitialSessionState
# is null, and ResetRunspaceState() throws on every call. CreateDefault2
# loads the core engine commands; other modules load on first use.
function New-Session {
    $pshost = New-Object PwshlibHost.PwshlibPSHost
    $state = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
    $runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace($pshost, $state)
    $runspace.Open()
    [PwshlibHost.ConsoleRouter]::Register($runspace.InstanceId, $pshost.Output, $pshost.Errors)
    return @{ Host = $pshost; Runspace = $runspace }
}

# Ends a session. A runspace whose pipeline did not stop in time is left
# alone: disposing it would wait for that pipeline; it goes with the process.
function Remove-Session {
    param($Session, [bool] $Abandon)
    if ($null -eq $Session) {
        return
    }
    [PwshlibHost.ConsoleRouter]::Unregister($Session.Runspace.InstanceId)
    if ($Abandon) {
        return
    }
    try {
        $Session.Runspace.Dispose()
    } catch {
    }
}

# One session for plain requests. ResetRunspaceState before every request
# clears the global variables ($global:x, preferences), resets the location
# and the event, transaction and debug managers; it does not remove
# functions, aliases, imported modules, PSDrives or Set-StrictMode, and
# nothing undoes process-wide changes (loaded assemblies and types,
# [Console] settings, the current culture). Those carry over from one
# successful call to the next. After a call that failed (a terminating
# error) or timed out, the session is thrown away and a fresh one built, so
# nothing at all carries over from it.
$script:Session = New-Session
# ProviderPath, not Path: when the host starts in a UNC directory, Path is
# the provider-qualified 'Microsoft.PowerShell.Core\FileSystem::\\server\share',
# which [Environment]::CurrentDirectory refuses (the review's N14).
$script:HomeDirectory = (Get-Location).ProviderPath

# Preludes (docs/protocol.md): functions that requests naming a prelude get
# defined without carrying them. They live in a session of their own, so a
# plain request never sees them. Its text is run once, when a request
# carries it, in that runspace's global scope (PowerShell.AddScript without
# useLocalScope runs in the runspace's current scope, which is the global
# one); functions defined there survive every ResetRunspaceState that
# follows (see above). When that session is rebuilt after a failed call,
# the host runs the prelude's text again in the new one. A new host process
# starts with no prelude; the manager sends the text again.
$script:PreludeSession = $null
$script:PreludeId = $null
$script:PreludeCode = $null

# A fresh session with the prelude's functions defined; throws with the
# reason when its text fails.
function New-PreludeSession {
    param([string] $Id, [string] $Code)
    $session = New-Session
    $definer = [PowerShell]::Create()
    try {
        $definer.Runspace = $session.Runspace
        $definer.AddScript($Code) | Out-Null
        $definer.Invoke() | Out-Null
        if ($definer.Streams.Error.Count -gt 0) {
            throw $definer.Streams.Error[0].ToString()
        }
    } catch {
        Remove-Session -Session $session -Abandon $false
        throw "The host could not define prelude '$Id': $($_.Exception.Message)"
    } finally {
        $definer.Dispose()
    }
    return $session
}

# Protocol step: the session for a request that names a prelude, after
# defining the prelude when the request carries its text.
function Get-PreludeSession {
    param($Prelude)
    $id = [string]$Prelude.id
    if ($null -ne $Prelude.code) {
        Remove-Session -Session $script:PreludeSession -Abandon $false
        $script:PreludeSession = $null
        $script:PreludeId = $null
        $script:PreludeCode = $null
        $script:PreludeSession = New-PreludeSession -Id $id -Code ([string]$Prelude.code)
        $script:PreludeId = $id
        $script:PreludeCode = [string]$Prelude.code
    }
    if ($script:PreludeId -ne $id) {
        throw "The prelude '$id' is not defined in this host session; send its code first"
    }
    return $script:PreludeSession
}

# After a failed or timed-out call, once its result is sent (so that the
# manager never waits for a runspace to be built; the review's N5): the
# session that ran it goes, so that nothing of that call carries over.
# The plain session is built again at once; if that fails, it is left
# null and built on demand by the next request (N13), rather than kept
# dead for good. A prelude's session is dropped with its prelude: the
# result did not name the prelude, so the manager sends its text with the
# next request that names it, which defines it in a new session.
function Reset-Session {
    param([bool] $Prelude, [bool] $Abandon)
    if ($Prelude) {
        Remove-Session -Session $script:PreludeSession -Abandon $Abandon
        $script:PreludeSession = $null
        $script:PreludeId = $null
        $script:PreludeCode = $null
        return
    }
    Remove-Session -Session $script:Session -Abandon $Abandon
    $script:Session = $null
    try {
        $script:Session = New-Session
    } catch {
        $script:Session = $null
    }
}

# Protocol step: run one execute request. Returns its outcome: the result
# (naming the prelude the code ran with, if any, unless its session is
# to be dropped), and whether and how its session is to be rebuilt once
# the result is sent.
function Invoke-Request {
    param($Request)
    $preludeId = $null
    if ($null -ne $Request.prelude) {
        try {
            $session = Get-PreludeSession -Prelude $Request.prelude
        } catch {
            return @{ Result = (New-Result -ExitCode 1 -ErrorMessage $_.Exception.Message); Rebuild = $false }
        }
        $preludeId = [string]$Request.prelude.id
    } else {
        if ($null -eq $script:Session) {
            try {
                $script:Session = New-Session
            } catch {
                return @{ Result = (New-Result -ExitCode 1 -ErrorMessage "The host could not create a runspace: $($_.Exception.Message)"); Rebuild = $false }
            }
        }
        $session = $script:Session
    }
    $outcome = Invoke-InSession -Request $Request -Session $session -ForDsc ($null -ne $preludeId)
    $outcome.Prelude = $null -ne $preludeId
    if ($null -ne $preludeId -and -not $outcome.Rebuild) {
        $outcome.Result.prelude = $preludeId
    }
    return $outcome
}

# The text of a terminating error, with where it happened when PowerShell
# knows ("At line:1 char:…", as pwshlib 2.x gave it): the innermost
# exception's message, and the position of the innermost error record in
# the chain that has one. (EndInvoke's MethodInvocationException carries
# the position of this script's own call; the exception inside it, the
# ErrorRecord of the user's statement that failed.) A position in this
# script is never the user's (a ParseException has only that one).
function Get-FailureText {
    param($Exception)
    $position = $null
    $failure = $Exception
    while ($failure) {
        if ($failure -is [System.Management.Automation.IContainsErrorRecord]) {
            $invocation = $failure.ErrorRecord.InvocationInfo
            if ($invocation -and $invocation.PositionMessage -and $invocation.ScriptName -ne $script:HostScriptPath) {
                $position = $invocation.PositionMessage
            }
        }
        if (-not $failure.InnerException) {
            break
        }
        $failure = $failure.InnerException
    }
    if ($position -and $failure -isnot [System.Management.Automation.ParseException]) {
        # A ParseException's message already says where, for each error.
        return $failure.Message + "`n" + $position
    }
    return $failure.Message
}

# Runs the request's code in $Session. Plain requests (-ForDsc $false): the
# pipeline output goes through Out-String -Stream and Out-Default to the
# host, so that stdout is everything the code showed, in order (pipeline
# output, native programs' output, Write-Host, Write-Information,
# "WARNING: " lines, error records, [Console]::Out). DSC requests (those
# with a prelude): stdout is the pipeline output alone, the one line of
# JSON Invoke-PwshlibDscResource prints, and whatever a resource writes to
# the host or the console goes to native_stdout, never into that line.
# Returns the result and whether the session must be rebuilt.
function Invoke-InSession {
    param($Request, $Session, [bool] $ForDsc)
    $outcome = @{ Result = $null; Rebuild = $false; Abandon = $false }
    $timeoutMs = [int][Math]::Min([double]$Request.timeout_ms, [double][int]::MaxValue)
    $workingDir = [string]$Request.working_dir
    $runspace = $Session.Runspace
    $pshost = $Session.Host
    $savedDirectory = [Environment]::CurrentDirectory
    $ps = $null
    try {
        Restore-Environment
        if ($workingDir -and -not (Test-Path -LiteralPath $workingDir -PathType Container)) {
            $outcome.Result = New-Result -ExitCode 1 -ErrorMessage "Working directory '$workingDir' does not exist"
            return $outcome
        }
        if (-not $workingDir) {
            $workingDir = $script:HomeDirectory
        }
        Set-RequestEnvironment -Pairs $Request.env

        $runspace.ResetRunspaceState()
        # SetLocation takes a wildcard path: '[' and ']' (and '*', '?', '`')
        # are escaped so that a directory named 'a[1]' is that directory.
        $runspace.SessionStateProxy.Path.SetLocation([System.Management.Automation.WildcardPattern]::Escape($workingDir)) | Out-Null
        [Environment]::CurrentDirectory = $workingDir
        $pshost.Reset()

        $ps = [PowerShell]::Create()
        $ps.Runspace = $runspace
        $ps.AddScript([string]$Request.code) | Out-Null
        if (-not $ForDsc) {
            # Module-qualified, so that a user's own function Out-Default
            # or Out-String (which ResetRunspaceState keeps) is not called.
            # Out-String -Stream in front of Out-Default: a native program
            # whose output goes straight to Out-Default inherits the host
            # process's stdout (the null device) instead of being read
            # (NativeCommandProcessor does not redirect the last command of
            # a pipeline ending in Out-Default), and Out-String renders
            # $PSStyle's ANSI escapes out of tables and lists (pwsh 7.2+,
            # OutputRendering 'Host': no escapes outside a host).
            $ps.AddCommand('Microsoft.PowerShell.Utility\Out-String').AddParameter('Stream') | Out-Null
            $ps.AddCommand('Microsoft.PowerShell.Core\Out-Default') | Out-Null
        }
        $errorSink = New-Object PwshlibHost.ErrorSink -ArgumentList $ps.Streams.Error, $(if ($ForDsc) { New-Object PwshlibHost.SharedText } else { $pshost.Output })
        # Typed collections, not $null: PowerShell infers BeginInvoke's
        # generic arguments from the values it is given.
        $noInput = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $noInput.Complete()
        $output = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $pending = $ps.BeginInvoke($noInput, $output)

        if (-not $pending.AsyncWaitHandle.WaitOne($timeoutMs)) {
            # Stop() waits until the pipeline notices, which code blocked in
            # a native or .NET call never does: ask now, and wait (a bounded
            # time, giving up on the runspace when it does not stop) only
            # after the result is sent (Complete-Stop), so that the result
            # reaches the manager well inside its grace even on a loaded
            # machine.
            $outcome.Stopping = $ps.BeginStop($null, $null)
            $outcome.Pipeline = $ps
            $ps = $null
            $outcome.Rebuild = $true
            # What the code wrote before the timeout, so that a user can see
            # where it hung (as pwshlib 2.x).
            $stdout = $pshost.TakeOutput()
            $native = $null
            if ($ForDsc) {
                $native = $stdout
                $stdout = $null
            }
            $outcome.Result = New-Result -ExitCode 1 -Stdout (Get-NonEmpty $stdout) -NativeStdout (Get-NonEmpty $native) -StderrItems (Get-StderrItems -Sink $errorSink -PSHost $pshost) -ErrorMessage "Catastrophic failure: PowerShell module timeout ($timeoutMs ms) exceeded while executing"
            return $outcome
        }

        $errorMessage = $null
        $exitCode = 0
        try {
            $ps.EndInvoke($pending) | Out-Null
        } catch {
            $errorMessage = Get-FailureText -Exception $_.Exception
            $exitCode = 1
            $outcome.Rebuild = $true
        }
        if ($runspace.RunspaceStateInfo.State -ne [System.Management.Automation.Runspaces.RunspaceState]::Opened) {
            $outcome.Rebuild = $true
        }
        if ($pshost.ShouldExit) {
            # `exit N` at the top level (SetShouldExit, see PwshlibPSHost).
            $exitCode = $pshost.ExitCode
        } elseif ($exitCode -eq 0) {
            # A native program's exit code, when the code ended after one.
            $lastExitCode = $runspace.SessionStateProxy.GetVariable('LASTEXITCODE') -as [int]
            if ($null -ne $lastExitCode) {
                $exitCode = $lastExitCode
            }
        }

        $hostText = $pshost.TakeOutput()
        if ($ForDsc) {
            $stdout = $null
            if ($output.Count -gt 0) {
                $stdout = ($output | Out-String)
            }
            $native = $hostText
        } else {
            $stdout = $hostText
            $native = $null
        }
        $outcome.Result = New-Result -ExitCode $exitCode -Stdout (Get-NonEmpty $stdout) -StderrItems (Get-StderrItems -Sink $errorSink -PSHost $pshost) -ErrorMessage $errorMessage -NativeStdout (Get-NonEmpty $native)
        return $outcome
    } catch {
        $outcome.Result = New-Result -ExitCode 1 -ErrorMessage $_.Exception.Message
        return $outcome
    } finally {
        if ($ps) {
            $ps.Dispose()
        }
        [Environment]::CurrentDirectory = $savedDirectory
    }
}

# After a timed-out call's result is sent: waits a bounded time for its
# pipeline to stop. Returns whether its runspace must be abandoned (not
# disposed: disposing waits for a pipeline that does not stop; it goes with
# the process).
function Complete-Stop {
    param($Outcome)
    if ($null -eq $Outcome.Stopping) {
        return [bool]$Outcome.Abandon
    }
    if (-not $Outcome.Stopping.AsyncWaitHandle.WaitOne($script:StopWaitMs)) {
        return $true
    }
    try {
        $Outcome.Pipeline.Dispose()
    } catch {
    }
    return $false
}

function Get-NonEmpty {
    param($Text)
    if ($Text -eq '') {
        return $null
    }
    return $Text
}

# The result's stderr elements: the error records (a native program's lines
# in a row as one), then [Console]::Error and the host UI's WriteErrorLine,
# one element per line.
function Get-StderrItems {
    param($Sink, $PSHost)
    $items = New-Object 'System.Collections.Generic.List[string]'
    foreach ($item in $Sink.Take()) {
        $items.Add($item)
    }
    $rest = $PSHost.TakeErrors()
    if ($rest) {
        foreach ($line in [regex]::Split($rest, '(?<=\n)')) {
            if ($line) {
                $items.Add($line)
            }
        }
    }
    return , $items.ToArray()
}

# Who may connect to the pipe: the default ACL of a named pipe also lets
# Everyone (and Anonymous) open it for reading, enough to take the host's
# one instance and stall the manager until its pipe_timeout. This ACL grants
# the current user alone (full control, no inherited entries) and denies
# the NETWORK SID (S-1-5-2), so that a remote logon of that same user is
# refused too. (Windows only; the deny entry is ordered first by .NET.)
# But when this process itself runs in a network logon (WinRM, PowerShell
# remoting, Bolt, Packer, an OpenSSH session), its own token holds NETWORK,
# the manager's token too (it is the same logon), and a deny entry for
# NETWORK would refuse the manager: every call would fail after
# pipe_timeout (the review's N1). Windows' access check applies a deny ACE
# to every enabled or deny-only group SID in the token, before the allow
# entries. There the deny entry is left out; the grant to the user alone
# still shuts out everyone else. WindowsIdentity.Groups lists the token's
# group SIDs (TOKEN_GROUPS), NETWORK among them in a network logon.
function New-PipeSecurity {
    $identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()
    $user = $identity.User
    $network = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-2'
    $networkLogon = @($identity.Groups | Where-Object { $_.Value -eq 'S-1-5-2' }).Count -gt 0
    $security = New-Object System.IO.Pipes.PipeSecurity
    $security.SetAccessRuleProtection($true, $false)
    if (-not $networkLogon) {
        $security.AddAccessRule((New-Object System.IO.Pipes.PipeAccessRule -ArgumentList $network, ([System.IO.Pipes.PipeAccessRights]::FullControl), ([System.Security.AccessControl.AccessControlType]::Deny)))
    }
    $security.AddAccessRule((New-Object System.IO.Pipes.PipeAccessRule -ArgumentList $user, ([System.IO.Pipes.PipeAccessRights]::FullControl), ([System.Security.AccessControl.AccessControlType]::Allow)))
    return $security
}

# Leave when the Ruby process that started us is gone, so a killed Ruby
# leaves no host behind (a background runspace polls its PID).
if ($ParentPid -gt 0) {
    $watcher = [PowerShell]::Create()
    $watcher.AddScript({
            param($ParentPid, $PipePath, $OnWindows)
            while ($true) {
                Start-Sleep -Milliseconds 500
                if (-not (Get-Process -Id $ParentPid -ErrorAction SilentlyContinue)) {
                    if (-not $OnWindows) {
                        Remove-Item -LiteralPath $PipePath -Force -ErrorAction SilentlyContinue
                        # The private directory the manager made for the
                        # socket: nobody else is left to remove it.
                        # Directory.Delete refuses a directory that is not
                        # empty.
                        $socketDirectory = [System.IO.Path]::GetDirectoryName($PipePath)
                        if ([System.IO.Path]::GetFileName($socketDirectory) -like 'pwshlib-*') {
                            try {
                                [System.IO.Directory]::Delete($socketDirectory)
                            } catch {
                            }
                        }
                    }
                    [Environment]::Exit(0)
                }
            }
        }).AddArgument($ParentPid).AddArgument($PipePath).AddArgument($script:OnWindows) | Out-Null
    $watcher.BeginInvoke() | Out-Null
}

# Protocol step: listen, and accept the manager's one connection.
$server = $null
$connection = $null
if ($script:OnWindows) {
    # The manager passes the full path (\\.\pipe\pwshlib-<pid>-<uuid>); .NET
    # wants the name alone. One instance only: .NET then creates the pipe with
    # FILE_FLAG_FIRST_PIPE_INSTANCE, so nobody can have made it before us.
    $pipeName = $PipePath -replace '^\\\\\.\\pipe\\', ''
    $direction = [System.IO.Pipes.PipeDirection]::InOut
    $mode = [System.IO.Pipes.PipeTransmissionMode]::Byte
    if (-not $script:ModernJson) {
        # .NET Framework (Windows PowerShell 5.1): the constructor that
        # takes a PipeSecurity.
        $server = New-Object System.IO.Pipes.NamedPipeServerStream -ArgumentList $pipeName, $direction, 1, $mode, ([System.IO.Pipes.PipeOptions]::None), 0, 0, (New-PipeSecurity)
    } else {
        # .NET 5 and later keep pipe ACLs in System.IO.Pipes.AccessControl;
        # .NET Core 3.1 (pwsh 7.0) may not have it at all.
        try {
            Add-Type -AssemblyName System.IO.Pipes.AccessControl
        } catch {
        }
        if ('System.IO.Pipes.NamedPipeServerStreamAcl' -as [type]) {
            # .NET 5 and later (pwsh 7.1+): NamedPipeServerStreamAcl.Create
            # takes the same PipeSecurity. Not PipeOptions.CurrentUserOnly:
            # .NET refuses it together with a PipeSecurity, and on its own it
            # grants the current user without denying NETWORK.
            $server = [System.IO.Pipes.NamedPipeServerStreamAcl]::Create($pipeName, $direction, 1, $mode, ([System.IO.Pipes.PipeOptions]::None), 0, 0, (New-PipeSecurity))
        } else {
            # pwsh 7.0 (.NET Core 3.1) has no way to pass an ACL: its
            # CurrentUserOnly option grants the current user alone.
            $server = New-Object System.IO.Pipes.NamedPipeServerStream -ArgumentList $pipeName, $direction, 1, $mode, ([System.IO.Pipes.PipeOptions]::CurrentUserOnly)
        }
    }
    $server.WaitForConnection()
    $stream = $server
} else {
    $server = New-Object System.Net.Sockets.Socket -ArgumentList ([System.Net.Sockets.AddressFamily]::Unix), ([System.Net.Sockets.SocketType]::Stream), ([System.Net.Sockets.ProtocolType]::Unspecified)
    $server.Bind((New-Object System.Net.Sockets.UnixDomainSocketEndPoint -ArgumentList $PipePath))
    $server.Listen(1)
    $connection = $server.Accept()
    $stream = New-Object System.Net.Sockets.NetworkStream -ArgumentList $connection, $true
}

try {
    # Protocol step: the handshake.
    Write-Frame -Stream $stream -Message @{
        type     = 'hello'
        protocol = $script:ProtocolVersion
        pid      = $PID
        host     = "pwsh $($PSVersionTable.PSVersion)"
        prelude  = $script:PreludeVersion
    }

    # Protocol step: requests, strictly one at a time, until exit or EOF.
    $serving = $true
    while ($serving) {
        $message = $null
        try {
            $message = Read-Frame -Stream $stream
        } catch {
            $problem = $_.Exception.Message
            if ($problem -like 'protocol error:*') {
                # A malformed frame: say why, then leave.
                Write-Frame -Stream $stream -Message @{ type = 'error'; message = $problem }
            }
            $serving = $false
            continue
        }
        $type = if ($null -eq $message) { 'eof' } else { [string]$message.type }
        if ($type -eq 'eof' -or $type -eq 'exit') {
            $serving = $false
        } elseif ($type -ne 'execute') {
            Write-Frame -Stream $stream -Message @{ type = 'error'; message = "protocol error: unknown message type '$type'" }
            $serving = $false
        } elseif ($null -eq $message.code -or $null -eq $message.timeout_ms) {
            Write-Frame -Stream $stream -Message @{ type = 'error'; message = 'protocol error: execute needs code and timeout_ms' }
            $serving = $false
        } else {
            $outcome = Invoke-Request -Request $message
            $result = $outcome.Result
            # Echo the request's id, so the manager never takes this reply for
            # another request's. Relies on both JSON readers giving a JSON
            # integer back as an integer (ConvertFrom-Json: Int64 in pwsh 7,
            # Int32/Int64 from JavaScriptSerializer in Windows PowerShell 5.1)
            # that the writer prints as a JSON integer again; and on
            # `$hashtable.key = value` adding the key.
            $result.id = $message.id
            Write-Frame -Stream $stream -Message $result
            if ($outcome.Rebuild) {
                $abandon = Complete-Stop -Outcome $outcome
                Reset-Session -Prelude $outcome.Prelude -Abandon $abandon
            }
        }
    }
} catch {
    # The connection broke: nothing left to tell the manager.
} finally {
    $stream.Dispose()
    if ($connection) {
        $connection.Dispose()
    }
    $server.Dispose()
    if (-not $script:OnWindows) {
        Remove-Item -LiteralPath $PipePath -Force -ErrorAction SilentlyContinue
    }
    Remove-Session -Session $script:Session -Abandon $false
    Remove-Session -Session $script:PreludeSession -Abandon $false
}
exit 0
