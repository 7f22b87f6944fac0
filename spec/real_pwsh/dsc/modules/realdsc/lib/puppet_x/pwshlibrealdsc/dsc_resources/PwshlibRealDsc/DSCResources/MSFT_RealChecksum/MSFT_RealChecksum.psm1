# Like a file resource's checksum mode: Checksum is write-only, so the
# hashtable Get-TargetResource returns leaves it out (as a script
# resource's Get returns what it can report); Test takes it into account.
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, Write-RealCall

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $Path,
        [string] $Contents,
        [string] $Checksum
    )
    Write-RealCall 'RealChecksum' 'Get' $PSBoundParameters
    $Stored = Read-RealState 'RealChecksum' $Path
    $Reported = if ($null -eq $Stored) { $null } else { $Stored.Contents }
    @{ Path = $Path; Contents = $Reported }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $Path,
        [string] $Contents,
        [string] $Checksum = 'SHA-256'
    )
    Write-RealCall 'RealChecksum' 'Test' $PSBoundParameters
    $Stored = Read-RealState 'RealChecksum' $Path
    $null -ne $Stored -and $Stored.Contents -ceq $Contents -and $Stored.Checksum -ceq $Checksum
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $Path,
        [string] $Contents,
        [string] $Checksum = 'SHA-256'
    )
    Write-RealCall 'RealChecksum' 'Set' $PSBoundParameters
    Write-RealState 'RealChecksum' $Path ([ordered]@{ Path = $Path; Contents = $Contents; Checksum = $Checksum })
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
