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

function New-PwshlibEmbeddedInstance {
    # One embedded instance (a nested class) of a class-based resource; the
    # generated script calls this where the script of a MOF resource calls
    # New-CimInstance. Which form it takes depends on the PowerShell that
    # runs the resource, so it is decided here, at run time:
    #
    # Windows PowerShell 5.1 (PSEdition Desktop; older versions have no
    # PSEdition): Invoke-DscResource hands the call to the LCM, which takes
    # embedded instances as CIM instances only. Made as before.
    #
    # PowerShell 6 and 7 (PSEdition Core): PSDesiredStateConfiguration 2.x
    # has no LCM. It creates the class of the resource in this process and
    # assigns each -Property value to the instance ($resource.$Name =
    # $Value), so PowerShell converts the value to the type of the
    # property. It converts a hashtable to a class (a type with a default constructor,
    # each key set as a property, nested hashtables likewise), but not a
    # CIM instance to a class; and pwsh on Linux has no New-CimInstance.
    # So the instance is the hashtable itself, and a credential inside one a
    # PSCredential (which a hashtable cannot become: it has no default
    # constructor). Issue 31, item 14.
    param(
        [Parameter(Mandatory = $true)]
        [string] $ClassName,

        [Parameter(Mandatory = $true)]
        [AllowEmptyCollection()]
        [hashtable] $Property
    )
    if ($PSVersionTable.PSEdition -ne 'Core') {
        return New-CimInstance -ClientOnly -ClassName $ClassName -Property $Property
    }
    if ($ClassName -eq 'MSFT_Credential') {
        return New-PsCredential -User $Property.UserName -Password $Property.Password
    }
    $Property
}

function New-PwshlibEmbeddedInstanceArray {
    # An array of the embedded instances of a class-based resource (made by
    # New-PwshlibEmbeddedInstance): typed CimInstance[] for the LCM of
    # Windows PowerShell 5.1, as the script of a MOF resource writes it; on
    # PowerShell 6 and 7 a plain array, which PowerShell converts item by
    # item to the class array of the property (a cast to CimInstance[] would
    # fail there: a hashtable does not convert to a CIM instance).
    param(
        [AllowEmptyCollection()]
        [object[]] $Instances = @()
    )
    if ($PSVersionTable.PSEdition -ne 'Core') {
        return , [Microsoft.Management.Infrastructure.CimInstance[]] $Instances
    }
    , $Instances
}

function Add-PwshlibVendoredModulePath {
    # Puts a module's vendored dsc_resources folder on PSModulePath, for every
    # resource: a vendored module may import a vendored sibling by name
    # (SqlServerDsc imports DscResource.Common), and Import-Module finds a
    # module by name only through PSModulePath.
    #
    # This process: $env:PSModulePath gains the folder when it lacks it. The
    # host puts the process environment back before each call.
    #
    # The machine: only on Windows PowerShell 5.1 (and older), whose
    # Invoke-DscResource hands the call to the LCM in another process; the
    # LCM resolves class-based resources through the machine-level
    # PSModulePath, which it reads from the registry, so our process
    # environment does not reach it. PowerShell 7's PSDesiredStateConfiguration
    # 2.x runs the resource in this process, so there the machine value is
    # never touched. The value is read and written through
    # Microsoft.Win32.Registry, never [Environment]::SetEnvironmentVariable(
    # ..., 'Machine'): that broadcasts WM_SETTINGCHANGE to every top-level
    # window (over a minute per call on some servers) and writes the value
    # back expanded, as REG_SZ. GetValue with DoNotExpandEnvironmentNames
    # returns the stored text (%ProgramFiles% stays as it is), and SetValue
    # with the kind GetValueKind reported keeps REG_EXPAND_SZ a REG_EXPAND_SZ.
    #
    # Returns what Restore-PwshlibVendoredModulePath needs to undo the
    # machine-level change, or $null when the machine value was left alone
    # (PowerShell 7, or the folder already there).
    param(
        [Parameter(Mandatory = $true)]
        [string] $Path
    )
    $Separator = [System.IO.Path]::PathSeparator
    if ([System.IO.Path]::DirectorySeparatorChar -eq '\') {
        $Path = $Path.Replace('/', '\')
    }
    $Wanted = $Path.TrimEnd('\', '/')
    $ProcessEntries = @("$env:PSModulePath".Split($Separator) | ForEach-Object { $_.TrimEnd('\', '/') })
    if ($ProcessEntries -notcontains $Wanted) {
        if ([string]::IsNullOrEmpty($env:PSModulePath)) {
            $env:PSModulePath = $Path
        }
        else {
            $env:PSModulePath = "$env:PSModulePath$Separator$Path"
        }
    }
    if ($PSVersionTable.PSVersion.Major -gt 5) {
        return $null
    }
    $EnvironmentKey = 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
    $Key = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($EnvironmentKey, $true)
    if ($null -eq $Key) {
        throw "Cannot open HKEY_LOCAL_MACHINE\$EnvironmentKey to add $Path to the machine-level PSModulePath"
    }
    try {
        # GetValueKind throws for a missing value, so ask first.
        $Existed = @($Key.GetValueNames()) -contains 'PSModulePath'
        $Kind = [Microsoft.Win32.RegistryValueKind]::ExpandString
        $Machine = $null
        if ($Existed) {
            $Kind = $Key.GetValueKind('PSModulePath')
            $Machine = $Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)
        }
        # An entry counts as present written either way: as stored, or
        # with its %VARIABLES% expanded.
        $MachineEntries = @("$Machine".Split($Separator) | ForEach-Object {
                $_.TrimEnd('\', '/')
                [System.Environment]::ExpandEnvironmentVariables($_).TrimEnd('\', '/')
            })
        if ($MachineEntries -contains $Wanted) {
            return $null
        }
        $Munged = if ([string]::IsNullOrEmpty($Machine)) { $Path } else { $Machine + $Separator + $Path }
        $Key.SetValue('PSModulePath', $Munged, $Kind)
        @{ Existed = $Existed; Value = $Machine; Kind = $Kind }
    }
    finally {
        $Key.Close()
    }
}

function Restore-PwshlibVendoredModulePath {
    # Puts back the machine-level PSModulePath that
    # Add-PwshlibVendoredModulePath changed, with its value kind, through the
    # registry as well (no broadcast); removes it when there was none. Does
    # nothing when $Previous is $null (nothing was changed).
    param($Previous)
    if ($null -eq $Previous) {
        return
    }
    $EnvironmentKey = 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
    $Key = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($EnvironmentKey, $true)
    try {
        if ($Previous.Existed) {
            $Key.SetValue('PSModulePath', $Previous.Value, $Previous.Kind)
        }
        else {
            $Key.DeleteValue('PSModulePath', $false)
        }
    }
    finally {
        $Key.Close()
    }
}

function ConvertTo-PwshlibCanonicalValue {
    # One value of a DSC Get result, made ready for JSON: empty strings and
    # empty collections become $null, DateTime becomes ISO-8601 text, CIM
    # instances and instances of PowerShell classes (the nested objects of a
    # class-based resource on PowerShell 7) become hashtables that name their
    # class in cim_instance_type, and collections are converted item by item.
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
    if ($Value -is [enum]) {
        # On PowerShell 7, PSDesiredStateConfiguration 2.x calls a
        # class-based resource's Get() itself and hands back its object, so
        # an enum-typed property arrives as the enum value. ConvertTo-Json
        # writes an enum as its number (always on 5.1; on 7 unless
        # -EnumsAsStrings), which never equals the declared name Puppet
        # holds. ToString() gives the name ("A, B" for a [Flags] set).
        return $Value.ToString()
    }
    if ($Value -is [datetime]) {
        return $Value.ToUniversalTime().ToString('o', [System.Globalization.CultureInfo]::InvariantCulture)
    }
    if ($Value -is [System.Management.Automation.PSCredential]) {
        return @{ user = $Value.UserName; password = $null }
    }
    # The class name of a CIM instance is read from CimSystemProperties, never
    # CimClass: a ClientOnly instance (New-CimInstance -ClientOnly, and what
    # a resource builds for its result on PowerShell 7) has no CimClass, so
    # CimClass.CimClassName would be $null there (N6 of the review): nested
    # cim_instance_type would read null, and an MSFT_Credential would not be
    # recognised, so its Password would be written into the JSON below.
    if ($Value -is [Microsoft.Management.Infrastructure.CimInstance] -and
        $Value.CimSystemProperties.ClassName -eq 'MSFT_Credential') {
        # Windows PowerShell 5.1's Invoke-DscResource returns a credential
        # as an MSFT_Credential CIM instance with UserName and Password (the
        # password may be there in the clear). It reads as the PSCredential
        # above: the user only. The password never leaves this function.
        $User = $null
        foreach ($Property in $Value.CimInstanceProperties) {
            if ($Property.Name -eq 'UserName') {
                $User = $Property.Value
            }
        }
        return @{ user = $User; password = $null }
    }
    if ($Value -is [Microsoft.Management.Infrastructure.CimInstance]) {
        $Instance = [ordered]@{}
        foreach ($Property in $Value.CimInstanceProperties) {
            if ($Property.Name -ne 'PSComputerName') {
                $Instance[$Property.Name] = ConvertTo-PwshlibCanonicalValue -Value $Property.Value -Depth ($Depth + 1)
            }
        }
        $Instance['cim_instance_type'] = $Value.CimSystemProperties.ClassName
        return $Instance
    }
    if ($Value.GetType().Assembly.IsDynamic -and $Value -isnot [System.Collections.IEnumerable]) {
        # An instance of a PowerShell class: what the Get of a class-based
        # resource returns for a nested-class property on PowerShell 7, where
        # PSDesiredStateConfiguration 2.x hands back the object of the
        # resource itself. PowerShell defines script classes and enums in a
        # dynamic assembly (TypeDefiner.DefineTypes in the PowerShell source
        # src/System.Management.Automation/engine/parser/PSType.cs calls
        # AssemblyBuilder.DefineDynamicAssembly); the other values of a Get
        # result (strings, numbers, PSCustomObject, hashtables, arrays) are
        # not from one, and enums were handled above. It reads like a CIM
        # instance: its class name as cim_instance_type and its properties
        # converted, so an enum inside reads as its name, not the number
        # ConvertTo-Json would write (issue 31, item 14), and a credential
        # as the user only.
        $Instance = [ordered]@{}
        foreach ($Property in $Value.PSObject.Properties) {
            $Instance[$Property.Name] = ConvertTo-PwshlibCanonicalValue -Value $Property.Value -Depth ($Depth + 1)
        }
        $Instance['cim_instance_type'] = $Value.GetType().Name
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
    # provider reads. The machine-level PSModulePath is put back by the
    # generated script's own try/finally, which also covers the lines that
    # build credentials and CIM instances before this call.
    param(
        [Parameter(Mandatory = $true)]
        [hashtable] $InvokeParams
    )
    # The outcome of a Set, and of any failed Get or Set.
    $Response = [ordered]@{
        indesiredstate = $false
        rebootrequired = $false
        errormessage   = ''
    }
    try {
        if ($PSVersionTable.PSVersion.Major -gt 5 -and $InvokeParams.Property.ContainsKey('PsDscRunAsCredential')) {
            # PowerShell 7's PSDesiredStateConfiguration 2.x has no LCM: it
            # runs the resource in this process and cannot start it as the
            # PsDscRunAsCredential account, as the 5.1 LCM did. It rejects
            # the property with a message that does not say why; this one
            # names the resource and the reason. Checked before the call,
            # so nothing runs as the wrong account.
            throw "The DSC resource '$($InvokeParams.Name)' cannot run as PsDscRunAsCredential on PowerShell $($PSVersionTable.PSVersion): Invoke-DscResource in PowerShell 7 (PSDesiredStateConfiguration 2.x) does not support PsDscRunAsCredential. Remove dsc_psdscrunascredential, or run this resource with Windows PowerShell 5.1."
        }
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
    ConvertTo-Json -InputObject $PwshlibOutput -Compress -Depth 10
}
