# A script-based resource with a PSCredential[] property (as ExchangeDsc's
# and SqlServerDsc's credential lists): its parameter takes credentials
# only, each a PSCredential.
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, ConvertTo-RealPlain

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name
    )
    @{ Name = $Name; Logins = $null }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [PSCredential[]] $Logins
    )
    $false
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [PSCredential[]] $Logins
    )
    $Users = @(foreach ($Login in $Logins) { ConvertTo-RealPlain $Login })
    Write-RealState 'RealLogins' $Name ([ordered]@{ Name = $Name; Logins = $Users })
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
