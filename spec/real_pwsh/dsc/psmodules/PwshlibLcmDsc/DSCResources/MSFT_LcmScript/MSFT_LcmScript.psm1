# A script-based fixture resource (spec/real_pwsh/dsc/lcm_semantics_spec.rb).
# Get reports the ErrorActionPreference it runs with after running a native
# program that writes to stderr (redirected to $null, as resources calling
# git or netsh do), and writes a non-terminating error first when its Name
# says 'error', and fails as the 5.1 LCM fails a busy or run-as call when
# it says 'busy' (category ResourceBusy) or 'logon' (the HRESULT of
# ERROR_LOGON_TYPE_NOT_GRANTED), each with a German message. Test answers as its Name says: 'true', 'stray' (a string,
# no boolean), 'text-false' (the string 'False'), 'twice' ($false, then
# $true), 'nothing'.
function Get-TargetResource {
    [CmdletBinding()]
    [OutputType([hashtable])]
    param(
        [Parameter(Mandatory = $true)]
        [string] $Name
    )
    if ($Name -eq 'busy') {
        $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new(
                [System.InvalidOperationException]::new('Die Konsistenzprüfung wird ausgeführt.'), 'Busy', 'ResourceBusy', $null))
    }
    if ($Name -eq 'logon') {
        throw [System.Runtime.InteropServices.COMException]::new('Anmeldung fehlgeschlagen.', -2147023511)
    }
    $null = & sh -c 'echo LcmScript stderr >&2' 2>$null
    if ($Name -like 'error*') {
        Write-Error -Message "LcmScript wrote an error for $Name"
    }
    @{ Name = $Name; Seen = [string] $ErrorActionPreference }
}

function Test-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]
        [string] $Name
    )
    switch ($Name) {
        'true' { $true }
        'stray' { 'stray output' }
        'text-false' { 'False' }
        'twice' { $false; $true }
        'nothing' { }
        'busy' {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new(
                    [System.InvalidOperationException]::new('Die Konsistenzprüfung wird ausgeführt.'), 'Busy', 'ResourceBusy', $null))
        }
    }
}

function Set-TargetResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]
        [string] $Name
    )
}

Export-ModuleMember -Function *-TargetResource
