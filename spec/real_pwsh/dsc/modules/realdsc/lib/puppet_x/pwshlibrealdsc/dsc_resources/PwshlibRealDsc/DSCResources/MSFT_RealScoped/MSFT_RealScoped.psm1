# A resource whose Get needs a non-key property to look in the right
# place: under strict mode, a Get handed the key alone fails ("The
# variable '$Folder' cannot be retrieved because it has not been set").
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [string] $Scope
    )
    Set-StrictMode -Version Latest
    Write-RealCall 'RealScoped' 'Get' $PSBoundParameters
    if (-not [string]::IsNullOrEmpty($Scope)) { $Folder = $Scope }
    $Stored = Read-RealState 'RealScoped' "$Folder/$Name"
    $Ensure = if ($null -eq $Stored) { 'Absent' } else { 'Present' }
    @{ Name = $Name; Scope = $Scope; Ensure = $Ensure }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [string] $Scope,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present'
    )
    Write-RealCall 'RealScoped' 'Test' $PSBoundParameters
    $Stored = Read-RealState 'RealScoped' "$Scope/$Name"
    ($null -ne $Stored) -eq ($Ensure -eq 'Present')
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [string] $Scope,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present'
    )
    Write-RealCall 'RealScoped' 'Set' $PSBoundParameters
    $Stored = $null
    if ($Ensure -ne 'Absent') { $Stored = [ordered]@{ Name = $Name; Scope = $Scope } }
    Write-RealState 'RealScoped' "$Scope/$Name" $Stored
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
