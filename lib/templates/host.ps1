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
# Strict UTF-8: invalid bytes throw instead of becoming U+FFFD.
$script:Utf8 = New-Object System.Text.UTF8Encoding -ArgumentList $false, $true
$script:OnWindows = [System.IO.Path]::DirectorySeparatorChar -eq '\'
$script:ModernJson = $PSVersionTable.PSVersion.Major -ge 6

if (-not $script:ModernJson) {
    # Windows PowerShell's ConvertFrom-Json refuses large documents.
    Add-Type -AssemblyName System.Web.Extensions
    $script:Serializer = New-Object System.Web.Script.Serialization.JavaScriptSerializer
    $script:Serializer.MaxJsonLength = [int]::MaxValue
}

function ConvertFrom-Frame {
    param([string] $Text)
    if ($script:ModernJson) {
        return ($Text | ConvertFrom-Json)
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
    $bytes = $script:Utf8.GetBytes((ConvertTo-Frame -Message $Message))
    $length = $bytes.Length
    $prefix = [byte[]]@((($length -shr 24) -band 255), (($length -shr 16) -band 255), (($length -shr 8) -band 255), ($length -band 255))
    $Stream.Write($prefix, 0, 4)
    $Stream.Write($bytes, 0, $length)
    $Stream.Flush()
}

function New-Result {
    param([int] $ExitCode, $Stdout, [string] $Stderr, $ErrorMessage, $NativeStdout)
    return @{
        type          = 'result'
        exitcode      = $ExitCode
        stdout        = $Stdout
        stderr        = $Stderr
        errormessage  = $ErrorMessage
        native_stdout = $NativeStdout
    }
}

# One runspace for the host's life, reset before every request, so that
# variables and functions never carry over from one call to the next.
$script:Runspace = [RunspaceFactory]::CreateRunspace()
$script:Runspace.Open()
$script:HomeDirectory = (Get-Location).Path

# Preludes (docs/protocol.md): functions that requests naming a prelude get
# defined without carrying them. They live in a runspace of their own, so a
# plain request, which runs in $script:Runspace, never sees them. Its text is
# run once, when a request carries it, in that runspace's global scope
# (PowerShell.AddScript without useLocalScope runs in the runspace's current
# scope, which is the global one); functions defined there survive every
# ResetRunspaceState that follows: in Windows PowerShell 5.1 and pwsh 7 alike,
# ResetRunspaceState (InitialSessionState.ResetRunspaceState) rebuilds the
# global variable table, the location and the event, transaction and debug
# managers, and leaves the function table alone. A new host process starts
# with no prelude; the manager sends the text again.
$script:PreludeRunspace = $null
$script:PreludeId = $null

# Protocol step: the runspace for a request that names a prelude, after
# defining the prelude when the request carries its text.
function Get-PreludeRunspace {
    param($Prelude)
    $id = [string]$Prelude.id
    if ($null -ne $Prelude.code) {
        if ($script:PreludeRunspace) {
            $script:PreludeRunspace.Dispose()
        }
        $script:PreludeRunspace = $null
        $script:PreludeId = $null
        $runspace = [RunspaceFactory]::CreateRunspace()
        $runspace.Open()
        $definer = [PowerShell]::Create()
        try {
            $definer.Runspace = $runspace
            $definer.AddScript([string]$Prelude.code) | Out-Null
            $definer.Invoke() | Out-Null
            if ($definer.Streams.Error.Count -gt 0) {
                throw $definer.Streams.Error[0].ToString()
            }
        } catch {
            $runspace.Dispose()
            throw "The host could not define prelude '$id': $($_.Exception.Message)"
        } finally {
            $definer.Dispose()
        }
        $script:PreludeRunspace = $runspace
        $script:PreludeId = $id
    }
    if ($script:PreludeId -ne $id) {
        throw "The prelude '$id' is not defined in this host session; send its code first"
    }
    return $script:PreludeRunspace
}

# Protocol step: run one execute request and build its result; the result
# names the prelude the code ran with, if any.
function Invoke-Request {
    param($Request)
    $runspace = $script:Runspace
    $preludeId = $null
    if ($null -ne $Request.prelude) {
        try {
            $runspace = Get-PreludeRunspace -Prelude $Request.prelude
        } catch {
            return New-Result -ExitCode 1 -Stderr '' -ErrorMessage $_.Exception.Message
        }
        $preludeId = [string]$Request.prelude.id
    }
    $result = Invoke-InRunspace -Request $Request -Runspace $runspace
    if ($null -ne $preludeId) {
        $result.prelude = $preludeId
    }
    return $result
}

function Invoke-InRunspace {
    param($Request, $Runspace)
    $timeoutMs = [int][Math]::Min([double]$Request.timeout_ms, [double][int]::MaxValue)
    $workingDir = $Request.working_dir
    if ($workingDir -and -not (Test-Path -LiteralPath $workingDir -PathType Container)) {
        return New-Result -ExitCode 1 -Stderr '' -ErrorMessage "Working directory '$workingDir' does not exist"
    }
    if (-not $workingDir) {
        $workingDir = $script:HomeDirectory
    }

    # The environment applies to this call only: remember what to restore.
    $savedEnvironment = @{}
    foreach ($pair in @($Request.env)) {
        if ($null -eq $pair -or @($pair).Count -ne 2) {
            continue
        }
        $name = [string]$pair[0]
        $savedEnvironment[$name] = [Environment]::GetEnvironmentVariable($name)
        [Environment]::SetEnvironmentVariable($name, [string]$pair[1])
    }
    $savedOut = [Console]::Out
    $savedError = [Console]::Error
    $nativeOut = New-Object System.IO.StringWriter
    $nativeError = New-Object System.IO.StringWriter
    $savedDirectory = [Environment]::CurrentDirectory
    $ps = $null
    try {
        $Runspace.ResetRunspaceState()
        $Runspace.SessionStateProxy.Path.SetLocation($workingDir) | Out-Null
        [Environment]::CurrentDirectory = $workingDir
        [Console]::SetOut($nativeOut)
        [Console]::SetError($nativeError)

        $ps = [PowerShell]::Create()
        $ps.Runspace = $Runspace
        $ps.AddScript([string]$Request.code) | Out-Null
        # Typed collections, not $null: PowerShell infers BeginInvoke's
        # generic arguments from the values it is given.
        $noInput = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $noInput.Complete()
        $output = New-Object 'System.Management.Automation.PSDataCollection[psobject]'
        $pending = $ps.BeginInvoke($noInput, $output)

        # The timeout stops the pipeline; the runspace stays usable.
        if (-not $pending.AsyncWaitHandle.WaitOne($timeoutMs)) {
            $ps.Stop()
            return New-Result -ExitCode 1 -Stderr '' -ErrorMessage "Catastrophic failure: PowerShell module timeout ($timeoutMs ms) exceeded while executing"
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
        }
        $lastExitCode = $Runspace.SessionStateProxy.GetVariable('LASTEXITCODE')
        if ($null -ne $lastExitCode -and $exitCode -eq 0) {
            $exitCode = [int]$lastExitCode
        }

        $stdout = $null
        if ($output.Count -gt 0) {
            $stdout = ($output | Out-String)
        }
        $errorLines = @($ps.Streams.Error | ForEach-Object { $_.ToString() })
        $stderr = (($errorLines | ForEach-Object { "$_`n" }) -join '') + $nativeError.ToString()
        $native = $nativeOut.ToString()
        if ($native.Length -eq 0) {
            $native = $null
        }
        return New-Result -ExitCode $exitCode -Stdout $stdout -Stderr $stderr -ErrorMessage $errorMessage -NativeStdout $native
    } catch {
        return New-Result -ExitCode 1 -Stderr '' -ErrorMessage $_.Exception.Message
    } finally {
        if ($ps) {
            $ps.Dispose()
        }
        [Console]::SetOut($savedOut)
        [Console]::SetError($savedError)
        [Environment]::CurrentDirectory = $savedDirectory
        foreach ($name in $savedEnvironment.Keys) {
            [Environment]::SetEnvironmentVariable($name, $savedEnvironment[$name])
        }
    }
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
    $server = New-Object System.IO.Pipes.NamedPipeServerStream -ArgumentList $pipeName, ([System.IO.Pipes.PipeDirection]::InOut), 1, ([System.IO.Pipes.PipeTransmissionMode]::Byte)
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
    $script:Runspace.Dispose()
    if ($script:PreludeRunspace) {
        $script:PreludeRunspace.Dispose()
    }
}
exit 0
