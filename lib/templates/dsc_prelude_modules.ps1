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
        # skipped: .NET Framework's Path.Combine checks
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
    # [DscResource()] classes of its root and nested module files, by
    # their syntax trees as Get-DscResource reads them, and its
    # script-based resources, <Class>/<Class>.psm1 under its DSCResources
    # folder by the FriendlyName of <Class>.schema.mof (or the class name
    # when it has none). And, so that a call can say why nothing runs them
    # the ones it does not: Binary, a schema.mof with
    # no .psm1 beside it (a resource compiled into an assembly), and
    # Composite, <Name>/<Name>.schema.psm1 (a configuration, which no
    # Invoke-DscResource runs). Which files and folders those are is
    # Get-PwshlibDscModuleLayout's to say; the host reads them in compiled
    # code (PwshlibHost.DscModuleIndex, which also keeps what it found in a
    # file between hosts), without the host
    # Get-PwshlibDscModuleIndexInPowerShell does.
    param($Module)
    $Cache = Get-PwshlibDirectCache
    $Stamp = Get-PwshlibFileStamp -Path $Module.Manifest
    $Index = $Cache.Modules[$Module.Manifest]
    if ($null -ne $Index -and $Index.Stamp -eq $Stamp) {
        return $Index
    }
    $Layout = Get-PwshlibDscModuleLayout -Module $Module
    $Reader = 'PwshlibHost.DscModuleIndex' -as [type]
    $Index = if ($null -ne $Reader) { $Reader::Read($Layout.ClassFiles, $Layout.ResourceFolders) } else { Get-PwshlibDscModuleIndexInPowerShell -ClassFiles $Layout.ClassFiles -ResourceFolders $Layout.ResourceFolders }
    $Index.Stamp = $Stamp
    $Cache.Modules[$Module.Manifest] = $Index
    $Index
}

function Get-PwshlibDscModuleLayout {
    # Where a module's DSC resources can be, by the rules Import-Module and
    # the DSC engines follow (PSDesiredStateConfiguration's Get-DscResource
    # and DSC v3's PowerShell adapter read the same places):
    #  * ClassFiles: the .psm1 or .ps1 files of its manifest's RootModule
    #    and NestedModules, in that order, which Import-Module loads into
    #    the module and whose [DscResource()] classes the engines call. An
    #    entry is a path relative to the module's folder, with or without
    #    its extension (.psm1 is tried, as Import-Module tries it), or a
    #    module specification; '\' in it is a folder separator on every
    #    platform, as Import-Module reads it (tried on pwsh 7.6.9). Other
    #    entries (a .dll, a module found by name elsewhere) hold no class
    #    a syntax tree shows.
    #  * ResourceFolders: the module's DSCResources folder in any case: on
    #    Windows the file system finds it however it is spelled, and the
    #    Gallery's modules spell it DSCResources (the dsccommunity ones) or
    #    DscResources (PSDesiredStateConfiguration 2.0.7's own lookup).
    param($Module)
    $Separator = [string] [System.IO.Path]::DirectorySeparatorChar
    $ClassFiles = [System.Collections.Generic.List[string]]::new()
    foreach ($Entry in @($Module.Data.RootModule) + @($Module.Data.NestedModules)) {
        $Relative = if ($Entry -is [System.Collections.IDictionary]) { [string] $Entry.ModuleName } else { [string] $Entry }
        if ([string]::IsNullOrEmpty($Relative)) { continue }
        $Path = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($Module.Base, $Relative.Replace('\', $Separator)))
        if (-not ($Path.EndsWith('.psm1', [System.StringComparison]::OrdinalIgnoreCase) -or $Path.EndsWith('.ps1', [System.StringComparison]::OrdinalIgnoreCase))) {
            $Path = "$Path.psm1"
        }
        if ([System.IO.File]::Exists($Path) -and -not $ClassFiles.Contains($Path)) { $ClassFiles.Add($Path) }
    }
    $ResourceFolders = @(foreach ($Folder in [System.IO.Directory]::GetDirectories($Module.Base)) {
            if ([System.IO.Path]::GetFileName($Folder) -eq 'DSCResources') { $Folder }
        })
    @{ ClassFiles = $ClassFiles.ToArray(); ResourceFolders = [string[]] $ResourceFolders }
}

function Get-PwshlibDscModuleIndexInPowerShell {
    # Get-PwshlibDscModuleIndex's reading without the host: a function of
    # its own, compiled only when called (PowerShell compiles a function's
    # whole body at its first call, which a fresh host's first call pays).
    param([string[]] $ClassFiles, [string[]] $ResourceFolders)
    $Classes = @{}
    foreach ($File in $ClassFiles) {
        $Ast = [System.Management.Automation.Language.Parser]::ParseFile($File, [ref] $null, [ref] $null)
        $Found = $Ast.FindAll({
                param($Node)
                $Node -is [System.Management.Automation.Language.TypeDefinitionAst] -and
                @($Node.Attributes | Where-Object { $_.TypeName.Name -eq 'DscResource' }).Count -gt 0
            }, $true) | ForEach-Object { $_.Name }
        foreach ($DscClassName in $Found) {
            if (-not $Classes.ContainsKey($DscClassName)) { $Classes[$DscClassName] = $File }
        }
    }
    $Scripts = @{}
    $Binary = @{}
    $Composite = @{}
    $Unreadable = [System.Collections.Generic.List[string]]::new()
    foreach ($Folder in $ResourceFolders) {
        foreach ($Schema in (Get-PwshlibFilesUnder -Folder $Folder -Pattern '*.schema.mof' -Unreadable $Unreadable)) {
            $ClassName = [System.IO.Path]::GetFileName($Schema) -replace '\.schema\.mof$', ''
            $Psm1 = [System.IO.Path]::Combine([System.IO.Path]::GetDirectoryName($Schema), "$ClassName.psm1")
            $Friendly = $ClassName
            if ([System.IO.File]::ReadAllText($Schema) -match 'FriendlyName\s*\(\s*"([^"]+)"\s*\)') {
                $Friendly = $Matches[1]
            }
            $IsScript = [System.IO.File]::Exists($Psm1)
            $Found = if ($IsScript) { $Scripts } else { $Binary }
            $Where = if ($IsScript) { $Psm1 } else { $Schema }
            $Found[$Friendly] = $Where
            if (-not $Found.ContainsKey($ClassName)) { $Found[$ClassName] = $Where }
        }
        foreach ($Configuration in (Get-PwshlibFilesUnder -Folder $Folder -Pattern '*.schema.psm1' -Unreadable $Unreadable)) {
            $Composite[[System.IO.Path]::GetFileName($Configuration) -replace '\.schema\.psm1$', ''] = $Configuration
        }
    }
    @{ Classes = $Classes; Scripts = $Scripts; Binary = $Binary; Composite = $Composite; Unreadable = $Unreadable.ToArray() }
}

function Get-PwshlibFilesUnder {
    # PwshlibHost.DscModuleIndex.FilesUnder without the host (it says why):
    # a folder too deep to read is named in $Unreadable, not a failure of
    # the whole index.
    param([string] $Folder, [string] $Pattern, $Unreadable)
    try {
        return [System.IO.Directory]::GetFiles($Folder, $Pattern, [System.IO.SearchOption]::AllDirectories)
    } catch [System.IO.PathTooLongException] {
    }
    $Pending = [System.Collections.Generic.Stack[string]]::new()
    $Pending.Push($Folder)
    while ($Pending.Count -gt 0) {
        $Current = $Pending.Pop()
        try {
            $Files = [System.IO.Directory]::GetFiles($Current, $Pattern)
            $Inner = [System.IO.Directory]::GetDirectories($Current)
        } catch [System.IO.PathTooLongException] {
            if (-not $Unreadable.Contains($Current)) { $Unreadable.Add($Current) }
            continue
        }
        $Files
        [Array]::Reverse($Inner)
        foreach ($Next in $Inner) { $Pending.Push($Next) }
    }
}

function Import-PwshlibDscModule {
    # The module of a directly called resource (its manifest, or a script
    # resource's .psm1), imported once per runspace and module file:
    # every resource of a module shares the one import, so its
    # top-level code runs once and its $script: state lasts, as in one LCM
    # process. Imported again (-Force) only when $Files change on disk;
    # -Force the first time too, so that a copy imported before (by
    # Invoke-DscResource) is read afresh. Import-Module does what the
    # manifest asks, as for the DSC engines: its ScriptsToProcess, its
    # RequiredModules (found on PSModulePath, the vendored folder among
    # them), its TypesToProcess and NestedModules.
    #
    # -Scope Local, as PSDesiredStateConfiguration 2.x
    # imports a resource's module: what the module exports goes into this
    # function's scope and is gone when it returns, so a module exporting
    # a function named as one of the prelude's (New-PsCredential, say)
    # cannot replace it for the rest of the host's life, as -Global let it
    # (tried on pwsh 7.6.9). The calls need no exported name: the class is
    # looked up in the module's own scope, the functions through the
    # module object's ExportedCommands.
    #
    # The import runs inside a module of its own (Holder), which lives as
    # long as the entry: Import-Module runs a .ps1 RootModule, and the
    # ScriptsToProcess, in the scope that called it, not in the module's
    # (tried on pwsh 7.6.9: a .ps1 root module's classes and functions
    # were gone once this function returned, and its class methods failed
    # calling its own functions). In the engines that scope is their
    # runspace's, which lasts; here it is the Holder's.
    #
    # -PassThru returns each of the manifest's ScriptsToProcess as a module
    # of its own before the module (pwsh 7.6.9; DSC v3's psDscAdapter.psm1
    # says the same): only the one named as the file is the module.
    param([string] $Path, [string[]] $Files)
    $Cache = Get-PwshlibDirectCache
    if ($null -eq $Cache.Imported) { $Cache.Imported = @{} }
    $Stamp = Get-PwshlibFileStamp -Path $Files
    $Entry = $Cache.Imported[$Path]
    if ($null -ne $Entry -and $Entry.Stamp -eq $Stamp) {
        return $Entry
    }
    $Holder = New-Module -Name PwshlibDscImport -ArgumentList $Path -ScriptBlock {
        param([string] $Path)
        $script:Returned = @(Import-Module -Name $Path -Force -PassThru -Scope Local -Verbose:$false)
        Export-ModuleMember
    }
    $Returned = & $Holder { $script:Returned }
    $Name = [System.IO.Path]::GetFileNameWithoutExtension($Path)
    $Loaded = $null
    foreach ($Candidate in $Returned) {
        if ($Candidate.Name -eq $Name) { $Loaded = $Candidate }
    }
    if ($null -eq $Loaded) {
        throw "Import-Module '$Path' returned no module named '$Name' (it returned: $(@($Returned | ForEach-Object { $_.Name }) -join ', '))."
    }
    $Entry = @{ Module = $Loaded; Holder = $Holder; Stamp = $Stamp }
    $Cache.Imported[$Path] = $Entry
    $Entry
}

function Get-PwshlibDscClassType {
    # The type of the [DscResource()] class $Name that $File defines, looked
    # up in the scope that ran the file: a nested module's own, the root
    # module's (a .psm1 root module, and a .ps1 nested module, which
    # Import-Module runs in the root module's scope), or the Holder's (a
    # .ps1 root module: Import-PwshlibDscModule). `using module` would
    # not do: a second `using module` of a file that changed still gives
    # the class first defined from it (tried on pwsh 7.6.9).
    param($Loaded, [string] $Name, [string] $File)
    $Module = $Loaded.Module
    $Scopes = @(foreach ($Nested in $Module.NestedModules) { if ($Nested.Path -eq $File) { $Nested } }) + @($Module, $Loaded.Holder)
    $Lookup = [scriptblock]::Create("[$Name]")
    foreach ($Scope in $Scopes) {
        $Type = try { & $Scope $Lookup } catch { $null }
        if ($Type -is [type]) { return $Type }
    }
    throw "The DSC resource '$Name': its class, found in '$File', is not defined once module '$($Module.Name)' is imported."
}

function Resolve-PwshlibDscResource {
    # The resource that $InvokeParams names, loaded and ready to call:
    # @{ Kind = 'Class'; Type } or @{ Kind = 'Script'; Module }. Resolved
    # and loaded once per runspace; loaded again when its files change on
    # disk. $null when the module is not found, or holds it as a binary
    # resource (which the 5.1 LCM runs): the caller then calls
    # Invoke-DscResource. A resource the module does not hold fails here,
    # saying what it holds.
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
        $Type = Get-PwshlibDscClassType -Loaded $Loaded -Name $Name -File $Index.Classes[$Name]
        $Entry = @{ Kind = 'Class'; Type = $Type; Files = $Files; Stamp = $Loaded.Stamp }
    }
    elseif ($Index.Scripts.ContainsKey($Name)) {
        $Psm1 = $Index.Scripts[$Name]
        $Files = @($Psm1)
        $Loaded = Import-PwshlibDscModule -Path $Psm1 -Files $Files
        $Entry = @{ Kind = 'Script'; Module = $Loaded.Module; Files = $Files; Stamp = $Loaded.Stamp }
    }
    else {
        # Not one this module implements in PowerShell files: the caller
        # calls Invoke-DscResource, unless nothing can run it. In a function
        # of its own: PowerShell compiles a function's whole body at its
        # first call, which a fresh host's first call pays.
        Assert-PwshlibRunnableResource -Index $Index -Name $Name -Module $Module
        return $null
    }
    $Cache.Resources[$Key] = $Entry
    $Entry
}

function Assert-PwshlibRunnableResource {
    # Throws, naming the resource and why, when the module's index holds
    # $Name as a resource nothing can run here, or does not hold it.
    param($Index, [string] $Name, $Module)
    $ModuleName = [System.IO.Path]::GetFileNameWithoutExtension($Module.Manifest)
    if ($Index.Composite.ContainsKey($Name)) {
        # Neither the LCM's Invoke-DscResource nor PSDesiredStateConfiguration
        # 2.x's runs a composite resource (a configuration made of other
        # resources, with no Get, Set or Test of its own): both run one
        # method of one resource.
        throw "The DSC resource '$Name' of module '$ModuleName' is a composite resource (a configuration of other resources): Invoke-DscResource runs no composite resource, on Windows PowerShell 5.1 or PowerShell 7, so nothing can run it here. Declare the resources it is made of instead."
    }
    if ($Index.Binary.ContainsKey($Name)) {
        if ($PSVersionTable.PSVersion.Major -gt 5) {
            # PSDesiredStateConfiguration 2.x runs only resources implemented in
            # PowerShell: its Invoke-DscResource "no longer supports invoking
            # WMI DSC resources" (the notes of its documentation), and pwsh has
            # no LCM to hand one to.
            throw "The DSC resource '$Name' of module '$ModuleName' is a binary resource (not implemented in PowerShell): PowerShell $($PSVersionTable.PSVersion) cannot run it (PSDesiredStateConfiguration 2.x runs only resources written in PowerShell). Run it with Windows PowerShell 5.1, whose LCM runs it through Invoke-DscResource (with the LCM's RefreshMode set to Disabled)."
        }
        return
    }
    # A folder under DSCResources too deep to read may hold it: this
    # lookup fails naming it (the module's other resources are found).
    if (@($Index.Unreadable).Count -gt 0) {
        throw "The DSC resource '$Name' was not found in module '$ModuleName' ($($Module.Manifest)), and these folders under its DSCResources could not be read, their paths too long for PowerShell $($PSVersionTable.PSVersion) (PathTooLongException): $(@($Index.Unreadable) -join ', '). Windows PowerShell 5.1 reads no path of 260 characters or more unless long paths are enabled; install the module under a shorter path."
    }
    # The engines find a resource where this index looks and nowhere else
    # (Get-DscResource reads the same files and folders), so a name it
    # does not hold is not the module's: handing it to Invoke-DscResource
    # would only fail later, and less clearly.
    throw (Get-PwshlibUnresolvedMessage -Index $Index -Name $Name -Module $Module)
}

function Get-PwshlibUnresolvedMessage {
    # The error of a resource its module does not hold: the resource, the
    # module (name, version, manifest), and each DSC resource the module
    # does hold, by kind, with the file it was found in (relative to the
    # module's folder; a script-based resource found by its FriendlyName
    # and its class name shows both).
    param($Index, [string] $Name, $Module)
    $Kinds = [ordered]@{ Classes = 'class-based'; Scripts = 'script-based'; Binary = 'binary'; Composite = 'composite' }
    $Held = [System.Collections.Generic.List[string]]::new()
    foreach ($Kind in $Kinds.Keys) {
        $ByFile = [ordered]@{}
        foreach ($Resource in @($Index[$Kind].Keys | Sort-Object)) {
            $File = [string] $Index[$Kind][$Resource]
            if (-not $ByFile.Contains($File)) { $ByFile[$File] = [System.Collections.Generic.List[string]]::new() }
            $ByFile[$File].Add($Resource)
        }
        foreach ($File in $ByFile.Keys) {
            $Relative = if ($File.StartsWith($Module.Base, [System.StringComparison]::OrdinalIgnoreCase)) { $File.Substring($Module.Base.Length).TrimStart('\', '/') } else { $File }
            $Held.Add("$($Kinds[$Kind]) $($ByFile[$File] -join ' / ') in $Relative")
        }
    }
    $Holds = if ($Held.Count -gt 0) { "it holds $($Held -join '; ')" } else { 'it holds no DSC resource' }
    $Exported = @($Module.Data.DscResourcesToExport | Where-Object { -not [string]::IsNullOrEmpty($_) })
    $Exports = if ($Exported.Count -gt 0) { " Its manifest's DscResourcesToExport: $($Exported -join ', ')." } else { '' }
    "The DSC resource '$Name' is not in module '$([System.IO.Path]::GetFileNameWithoutExtension($Module.Manifest))' version $($Module.Data.ModuleVersion) ($($Module.Manifest)): $Holds.$Exports DSC resources are the [DscResource()] classes of a module's RootModule and NestedModules files and the resources under its DSCResources folder; check the resource's name and the module's version."
}
