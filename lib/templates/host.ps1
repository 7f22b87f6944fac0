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

    # The key of the C# source beside this script, which the manager
    # computed (pwshlib_transport's host_source_key; the same as
    # Get-PwshlibHostSourceKey in host_compile.ps1): with -AssemblyCache, what names the
    # cached assembly to load.
    [string] $HostSourceKey = '',

    # The .NET runtime settings the manager added to this process's
    # environment (comma-separated names, pwshlib_transport's
    # runtime_settings): removed by PwshlibHost.Server.Start, before the
    # snapshot every call's environment goes back to.
    [string] $RuntimeVariables = ''
)

# When this script began, for the opt-in timing trace (PWSHLIB_HOST_TRACE,
# written by PwshlibHost.Server once its assembly is loaded).
$FirstLine = [DateTime]::Now
$ErrorActionPreference = 'Stop'

# .NET's multicore JIT (System.Runtime.ProfileOptimization): pwsh records
# the code a start compiles into a profile under its cache directory, and
# the next start compiles it ahead on another core. Its profile
# ("StartupProfileData-NonInteractive") is shared with every other
# non-interactive pwsh and stops short of what a host does: this profile,
# from here on, is the host's own, so the next host finds the assembly's,
# the runspaces' and the first calls' code compiled ahead.
# Calling StartProfile again records from here into this profile (pwsh
# 7.6.9 writes it, spec/real_pwsh/host_assembly_cache_spec.rb); without a
# profile root (SetProfileRoot, which PowerShell calls at its start) no
# profiling happens, as .NET's documentation of SetProfileRoot says.
try {
    [System.Runtime.ProfileOptimization]::StartProfile('StartupProfileData-PwshlibHost')
} catch {
}

# Every statement of this script runs cold in a fresh process:
# pwsh 7.6.9 takes some 10 to 30 ms for each new kind of statement, and
# compiles the whole script before its first line. So this script does
# only what needs PowerShell: loading the host's assembly (and, when that
# fails, the language mode check), and on Windows the pipe
# (New-PwshlibPipeServer, a function: compiled only when called).
# Everything else is PwshlibHost.Server's (Start, AcceptUnix, Serve,
# Close). And no cmdlet of a module (Join-Path,
# Get-Location, New-Object) runs on the way to listening: the first one
# auto-loads its module and pays the process's first command discovery,
# some 180 ms of a fresh host's first call on pwsh 7.6.9
# (docs/performance.md, "The first call's phases").
#
# The host itself (the custom PSHost, the console routing and the host
# loop) is C# in PwshlibHost*.cs beside this script, compiled once: a
# request then runs no interpreted PowerShell of the host's own. Compiling
# takes seconds (about 4 s on pwsh 7, before the first call can be
# answered); loading the same assembly takes about 0.1 s. So the compiled
# assembly is kept in $AssemblyCache, named after the source's key
# (-HostSourceKey), the PowerShell edition, its version and the runtime's
# version (a new pwshlib or a new PowerShell gets its own file), and the
# SHA-256 of the file's own bytes. The manager deletes, before starting
# this host, each file of the key whose bytes do not hash to its name (a
# truncated or corrupted file: it is compiled again), and does that
# hashing itself: .NET's first SHA-256 in a fresh pwsh takes some 20 ms.
# Nothing writes a cached file again, so what the manager checked is what
# is loaded. It is loaded from its bytes (Assembly.Load(byte[])): the file
# is not held open (the .NET Framework locks a file loaded by path until
# the process ends). Whoever can write the directory can run code as this
# user: the manager passes only a directory it checked, and on Windows
# this script checks the file's owner and DACL again before loading it
# (Test-PwshlibCachedFileTrusted). The host is started through its
# Launcher, an instance made by name from the assembly loaded (no [type]
# lookup, which searches every loaded assembly).
#
# Compiling is host_compile.ps1's, a file run only on a start that
# compiles: what it must say is on PowerShell's suspicious-content list
# (ScriptBlock.CheckSuspiciousContent), and a script holding any of those
# words, even in a comment, is written whole to the 4104 log as a warning
# at every start, logging on or off. This script holds none
# (spec/real_pwsh/host_suspicious_content_spec.rb asks PowerShell's own
# check).
# Windows: whether the cached assembly at $Path may be loaded, asked again
# here because whoever can write it runs code as this account. The rule is
# the manager's (pwshlib_transport's cache_trust.rs, file_refusal and
# trusted_writers): its owner, and every account an allow entry that
# applies to the file itself lets write, delete or re-permission it, is
# SYSTEM, the Administrators, TrustedInstaller or, unless this run is
# elevated and not SYSTEM (UAC's boundary: the same user's
# medium-integrity processes hold its account), this account; an OWNER
# RIGHTS entry (S-1-3-4) stands for the owner. Deny entries are not
# credited. A NULL DACL reads as one entry for Everyone with full control
# (.NET's CommonSecurityDescriptor makes it so), which is refused. Elevated
# is WindowsPrincipal.IsInRole(Administrators): true only for a token in
# which that group is enabled, not UAC's filtered token. The mask is
# FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY, FILE_DELETE_CHILD, DELETE,
# WRITE_DAC, WRITE_OWNER, GENERIC_ALL and GENERIC_WRITE (winnt.h), as
# cache_trust.rs's WRITES_THE_CACHE. A file refused is not loaded: the
# next one of the key is tried, else the host compiles.
function Test-PwshlibCachedFileTrusted {
    param([string] $Path)
    $Identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()
    $Me = $Identity.User.Value
    $Trusted = @('S-1-5-18', 'S-1-5-32-544', 'S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464')
    $Elevated = ([System.Security.Principal.WindowsPrincipal]::new($Identity)).IsInRole([System.Security.Principal.WindowsBuiltInRole]::Administrator)
    if ($Me -eq 'S-1-5-18' -or -not $Elevated) { $Trusted += $Me }
    $Sid = [System.Security.Principal.SecurityIdentifier]
    if ($PSVersionTable.PSEdition -eq 'Core') {
        # .NET 5 and later keep file ACLs in an assembly of their own, not
        # loaded at a host's start.
        $null = [System.Reflection.Assembly]::Load('System.IO.FileSystem.AccessControl')
        $Security = [System.IO.FileSystemAclExtensions]::GetAccessControl([System.IO.FileInfo]::new($Path))
    } else {
        $Security = [System.IO.File]::GetAccessControl($Path)
    }
    $Owner = $Security.GetOwner($Sid).Value
    if ($Trusted -notcontains $Owner) { return $false }
    foreach ($Rule in $Security.GetAccessRules($true, $true, $Sid)) {
        if ($Rule.AccessControlType -ne [System.Security.AccessControl.AccessControlType]::Allow) { continue }
        if ($Rule.PropagationFlags -band [System.Security.AccessControl.PropagationFlags]::InheritOnly) { continue }
        if (([long] $Rule.FileSystemRights -band 0x500D0046) -eq 0) { continue }
        $Who = $Rule.IdentityReference.Value
        if ($Who -eq 'S-1-3-4') { $Who = $Owner }
        if ($Trusted -notcontains $Who) { return $false }
    }
    $true
}

$Launcher = $null
$HostAssembly = 'compiled'
$Prefix = ''
if ($AssemblyCache -and $HostSourceKey) {
    try {
        $Prefix = "PwshlibHost-$HostSourceKey-$($PSVersionTable.PSEdition)-$($PSVersionTable.PSVersion)-$([Environment]::Version)-optimized-"
        # Any file of the prefix: two hosts that compiled at once may both
        # have cached theirs (the same source, other bytes).
        $Files = [System.IO.Directory]::GetFiles($AssemblyCache, $Prefix + '*.dll')
        foreach ($File in $Files) {
            if ([System.IO.Path]::DirectorySeparatorChar -eq '\' -and -not (Test-PwshlibCachedFileTrusted $File)) { continue }
            $Launcher = [System.Reflection.Assembly]::Load([System.IO.File]::ReadAllBytes($File)).CreateInstance('PwshlibHost.Launcher')
            if ($Launcher) { $HostAssembly = 'cached' }
            break
        }
    } catch {
        # No usable cache (no such directory, no rights, a file that is no
        # assembly; or constrained language mode, below): compiled below.
        $Launcher = $null
        $HostAssembly = 'compiled'
    }
}
if (-not $Launcher) {
    # Constrained language mode (AppLocker or WDAC enforcing, and this script
    # neither allowed nor signed): compiling would throw and the host would
    # exit before listening, leaving the manager to say only that it
    # exited. Leave at once with an exit code of our own instead (86, which
    # nothing else here uses); the manager then says what to do. The check
    # needs nothing CLM forbids: a property of $ExecutionContext and a
    # comparison. Made only here, when no cached assembly was loaded (in
    # that mode every .NET call above fails, and its catch leads here): it
    # is some 12 ms of a fresh host's start.
    if ($ExecutionContext.SessionState.LanguageMode -ne 'FullLanguage') {
        exit 86
    }
    # An int is the exit code host_compile.ps1 chose (87: a code integrity
    # policy refused the compiled code).
    $Launcher = & ([System.IO.Path]::Combine($PSScriptRoot, 'host_compile.ps1')) -AssemblyCache $AssemblyCache -HostSourceKey $HostSourceKey -Prefix $Prefix
    if ($Launcher -is [int]) {
        exit $Launcher
    }
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

# Windows: the named pipe the manager connects to, made with that ACL, and
# the manager's one connection accepted on it.
function New-PwshlibPipeServer {
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
        # .NET 5 and later (pwsh 7.1+) keep pipe ACLs in
        # System.IO.Pipes.AccessControl, not loaded at a host's start; .NET
        # Core 3.1 (pwsh 7.0) has no NamedPipeServerStreamAcl. Loaded by
        # name, and the type named in a literal: PowerShell resolves a type
        # literal when the statement runs, and a [type] conversion is on its
        # suspicious-content list (host.ps1 holds none of it).
        $version = $PSVersionTable.PSVersion
        $aclPipes = $version.Major -gt 7 -or ($version.Major -eq 7 -and $version.Minor -ge 1)
        if ($aclPipes) {
            try {
                $null = [System.Reflection.Assembly]::Load('System.IO.Pipes.AccessControl')
            } catch {
                $aclPipes = $false
            }
        }
        if ($aclPipes) {
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
    return $server
}

# PWSHLIB_EXECUTION_POLICY=machine: resource modules load under the
# execution policy this machine sets, as under the 5.1 LCM (which applied
# the LocalMachine policy to the modules it imported), while this script
# itself ran under the policy the manager's command line gave it. PowerShell reads
# the process scope from PSExecutionPolicyPreference at each script file
# it loads (SecuritySupport.GetExecutionPolicy), and Get-ExecutionPolicy
# without it gives the policy of the other scopes (Group Policy's, which
# wins over -ExecutionPolicy anyway, then CurrentUser, LocalMachine, the
# default); set here, before the snapshot every call's environment goes
# back to. Off by default: on 7 PSDesiredStateConfiguration 2.x imports
# under the process's policy, and a Windows client's default (Restricted)
# would refuse every module.
if ($env:PWSHLIB_EXECUTION_POLICY -eq 'machine') {
    $env:PSExecutionPolicyPreference = $null
    $env:PSExecutionPolicyPreference = [string] (Get-ExecutionPolicy)
}

# Takes the environment snapshot that every call's environment is put back
# to, and builds the runspace for plain requests, before listening
# (PwshlibHost.Server.Start); the module index keeps the DSC classes it
# finds in -AssemblyCache (PwshlibHost.DscClasses).
$OnWindows = [System.IO.Path]::DirectorySeparatorChar -eq '\'
$HostLoop = $Launcher.Start($ExecutionContext, $PSCommandPath, $HostAssembly, $FirstLine, $RuntimeVariables, $OnWindows, $ParentPid, $PipePath, $AssemblyCache)
# Protocol step: listen, and accept the manager's one connection.
if ($OnWindows) {
    $stream = New-PwshlibPipeServer
} else {
    $stream = $HostLoop.AcceptUnix($PipePath, $ParentPid, $IsLinux)
}
try {
    # The handshake, then requests strictly one at a time until exit, EOF
    # or a malformed frame (PwshlibHost.Server, docs/protocol.md).
    $HostLoop.Serve($stream, "pwsh $($PSVersionTable.PSVersion)", $PID)
} catch {
    # The connection broke: nothing left to tell the manager.
} finally {
    $stream.Dispose()
    # Closes the Unix socket and removes its file, then ends the sessions.
    $HostLoop.Close()
}
exit 0
