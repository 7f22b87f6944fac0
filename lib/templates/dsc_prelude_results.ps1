function ConvertTo-PwshlibPlainString {
    # A copy of a string that carries no ETS members. Windows PowerShell
    # 5.1's ConvertTo-Json (and 7.0, 7.1's) writes a string with note
    # properties as an object, {"value": ..., "PSPath": ..., ...}: so
    # every line Get-Content read, which it gives PSPath, PSParentPath,
    # PSChildName, PSDrive, PSProvider and ReadCount. PowerShell 7.2 stopped
    # that (PowerShell/PowerShell#15665, "Don't serialize to json ETS
    # properties for DateTime and string types").
    # PowerShell may keep the instance members of a reference type beside
    # the object itself (PSObject's resurrection table), not only in the
    # PSObject around it, and then neither .PSObject.BaseObject nor a
    # [string] cast drops them (#5797 shows BaseObject keeping a
    # DateTime's): a new string instance has none, whichever it is.
    param([string] $Text)
    [string]::new($Text.ToCharArray())
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
        # $PwshlibPlainStrings: ConvertTo-PwshlibCanonicalResult's, read
        # through the caller's scope (this is only called under it).
        if ($PwshlibPlainStrings) {
            return ConvertTo-PwshlibPlainString -Text $Value
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
        # ConvertTo-Json would write, and a credential
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
    # What is left: numbers and booleans, a PSCustomObject (ConvertTo-Json
    # writes its properties), and other .NET objects, which have no
    # meaning in a MOF schema (a TimeSpan, a Version, a Guid, an
    # IPAddress): the LCM converted them to the MOF property's type, for a
    # String their text, where ConvertTo-Json would write their members as
    # an object. The schema's other conversions (a
    # one-item array, 'True' for a Boolean) are the provider's, which knows
    # the type (ext/pwshlib_core/src/munge.rs).
    $Type = $Value.GetType()
    if (($Type.IsPrimitive -and $Value -isnot [char]) -or $Value -is [decimal] -or
        $Type -eq [System.Management.Automation.PSCustomObject]) {
        return $Value
    }
    if ($Value -is [System.DateTimeOffset]) {
        return $Value.UtcDateTime.ToString('o', [System.Globalization.CultureInfo]::InvariantCulture)
    }
    # PowerShell's own conversion to text (invariant culture, as a [string]
    # cast is).
    [string] $Value
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
    # Before 7.2 only, strings are copied to drop their ETS members
    # (ConvertTo-PwshlibPlainString); ConvertTo-PwshlibCanonicalValue reads
    # this too.
    $Version = $PSVersionTable.PSVersion
    $PwshlibPlainStrings = $Version.Major -lt 7 -or ($Version.Major -eq 7 -and $Version.Minor -lt 2)
    # Name and value pairs in order, read with foreach statements (a
    # pipeline per result cost more than the conversion itself), never
    # List.Add: AMSI's method-invocation logging (PowerShell 7.3+) receives
    # a .NET method's arguments as text, and these are the result's values.
    $Pairs = @(
        if ($Result -is [Microsoft.Management.Infrastructure.CimInstance]) {
            foreach ($Property in $Result.CimInstanceProperties) { , @($Property.Name, $Property.Value) }
        }
        elseif ($Result -is [System.Collections.IDictionary]) {
            foreach ($Key in $Result.Keys) { , @([string] $Key, $Result[$Key]) }
        }
        else {
            foreach ($Property in $Result.PSObject.Properties) { , @($Property.Name, $Property.Value) }
        }
    )
    foreach ($Pair in $Pairs) {
        $Name = $Pair[0]
        if ($Name -in 'PSComputerName', 'CimClass', 'CimInstanceProperties', 'CimSystemProperties') {
            continue
        }
        $Value = $Pair[1]
        # Text and plain numbers and booleans stay as they are (but empty
        # text, which reads as $null, and text copied before 7.2) without
        # a call of ConvertTo-PwshlibCanonicalValue, which would give the
        # same. Other value types (an enum, a DateTime, a TimeSpan) go
        # through it.
        if ($Value -is [string]) {
            if ($Value.Length -eq 0) { $Value = $null }
            elseif ($PwshlibPlainStrings) { $Value = ConvertTo-PwshlibPlainString -Text $Value }
        }
        elseif ($null -ne $Value -and -not ($Value -is [System.ValueType] -and $Value.GetType().IsPrimitive -and $Value -isnot [char])) {
            $Value = ConvertTo-PwshlibCanonicalValue -Value $Value -Depth 1
        }
        if ($Name -eq 'Ensure' -and $null -eq $Value) {
            $Value = 'Present'
        }
        $Table[$Name] = $Value
    }
    $Table
}
