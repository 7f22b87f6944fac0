# A script-based resource whose Get-TargetResource returns its values in
# the loose shapes real resources use, which the LCM converted to the MOF
# class's types: one tag of the String[] Tags as a bare
# string, the Boolean Enabled as the text 'True', the String Interval as a
# [TimeSpan] and the String Release as a [Version].
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name
    )
    Write-RealCall 'RealShape' 'Get' $PSBoundParameters
    $Stored = Read-RealState 'RealShape' $Name
    if ($null -eq $Stored) { return @{ Name = $Name } }
    $Tags = @($Stored.Tags)
    @{
        Name     = $Name
        Tags     = if ($Tags.Count -eq 1) { [string] $Tags[0] } else { $Tags }
        Enabled  = [string] $Stored.Enabled
        Interval = [timespan]::Parse($Stored.Interval)
        Release  = [version] $Stored.Release
    }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [string[]] $Tags,
        [bool] $Enabled,
        [string] $Interval,
        [string] $Release
    )
    Write-RealCall 'RealShape' 'Test' $PSBoundParameters
    $null -ne (Read-RealState 'RealShape' $Name)
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [string[]] $Tags,
        [bool] $Enabled,
        [string] $Interval,
        [string] $Release
    )
    Write-RealCall 'RealShape' 'Set' $PSBoundParameters
    Write-RealState 'RealShape' $Name ([ordered]@{ Name = $Name; Tags = $Tags; Enabled = $Enabled; Interval = $Interval; Release = $Release })
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
