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

function New-PwshlibCredentialInstance {
    # A credential inside an embedded instance, from the PSCredential the
    # host bound for the call (docs/protocol.md, "Secrets"): never a plain
    # password handed to a command, which module logging would record.
    #
    # A class-based resource on PowerShell 6 and 7 takes the credential as
    # it is (New-PwshlibEmbeddedInstance's reasons). Anywhere else the value
    # is an MSFT_Credential CIM instance, as DSC's MOF schemas declare it
    # and the 5.1 LCM takes it: the host's compiled code builds it from the
    # credential (New-CimInstance would need the password as a string in
    # its -Property). Outside pwshlib's host (a script run by hand, a
    # pwshlib 2.x host) there is no such code, and New-CimInstance it is.
    param(
        [Parameter(Mandatory = $true)]
        [System.Management.Automation.PSCredential] $Credential,

        [switch] $ClassBased
    )
    if ($ClassBased -and $PSVersionTable.PSEdition -eq 'Core') {
        return $Credential
    }
    $Builder = 'PwshlibHost.SecretValues' -as [type]
    if ($null -ne $Builder) {
        return $Builder::NewCredentialInstance($Credential)
    }
    New-CimInstance -ClientOnly -ClassName 'MSFT_Credential' -Property @{
        UserName = $Credential.UserName
        Password = $Credential.GetNetworkCredential().Password
    }
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
    # Puts a module's vendored dsc_resources folder on this process's
    # PSModulePath, for every resource: a vendored module may import a
    # vendored sibling by name (SqlServerDsc imports DscResource.Common),
    # and Import-Module finds a module by name only through PSModulePath.
    # $env:PSModulePath gains the folder when it lacks it; the host puts the
    # process environment back before each call. A direct call needs no
    # more: the machine-level value is for the LCM alone
    # (Add-PwshlibMachineModulePath), so a direct call writes no registry
    # value and runs unelevated (issue 41, item 6). On Windows PowerShell
    # 5.1 the first call of a host also removes what a killed host left on
    # the machine-level value (Clear-PwshlibStaleModulePath).
    param(
        [Parameter(Mandatory = $true)]
        [string] $Path
    )
    if ($PSVersionTable.PSVersion.Major -le 5) {
        Clear-PwshlibStaleModulePath
    }
    $Separator = [System.IO.Path]::PathSeparator
    if ([System.IO.Path]::DirectorySeparatorChar -eq '\') {
        $Path = $Path.Replace('/', '\')
    }
    $Wanted = $Path.TrimEnd('\', '/')
    # Loops rather than ForEach-Object here and below: this runs before
    # every DSC call, and a pipeline costs more than the whole comparison.
    # -eq compares strings without regard to case, as -contains did.
    foreach ($Entry in "$env:PSModulePath".Split($Separator)) {
        if ($Entry.TrimEnd('\', '/') -eq $Wanted) {
            return
        }
    }
    if ([string]::IsNullOrEmpty($env:PSModulePath)) {
        $env:PSModulePath = $Path
    }
    else {
        $env:PSModulePath = "$env:PSModulePath$Separator$Path"
    }
}

function Get-PwshlibModulePathKey {
    # The registry keys of the machine-level PSModulePath, under
    # HKEY_LOCAL_MACHINE: Environment holds the value (every value there is
    # an environment variable of every new process), Owners what
    # Add-PwshlibMachineModulePath added to it, one value per entry (its
    # name the entry, its data "<process id> <start time ticks>" of the
    # host that added it), so that an entry a killed host left behind can
    # be told from one an administrator made.
    @{
        Environment = 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
        Owners      = 'SOFTWARE\pwshlib\VendoredModulePath'
    }
}

function Get-PwshlibProcessStamp {
    # "<process id> <start time ticks>" of this host, as the owner of an
    # entry is noted.
    "$PID $([System.Diagnostics.Process]::GetCurrentProcess().StartTime.ToUniversalTime().Ticks)"
}

function Test-PwshlibModulePathOwner {
    # Whether the host an owner note names still runs: the process of that
    # id, started at that time (a process id is reused). A process whose
    # start time cannot be read (another user's) counts as running.
    param([string] $Owner)
    $Parts = $Owner.Split(' ')
    $Id = 0
    if (-not [int]::TryParse($Parts[0], [ref] $Id)) { return $false }
    try { $Process = [System.Diagnostics.Process]::GetProcessById($Id) } catch { return $false }
    try { return ($Parts.Count -lt 2 -or [string] $Process.StartTime.ToUniversalTime().Ticks -eq $Parts[1]) } catch { return $true }
}

function Remove-PwshlibModulePathEntry {
    # Removes one entry from the machine-level PSModulePath as it is now,
    # read again rather than a value saved before the call: a change made
    # meanwhile (an installer, a resource that manages PSModulePath) stays
    # (issue 41, item 6). The value keeps its kind (REG_EXPAND_SZ stays
    # unexpanded: DoNotExpandEnvironmentNames) and goes when nothing is
    # left. The last occurrence goes: Add-PwshlibMachineModulePath appends.
    param($Key, [string] $Path)
    if (@($Key.GetValueNames()) -notcontains 'PSModulePath') {
        return
    }
    $Separator = [string] [System.IO.Path]::PathSeparator
    $Wanted = $Path.TrimEnd('\', '/')
    $Kind = $Key.GetValueKind('PSModulePath')
    $Machine = [string] $Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)
    $Entries = [System.Collections.Generic.List[string]]::new([string[]] $Machine.Split($Separator))
    for ($Index = $Entries.Count - 1; $Index -ge 0; $Index--) {
        if ($Entries[$Index].TrimEnd('\', '/') -eq $Wanted) {
            $Entries.RemoveAt($Index)
            $Rest = [string]::Join($Separator, $Entries.ToArray())
            if ($Rest.Length -eq 0) {
                $Key.DeleteValue('PSModulePath', $false)
            }
            else {
                $Key.SetValue('PSModulePath', $Rest, $Kind)
            }
            return
        }
    }
}

function Clear-PwshlibStaleModulePath {
    # Removes from the machine-level PSModulePath the entries a host added
    # and never took back (it was killed during a call through the LCM):
    # those whose owner note names a host that no longer runs. Once per
    # host process (an AppDomain data slot), and again before every
    # machine-level change (-Always). Reading needs no elevation; an
    # unelevated run that finds such an entry leaves it for an elevated one.
    param([switch] $Always)
    $Slot = 'pwshlib.modulepath.cleared'
    if (-not $Always -and $null -ne [System.AppDomain]::CurrentDomain.GetData($Slot)) {
        return
    }
    [System.AppDomain]::CurrentDomain.SetData($Slot, $true)
    $Keys = Get-PwshlibModulePathKey
    $Owners = $null
    try { $Owners = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Owners) } catch { }
    if ($null -eq $Owners) {
        return
    }
    $Stale = [System.Collections.Generic.List[string]]::new()
    try {
        foreach ($Name in $Owners.GetValueNames()) {
            if (-not (Test-PwshlibModulePathOwner -Owner ([string] $Owners.GetValue($Name)))) { $Stale.Add($Name) }
        }
    }
    finally {
        $Owners.Close()
    }
    if ($Stale.Count -eq 0) {
        return
    }
    $Environment = $null
    $Owners = $null
    try {
        $Environment = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Environment, $true)
        $Owners = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Owners, $true)
        foreach ($Name in $Stale) {
            if ($null -ne $Environment) { Remove-PwshlibModulePathEntry -Key $Environment -Path $Name }
            if ($null -ne $Owners) { $Owners.DeleteValue($Name, $false) }
        }
    }
    catch {
        # Best effort: not elevated, say. An elevated run cleans up; the
        # call itself goes on.
    }
    finally {
        if ($null -ne $Environment) { $Environment.Close() }
        if ($null -ne $Owners) { $Owners.Close() }
    }
}

function Add-PwshlibMachineModulePath {
    # Puts the vendored folder on the machine-level PSModulePath for a call
    # through Invoke-DscResource on Windows PowerShell 5.1 (and older),
    # which hands the call to the LCM in another process; the LCM resolves
    # class-based resources through the machine-level PSModulePath, which
    # it reads from the registry, so our process environment does not reach
    # it. Never for a direct call (issue 41, item 6), nor on PowerShell 7,
    # whose PSDesiredStateConfiguration 2.x runs the resource in this
    # process. The value is read and written through
    # Microsoft.Win32.Registry, never [Environment]::SetEnvironmentVariable(
    # ..., 'Machine'): that broadcasts WM_SETTINGCHANGE to every top-level
    # window (over a minute per call on some servers) and writes the value
    # back expanded, as REG_SZ. GetValue with DoNotExpandEnvironmentNames
    # returns the stored text (%ProgramFiles% stays as it is), and SetValue
    # with the kind GetValueKind reported keeps REG_EXPAND_SZ a REG_EXPAND_SZ.
    #
    # The entry is noted as this host's (Get-PwshlibModulePathKey) before it
    # is added, so a host killed in between leaves a note, never an entry
    # nobody owns. Returns what Restore-PwshlibVendoredModulePath needs to
    # take it back, or $null when nothing was changed (PowerShell 7, or
    # the folder already there). Writing needs an elevated run, as the LCM
    # does; an unelevated one fails the call saying so.
    param(
        [Parameter(Mandatory = $true)]
        [string] $Path
    )
    if ($PSVersionTable.PSVersion.Major -gt 5) {
        return $null
    }
    $Separator = [System.IO.Path]::PathSeparator
    $Path = $Path.Replace('/', '\')
    $Wanted = $Path.TrimEnd('\', '/')
    Clear-PwshlibStaleModulePath -Always
    $Keys = Get-PwshlibModulePathKey
    $Key = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Environment)
    if ($null -eq $Key) {
        throw "Cannot open HKEY_LOCAL_MACHINE\$($Keys.Environment) to add $Path to the machine-level PSModulePath"
    }
    try {
        # An entry counts as present written either way: as stored, or
        # with its %VARIABLES% expanded.
        $Machine = $Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)
        foreach ($Entry in "$Machine".Split($Separator)) {
            if ($Entry.TrimEnd('\', '/') -eq $Wanted -or
                [System.Environment]::ExpandEnvironmentVariables($Entry).TrimEnd('\', '/') -eq $Wanted) {
                return $null
            }
        }
    }
    finally {
        $Key.Close()
    }
    $Key = $null
    $Owners = $null
    try {
        try {
            $Key = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Environment, $true)
            $Owners = [Microsoft.Win32.Registry]::LocalMachine.CreateSubKey($Keys.Owners)
        }
        catch [System.Security.SecurityException], [System.UnauthorizedAccessException] {
            throw "Cannot add $Path to the machine-level PSModulePath, where the LCM finds the module of a call through Invoke-DscResource: $($_.Exception.Message) Such a call needs an elevated run, as the LCM does."
        }
        $Owners.SetValue($Path, (Get-PwshlibProcessStamp), [Microsoft.Win32.RegistryValueKind]::String)
        # GetValueKind throws for a missing value, so ask first; read again
        # under the writable key.
        $Kind = [Microsoft.Win32.RegistryValueKind]::ExpandString
        $Machine = $null
        if (@($Key.GetValueNames()) -contains 'PSModulePath') {
            $Kind = $Key.GetValueKind('PSModulePath')
            $Machine = $Key.GetValue('PSModulePath', $null, [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)
        }
        $Munged = if ([string]::IsNullOrEmpty($Machine)) { $Path } else { $Machine + $Separator + $Path }
        $Key.SetValue('PSModulePath', $Munged, $Kind)
        @{ Path = $Path }
    }
    finally {
        if ($null -ne $Key) { $Key.Close() }
        if ($null -ne $Owners) { $Owners.Close() }
    }
}

function Restore-PwshlibVendoredModulePath {
    # Takes back the entry Add-PwshlibMachineModulePath added: removes it
    # from the machine-level PSModulePath as it is now
    # (Remove-PwshlibModulePathEntry), never writing back the value read
    # before the call, and drops its owner note. Does nothing when
    # $Previous is $null (nothing was changed).
    param($Previous)
    if ($null -eq $Previous) {
        return
    }
    $Keys = Get-PwshlibModulePathKey
    $Key = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Environment, $true)
    $Owners = [Microsoft.Win32.Registry]::LocalMachine.OpenSubKey($Keys.Owners, $true)
    try {
        if ($null -ne $Key) { Remove-PwshlibModulePathEntry -Key $Key -Path $Previous.Path }
        if ($null -ne $Owners) { $Owners.DeleteValue($Previous.Path, $false) }
    }
    finally {
        if ($null -ne $Key) { $Key.Close() }
        if ($null -ne $Owners) { $Owners.Close() }
    }
}

function Invoke-PwshlibDscResourceCmdlet {
    # Invoke-DscResource @InvokeParams, with the vendored folder on the
    # machine-level PSModulePath for the call on Windows PowerShell 5.1
    # (the LCM reads it there) and taken back in the finally, whatever the
    # call does (a finally also runs when the pipeline is stopped).
    #
    # Where there is no Invoke-DscResource (PowerShell 7 without the
    # PSDesiredStateConfiguration 2.x module, which pwsh does not ship),
    # nothing can run a resource the direct path did not find: the call
    # fails naming the resource and what is missing (issue 41, item 11),
    # not with PowerShell's "not recognized" for the command.
    param([hashtable] $InvokeParams, [string] $VendoredPath)
    $Previous = $null
    try {
        if (-not [string]::IsNullOrEmpty($VendoredPath)) {
            $Previous = Add-PwshlibMachineModulePath -Path $VendoredPath
        }
        Invoke-DscResource @InvokeParams -ErrorAction Stop
    }
    catch [System.Management.Automation.CommandNotFoundException] {
        if ($_.Exception.CommandName -ne 'Invoke-DscResource') {
            throw
        }
        throw "The DSC resource '$($InvokeParams.Name)' cannot run: it is to go through Invoke-DscResource (PWSHLIB_DSC_DIRECT, a run-as account, or not a [DscResource()] class of its module's root module nor a script resource under DSCResources), and PowerShell $($PSVersionTable.PSVersion) has no Invoke-DscResource. On PowerShell 7 it comes with the PSDesiredStateConfiguration module (2.x), from the PowerShell Gallery."
    }
    finally {
        Restore-PwshlibVendoredModulePath -Previous $Previous
    }
}

function Get-PwshlibNonSystemUser {
    # The account this host runs as, on Windows PowerShell 5.1 when it is
    # not SYSTEM (issue 41, item 5); $null on PowerShell 7 (where
    # PSDesiredStateConfiguration 2.x, too, runs resources as the user) or
    # as SYSTEM (the account the 5.1 LCM runs resources as: "Windows
    # PowerShell 5.1 resources ran under System context", the notes of
    # Invoke-DscResource's documentation). Read once per host process.
    if ($PSVersionTable.PSVersion.Major -gt 5) {
        return $null
    }
    $Slot = 'pwshlib.identity'
    $Known = [System.AppDomain]::CurrentDomain.GetData($Slot)
    if ($null -eq $Known) {
        $Identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()
        # S-1-5-18: the well-known SID of LocalSystem.
        $Known = if ($Identity.User.Value -eq 'S-1-5-18') { '' } else { [string] $Identity.Name }
        [System.AppDomain]::CurrentDomain.SetData($Slot, $Known)
    }
    if ($Known.Length -eq 0) {
        return $null
    }
    $Known
}

function ConvertTo-PwshlibPlainString {
    # A copy of a string that carries no ETS members. Windows PowerShell
    # 5.1's ConvertTo-Json (and 7.0, 7.1's) writes a string with note
    # properties as an object, {"value": ..., "PSPath": ..., ...}: so
    # every line Get-Content read, which it gives PSPath, PSParentPath,
    # PSChildName, PSDrive, PSProvider and ReadCount. PowerShell 7.2 stopped
    # that (PowerShell/PowerShell#15665, "Don't serialize to json ETS
    # properties for DateTime and string types"; issue 41, item 4).
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
    # What is left: numbers and booleans, a PSCustomObject (ConvertTo-Json
    # writes its properties), and other .NET objects, which have no
    # meaning in a MOF schema (a TimeSpan, a Version, a Guid, an
    # IPAddress): the LCM converted them to the MOF property's type, for a
    # String their text, where ConvertTo-Json would write their members as
    # an object (issue 41, item 3). The schema's other conversions (a
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
    # Names and values in order, read with foreach statements (a pipeline
    # per result cost more than the conversion itself).
    $Names = [System.Collections.Generic.List[string]]::new()
    $Values = [System.Collections.Generic.List[object]]::new()
    if ($Result -is [Microsoft.Management.Infrastructure.CimInstance]) {
        foreach ($Property in $Result.CimInstanceProperties) { $Names.Add($Property.Name); $Values.Add($Property.Value) }
    }
    elseif ($Result -is [System.Collections.IDictionary]) {
        foreach ($Key in $Result.Keys) { $Names.Add([string] $Key); $Values.Add($Result[$Key]) }
    }
    else {
        foreach ($Property in $Result.PSObject.Properties) { $Names.Add($Property.Name); $Values.Add($Property.Value) }
    }
    for ($Index = 0; $Index -lt $Names.Count; $Index++) {
        $Name = $Names[$Index]
        if ($Name -in 'PSComputerName', 'CimClass', 'CimInstanceProperties', 'CimSystemProperties') {
            continue
        }
        $Value = $Values[$Index]
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

function Get-PwshlibDirectCache {
    # What the direct path keeps for the life of the runspace: resolved
    # resources and loaded modules. The host resets the runspace between
    # calls (ResetRunspaceState clears every global variable, but keeps
    # functions and imported modules: tried on pwsh 7.6.9), so the cache
    # cannot be a global variable. It lives in the data slots of the AppDomain,
    # keyed by the runspace: a runspace the host builds anew (after a failed
    # call) starts with an empty cache, since the methods of a class-based
    # resource belong to the runspace that defined its class.
    $Key = 'pwshlib.direct.' + [runspace]::DefaultRunspace.InstanceId
    $Cache = [System.AppDomain]::CurrentDomain.GetData($Key)
    if ($null -eq $Cache) {
        $Cache = @{ Modules = @{}; Resources = @{} }
        [System.AppDomain]::CurrentDomain.SetData($Key, $Cache)
    }
    $Cache
}

function Get-PwshlibFileStamp {
    # When the files a resource was loaded from last changed: a module
    # changed on disk is loaded again.
    param([string[]] $Path)
    $Stamp = 0
    foreach ($File in $Path) {
        $Ticks = [System.IO.File]::GetLastWriteTimeUtc($File).Ticks
        if ($Ticks -gt $Stamp) { $Stamp = $Ticks }
    }
    $Stamp
}

function Find-PwshlibDscModule {
    # The manifest (.psd1) that -ModuleName of Invoke-DscResource names: a
    # path to it (script-based resources), or a name (class-based ones)
    # found on PSModulePath, where Invoke-PwshlibDscResource has put the
    # vendored folder, as <name>/<version>/<name>.psd1 or <name>/<name>.psd1.
    # With a RequiredVersion, only that version. $null when not found: the
    # caller falls back to Invoke-DscResource, whose error says why.
    param($ModuleName)
    $Name = $ModuleName
    $Version = $null
    if ($ModuleName -is [System.Collections.IDictionary]) {
        $Name = [string] $ModuleName.ModuleName
        $Version = $ModuleName.RequiredVersion
    }
    if ([string]::IsNullOrEmpty($Name)) {
        return $null
    }
    $Candidates = @()
    if ($Name.EndsWith('.psd1', [System.StringComparison]::OrdinalIgnoreCase)) {
        $Candidates = @($Name)
    }
    else {
        # An entry holding '"', '<', '>', '|' or a control character is
        # skipped (issue 41, item 8): .NET Framework's Path.Combine checks
        # each argument with Path.CheckInvalidPathChars (PathInternal.
        # HasIllegalCharacters: those characters, code 0 to 31) and throws
        # "Illegal characters in path.", so on Windows PowerShell 5.1 one
        # such entry would fail every call that looks a module up by name.
        # No module can be found under such a folder on Windows anyway.
        # .NET Core (PowerShell 7) no longer checks: skipped the same.
        foreach ($Entry in "$env:PSModulePath".Split([System.IO.Path]::PathSeparator)) {
            if ([string]::IsNullOrEmpty($Entry) -or $Entry -match '["<>|\x00-\x1f]') { continue }
            if ($null -ne $Version) {
                $Candidates += [System.IO.Path]::Combine($Entry, $Name, [string] $Version, "$Name.psd1")
            }
            $Candidates += [System.IO.Path]::Combine($Entry, $Name, "$Name.psd1")
        }
    }
    foreach ($Candidate in $Candidates) {
        if (-not [System.IO.File]::Exists($Candidate)) { continue }
        $Data = Import-PowerShellDataFile -LiteralPath $Candidate
        if ($null -ne $Version -and [version] $Data.ModuleVersion -ne [version] $Version) { continue }
        return [pscustomobject]@{
            Manifest = [System.IO.Path]::GetFullPath($Candidate)
            Base     = [System.IO.Path]::GetDirectoryName([System.IO.Path]::GetFullPath($Candidate))
            Data     = $Data
        }
    }
    $null
}

function Get-PwshlibDscModuleIndex {
    # Which resources a module implements in PowerShell files, read once
    # per runspace (and again when its manifest changes): the
    # [DscResource()] classes of its root module, by the syntax tree of the module
    # tree as Get-DscResource reads it, and its script-based resources,
    # DSCResources/<Class>/<Class>.psm1 by the FriendlyName of
    # <Class>.schema.mof (or the class name when it has none). And, so that
    # a call can say why nothing runs them (issue 41, item 11), the ones it
    # does not: Binary, a schema.mof with no .psm1 beside it (a resource
    # compiled into an assembly), and Composite, DSCResources/<Name>/
    # <Name>.schema.psm1 (a configuration, which no Invoke-DscResource runs).
    param($Module)
    $Cache = Get-PwshlibDirectCache
    $Stamp = Get-PwshlibFileStamp -Path $Module.Manifest
    $Index = $Cache.Modules[$Module.Manifest]
    if ($null -ne $Index -and $Index.Stamp -eq $Stamp) {
        return $Index
    }
    $Classes = @{}
    $Root = $null
    if (-not [string]::IsNullOrEmpty($Module.Data.RootModule)) {
        $Root = [System.IO.Path]::Combine($Module.Base, [string] $Module.Data.RootModule)
        if ($Root.EndsWith('.psm1', [System.StringComparison]::OrdinalIgnoreCase) -and [System.IO.File]::Exists($Root)) {
            $Ast = [System.Management.Automation.Language.Parser]::ParseFile($Root, [ref] $null, [ref] $null)
            $Found = $Ast.FindAll({
                    param($Node)
                    $Node -is [System.Management.Automation.Language.TypeDefinitionAst] -and
                    @($Node.Attributes | Where-Object { $_.TypeName.Name -eq 'DscResource' }).Count -gt 0
                }, $true)
            foreach ($Class in $Found) { $Classes[$Class.Name] = $Root }
        }
    }
    $Scripts = @{}
    $Binary = @{}
    $Composite = @{}
    $Folder = [System.IO.Path]::Combine($Module.Base, 'DSCResources')
    if ([System.IO.Directory]::Exists($Folder)) {
        foreach ($Schema in [System.IO.Directory]::GetFiles($Folder, '*.schema.mof', [System.IO.SearchOption]::AllDirectories)) {
            $ClassName = [System.IO.Path]::GetFileName($Schema) -replace '\.schema\.mof$', ''
            $Psm1 = [System.IO.Path]::Combine([System.IO.Path]::GetDirectoryName($Schema), "$ClassName.psm1")
            $Friendly = $ClassName
            if ([System.IO.File]::ReadAllText($Schema) -match 'FriendlyName\s*\(\s*"([^"]+)"\s*\)') {
                $Friendly = $Matches[1]
            }
            $Found = if ([System.IO.File]::Exists($Psm1)) { $Scripts } else { $Binary }
            $Found[$Friendly] = $Psm1
            if (-not $Found.ContainsKey($ClassName)) { $Found[$ClassName] = $Psm1 }
        }
        foreach ($Configuration in [System.IO.Directory]::GetFiles($Folder, '*.schema.psm1', [System.IO.SearchOption]::AllDirectories)) {
            $Composite[[System.IO.Path]::GetFileName($Configuration) -replace '\.schema\.psm1$', ''] = $Configuration
        }
    }
    $Index = @{ Stamp = $Stamp; Classes = $Classes; Scripts = $Scripts; Binary = $Binary; Composite = $Composite }
    $Cache.Modules[$Module.Manifest] = $Index
    $Index
}

function Import-PwshlibDscModule {
    # The module of a directly called resource (its manifest, or a script
    # resource's .psm1), imported once per runspace and module file (issue
    # 41, item 9): every resource of a module shares the one import, so its
    # top-level code runs once and its $script: state lasts, as in one LCM
    # process. Imported again (-Force) only when $Files change on disk;
    # -Force the first time too, so that a copy imported before (by
    # Invoke-DscResource) is read afresh.
    #
    # -Scope Local (issue 41, item 7), as PSDesiredStateConfiguration 2.x
    # imports a resource's module: what the module exports goes into this
    # function's scope and is gone when it returns, so a module exporting
    # a function named as one of the prelude's (New-PsCredential, say)
    # cannot replace it for the rest of the host's life, as -Global let it
    # (tried on pwsh 7.6.9). The calls need no exported name: the class is
    # looked up in the module's own scope, the functions through the
    # module object's ExportedCommands.
    param([string] $Path, [string[]] $Files)
    $Cache = Get-PwshlibDirectCache
    if ($null -eq $Cache.Imported) { $Cache.Imported = @{} }
    $Stamp = Get-PwshlibFileStamp -Path $Files
    $Entry = $Cache.Imported[$Path]
    if ($null -ne $Entry -and $Entry.Stamp -eq $Stamp) {
        return $Entry
    }
    $Loaded = Import-Module -Name $Path -Force -PassThru -Scope Local -Verbose:$false
    $Entry = @{ Module = $Loaded; Stamp = $Stamp }
    $Cache.Imported[$Path] = $Entry
    $Entry
}

function Resolve-PwshlibDscResource {
    # The resource that $InvokeParams names, loaded and ready to call:
    # @{ Kind = 'Class'; Type } or @{ Kind = 'Script'; Module }. Resolved
    # and loaded once per runspace; loaded again when its files change on
    # disk. $null when it is not implemented in PowerShell files this
    # module holds (a binary or composite resource, a module not found):
    # the caller then calls Invoke-DscResource.
    param([hashtable] $InvokeParams)
    $Cache = Get-PwshlibDirectCache
    $Version = if ($InvokeParams.ModuleName -is [System.Collections.IDictionary]) { $InvokeParams.ModuleName.RequiredVersion } else { '' }
    $ModuleText = if ($InvokeParams.ModuleName -is [System.Collections.IDictionary]) { $InvokeParams.ModuleName.ModuleName } else { $InvokeParams.ModuleName }
    $Key = "$($InvokeParams.Name)|$ModuleText|$Version|$env:PSModulePath"
    $Entry = $Cache.Resources[$Key]
    if ($null -ne $Entry -and (Get-PwshlibFileStamp -Path $Entry.Files) -eq $Entry.Stamp) {
        return $Entry
    }
    $Module = Find-PwshlibDscModule -ModuleName $InvokeParams.ModuleName
    if ($null -eq $Module) {
        return $null
    }
    $Index = Get-PwshlibDscModuleIndex -Module $Module
    $Name = [string] $InvokeParams.Name
    if ($Index.Classes.ContainsKey($Name)) {
        $Files = @($Module.Manifest, $Index.Classes[$Name])
        $Loaded = Import-PwshlibDscModule -Path $Module.Manifest -Files $Files
        # The class looked up in the scope of the module. `using module`
        # would not do: a second `using module` of a file that changed
        # still gives the class first defined from it (tried on pwsh 7.6.9).
        $Type = & $Loaded.Module ([scriptblock]::Create("[$Name]"))
        $Entry = @{ Kind = 'Class'; Type = $Type; Files = $Files; Stamp = $Loaded.Stamp }
    }
    elseif ($Index.Scripts.ContainsKey($Name)) {
        $Psm1 = $Index.Scripts[$Name]
        $Files = @($Psm1)
        $Loaded = Import-PwshlibDscModule -Path $Psm1 -Files $Files
        $Entry = @{ Kind = 'Script'; Module = $Loaded.Module; Files = $Files; Stamp = $Loaded.Stamp }
    }
    elseif ($Index.Composite.ContainsKey($Name)) {
        # Neither the LCM's Invoke-DscResource nor PSDesiredStateConfiguration
        # 2.x's runs a composite resource (a configuration made of other
        # resources, with no Get, Set or Test of its own): both run one
        # method of one resource.
        throw "The DSC resource '$Name' of module '$([System.IO.Path]::GetFileNameWithoutExtension($Module.Manifest))' is a composite resource (a configuration of other resources): Invoke-DscResource runs no composite resource, on Windows PowerShell 5.1 or PowerShell 7, so nothing can run it here. Declare the resources it is made of instead."
    }
    elseif ($Index.Binary.ContainsKey($Name) -and $PSVersionTable.PSVersion.Major -gt 5) {
        # PSDesiredStateConfiguration 2.x runs only resources implemented in
        # PowerShell: its Invoke-DscResource "no longer supports invoking
        # WMI DSC resources" (the notes of its documentation), and pwsh has
        # no LCM to hand one to.
        throw "The DSC resource '$Name' of module '$([System.IO.Path]::GetFileNameWithoutExtension($Module.Manifest))' is a binary resource (not implemented in PowerShell): PowerShell $($PSVersionTable.PSVersion) cannot run it (PSDesiredStateConfiguration 2.x runs only resources written in PowerShell). Run it with Windows PowerShell 5.1, whose LCM runs it through Invoke-DscResource (with the LCM's RefreshMode set to Disabled)."
    }
    else {
        return $null
    }
    $Cache.Resources[$Key] = $Entry
    $Entry
}

function ConvertFrom-PwshlibCimValue {
    # A value for a property of a class-based resource called directly:
    # on Windows PowerShell 5.1 the script makes embedded instances CIM
    # instances (for the LCM), which PowerShell cannot convert to the
    # nested class of the resource, while a hashtable converts (each key set as
    # a property). So a CIM instance becomes a hashtable of its properties,
    # and an MSFT_Credential a PSCredential, as the LCM gives them to the
    # class. On PowerShell 7 the values are hashtables already.
    param($Value)
    if ($Value -is [Microsoft.Management.Infrastructure.CimInstance]) {
        if ($Value.CimSystemProperties.ClassName -eq 'MSFT_Credential') {
            # Through the host's compiled code where it runs, before any
            # member is read: no command or function receives the password
            # as a string (module logging).
            $Builder = 'PwshlibHost.SecretValues' -as [type]
            if ($null -ne $Builder) {
                return $Builder::CredentialOf($Value)
            }
            $Table = @{}
            foreach ($Property in $Value.CimInstanceProperties) {
                $Table[$Property.Name] = $Property.Value
            }
            return New-PsCredential -User $Table.UserName -Password $Table.Password
        }
        $Table = @{}
        foreach ($Property in $Value.CimInstanceProperties) {
            $Table[$Property.Name] = ConvertFrom-PwshlibCimValue -Value $Property.Value
        }
        return $Table
    }
    if ($Value -is [array]) {
        return , @(foreach ($Item in $Value) { ConvertFrom-PwshlibCimValue -Value $Item })
    }
    $Value
}

function Get-PwshlibGetTargetResourceParameter {
    # The names of the parameters Get-TargetResource declares in a script
    # resource's .psm1, read from its syntax tree (the module is not
    # imported: Invoke-DscResource does that), once per runspace and again
    # when the file changes. $null when the file defines no such function.
    param([string] $Path)
    $Cache = Get-PwshlibDirectCache
    if ($null -eq $Cache.GetParameters) { $Cache.GetParameters = @{} }
    $Stamp = Get-PwshlibFileStamp -Path $Path
    $Entry = $Cache.GetParameters[$Path]
    # The comma keeps the set a set on the way out (a returned collection
    # is enumerated: one name would come back a string).
    if ($null -ne $Entry -and $Entry.Stamp -eq $Stamp) {
        return , $Entry.Names
    }
    $Ast = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref] $null, [ref] $null)
    $Function = $Ast.Find({
            param($Node)
            $Node -is [System.Management.Automation.Language.FunctionDefinitionAst] -and $Node.Name -eq 'Get-TargetResource'
        }, $true)
    $Names = $null
    if ($null -ne $Function) {
        # Case-insensitive, as PowerShell binds parameters.
        $Names = [System.Collections.Generic.HashSet[string]]::new([System.StringComparer]::OrdinalIgnoreCase)
        $Parameters = if ($null -ne $Function.Body.ParamBlock) { $Function.Body.ParamBlock.Parameters } else { $Function.Parameters }
        foreach ($Parameter in $Parameters) { [void] $Names.Add($Parameter.Name.VariablePath.UserPath) }
    }
    $Cache.GetParameters[$Path] = @{ Stamp = $Stamp; Names = $Names }
    , $Names
}

function Select-PwshlibGetTargetResourceProperty {
    # $InvokeParams of a Get through Invoke-DscResource, its Property kept,
    # for a script-based resource, to the parameters its Get-TargetResource
    # declares (and PsDscRunAsCredential, which the engine takes itself).
    # A Get carries the desired state (docs/behavior.md section 4, "Parameters"),
    # and PSDesiredStateConfiguration 2.0.7 splats -Property on
    # Get-TargetResource unfiltered, so a name it does not declare would
    # fail the call (PowerShell/DSC#260); DSC v3's adapter, the LCM and the
    # direct path (Invoke-PwshlibDirect) pass the declared ones only. As
    # given for a class-based resource, or one not found in PowerShell
    # files of its module.
    param([hashtable] $InvokeParams)
    $Module = Find-PwshlibDscModule -ModuleName $InvokeParams.ModuleName
    if ($null -eq $Module) { return $InvokeParams }
    $Psm1 = (Get-PwshlibDscModuleIndex -Module $Module).Scripts[[string] $InvokeParams.Name]
    if ($null -eq $Psm1) { return $InvokeParams }
    $Declared = Get-PwshlibGetTargetResourceParameter -Path $Psm1
    if ($null -eq $Declared) { return $InvokeParams }
    $Property = @{}
    foreach ($Key in $InvokeParams.Property.Keys) {
        if ($Key -eq 'PsDscRunAsCredential' -or $Declared.Contains($Key)) { $Property[$Key] = $InvokeParams.Property[$Key] }
    }
    $Selected = $InvokeParams.Clone()
    $Selected.Property = $Property
    $Selected
}

function Invoke-PwshlibDirect {
    # Calls the method of the resolved resource as Invoke-DscResource would, and
    # returns what Invoke-DscResource returns: Get the result of the resource,
    # Test an object with InDesiredState, Set one with RebootRequired.
    # $Seen.GetReturnedThis is set when a class's Get() returned the very
    # instance it was called on (`return $this`): its properties are the
    # desired values assigned below unless Get() read them, so the
    # provider judges that resource by its Test (docs/behavior.md section 3
    # "insync?"). [object]::ReferenceEquals sees the same object through
    # PowerShell's method call and pipeline (tried on pwsh 7.6.9).
    param($Resolved, [hashtable] $InvokeParams, [hashtable] $Seen = @{}, [bool] $Strict = $false)
    $Method = [string] $InvokeParams.Method
    $Property = $InvokeParams.Property
    # Reset before the call, read after Set: a resource asks for a reboot
    # by setting it to 1 (as the LCM and PSDesiredStateConfiguration 2.x
    # read it).
    $global:DSCMachineStatus = $null
    if ($Resolved.Kind -eq 'Class') {
        $Resource = $Resolved.Type::new()
        foreach ($Key in $Property.Keys) {
            $Value = $Property[$Key]
            # ConvertFrom-PwshlibCimValue changes CIM instances and arrays
            # only: other values skip the call.
            if ($Value -is [Microsoft.Management.Infrastructure.CimInstance] -or $Value -is [array]) {
                $Value = ConvertFrom-PwshlibCimValue -Value $Value
            }
            $Resource.$Key = $Value
        }
        switch ($Method) {
            'Get' {
                $Result = $Resource.Get()
                $Seen.GetReturnedThis = [object]::ReferenceEquals($Result, $Resource)
                return $Result
            }
            'Test' { return [pscustomobject]@{ InDesiredState = [bool] $Resource.Test() } }
            'Set' {
                $Resource.Set()
                return [pscustomobject]@{ RebootRequired = ($global:DSCMachineStatus -eq 1) }
            }
        }
    }
    $Command = $Resolved.Module.ExportedCommands["$Method-TargetResource"]
    if ($null -eq $Command) {
        throw "The DSC resource '$($InvokeParams.Name)' has no $Method-TargetResource function"
    }
    # Only the parameters the function declares, as the LCM and
    # PSDesiredStateConfiguration pass them: Get-TargetResource declares
    # the keys and mandatory properties only.
    $Arguments = @{}
    foreach ($Key in $Property.Keys) {
        if ($Command.Parameters.ContainsKey($Key)) { $Arguments[$Key] = $Property[$Key] }
    }
    switch ($Method) {
        'Get' { return & $Command @Arguments }
        'Test' {
            $Output = @(& $Command @Arguments)
            if ($Strict -and -not ($Output.Count -eq 1 -and $Output[0] -is [bool])) {
                # The 5.1 LCM takes the one boolean the function returns
                # (ResourceTest's InDesiredState is a boolean, its MOF
                # says) and refuses anything else; PowerShell 7's
                # PSDesiredStateConfiguration 2.x casts what it gets, as
                # the lenient branch below does. The types only, never
                # the values: the output may hold anything.
                $Types = @(foreach ($Item in $Output) { if ($null -eq $Item) { 'null' } else { $Item.GetType().Name } })
                throw "The DSC resource '$($InvokeParams.Name)' returned $($Output.Count) value(s) from Test-TargetResource ($($Types -join ', ')), not one boolean: Windows PowerShell 5.1 takes exactly one `$true or `$false, as its LCM did."
            }
            return [pscustomobject]@{ InDesiredState = [bool] ($Output | Select-Object -Last 1) }
        }
        'Set' {
            & $Command @Arguments | Out-Null
            return [pscustomobject]@{ RebootRequired = ($global:DSCMachineStatus -eq 1) }
        }
    }
}

function Invoke-PwshlibDscCall {
    # The call itself, directly or through Invoke-DscResource, with every
    # stream the resource writes merged into its output in order: its
    # warnings, verbose, debug, information and Write-Host lines are shown
    # to the user (Write-PwshlibResult). The method of a resource reads the
    # preference variables of its module, whose parent is the global
    # scope, so they are set there for the call and put back after (tried
    # on pwsh 7.6.9: Write-Verbose in a class method is captured so).
    #
    # $ErrorActionPreference likewise: the script's header sets it to Stop
    # in the global scope (the host runs the script there), and a
    # resource's module, its top-level code when it is imported and its
    # classes all read it there. The LCM runs resources with Continue: a
    # non-terminating error does not stop the resource, and on Windows
    # PowerShell 5.1 (and 7.0, 7.1) a native program's stderr redirected
    # with 2>$null is not made a terminating error (issue 41, item 1;
    # tried on pwsh 7.6.9: a Get-TargetResource called here saw Stop).
    # So the global value is Continue for the call, and our own code keeps
    # Stop in this function's scope: the functions called from here
    # (Resolve-PwshlibDscResource and its Import-Module, Invoke-PwshlibDirect)
    # read it through their callers, a module's code never does, since its
    # scopes end in the global one.
    param([hashtable] $InvokeParams, [bool] $Direct, [hashtable] $Seen = @{}, [string] $VendoredPath, [bool] $Strict = $false)
    $ErrorActionPreference = 'Stop'
    $Saved = @($global:VerbosePreference, $global:DebugPreference, $global:InformationPreference, $global:WarningPreference, $global:ErrorActionPreference)
    try {
        # Before the module is imported (its top-level code runs then), but
        # the streams only for the call itself: an import's own verbose
        # lines are not the resource's.
        $global:ErrorActionPreference = 'Continue'
        $Resolved = $null
        if ($Direct) {
            $Resolved = Resolve-PwshlibDscResource -InvokeParams $InvokeParams
        }
        $global:VerbosePreference = 'Continue'
        $global:DebugPreference = 'Continue'
        $global:InformationPreference = 'Continue'
        $global:WarningPreference = 'Continue'
        if ($null -ne $Resolved) {
            & { Invoke-PwshlibDirect -Resolved $Resolved -InvokeParams $InvokeParams -Seen $Seen -Strict $Strict } *>&1
        }
        else {
            if ($InvokeParams.Method -eq 'Get') {
                $InvokeParams = Select-PwshlibGetTargetResourceProperty -InvokeParams $InvokeParams
            }
            # -ErrorAction Stop (on Invoke-DscResource, in
            # Invoke-PwshlibDscResourceCmdlet): an error of Invoke-DscResource
            # itself (on 5.1, the LCM's report that the resource failed) ends
            # the call as the global Stop used to; it is set in the scope of
            # Invoke-DscResource, not of the resource.
            & { Invoke-PwshlibDscResourceCmdlet -InvokeParams $InvokeParams -VendoredPath $VendoredPath } *>&1
        }
    }
    finally {
        $global:VerbosePreference, $global:DebugPreference, $global:InformationPreference, $global:WarningPreference, $global:ErrorActionPreference = $Saved
    }
}

function Split-PwshlibStreams {
    # Separates the records of the merged streams of a call from its output:
    # returns @{ Output = the values; Streams = @({kind; text}, ...) }.
    param([object[]] $Items)
    $Values = [System.Collections.Generic.List[object]]::new()
    $Streams = [System.Collections.Generic.List[object]]::new()
    foreach ($Item in $Items) {
        $Kind = $null
        $Text = $null
        if ($Item -is [System.Management.Automation.WarningRecord]) { $Kind = 'warning'; $Text = $Item.Message }
        elseif ($Item -is [System.Management.Automation.VerboseRecord]) { $Kind = 'verbose'; $Text = $Item.Message }
        elseif ($Item -is [System.Management.Automation.DebugRecord]) { $Kind = 'debug'; $Text = $Item.Message }
        elseif ($Item -is [System.Management.Automation.InformationRecord]) {
            # Write-Host writes an information record tagged PSHOST.
            $Kind = if ($Item.Tags -contains 'PSHOST') { 'host' } else { 'information' }
            $Text = [string] $Item.MessageData
        }
        elseif ($Item -is [System.Management.Automation.ErrorRecord]) { $Kind = 'error'; $Text = $Item.ToString() }
        if ($null -ne $Kind) {
            $Streams.Add([ordered]@{ kind = $Kind; text = [string] $Text })
        }
        else {
            $Values.Add($Item)
        }
    }
    @{ Output = $Values; Streams = $Streams }
}

function Invoke-PwshlibDscResource {
    # Runs the one DSC call that $InvokeParams describes and writes its
    # outcome as a single line of compressed JSON, the only output the
    # provider reads; when the resource wrote to its warning, verbose,
    # debug or information streams (or Write-Host), a line of JSON with
    # those records comes first ({"pwshlib_streams":[{kind,text}...]}).
    # -VendoredPath (the resource's vendored folder, when known) is added
    # to PSModulePath for the call (Add-PwshlibVendoredModulePath; for a
    # call through the 5.1 LCM to the machine-level value as well,
    # Invoke-PwshlibDscResourceCmdlet).
    #
    # The call is made directly (the class of the resource, or its
    # <Method>-TargetResource function, loaded once per host runspace) unless
    # -ThroughInvokeDscResource (PWSHLIB_DSC_DIRECT=0 for the agent), the
    # resource runs as PsDscRunAsCredential on Windows PowerShell 5.1 (the
    # LCM starts it as that account), -LcmUnlessSystem
    # (PWSHLIB_DSC_DIRECT=system) on 5.1 in a host that is not SYSTEM, or it
    # is not implemented in PowerShell files of its module (a binary
    # resource on 5.1). A direct call on 5.1 in a host that is not SYSTEM
    # adds a record {kind = 'identity'; text = the account} to the streams
    # line: the provider warns once per run that resources no longer run as
    # SYSTEM, as the LCM ran them (issue 41, item 5).
    param(
        [Parameter(Mandatory = $true)]
        [hashtable] $InvokeParams,

        [switch] $ThroughInvokeDscResource,

        [switch] $LcmUnlessSystem,

        [string] $VendoredPath
    )
    # Asked on 5.1 only: a function call per DSC call is not free, and on
    # PowerShell 7 the answer is $null.
    $PwshlibUser = if ($PSVersionTable.PSVersion.Major -le 5) { Get-PwshlibNonSystemUser } else { $null }
    $PwshlibDirect = -not $ThroughInvokeDscResource -and -not $InvokeParams.Property.ContainsKey('PsDscRunAsCredential') -and -not ($LcmUnlessSystem -and $null -ne $PwshlibUser)
    # The outcome of a Set, and of any failed Get or Set.
    $Response = [ordered]@{
        indesiredstate = $false
        rebootrequired = $false
        errormessage   = ''
    }
    $Streams = @()
    # The output of the call and the records of its streams, collected as they
    # come, so that what the resource wrote before it failed is shown too.
    $Merged = [System.Collections.Generic.List[object]]::new()
    # What the direct call saw of the resource (Invoke-PwshlibDirect).
    $Seen = @{}
    # On Windows PowerShell 5.1 as strict as its LCM, on 7 as lenient as
    # PSDesiredStateConfiguration 2.x (issue 41, item 2): strict, a
    # resource's non-terminating errors fail the call, and a script-based
    # Test must return one boolean. $PwshlibDscStrict,
    # when a script sets it, picks the branch (a test's switch: the
    # real pwsh on Linux is 7).
    $Strict = $PSVersionTable.PSVersion.Major -le 5
    if ($null -ne $PwshlibDscStrict) {
        $Strict = [bool] $PwshlibDscStrict
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
        if (-not [string]::IsNullOrEmpty($VendoredPath)) {
            Add-PwshlibVendoredModulePath -Path $VendoredPath
        }
        Invoke-PwshlibDscCall -InvokeParams $InvokeParams -Direct $PwshlibDirect -Seen $Seen -VendoredPath $VendoredPath -Strict $Strict | & { process { $Merged.Add($_) } }
        $Split = Split-PwshlibStreams -Items $Merged.ToArray()
        $Streams = @($Split.Streams)
        if ($Strict) {
            # The 5.1 LCM fails a resource that wrote to its error stream,
            # even when it went on to return: "The PowerShell DSC resource
            # '...' threw one or more non-terminating errors while running
            # the Set-TargetResource functionality. These errors are logged
            # to the ETW channel called Microsoft-Windows-DSC/Operational"
            # (its message, as UKCloud's Azure Stack guide quotes it,
            # azs-how-deploy-sql-template-powershell.md). There is no ETW
            # channel here: the errors follow, and show at --debug too.
            $Errors = @(foreach ($Record in $Split.Streams) { if ($Record.kind -eq 'error') { $Record.text } })
            if ($Errors.Count -gt 0) {
                throw "The PowerShell DSC resource '$($InvokeParams.Name)' threw one or more non-terminating errors while running the $($InvokeParams.Method)-TargetResource functionality: $($Errors -join ' ')"
            }
        }
        $PwshlibResult = if ($Split.Output.Count -eq 1) { $Split.Output[0] } else { $Split.Output | Select-Object -Last 1 }
        switch ($InvokeParams.Method) {
            'Get' {
                $PwshlibOutput = ConvertTo-PwshlibCanonicalResult -Result $PwshlibResult
                if ($Seen.GetReturnedThis) {
                    # Read by the provider (GET_RETURNED_THIS), never a property.
                    $PwshlibOutput['pwshlib_get_returned_this'] = $true
                }
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
        $Streams = @((Split-PwshlibStreams -Items $Merged.ToArray()).Streams)
        # A failure must never come back with an empty message: the provider
        # tells success from failure by it. The exception of a class method
        # arrives wrapped in a MethodInvocationException ("Exception calling
        # Get ..."): the message the resource threw is the one inside.
        $PwshlibException = $_.Exception
        if ($PwshlibException -is [System.Management.Automation.MethodInvocationException] -and $null -ne $PwshlibException.InnerException) {
            $PwshlibException = $PwshlibException.InnerException
        }
        $PwshlibMessage = $PwshlibException.Message
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
    if ($PwshlibDirect -and $null -ne $PwshlibUser) {
        $Streams = @([ordered]@{ kind = 'identity'; text = $PwshlibUser }) + @($Streams)
    }
    $Lines = [System.Collections.Generic.List[string]]::new()
    if ($Streams.Count -gt 0) {
        $Lines.Add((ConvertTo-Json -InputObject ([ordered]@{ pwshlib_streams = $Streams }) -Compress -Depth 4))
    }
    $Lines.Add((ConvertTo-Json -InputObject $PwshlibOutput -Compress -Depth 10))
    if ($null -ne ('PwshlibHost.SecretValues' -as [type])) {
        # pwshlib's host reads the lines from this variable after the call
        # (PwshlibHost.cs, DscOutputVariable): transcription records a
        # pipeline's output, and a Get's result may hold what the system
        # keeps secret. A variable's value is in no PowerShell log.
        $global:PwshlibDscOutput = $Lines.ToArray()
        return
    }
    $Lines.ToArray()
}
