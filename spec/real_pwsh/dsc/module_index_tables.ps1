# Reads each -Manifests module (one manifest path per line) both ways: the
# host's compiled index (PwshlibHost.DscModuleIndex) over the files and
# folders Get-PwshlibDscModuleLayout names,
# and the prelude's Get-PwshlibDscModuleIndexInPowerShell, its fallback
# without the host; prints one line of JSON per module with both indexes,
# each table as [key, value] pairs in key order, and how each table
# compares keys (a key looked up in another case), for
# module_index_spec.rb to compare.
param(
    [Parameter(Mandatory = $true)] [string] $Templates,
    # The manifests, one per line.
    [Parameter(Mandatory = $true)] [string] $Manifests,
    # A resource name no module holds: each line then says what its lookup
    # failed with (Assert-PwshlibRunnableResource over the compiled index).
    [string] $Missing = ''
)
$ErrorActionPreference = 'Stop'
& (Join-Path $PSScriptRoot 'host_types.ps1') -Templates $Templates
. (Join-Path $Templates 'dsc_prelude_modules.ps1')
function ConvertTo-Pairs {
    param($Index)
    $Tables = [ordered]@{}
    foreach ($Name in 'Classes', 'Scripts', 'Binary', 'Composite') {
        $Table = $Index[$Name]
        $Keys = @($Table.Keys | Sort-Object -CaseSensitive)
        $Tables[$Name] = @(foreach ($Key in $Keys) { , @($Key, $Table[$Key]) })
        $Tables["$Name-upper-found"] = @(foreach ($Key in $Keys) { $Table.ContainsKey($Key.ToUpperInvariant()) })
    }
    $Tables['Unreadable'] = @($Index.Unreadable)
    $Tables
}
foreach ($Manifest in $Manifests.Split("`n")) {
    $Module = @{ Base = [System.IO.Path]::GetDirectoryName($Manifest); Manifest = $Manifest; Data = Import-PowerShellDataFile -LiteralPath $Manifest }
    $Layout = Get-PwshlibDscModuleLayout -Module $Module
    $Compiled = [PwshlibHost.DscModuleIndex]::Read($Layout.ClassFiles, $Layout.ResourceFolders)
    $Fallback = Get-PwshlibDscModuleIndexInPowerShell -ClassFiles $Layout.ClassFiles -ResourceFolders $Layout.ResourceFolders
    $Refused = ''
    if ($Missing) {
        try { Assert-PwshlibRunnableResource -Index $Compiled -Name $Missing -Module $Module } catch { $Refused = $_.Exception.Message }
    }
    ConvertTo-Json -Compress -Depth 5 -InputObject ([ordered]@{ manifest = $Manifest; compiled = (ConvertTo-Pairs $Compiled); fallback = (ConvertTo-Pairs $Fallback); missing = $Refused })
}
