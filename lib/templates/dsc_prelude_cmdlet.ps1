function Add-PwshlibVendoredModulePath {
    # Puts a module's vendored dsc_resources folder on this process's
    # PSModulePath, for every resource: a vendored module may import a
    # vendored sibling by name (SqlServerDsc imports DscResource.Common),
    # and Import-Module finds a module by name only through PSModulePath.
    # $env:PSModulePath gains the folder when it lacks it; the host puts the
    # process environment back before each call. A direct call needs no
    # more: the machine-level value is for the LCM alone
    # (Add-PwshlibMachineModulePath), so a direct call writes no registry
    # value and runs unelevated. On Windows PowerShell
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
    # meanwhile (an installer, a resource that manages PSModulePath) stays.
    # The value keeps its kind (REG_EXPAND_SZ stays
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
    # it. Never for a direct call, nor on PowerShell 7,
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
    # fails naming the resource and what is missing,
    # not with PowerShell's "not recognized" for the command.
    #
    # PSDesiredStateConfiguration 2.x (PowerShell 7) writes every property
    # it assigns to a class-based resource to the debug stream, "Setting
    # $key to $value" (its Invoke-DscClassBasedResource, carried over in
    # PowerShell/DSC's powershell-adapter/psDscAdapter.psm1), and module
    # logging (event 4103) records the bound -Message of each Write-Debug
    # whatever the preference: a Sensitive plain string in clear. For the
    # call, a global function of the same name, which command lookup finds
    # before the cmdlet from the module's scope too, drops what that
    # module's own file writes and hands anything else (the resource's
    # own Write-Debug) to the cmdlet; a function of no module is not
    # module-logged. Windows PowerShell 5.1 hands the call to the LCM.
    param([hashtable] $InvokeParams, [string] $VendoredPath)
    $Previous = $null
    $PwshlibQuietDebug = $PSVersionTable.PSVersion.Major -gt 5
    try {
        if (-not [string]::IsNullOrEmpty($VendoredPath)) {
            $Previous = Add-PwshlibMachineModulePath -Path $VendoredPath
        }
        if ($PwshlibQuietDebug) {
            ${function:global:Write-Debug} = {
                [CmdletBinding()]
                param([Parameter(Position = 0, ValueFromPipeline = $true)] [AllowEmptyString()] [Alias('Msg')] [string] $Message)
                process {
                    if ([System.IO.Path]::GetFileName($MyInvocation.ScriptName) -ne 'PSDesiredStateConfiguration.psm1') {
                        Microsoft.PowerShell.Utility\Write-Debug -Message $Message
                    }
                }
            }
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
        if ($PwshlibQuietDebug) {
            Remove-Item -LiteralPath 'Function:\Write-Debug' -ErrorAction Ignore
        }
        Restore-PwshlibVendoredModulePath -Previous $Previous
    }
}

function Get-PwshlibNonSystemUser {
    # The account this host runs as, on Windows PowerShell 5.1 when it is
    # not SYSTEM; $null on PowerShell 7 (where
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
