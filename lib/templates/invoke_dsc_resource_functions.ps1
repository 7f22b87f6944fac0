# The prelude of every script pwshlib sends for an Invoke-DscResource call:
# the helper functions, and Invoke-PwshlibDscResource, which makes the one
# DSC call and prints its outcome. Written for pwshlib; embedded into the
# native library at build time.
#
# A host that offers preludes (docs/protocol.md) defines these functions once
# per session, so each call carries only its own lines; otherwise, and in the
# --debug dump, this text comes first in the script. It must therefore only
# define functions: nothing here may run, print or set a variable.

function New-PsCredential {
    # DSC wants a PSCredential; Puppet hands over a user name and a plain
    # password. ConvertTo-SecureString refuses an empty string, so an empty
    # password becomes an empty SecureString instead.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]
        [AllowEmptyString()]
        [string] $User,

        [Parameter(Mandatory = $true)]
        [AllowEmptyString()]
        [string] $Password
    )
    if ($Password.Length -eq 0) {
        $SecurePassword = New-Object -TypeName System.Security.SecureString
    }
    else {
        $SecurePassword = ConvertTo-SecureString -String $Password -AsPlainText -Force
    }
    New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList $User, $SecurePassword
}

function Add-PwshlibVendoredModulePath {
    # Class-based resources are discovered through the machine-level
    # PSModulePath, which the DSC engine reads; our own process needs the
    # folder too. Add it only where it is missing. Returns the previous
    # machine-level value (wrapped, because it may itself be $null) when it
    # was changed, so that Restore-PwshlibVendoredModulePath can put it back.
    param(
        [Parameter(Mandatory = $true)]
        [string] $Path
    )
    $Separator = [System.IO.Path]::PathSeparator
    if ([System.IO.Path]::DirectorySeparatorChar -eq '\') {
        $Path = $Path.Replace('/', '\')
    }
    $Wanted = $Path.TrimEnd('\', '/')
    $Restore = $null
    $Machine = [System.Environment]::GetEnvironmentVariable('PSModulePath', 'Machine')
    $MachineEntries = @("$Machine".Split($Separator) | ForEach-Object { $_.TrimEnd('\', '/') })
    if ($MachineEntries -notcontains $Wanted) {
        $Restore = @{ Value = $Machine }
        $Munged = if ([string]::IsNullOrEmpty($Machine)) { $Path } else { $Machine + $Separator + $Path }
        [System.Environment]::SetEnvironmentVariable('PSModulePath', $Munged, 'Machine')
    }
    $ProcessEntries = @("$env:PSModulePath".Split($Separator) | ForEach-Object { $_.TrimEnd('\', '/') })
    if ($ProcessEntries -notcontains $Wanted) {
        $env:PSModulePath = "$env:PSModulePath$Separator$Path"
    }
    $Restore
}

function Restore-PwshlibVendoredModulePath {
    # Puts back the machine-level PSModulePath that
    # Add-PwshlibVendoredModulePath changed; does nothing when it did not.
    param($Previous)
    if ($null -ne $Previous) {
        [System.Environment]::SetEnvironmentVariable('PSModulePath', $Previous.Value, 'Machine')
    }
}

function ConvertTo-PwshlibCanonicalValue {
    # One value of a DSC Get result, made ready for JSON: empty strings and
    # empty collections become $null, DateTime becomes ISO-8601 text, CIM
    # instances become hashtables that name their class in cim_instance_type,
    # and collections are converted item by item.
    param(
        $Value,
        [int] $Depth = 0
    )
    if ($null -eq $Value) {
        return $null
    }
    if ($Depth -gt 8) {
        # Deeper than any DSC schema goes; keep the text rather than recurse.
        return [string] $Value
    }
    if ($Value -is [string]) {
        if ($Value.Length -eq 0) {
            return $null
        }
        return $Value
    }
    if ($Value -is [datetime]) {
        return $Value.ToUniversalTime().ToString('o', [System.Globalization.CultureInfo]::InvariantCulture)
    }
    if ($Value -is [System.Management.Automation.PSCredential]) {
        return @{ user = $Value.UserName; password = $null }
    }
    if ($Value -is [Microsoft.Management.Infrastructure.CimInstance]) {
        $Instance = [ordered]@{}
        foreach ($Property in $Value.CimInstanceProperties) {
            if ($Property.Name -ne 'PSComputerName') {
                $Instance[$Property.Name] = ConvertTo-PwshlibCanonicalValue -Value $Property.Value -Depth ($Depth + 1)
            }
        }
        $Instance['cim_instance_type'] = $Value.CimClass.CimClassName
        return $Instance
    }
    if ($Value -is [System.Collections.IDictionary]) {
        $Table = [ordered]@{}
        foreach ($Key in $Value.Keys) {
            $Table[[string] $Key] = ConvertTo-PwshlibCanonicalValue -Value $Value[$Key] -Depth ($Depth + 1)
        }
        return $Table
    }
    if ($Value -is [System.Collections.IEnumerable]) {
        $Items = @(foreach ($Item in $Value) { ConvertTo-PwshlibCanonicalValue -Value $Item -Depth ($Depth + 1) })
        if ($Items.Count -eq 0) {
            return $null
        }
        # The comma keeps a one-item array an array on the way out.
        return , $Items
    }
    $Value
}

function ConvertTo-PwshlibCanonicalResult {
    # The Get result as a flat table of DSC property name to value. A
    # missing Ensure means the resource was found, so it reads 'Present'.
    param(
        [Parameter(Mandatory = $true)]
        [AllowNull()]
        $Result
    )
    $Table = [ordered]@{}
    if ($null -eq $Result) {
        return $Table
    }
    if ($Result -is [Microsoft.Management.Infrastructure.CimInstance]) {
        $Properties = @($Result.CimInstanceProperties | ForEach-Object { @{ Name = $_.Name; Value = $_.Value } })
    }
    elseif ($Result -is [System.Collections.IDictionary]) {
        $Properties = @($Result.Keys | ForEach-Object { @{ Name = [string] $_; Value = $Result[$_] } })
    }
    else {
        $Properties = @($Result.PSObject.Properties | ForEach-Object { @{ Name = $_.Name; Value = $_.Value } })
    }
    foreach ($Property in $Properties) {
        if ($Property.Name -in @('PSComputerName', 'CimClass', 'CimInstanceProperties', 'CimSystemProperties')) {
            continue
        }
        $Value = ConvertTo-PwshlibCanonicalValue -Value $Property.Value -Depth 1
        if ($Property.Name -eq 'Ensure' -and $null -eq $Value) {
            $Value = 'Present'
        }
        $Table[$Property.Name] = $Value
    }
    $Table
}

function Invoke-PwshlibDscResource {
    # Runs the one DSC call that $InvokeParams describes and writes its
    # outcome as a single line of compressed JSON, the only output the
    # provider reads. $PSModulePathRestore is what
    # Add-PwshlibVendoredModulePath returned (Class-based resources only);
    # the finally block puts that machine-level value back, also when the
    # call fails or is stopped.
    param(
        [Parameter(Mandatory = $true)]
        [hashtable] $InvokeParams,

        $PSModulePathRestore = $null
    )
    # The outcome of a Set, and of any failed Get or Set.
    $Response = [ordered]@{
        indesiredstate = $false
        rebootrequired = $false
        errormessage   = ''
    }
    try {
        $PwshlibResult = Invoke-DscResource @InvokeParams
        switch ($InvokeParams.Method) {
            'Get' {
                $PwshlibOutput = ConvertTo-PwshlibCanonicalResult -Result $PwshlibResult
            }
            'Set' {
                $Response.indesiredstate = $true
                $Response.rebootrequired = [bool] $PwshlibResult.RebootRequired
                $PwshlibOutput = $Response
            }
            'Test' {
                $PwshlibOutput = [ordered]@{
                    indesiredstate = [bool] $PwshlibResult.InDesiredState
                    errormessage   = ''
                }
            }
        }
    }
    catch {
        # A failure must never come back with an empty message: the provider
        # tells success from failure by it.
        $PwshlibMessage = $_.Exception.Message
        if ([string]::IsNullOrEmpty($PwshlibMessage)) {
            $PwshlibMessage = "Invoke-DscResource failed: $_"
        }
        $Response.errormessage = $PwshlibMessage
        if ($InvokeParams.Method -eq 'Test') {
            $PwshlibOutput = [ordered]@{
                indesiredstate = $false
                errormessage   = $PwshlibMessage
            }
        }
        else {
            $PwshlibOutput = $Response
        }
    }
    finally {
        Restore-PwshlibVendoredModulePath -Previous $PSModulePathRestore
    }
    ConvertTo-Json -InputObject $PwshlibOutput -Compress -Depth 10
}
