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
$script:ProtocolVersion = 1
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
# native call or a .NET method never does). Well under the manager's 1 s
# grace, so the timeout result still arrives before the manager gives up.
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
using System.Globalization;
using System.IO;
using System.Management.Automation;
using System.Management.Automation.Host;
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

    // [Console]::Out and [Console]::Error during a call: lines end in "\n"
    // on every platform, as the rest of the output does.
    public sealed class SharedTextWriter : TextWriter
    {
        private readonly SharedText target;

        public SharedTextWriter(SharedText target)
        {
            this.target = target;
            this.CoreNewLine = new char[] { '\n' };
        }

        public override Encoding Encoding { get { return Encoding.UTF8; } }
        public override void Write(char value) { target.Append(value.ToString()); }
        public override void Write(string value) { target.Append(value); }
        public override void Write(char[] buffer, int index, int count) { target.Append(new string(buffer, index, count)); }
        public override void WriteLine(string value) { target.Append(value + "\n"); }
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
        // WriteLine right after WriteInformation; it is shown once.
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
            if (echoedInformation != null && string.Equals(value, echoedInformation, StringComparison.Ordinal))
            {
                echoedInformation = null;
                return;
            }
            Out(value + "\n");
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
                // Write-Host: its text comes through Write or WriteLine.
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
        private readonly SharedTextWriter outputWriter;
        private readonly SharedTextWriter errorWriter;
        private volatile bool shouldExit;
        private volatile int exitCode;

        public PwshlibPSHost()
        {
            ui = new PwshlibUI(output, errors);
            outputWriter = new SharedTextWriter(output);
            errorWriter = new SharedTextWriter(errors);
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
        public TextWriter OutputWriter { get { return outputWriter; } }
        public TextWriter ErrorWriter { get { return errorWriter; } }

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

function New-Result {
    param([int] $ExitCode, $Stdout, [string] $Stderr, $ErrorMessage, $NativeStdout)
    return @{
        type          = 'result'
        exitcode      = $ExitCode
        stdout        = Repair-Text $Stdout
        stderr        = Repair-Text $Stderr
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
        try {
            [Environment]::SetEnvironmentVariable($name, $null)
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

# A request's env, applied inside the call's try: a bad entry (a name given
# twice, a name with '=' or NUL, a value over 32,767 characters, which the
# .NET Framework refuses) throws, and the call fails with an error result.
function Set-RequestEnvironment {
    param($Pairs)
    $seen = New-Object System.Collections.Hashtable -ArgumentList $script:NameComparer
    foreach ($pair in @($Pairs)) {
        if ($null -eq $pair -or @($pair).Count -ne 2) {
            throw 'The request has a malformed env entry (a [name, value] pair is expected)'
        }
        $name = [string]$pair[0]
        if ($seen.ContainsKey($name)) {
            throw "The environment variable '$name' is given more than once"
        }
        $seen[$name] = $true
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
    return @{ Host = $pshost; Runspace = $runspace }
}

# Ends a session. A runspace whose pipeline did not stop in time is left
# alone: disposing it would wait for that pipeline; it goes with the process.
function Remove-Session {
    param($Session, [bool] $Abandon)
    if ($null -eq $Session -or $Abandon) {
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
$script:HomeDirectory = (Get-Location).Path

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

# After a failed or timed-out call: a fresh session in place of the one
# that ran it. Returns whether the prelude (if the call had one) is still
# defined in the new session.
function Reset-Session {
    param([bool] $Prelude, [bool] $Abandon)
    if (-not $Prelude) {
        Remove-Session -Session $script:Session -Abandon $Abandon
        $script:Session = New-Session
        return $true
    }
    Remove-Session -Session $script:PreludeSession -Abandon $Abandon
    $script:PreludeSession = $null
    try {
        $script:PreludeSession = New-PreludeSession -Id $script:PreludeId -Code $script:PreludeCode
        return $true
    } catch {
        $script:PreludeId = $null
        $script:PreludeCode = $null
        return $false
    }
}

# Protocol step: run one execute request and build its result; the result
# names the prelude the code ran with, if any.
function Invoke-Request {
    param($Request)
    $session = $script:Session
    $preludeId = $null
    if ($null -ne $Request.prelude) {
        try {
            $session = Get-PreludeSession -Prelude $Request.prelude
        } catch {
            return New-Result -ExitCode 1 -Stderr '' -ErrorMessage $_.Exception.Message
        }
        $preludeId = [string]$Request.prelude.id
    }
    $outcome = Invoke-InSession -Request $Request -Session $session -ForDsc ($null -ne $preludeId)
    $kept = $true
    if ($outcome.Rebuild) {
        try {
            $kept = Reset-Session -Prelude ($null -ne $preludeId) -Abandon $outcome.Abandon
        } catch {
            $kept = $false
        }
    }
    $result = $outcome.Result
    if ($null -ne $preludeId -and $kept) {
        $result.prelude = $preludeId
    }
    return $result
}

# Runs the request's code in $Session. Plain requests (-ForDsc $false): the
# pipeline output goes through Out-Default to the host, so that stdout is
# everything the code showed, in order (pipeline output, Write-Host,
# Write-Information, "WARNING: " lines, [Console]::Out). DSC requests
# (those with a prelude): stdout is the pipeline output alone, the one line
# of JSON Invoke-PwshlibDscResource prints, and whatever a resource writes to
# the host or the console goes to native_stdout, never into that line.
# Returns the result and whether the session must be rebuilt.
function Invoke-InSession {
    param($Request, $Session, [bool] $ForDsc)
    $outcome = @{ Result = $null; Rebuild = $false; Abandon = $false }
    $timeoutMs = [int][Math]::Min([double]$Request.timeout_ms, [double][int]::MaxValue)
    $workingDir = [string]$Request.working_dir
    $runspace = $Session.Runspace
    $pshost = $Session.Host
    $savedOut = [Console]::Out
    $savedError = [Console]::Error
    $savedDirectory = [Environment]::CurrentDirectory
    $ps = $null
    try {
        Restore-Environment
        if ($workingDir -and -not (Test-Path -LiteralPath $workingDir -PathType Container)) {
            $outcome.Result = New-Result -ExitCode 1 -Stderr '' -ErrorMessage "Working directory '$workingDir' does not exist"
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
        [Console]::SetOut($pshost.OutputWriter)
        [Console]::SetError($pshost.ErrorWriter)

        $ps = [PowerShell]::Create()
        $ps.Runspace = $runspace
        $ps.AddScript([string]$Request.code) | Out-Null
        if (-not $ForDsc) {
            $ps.AddCommand('Out-Default') | Out-Null
        }
        # Typed collections, not $null: PowerShell infers BeginInvoke's
        # generic arguments from the values it is given.
        $noInput = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $noInput.Complete()
        $output = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $pending = $ps.BeginInvoke($noInput, $output)

        if (-not $pending.AsyncWaitHandle.WaitOne($timeoutMs)) {
            # Stop() waits until the pipeline notices, which code blocked in
            # a native or .NET call never does: ask, wait a bounded time,
            # and give up on the runspace when it does not stop.
            $stopping = $ps.BeginStop($null, $null)
            $stopped = $stopping.AsyncWaitHandle.WaitOne($script:StopWaitMs)
            $outcome.Rebuild = $true
            if (-not $stopped) {
                $outcome.Abandon = $true
                $ps = $null
            }
            $outcome.Result = New-Result -ExitCode 1 -Stderr '' -ErrorMessage "Catastrophic failure: PowerShell module timeout ($timeoutMs ms) exceeded while executing"
            return $outcome
        }

        $errorMessage = $null
        $exitCode = 0
        try {
            $ps.EndInvoke($pending) | Out-Null
        } catch {
            $failure = $_.Exception
            while ($failure.InnerException) {
                $failure = $failure.InnerException
            }
            $errorMessage = $failure.Message
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
        if ($stdout -eq '') {
            $stdout = $null
        }
        if ($native -eq '') {
            $native = $null
        }
        $errorLines = @($ps.Streams.Error | ForEach-Object { $_.ToString() })
        $stderr = (($errorLines | ForEach-Object { "$_`n" }) -join '') + $pshost.TakeErrors()
        $outcome.Result = New-Result -ExitCode $exitCode -Stdout $stdout -Stderr $stderr -ErrorMessage $errorMessage -NativeStdout $native
        return $outcome
    } catch {
        $outcome.Result = New-Result -ExitCode 1 -Stderr '' -ErrorMessage $_.Exception.Message
        return $outcome
    } finally {
        if ($ps) {
            $ps.Dispose()
        }
        [Console]::SetOut($savedOut)
        [Console]::SetError($savedError)
        [Environment]::CurrentDirectory = $savedDirectory
    }
}

# Who may connect to the pipe: the default ACL of a named pipe also lets
# Everyone (and Anonymous) open it for reading, enough to take the host's
# one instance and stall the manager until its pipe_timeout. This ACL grants
# the current user alone (full control, no inherited entries) and denies
# the NETWORK SID (S-1-5-2), so that a remote logon of that same user is
# refused too. (Windows only; the deny entry is ordered first by .NET.)
function New-PipeSecurity {
    $user = [System.Security.Principal.WindowsIdentity]::GetCurrent().User
    $network = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-2'
    $security = New-Object System.IO.Pipes.PipeSecurity
    $security.SetAccessRuleProtection($true, $false)
    $security.AddAccessRule((New-Object System.IO.Pipes.PipeAccessRule -ArgumentList $network, ([System.IO.Pipes.PipeAccessRights]::FullControl), ([System.Security.AccessControl.AccessControlType]::Deny)))
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
            $result = Invoke-Request -Request $message
            # Echo the request's id, so the manager never takes this reply for
            # another request's. Relies on both JSON readers giving a JSON
            # integer back as an integer (ConvertFrom-Json: Int64 in pwsh 7,
            # Int32/Int64 from JavaScriptSerializer in Windows PowerShell 5.1)
            # that the writer prints as a JSON integer again; and on
            # `$hashtable.key = value` adding the key.
            $result.id = $message.id
            Write-Frame -Stream $stream -Message $result
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
