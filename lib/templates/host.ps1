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
    # Get-PwshlibHostSourceKey below): with -AssemblyCache, what names the
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

# Every statement of this script runs cold in a fresh process (issue 39):
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
# request then runs no interpreted PowerShell of the host's own. Read as
# text and given to -TypeDefinition (not -Path): the same call on Windows
# PowerShell 5.1 (the .NET Framework's csc through CodeDom) and pwsh 7
# (Roslyn), which spec/real_pwsh/dsc/host_csharp5_spec.rb checks as C# 5.
# The parts (one job each, PwshlibHost.cs says which) are joined in this
# order into one source: each keeps its using directives inside its
# namespace block, so the joined text compiles as it is.
function Get-PwshlibHostSource {
    [string]::Join("`n", @(foreach ($Name in @('PwshlibHost.cs', 'PwshlibHost.Json.cs', 'PwshlibHost.Dsc.cs', 'PwshlibHost.Direct.cs', 'PwshlibHost.ModuleIndex.cs', 'PwshlibHost.Standby.cs', 'PwshlibHost.DirectResult.cs', 'PwshlibHost.Start.cs', 'PwshlibHost.Server.cs', 'PwshlibHost.Requests.cs', 'PwshlibHost.Invoke.cs', 'PwshlibHost.Export.cs')) {
                [System.IO.File]::ReadAllText([System.IO.Path]::Combine($PSScriptRoot, $Name))
            }))
}

# A SHA-256 that works under the FIPS policy (the STIG's "Use FIPS
# compliant algorithms"): on the .NET Framework SHA256.Create() is
# SHA256Managed, whose constructor throws InvalidOperationException when
# CryptoConfig.AllowOnlyFipsAlgorithms is set (Cryptography_NonCompliant-
# FIPSAlgorithm), so the cache would never be filled and every start would
# compile; SHA256CryptoServiceProvider is CAPI's validated one. On .NET 5
# and later (pwsh 7) SHA256.Create() is the platform's own (CNG, OpenSSL).
function New-PwshlibSha256 {
    if ($PSVersionTable.PSEdition -eq 'Core') { return [System.Security.Cryptography.SHA256]::Create() }
    [System.Security.Cryptography.SHA256CryptoServiceProvider]::new()
}

# The key the manager passes as -HostSourceKey, computed again from the
# files as they are now (pwshlib_transport's host_source_key says how):
# what this host compiled is cached under the manager's key only when the
# two agree, so a source changed since the manager read it is never
# cached under the old one.
function Get-PwshlibHostSourceKey {
    $Names = [System.IO.Directory]::GetFiles($PSScriptRoot, 'PwshlibHost*.cs')
    [Array]::Sort($Names, [StringComparer]::Ordinal)
    $Buffer = [System.IO.MemoryStream]::new()
    foreach ($Path in $Names) {
        $Bytes = [System.IO.File]::ReadAllBytes($Path)
        $Head = [System.Text.Encoding]::UTF8.GetBytes([System.IO.Path]::GetFileName($Path) + [char]0 + $Bytes.Length + [char]0)
        $Buffer.Write($Head, 0, $Head.Length)
        $Buffer.Write($Bytes, 0, $Bytes.Length)
    }
    [System.BitConverter]::ToString((New-PwshlibSha256).ComputeHash($Buffer.ToArray()), 0, 16).Replace('-', '').ToLowerInvariant()
}

# Compiling takes seconds (about 4 s on pwsh 7, before the first call can
# be answered); loading the same assembly takes about 0.1 s. So the
# compiled assembly is kept in $AssemblyCache, named after the source's key
# (-HostSourceKey), the PowerShell edition, its version and the runtime's
# version (a new pwshlib or a new PowerShell gets its own file), and the
# SHA-256 of the file's own bytes. The manager deletes, before starting
# this host, each file of the key whose bytes do not hash to its name (a
# truncated or corrupted file: it is compiled again), and does that
# hashing itself: .NET's first SHA-256 in a fresh pwsh takes some 20 ms. A
# file is written under a temporary name and renamed into place whole
# (the rename fails when another host got there first), and nothing writes
# it again, so no host reads a file still being written, and what the
# manager checked is what is loaded. It is loaded from its bytes
# (Assembly.Load(byte[]), as pwsh 7's own in-memory Add-Type does): the
# file is not held open (the .NET Framework locks a file loaded by path
# until the process ends). Whoever can write the directory can run code as
# this user: the manager passes only a directory it checked
# (docs/performance.md, "The compiled host"). The server's type is taken
# from the assembly loaded, not looked up by name (a [type] lookup searches
# every loaded assembly).
# The host's source compiled, optimized, with Add-Type's -OutputAssembly
# and -OutputType when caching ($Output). pwsh 7's Add-Type compiles with
# Roslyn's default options (AddTypeCommand.GetDefaultCompilationOptions: a
# bare CSharpCompilationOptions, OptimizationLevel.Debug), which mark the
# assembly [Debuggable(DisableOptimizations)]: the JIT then compiles every
# method of the host with MinOpts for the life of the process and never
# tiers it up (perf shows them "MinOptJitted"). '-optimize+' goes through
# its -CompilerOptions (CSharpCommandLineParser) instead. Windows
# PowerShell 5.1 has no such parameter and needs none: its AddTypeCommand
# sets IncludeDebugInformation = false and CompilerOptions = "/optimize+"
# for C# itself (and CodeDom's CSharpCodeGenerator passes /optimize+
# without debug information). The cached file's name says so: an
# assembly cached unoptimized by an earlier host is never loaded. A
# function, so that a host loading a cached assembly runs none of it (its
# statements cost some 10 ms cold, issue 39).
function Add-PwshlibHostType {
    param([hashtable] $Output = @{})
    if ($PSVersionTable.PSEdition -eq 'Core') { $Output.CompilerOptions = '-optimize+' }
    Add-Type -TypeDefinition (Get-PwshlibHostSource) -Language CSharp @Output
}

$HostServer = $null
$HostAssembly = 'compiled'
if ($AssemblyCache -and $HostSourceKey) {
    try {
        $Prefix = "PwshlibHost-$HostSourceKey-$($PSVersionTable.PSEdition)-$($PSVersionTable.PSVersion)-$([Environment]::Version)-optimized-"
        # Any file of the prefix: two hosts that compiled at once may both
        # have cached theirs (the same source, other bytes).
        $Files = [System.IO.Directory]::GetFiles($AssemblyCache, $Prefix + '*.dll')
        if ($Files.Length -gt 0) {
            $HostServer = [System.Reflection.Assembly]::Load([System.IO.File]::ReadAllBytes($Files[0])).GetType('PwshlibHost.Server')
            if ($HostServer) { $HostAssembly = 'cached' }
        } elseif ((Get-PwshlibHostSourceKey) -ceq $HostSourceKey) {
            $Temporary = Join-Path -Path $AssemblyCache -ChildPath ('tmp-' + [guid]::NewGuid().ToString('N') + '.dll')
            Add-PwshlibHostType @{ OutputAssembly = $Temporary; OutputType = 'Library' }
            $Bytes = [System.IO.File]::ReadAllBytes($Temporary)
            # pwsh 7 writes the file and loads nothing; load what was
            # written, unless this PowerShell loaded it already.
            $HostServer = 'PwshlibHost.Server' -as [type]
            if (-not $HostServer) {
                $HostServer = [System.Reflection.Assembly]::Load($Bytes).GetType('PwshlibHost.Server')
            }
            $Hash = [System.BitConverter]::ToString((New-PwshlibSha256).ComputeHash($Bytes)).Replace('-', '').ToLowerInvariant()
            try {
                [System.IO.File]::Move($Temporary, (Join-Path -Path $AssemblyCache -ChildPath ($Prefix + $Hash + '.dll')))
            } catch {
                [System.IO.File]::Delete($Temporary)
            }
        }
    } catch {
        # No usable cache (no such directory, a full disk, no rights, a
        # file that is no assembly; or constrained language mode, below):
        # compiled in memory below, as without one.
        $HostServer = $null
        $HostAssembly = 'compiled'
    }
}
if (-not $HostServer) {
    # Constrained language mode (AppLocker or WDAC enforcing, and this script
    # neither allowed nor signed): Add-Type below would throw and the host
    # would exit before listening, leaving the manager to say only that it
    # exited. Leave at once with an exit code of our own instead (86, which
    # nothing else here uses); the manager then says what to do (the review's
    # N10). The check needs nothing CLM forbids: a property of
    # $ExecutionContext and a comparison. Made only here, when no cached
    # assembly was loaded (in that mode every .NET call above fails, and
    # its catch leads here): it is some 12 ms of a fresh host's start.
    if ($ExecutionContext.SessionState.LanguageMode -ne 'FullLanguage') {
        exit 86
    }
    $HostServer = 'PwshlibHost.Server' -as [type]
}
if (-not $HostServer) {
    try {
        Add-PwshlibHostType
    } catch {
        # An application control policy that enforces code integrity (WDAC,
        # with its dynamic code rule) refuses the assembly compiled here,
        # unsigned and made at run time, as it refuses Assembly.Load(byte[])
        # of a cached one above: leave with an exit code of our own (87)
        # that the manager turns into a message naming the cause, as for
        # 86. SystemPolicy.GetSystemLockdownPolicy is how PowerShell itself
        # asks whether such a policy is enforced (Enforce, Audit, None).
        if ("$([System.Management.Automation.Security.SystemPolicy]::GetSystemLockdownPolicy())" -eq 'Enforce') {
            exit 87
        }
        throw
    }
    $HostServer = [PwshlibHost.Server]
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
    return $server
}

# PWSHLIB_EXECUTION_POLICY=machine: resource modules load under the
# execution policy this machine sets, as under the 5.1 LCM (which applied
# the LocalMachine policy to the modules it imported), while this script
# itself ran under the manager's -ExecutionPolicy Bypass. PowerShell reads
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
$HostLoop = $HostServer::Start($ExecutionContext, $PSCommandPath, $HostAssembly, $FirstLine, $RuntimeVariables, $OnWindows, $ParentPid, $PipePath, $AssemblyCache)
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
