# Like ComputerManagementDsc's ScheduledTask (pwshlib 2.x issue #326): the
# optional TaskPath parameter of Get-TargetResource picks the folder Get
# reads the task from, '\' when not given; Get-TargetResource declares it
# and the key only, so Ensure and Description must never reach it.
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $TaskName,
        [string] $TaskPath = '\'
    )
    Write-RealCall 'RealTask' 'Get' $PSBoundParameters
    $Stored = Read-RealState 'RealTask' "$TaskPath$TaskName"
    if ($null -eq $Stored) {
        return @{ TaskName = $TaskName; TaskPath = $TaskPath; Ensure = 'Absent'; Description = $null }
    }
    @{ TaskName = $TaskName; TaskPath = $TaskPath; Ensure = 'Present'; Description = $Stored.Description }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $TaskName,
        [string] $TaskPath = '\',
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [string] $Description
    )
    Write-RealCall 'RealTask' 'Test' $PSBoundParameters
    $Stored = Read-RealState 'RealTask' "$TaskPath$TaskName"
    if ($Ensure -eq 'Absent') { return $null -eq $Stored }
    $null -ne $Stored -and $Stored.Description -ceq $Description
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $TaskName,
        [string] $TaskPath = '\',
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [string] $Description
    )
    Write-RealCall 'RealTask' 'Set' $PSBoundParameters
    $Stored = $null
    if ($Ensure -ne 'Absent') { $Stored = [ordered]@{ TaskName = $TaskName; TaskPath = $TaskPath; Description = $Description } }
    Write-RealState 'RealTask' "$TaskPath$TaskName" $Stored
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
