# A script-based (MOF) DSC resource for the real-PowerShell tier: the stand-in
# Invoke-DscResource imports this module and calls <Method>-TargetResource
# with the -Property table, as PSDesiredStateConfiguration 2.0.7 does. State
# and call log live with the class-based resources' (PwshlibRealDsc.psm1),
# which this module imports for its helpers.
Import-Module -Name (Join-Path $PSScriptRoot '../../PwshlibRealDsc.psm1') -Function Read-RealState, Write-RealState, Write-RealCall, ConvertTo-RealPlain, New-RealCredential

function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)]
        [string] $UserName
    )
    Write-RealCall 'RealAccount' 'Get' $PSBoundParameters
    $Stored = Read-RealState 'RealAccount' $UserName
    if ($null -eq $Stored) {
        return @{ UserName = $UserName; Ensure = 'Absent'; Password = $null; FullName = $null }
    }
    # The password comes back too: Get may return a credential.
    @{ UserName = $UserName; Ensure = 'Present'; Password = (New-RealCredential $Stored.Password); FullName = $Stored.FullName }
}

function Test-TargetResource {
    [CmdletBinding()]
    [OutputType([bool])]
    param(
        [Parameter(Mandatory = $true)] [string] $UserName,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [pscredential] $Password,
        [string] $FullName
    )
    Write-RealCall 'RealAccount' 'Test' $PSBoundParameters
    $Stored = Read-RealState 'RealAccount' $UserName
    if ($Ensure -eq 'Absent') { return $null -eq $Stored }
    if ($null -eq $Stored) { return $false }
    ($Stored.FullName -ceq $FullName) -and ($null -eq $Password -or $Stored.Password.password -ceq $Password.GetNetworkCredential().Password)
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)] [string] $UserName,
        [ValidateSet('Present', 'Absent')] [string] $Ensure = 'Present',
        [pscredential] $Password,
        [string] $FullName
    )
    Write-RealCall 'RealAccount' 'Set' $PSBoundParameters
    $Stored = $null
    if ($Ensure -ne 'Absent') {
        $Stored = [ordered]@{ UserName = $UserName; Password = (ConvertTo-RealPlain $Password); FullName = $FullName }
    }
    Write-RealState 'RealAccount' $UserName $Stored
}

Export-ModuleMember -Function Get-TargetResource, Test-TargetResource, Set-TargetResource
