# pwshlib's stand-in for Invoke-DscResource of PSDesiredStateConfiguration
# 2.0.7 on PowerShell 7, which is not on NuGet and so cannot be installed in
# CI. It follows the behaviour that the tools README (../shared/tools/README.md
# beside the repository, "What this PowerShell can and cannot show") documents
# for 2.0.7, and nothing more:
#   * it finds the resource in the module named by -ModuleName (a name, a
#     path, or @{ModuleName; RequiredVersion});
#   * a class-based resource: the class is created (`using module <path>`,
#     `[Type]::new()`), each -Property entry written to the debug stream
#     ("Setting <key> to <value>") and assigned to the instance
#     (PowerShell converts the value to the property's type: a hashtable
#     becomes a class, never a CIM instance), $global:DSCMachineStatus is
#     set to $null, and Get()/Test()/Set() called;
#   * a script-based resource: its module is Import-Module -Force'd and
#     <Method>-TargetResource @Property called;
#   * Get returns what the resource returned; Test an object with
#     InDesiredState; Set one with RebootRequired ($true when
#     $global:DSCMachineStatus -eq 1);
#   * PsDscRunAsCredential in -Property is refused with an error.
# For the tests only, it appends each call it receives to standin.jsonl
# under $env:PWSHLIB_REAL_DSC_STATE when that is set, so that a test can
# tell calls through Invoke-DscResource from direct ones.

function Resolve-StandInModule {
    # The module folder and manifest that -ModuleName names.
    param($ModuleName)
    $Name = $ModuleName
    $Version = $null
    if ($ModuleName -is [System.Collections.IDictionary]) {
        $Name = $ModuleName.ModuleName
        $Version = $ModuleName.RequiredVersion
    }
    elseif ($ModuleName -is [Microsoft.PowerShell.Commands.ModuleSpecification]) {
        $Name = $ModuleName.Name
        $Version = $ModuleName.RequiredVersion
    }
    if ([string]::IsNullOrEmpty($Name)) {
        throw 'Invoke-DscResource: -ModuleName is required'
    }
    if ($Name -match '\.psd1$') {
        if (-not (Test-Path -LiteralPath $Name)) {
            throw "Invoke-DscResource: module manifest '$Name' not found"
        }
        $Manifest = (Resolve-Path -LiteralPath $Name).ProviderPath
    }
    else {
        $Found = @(Get-Module -ListAvailable -Name $Name |
                Where-Object { $null -eq $Version -or $_.Version -eq [version] $Version } |
                Sort-Object -Property Version -Descending)
        if ($Found.Count -eq 0) {
            throw "Invoke-DscResource: module '$Name'$(if ($Version) { " version $Version" }) not found on PSModulePath"
        }
        $Manifest = $Found[0].Path
    }
    $Data = Import-PowerShellDataFile -LiteralPath $Manifest
    if ($null -ne $Version -and [version] $Data.ModuleVersion -ne [version] $Version) {
        throw "Invoke-DscResource: '$Manifest' is version $($Data.ModuleVersion), not $Version"
    }
    [pscustomobject]@{ Manifest = $Manifest; Base = (Split-Path -Parent $Manifest); Data = $Data }
}

function Find-StandInClassResource {
    # The [DscResource()] class named $Name in the module's root module, or
    # $null: the module's own AST, as Get-DscResource reads it.
    param($Module, [string] $Name)
    if ([string]::IsNullOrEmpty($Module.Data.RootModule)) {
        return $null
    }
    $Root = Join-Path $Module.Base $Module.Data.RootModule
    $Ast = [System.Management.Automation.Language.Parser]::ParseFile($Root, [ref] $null, [ref] $null)
    $Class = $Ast.Find({
            param($Node)
            $Node -is [System.Management.Automation.Language.TypeDefinitionAst] -and
            $Node.Name -eq $Name -and
            @($Node.Attributes | Where-Object { $_.TypeName.Name -eq 'DscResource' }).Count -gt 0
        }, $true)
    $Class
}

function Find-StandInScriptResource {
    # The script-based resource whose schema names $Name as its friendly
    # name (or whose folder is called $Name): DSCResources/<X>/<X>.psm1.
    param($Module, [string] $Name)
    $Folder = Join-Path $Module.Base 'DSCResources'
    if (-not (Test-Path -LiteralPath $Folder)) {
        return $null
    }
    foreach ($Schema in Get-ChildItem -LiteralPath $Folder -Recurse -Filter '*.schema.mof') {
        $Text = Get-Content -LiteralPath $Schema.FullName -Raw
        $Resource = $Schema.Name -replace '\.schema\.mof$', ''
        if ($Text -match 'FriendlyName\("([^"]+)"\)') {
            $Friendly = $Matches[1]
        }
        else {
            $Friendly = $Resource
        }
        if ($Friendly -eq $Name -or $Resource -eq $Name) {
            return Join-Path $Schema.DirectoryName "$Resource.psm1"
        }
    }
    $null
}

function Invoke-DscResource {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]
        [string] $Name,

        [Parameter(Mandatory = $true)]
        [ValidateSet('Get', 'Set', 'Test')]
        [string] $Method,

        [Parameter(Mandatory = $true)]
        [hashtable] $Property,

        [Parameter(Mandatory = $true)]
        $ModuleName
    )
    $ErrorActionPreference = 'Stop'
    if (-not [string]::IsNullOrEmpty($env:PWSHLIB_REAL_DSC_STATE)) {
        $Line = ConvertTo-Json -InputObject ([ordered]@{ resource = $Name; method = $Method }) -Compress
        [System.IO.File]::AppendAllText((Join-Path $env:PWSHLIB_REAL_DSC_STATE 'standin.jsonl'), $Line + "`n")
    }
    if ($Property.ContainsKey('PsDscRunAsCredential')) {
        throw 'PsDscRunAsCredential is not supported by Invoke-DscResource in PowerShell 7.'
    }
    $Module = Resolve-StandInModule $ModuleName
    $Class = Find-StandInClassResource $Module $Name
    if ($null -ne $Class) {
        # `using module` must open a script; the class type is what it returns.
        $Type = & ([scriptblock]::Create("using module '$($Module.Manifest.Replace("'", "''"))'`n[$Name]"))
        $Resource = $Type::new()
        foreach ($Key in $Property.Keys) {
            # 2.0.7 writes each value to the debug stream as it assigns it
            # (Invoke-DscClassBasedResource, which PowerShell/DSC's
            # powershell-adapter/psDscAdapter/psDscAdapter.psm1 carries
            # over): module logging records the bound -Message whatever
            # the preference, a Sensitive plain string with it.
            $Value = $Property[$Key]
            Write-Debug "Setting $Key to $Value"
            $Resource.$Key = $Value
        }
        $global:DSCMachineStatus = $null
        switch ($Method) {
            'Get' { return $Resource.Get() }
            'Test' { return [pscustomobject]@{ InDesiredState = [bool] $Resource.Test() } }
            'Set' {
                $Resource.Set()
                return [pscustomobject]@{ RebootRequired = ($global:DSCMachineStatus -eq 1) }
            }
        }
    }
    $Script = Find-StandInScriptResource $Module $Name
    if ($null -eq $Script) {
        throw "Invoke-DscResource: resource '$Name' not found in module '$($Module.Manifest)'"
    }
    $Imported = Import-Module -Name $Script -Force -PassThru
    $Command = $Imported.ExportedCommands["$Method-TargetResource"]
    $global:DSCMachineStatus = $null
    switch ($Method) {
        'Get' { return & $Command @Property }
        'Test' { return [pscustomobject]@{ InDesiredState = [bool] (& $Command @Property) } }
        'Set' {
            & $Command @Property | Out-Null
            return [pscustomobject]@{ RebootRequired = ($global:DSCMachineStatus -eq 1) }
        }
    }
}

Export-ModuleMember -Function Invoke-DscResource
