# A script-based resource whose Get-TargetResource declares its key only,
# as most do: the desired Ensure and Value a Get now carries must
# be left out, or PSDesiredStateConfiguration 2.0.7's splat fails the call
# (PowerShell/DSC#260; the stand-in splats the same way).
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Read-RealStates, Write-RealState, Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name
    )
    Write-RealCall 'RealKeyed' 'Get' $PSBoundParameters
    $Stored = Read-RealState 'RealKeyed' $Name
    if ($null -eq $Stored) { return @{ Name = $Name; Ensure = 'Absent'; Value = $null } }
    @{ Name = $Name; Ensure = 'Present'; Value = $Stored.Value }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [string] $Value
    )
    Write-RealCall 'RealKeyed' 'Test' $PSBoundParameters
    $Stored = Read-RealState 'RealKeyed' $Name
    if ($Ensure -eq 'Absent') { return $null -eq $Stored }
    $null -ne $Stored -and $Stored.Value -ceq $Value
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [string] $Value
    )
    Write-RealCall 'RealKeyed' 'Set' $PSBoundParameters
    $Stored = $null
    if ($Ensure -ne 'Absent') { $Stored = [ordered]@{ Name = $Name; Value = $Value } }
    Write-RealState 'RealKeyed' $Name $Stored
}

# What the machine has, as script modules of the Gallery list themselves
# (Export-TargetResource, no argument): each instance as its Get reports it.
function Export-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable[]])]
    param()
    Write-RealCall 'RealKeyed' 'Export' @{}
    foreach ($Stored in @(Read-RealStates 'RealKeyed')) {
        @{ Name = $Stored.Name; Ensure = 'Present'; Value = $Stored.Value }
    }
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource, Export-TargetResource
