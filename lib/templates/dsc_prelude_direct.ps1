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

function Test-PwshlibGetReturnsThis {
    # Whether the [DscResource()] class $InvokeParams names has a Get() that
    # returns $this (`return $this`), read from the syntax tree of the file
    # the module index found it in, once per runspace and again when the
    # file changes: the route of a call through Invoke-DscResource (which
    # hands back no instance to compare) then judges it by its Test, as the
    # direct call does when Get() returned the instance it was called on
    # (docs/behavior.md section 3 "insync?"). False for a script-based
    # resource or one not found in PowerShell files of its module.
    param([hashtable] $InvokeParams)
    $Module = Find-PwshlibDscModule -ModuleName $InvokeParams.ModuleName
    if ($null -eq $Module) { return $false }
    $Name = [string] $InvokeParams.Name
    $Path = (Get-PwshlibDscModuleIndex -Module $Module).Classes[$Name]
    if ($null -eq $Path) { return $false }
    $Cache = Get-PwshlibDirectCache
    if ($null -eq $Cache.GetReturnsThis) { $Cache.GetReturnsThis = @{} }
    $Stamp = Get-PwshlibFileStamp -Path $Path
    $Key = "$Path|$Name"
    $Entry = $Cache.GetReturnsThis[$Key]
    if ($null -ne $Entry -and $Entry.Stamp -eq $Stamp) { return $Entry.Answer }
    $Ast = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref] $null, [ref] $null)
    $Class = $Ast.Find({
            param($Node)
            $Node -is [System.Management.Automation.Language.TypeDefinitionAst] -and $Node.Name -eq $Name
        }, $true)
    $Answer = $false
    if ($null -ne $Class) {
        foreach ($Member in $Class.Members) {
            if ($Member -isnot [System.Management.Automation.Language.FunctionMemberAst] -or $Member.Name -ne 'Get' -or $Member.IsStatic -or $Member.Parameters.Count -gt 0) { continue }
            $Returned = $Member.Body.Find({
                    param($Node)
                    if ($Node -isnot [System.Management.Automation.Language.ReturnStatementAst] -or $null -eq $Node.Pipeline) { return $false }
                    $Expression = $Node.Pipeline.GetPureExpression()
                    $Expression -is [System.Management.Automation.Language.VariableExpressionAst] -and $Expression.VariablePath.UserPath -eq 'this'
                }, $true)
            $Answer = $null -ne $Returned
        }
    }
    $Cache.GetReturnsThis[$Key] = @{ Stamp = $Stamp; Answer = $Answer }
    $Answer
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
    # The call itself is Invoke-PwshlibClassMethod's or
    # Invoke-PwshlibScriptMethod's, which the host's compiled path
    # (DirectDsc, PwshlibHost.Direct.cs) calls too once a resource is
    # resolved in the runspace: one definition of what a call does.
    param($Resolved, [hashtable] $InvokeParams, [hashtable] $Seen = @{}, [bool] $Strict = $false)
    $Method = [string] $InvokeParams.Method
    if ($Resolved.Kind -eq 'Class') {
        return Invoke-PwshlibClassMethod -Type $Resolved.Type -Property $InvokeParams.Property -Method $Method -Seen $Seen
    }
    $Command = $Resolved.Module.ExportedCommands["$Method-TargetResource"]
    if ($null -eq $Command) {
        throw "The DSC resource '$($InvokeParams.Name)' has no $Method-TargetResource function"
    }
    # Only the parameters the function declares, as the LCM and
    # PSDesiredStateConfiguration pass them: Get-TargetResource declares
    # the keys and mandatory properties only.
    $Arguments = @{}
    foreach ($Key in $InvokeParams.Property.Keys) {
        if ($Command.Parameters.ContainsKey($Key)) { $Arguments[$Key] = $InvokeParams.Property[$Key] }
    }
    Invoke-PwshlibScriptMethod -Command $Command -Arguments $Arguments -Method $Method -Name $InvokeParams.Name -Strict $Strict
}

function Invoke-PwshlibClassMethod {
    # A class-based resource's method on a new instance with the
    # properties set. $Seen.GetReturnedThis is set when Get() returned the
    # very instance it was called on (`return $this`): its properties are
    # the desired values assigned below unless Get() read them, so the
    # provider judges that resource by its Test (docs/behavior.md section 3
    # "insync?"). [object]::ReferenceEquals sees the same object through
    # PowerShell's method call and pipeline (tried on pwsh 7.6.9).
    param($Type, [System.Collections.IDictionary] $Property, [string] $Method, [hashtable] $Seen = @{})
    # Our own statements stop at an error; the resource's module reads the
    # global Continue (Invoke-PwshlibDscCall).
    $ErrorActionPreference = 'Stop'
    # Reset before the call, read after Set: a resource asks for a reboot
    # by setting it to 1 (as the LCM and PSDesiredStateConfiguration 2.x
    # read it).
    $global:DSCMachineStatus = $null
    $Resource = $Type::new()
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

function Invoke-PwshlibScriptMethod {
    # A script-based resource's <Method>-TargetResource function ($Command)
    # with the $Arguments it declares.
    param($Command, [hashtable] $Arguments, [string] $Method, [string] $Name, [bool] $Strict = $false)
    $ErrorActionPreference = 'Stop'
    $global:DSCMachineStatus = $null
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
                throw "The DSC resource '$Name' returned $($Output.Count) value(s) from Test-TargetResource ($($Types -join ', ')), not one boolean: Windows PowerShell 5.1 takes exactly one `$true or `$false, as its LCM did."
            }
            # The last value by index, and a Set's output discarded by
            # assignment: no cmdlet (Select-Object, Out-Null) receives
            # what the resource wrote, which module logging would record.
            $Last = if ($Output.Count -gt 0) { $Output[$Output.Count - 1] } else { $null }
            return [pscustomobject]@{ InDesiredState = [bool] $Last }
        }
        'Set' {
            $null = & $Command @Arguments
            return [pscustomobject]@{ RebootRequired = ($global:DSCMachineStatus -eq 1) }
        }
    }
}

function Wait-PwshlibDirectCall {
    # The host's standby pipeline (PwshlibHost.Standby.cs, Standby),
    # started between two calls: Take waits in compiled code for the
    # runspace's next request, runs its first steps (which set the
    # runspace's global variables), and returns the direct call to make,
    # if any: the one the host's own pipeline would make
    # (Invoke-PwshlibClassMethod or Invoke-PwshlibScriptMethod), called
    # from this function's scope as the host's pipeline calls it from the
    # global one. Done tells the host the call has returned, so that it
    # answers before this pipeline has ended. Anywhere else Take returns
    # $null at once and nothing runs.
    $PwshlibCall = [PwshlibHost.Standby]::Take($ExecutionContext.SessionState)
    if ($null -ne $PwshlibCall) {
        $PwshlibArguments = $PwshlibCall.Arguments
        & $PwshlibCall.Command @PwshlibArguments
        [PwshlibHost.Standby]::Done($ExecutionContext.SessionState)
    }
}
