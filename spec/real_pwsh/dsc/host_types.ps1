# Adds pwshlib's host C# to this process as host_compile.ps1 compiles it:
# the PwshlibHost*.cs files host_compile.ps1 names, joined in its order. For the
# scripts here that run the host's code in a runspace of their own
# (direct_compiled.ps1, module_index.ps1).
param(
    [Parameter(Mandatory = $true)] [string] $Templates
)
$ErrorActionPreference = 'Stop'
$Names = [regex]::Matches([IO.File]::ReadAllText((Join-Path $Templates 'host_compile.ps1')), "'(PwshlibHost[A-Za-z.]*\.cs)'") | ForEach-Object { $_.Groups[1].Value } | Select-Object -Unique
Add-Type -TypeDefinition ([string]::Join("`n", @(foreach ($Name in $Names) { [IO.File]::ReadAllText((Join-Path $Templates $Name)) })))
