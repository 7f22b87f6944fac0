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

    [int] $ParentPid = 0,

    # A directory only this user (or the administrators) can write, where
    # the compiled host is kept between starts (the manager checks it and
    # passes it; empty: compile in memory at every start).
    [string] $AssemblyCache = '',

    # The .NET runtime settings the manager added to this process's
    # environment (comma-separated names, pwshlib_transport's
    # runtime_settings): read by the runtime at its start, they are removed
    # below (after the language mode check), before the snapshot every
    # call's environment goes back to, so that no call and no program a
    # resource starts inherits them. Only DOTNET_ names are taken.
    [string] $RuntimeVariables = ''
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

foreach ($name in $RuntimeVariables.Split(',')) {
    if ($name.StartsWith('DOTNET_', [StringComparison]::Ordinal)) {
        # [NullString]::Value: PowerShell passes $null to a string
        # parameter as "", which .NET Core keeps as an empty variable.
        [Environment]::SetEnvironmentVariable($name, [NullString]::Value)
    }
}

$script:HostScriptPath = $PSCommandPath
# The opt-in timing trace (PwshlibHost.Server.Trace): a file to append to,
# named by PWSHLIB_HOST_TRACE; unset, as normally, nothing is traced.
$script:TracePath = [Environment]::GetEnvironmentVariable('PWSHLIB_HOST_TRACE')
function Write-PwshlibTrace([string] $Phase) {
    if ($script:TracePath) {
        $ms = ([DateTime]::Now - [System.Diagnostics.Process]::GetCurrentProcess().StartTime).TotalMilliseconds
        [System.IO.File]::AppendAllText($script:TracePath, ('{0:F1} host.ps1 {1}' -f $ms, $Phase) + "`n")
    }
}
Write-PwshlibTrace 'first line'

# .NET's multicore JIT (System.Runtime.ProfileOptimization): pwsh records
# the methods a start compiles into a profile under its cache directory,
# and the next start compiles them ahead on another core. Its profile
# ("StartupProfileData-NonInteractive") is shared with every other
# non-interactive pwsh and stops short of what a host does: this profile,
# from here on, is the host's own, so the next host finds the assembly's,
# the runspaces' and the first calls' methods compiled ahead (issue 39).
# Calling StartProfile again records from here into this profile (pwsh
# 7.6.9 writes it, spec/real_pwsh/host_assembly_cache_spec.rb); without a
# profile root (SetProfileRoot, which PowerShell calls at its start) no
# profiling happens, as .NET's documentation of SetProfileRoot says.
try {
    [System.Runtime.ProfileOptimization]::StartProfile('StartupProfileData-PwshlibHost')
} catch {
}

$script:OnWindows = [System.IO.Path]::DirectorySeparatorChar -eq '\'
# How long a timed-out call's Stop() may take before the host gives up on
# that runspace (PowerShell.Stop waits for the pipeline to notice, which a
# native call or a .NET method never does). The wait comes after the
# timeout result is sent, but before the next request is read: kept well
# under the manager's 1 s grace, so that a next request sent at once still
# has its own time.
$script:StopWaitMs = 500

# The host itself (the custom PSHost, the console routing and the host
# loop) is C# in PwshlibHost*.cs beside this script, compiled once here: a
# request then runs no interpreted PowerShell of the host's own. Read as
# text and given to -TypeDefinition (not -Path): the same call on Windows
# PowerShell 5.1 (the .NET Framework's csc through CodeDom) and pwsh 7
# (Roslyn), which spec/real_pwsh/dsc/host_csharp5_spec.rb checks as C# 5.
# The parts (one job each, PwshlibHost.cs says which) are joined in this
# order into one source: each keeps its using directives inside its
# namespace block, so the joined text compiles as it is, and the cache key
# below covers every part.
#
# No cmdlet of a module (Join-Path, Get-Location, New-Object) runs on the
# way to listening: the first one auto-loads its module and pays the
# process's first command discovery, some 180 ms of a fresh host's first
# call on pwsh 7.6.9 (docs/performance.md, "The first call's phases");
# .NET's Path.Combine, [type]::new() (PowerShell 5 and later) and the
# session state's current location do the same without it.
$script:HostSourceNames = @('PwshlibHost.cs', 'PwshlibHost.Json.cs', 'PwshlibHost.Dsc.cs', 'PwshlibHost.Direct.cs', 'PwshlibHost.Standby.cs', 'PwshlibHost.DirectResult.cs', 'PwshlibHost.Server.cs', 'PwshlibHost.Requests.cs', 'PwshlibHost.Invoke.cs')
$script:HostSource = [string]::Join("`n", @(foreach ($name in $script:HostSourceNames) {
            [System.IO.File]::ReadAllText([System.IO.Path]::Combine($PSScriptRoot, $name))
        }))
# Compiling takes seconds (about 4 s on pwsh 7, before the first call can
# be answered); loading the same assembly takes about 0.1 s. So the
# compiled assembly is kept in $AssemblyCache, named after a key (the
# SHA-256 of the PowerShell edition, its version, the runtime's version and
# the C# source: a new pwshlib or a new PowerShell gets its own file) and
# the SHA-256 of the file's own bytes. A file is loaded only when the bytes
# read hash to the name: a half-written, truncated or corrupted file is
# deleted and compiled again. It is written under a temporary name and
# renamed into place (the rename fails when another host got there first),
# so no host ever reads a file still being written. It is loaded from the
# bytes read and hashed (Assembly.Load(byte[]), as pwsh 7's own in-memory
# Add-Type does): what runs is what was checked, and the file is not held
# open (the .NET Framework locks a file loaded by path until the process
# ends). Whoever can write the directory can run code as this user: the
# manager passes only a directory it checked (docs/performance.md, "The
# compiled host").
$script:HostAssembly = 'compiled'
function ConvertTo-PwshlibHex([byte[]] $Bytes) {
    return [System.BitConverter]::ToString($Bytes).Replace('-', '').ToLowerInvariant()
}
if ($AssemblyCache -and [System.IO.Directory]::Exists($AssemblyCache)) {
    try {
        $sha256 = [System.Security.Cryptography.SHA256]::Create()
        $keyText = "$($PSVersionTable.PSEdition) $($PSVersionTable.PSVersion) $([Environment]::Version)`n$script:HostSource"
        $keyHex = ConvertTo-PwshlibHex $sha256.ComputeHash([System.Text.Encoding]::UTF8.GetBytes($keyText))
        $prefix = 'PwshlibHost-' + $keyHex.Substring(0, 32) + '-'
        foreach ($file in [System.IO.Directory]::GetFiles($AssemblyCache, $prefix + '*.dll')) {
            $bytes = [System.IO.File]::ReadAllBytes($file)
            $expected = $prefix + (ConvertTo-PwshlibHex $sha256.ComputeHash($bytes))
            if ([System.IO.Path]::GetFileNameWithoutExtension($file) -ceq $expected) {
                [void][System.Reflection.Assembly]::Load($bytes)
                if ('PwshlibHost.Server' -as [type]) {
                    $script:HostAssembly = 'cached'
                    break
                }
            } else {
                try {
                    [System.IO.File]::Delete($file)
                } catch {
                }
            }
        }
        if ($script:HostAssembly -ne 'cached') {
            $temporary = Join-Path -Path $AssemblyCache -ChildPath ('tmp-' + [guid]::NewGuid().ToString('N') + '.dll')
            Add-Type -TypeDefinition $script:HostSource -Language CSharp -OutputAssembly $temporary -OutputType Library
            $bytes = [System.IO.File]::ReadAllBytes($temporary)
            # pwsh 7 writes the file and loads nothing; load what was
            # written, unless this PowerShell loaded it already.
            if (-not ('PwshlibHost.Server' -as [type])) {
                [void][System.Reflection.Assembly]::Load($bytes)
            }
            try {
                [System.IO.File]::Move($temporary, (Join-Path -Path $AssemblyCache -ChildPath ($prefix + (ConvertTo-PwshlibHex $sha256.ComputeHash($bytes)) + '.dll')))
            } catch {
                [System.IO.File]::Delete($temporary)
            }
        }
    } catch {
        # No usable cache (full disk, no rights, a file that is no
        # assembly): compiled in memory below, as without one.
    }
}
if (-not ('PwshlibHost.Server' -as [type])) {
    Add-Type -TypeDefinition $script:HostSource -Language CSharp
}
[PwshlibHost.Server]::AssemblySource = $script:HostAssembly
Write-PwshlibTrace "assembly $script:HostAssembly"
if ($script:TracePath) {
    [PwshlibHost.Server]::StartTrace($script:TracePath, ([DateTime]::Now - [System.Diagnostics.Process]::GetCurrentProcess().StartTime).TotalMilliseconds)
}

# ProviderPath, not Path: when the host starts in a UNC directory, Path is
# the provider-qualified 'Microsoft.PowerShell.Core\FileSystem::\\server\share',
# which [Environment]::CurrentDirectory refuses (the review's N14). Every
# call starts there unless its request names a working directory.
$script:HomeDirectory = $ExecutionContext.SessionState.Path.CurrentFileSystemLocation.ProviderPath
# Takes the environment snapshot that every call's environment is put back
# to, and builds the runspace for plain requests, before listening.
$script:HostLoop = [PwshlibHost.Server]::new($script:HostScriptPath, $script:HomeDirectory, $script:StopWaitMs, $script:OnWindows)

# Native programs' output is decoded with [Console]::OutputEncoding, which
# on Windows is the OEM code page unless set: UTF-8, as pwshlib 2.x set it
# (the review's N9). Best effort: without a console Windows may refuse it.
# Set before the writers below: .NET drops its own console writer when the
# encoding changes, but leaves one set through SetOut alone.
try {
    [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false)
} catch {
}
# [Console]::Out and [Console]::Error go, for the whole life of the host,
# to the buffer of the runspace writing (see ConsoleRouter).
[Console]::SetOut([PwshlibHost.ConsoleRouter]::new($false, [Console]::Out))
[Console]::SetError([PwshlibHost.ConsoleRouter]::new($true, [Console]::Error))

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
# leaves no host behind (a background thread polls its PID:
# PwshlibHost.Server.WatchParent).
if ($ParentPid -gt 0) {
    [PwshlibHost.Server]::WatchParent($ParentPid, $PipePath, $script:OnWindows)
}

Write-PwshlibTrace 'listening'
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
    if ($PSVersionTable.PSVersion.Major -lt 6) {
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
    # Only the manager (-ParentPid) may stay connected (PwshlibHost.PeerCheck):
    # another client is hung up on, and the one instance waits again.
    while ($true) {
        $server.WaitForConnection()
        if ($ParentPid -le 0) { break }
        $refusal = [PwshlibHost.PeerCheck]::PipeClientRefusal($server.SafePipeHandle, $ParentPid)
        if ($null -eq $refusal) { break }
        [Console]::Error.WriteLine("pwshlib host: refused a client of $PipePath ($refusal); waiting for the manager")
        $server.Disconnect()
    }
    $stream = $server
} else {
    $server = [System.Net.Sockets.Socket]::new([System.Net.Sockets.AddressFamily]::Unix, [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Unspecified)
    $server.Bind([System.Net.Sockets.UnixDomainSocketEndPoint]::new($PipePath))
    $server.Listen(1)
    # As for the pipe, on Linux (SO_PEERCRED): another client is closed.
    while ($true) {
        $connection = $server.Accept()
        if ($ParentPid -le 0 -or -not $IsLinux) { break }
        $refusal = [PwshlibHost.PeerCheck]::SocketPeerRefusal($connection.Handle, $ParentPid)
        if ($null -eq $refusal) { break }
        [Console]::Error.WriteLine("pwshlib host: refused a client of $PipePath ($refusal); waiting for the manager")
        $connection.Dispose()
    }
    $stream = [System.Net.Sockets.NetworkStream]::new($connection, $true)
}

Write-PwshlibTrace 'connected'
try {
    # The handshake, then requests strictly one at a time until exit, EOF
    # or a malformed frame (PwshlibHost.Server, docs/protocol.md).
    $script:HostLoop.Serve($stream, "pwsh $($PSVersionTable.PSVersion)", $PID)
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
    $script:HostLoop.Close()
}
exit 0
