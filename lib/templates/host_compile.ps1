<#
.SYNOPSIS
    Compiles pwshlib's host (PwshlibHost*.cs beside this script) when host.ps1
    found no cached assembly to load; keeps the result in -AssemblyCache.

.DESCRIPTION
    A file of its own, run only on a start that compiles: compiling needs
    words that PowerShell's suspicious-content check
    (ScriptBlock.CheckSuspiciousContent) flags, and a flagged script is
    written whole to the 4104 log as a warning at every start, logging on
    or off. So host.ps1, which every start runs, holds none, and this file
    is logged only when a host compiles (once per pwshlib and PowerShell
    version with a cache). Returns the host's Launcher, or the exit code
    host.ps1 leaves with (87: a code integrity policy refused the code).
#>
[CmdletBinding()]
param(
    [string] $AssemblyCache = '',
    [string] $HostSourceKey = '',
    # The cached file's name up to its hash (host.ps1 says what it holds).
    [string] $Prefix = ''
)
$ErrorActionPreference = 'Stop'

# The host's C# files, joined in this order into one source: each keeps its
# using directives inside its namespace block, so the joined text compiles
# as it is. Read as text and given to -TypeDefinition (not -Path): the same
# call on Windows PowerShell 5.1 (the .NET Framework's csc through CodeDom)
# and pwsh 7 (Roslyn), which spec/real_pwsh/dsc/host_csharp5_spec.rb checks
# as C# 5.
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

# The host's source compiled, optimized, with Add-Type's -OutputAssembly
# and -OutputType when caching ($Output). pwsh 7's Add-Type compiles with
# Roslyn's default options (AddTypeCommand.GetDefaultCompilationOptions: a
# bare CSharpCompilationOptions, OptimizationLevel.Debug), which mark the
# assembly [Debuggable(DisableOptimizations)]: the JIT then compiles every
# method of the host with MinOpts for the life of the process and never
# tiers it up. '-optimize+' goes through its -CompilerOptions
# (CSharpCommandLineParser) instead. Windows PowerShell 5.1 has no such
# parameter and needs none: its AddTypeCommand sets
# IncludeDebugInformation = false and CompilerOptions = "/optimize+". The
# cached file's name says so: an assembly cached unoptimized by an earlier
# host is never loaded.
function Add-PwshlibHostType {
    param([hashtable] $Output = @{})
    if ($PSVersionTable.PSEdition -eq 'Core') { $Output.CompilerOptions = '-optimize+' }
    Add-Type -TypeDefinition (Get-PwshlibHostSource) -Language CSharp @Output
}

# The cache, when the manager passed one and the source is still the one
# it keyed: the compiled file is written under a temporary name and renamed
# into place whole (the rename fails when another host got there first), so
# no host reads a file still being written. Loaded from its bytes
# (Assembly.Load(byte[]), as pwsh 7's own in-memory Add-Type does): the
# .NET Framework would lock a file loaded by path until the process ends.
$Server = $null
if ($AssemblyCache -and $HostSourceKey -and $Prefix) {
    try {
        if ((Get-PwshlibHostSourceKey) -ceq $HostSourceKey) {
            $Temporary = [System.IO.Path]::Combine($AssemblyCache, 'tmp-' + [guid]::NewGuid().ToString('N') + '.dll')
            Add-PwshlibHostType @{ OutputAssembly = $Temporary; OutputType = 'Library' }
            $Bytes = [System.IO.File]::ReadAllBytes($Temporary)
            # pwsh 7 writes the file and loads nothing; load what was
            # written, unless this PowerShell loaded it already.
            $Server = 'PwshlibHost.Server' -as [type]
            if (-not $Server) {
                $Server = [System.Reflection.Assembly]::Load($Bytes).GetType('PwshlibHost.Server')
            }
            $Hash = [System.BitConverter]::ToString((New-PwshlibSha256).ComputeHash($Bytes)).Replace('-', '').ToLowerInvariant()
            try {
                [System.IO.File]::Move($Temporary, [System.IO.Path]::Combine($AssemblyCache, $Prefix + $Hash + '.dll'))
            } catch {
                [System.IO.File]::Delete($Temporary)
            }
        }
    } catch {
        # No usable cache (a full disk, no rights): compiled in memory below.
        $Server = $null
    }
}
if (-not $Server) {
    $Server = 'PwshlibHost.Server' -as [type]
}
if (-not $Server) {
    try {
        Add-PwshlibHostType
    } catch {
        # An application control policy that enforces code integrity (WDAC,
        # with its dynamic code rule) refuses the assembly compiled here,
        # unsigned and made at run time, as it refuses Assembly.Load(byte[])
        # of a cached one in host.ps1: host.ps1 leaves with an exit code of
        # its own (87) that the manager turns into a message naming the
        # cause, as for 86. SystemPolicy.GetSystemLockdownPolicy is how
        # PowerShell itself asks whether such a policy is enforced
        # (Enforce, Audit, None).
        if ("$([System.Management.Automation.Security.SystemPolicy]::GetSystemLockdownPolicy())" -eq 'Enforce') {
            return 87
        }
        throw
    }
    $Server = [PwshlibHost.Server]
}
$Server.Assembly.CreateInstance('PwshlibHost.Launcher')
