# Like PSDscResources' Script: its three scripts are its keys and Result
# is read-only, so Puppet has no property to compare; only TestScript can
# say whether the machine is right.
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $GetScript,
        [Parameter(Mandatory = $true)] [string] $SetScript,
        [Parameter(Mandatory = $true)] [string] $TestScript
    )
    Write-RealCall 'RealScript' 'Get' $PSBoundParameters
    $Result = & ([scriptblock]::Create($GetScript))
    @{ GetScript = $GetScript; SetScript = $SetScript; TestScript = $TestScript; Result = [string] $Result.Result }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $GetScript,
        [Parameter(Mandatory = $true)] [string] $SetScript,
        [Parameter(Mandatory = $true)] [string] $TestScript
    )
    Write-RealCall 'RealScript' 'Test' $PSBoundParameters
    [bool] (& ([scriptblock]::Create($TestScript)))
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $GetScript,
        [Parameter(Mandatory = $true)] [string] $SetScript,
        [Parameter(Mandatory = $true)] [string] $TestScript
    )
    Write-RealCall 'RealScript' 'Set' $PSBoundParameters
    $null = & ([scriptblock]::Create($SetScript))
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
