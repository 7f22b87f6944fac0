// The host's C#, part 12 of 12 (PwshlibHost.cs lists the parts): a DSC
// call whose method is Export (ExportDsc), which lists every instance a
// resource has.
namespace PwshlibHost
{
    // Export is a fourth method of the same DSC call as data (DscCall.Read
    // reads it like Get, Set and Test); DscCall.Bind hands its one constant
    // Script to the runspace instead of Invoke-PwshlibDscResource's, and the
    // compiled executor (DirectDsc) never takes it. Neither engine this
    // replaces has an Export: the LCM's and PSDesiredStateConfiguration
    // 2.x's Invoke-DscResource take -Method Get, Set or Test only
    // (ValidateSet), so the resource is called directly, as DSC v3's
    // `dsc resource export` calls it, on every route and edition:
    // * a class-based resource: its class's `static [<Class>[]] Export()`,
    //   when the class defines one taking no arguments;
    // * a script-based resource: its module's Export-TargetResource, when
    //   the module exports one that needs no argument.
    // The prelude resolves and loads the resource as for a Get
    // (Resolve-PwshlibDscResource) and writes each instance as it writes a
    // Get's result (ConvertTo-PwshlibCanonicalResult), so the provider
    // reads each as a Get result. The answer is one line of JSON, left in
    // $global:PwshlibDscOutput as the prelude leaves a Get's (the host
    // reads it there: a variable is in no PowerShell log, and an exported
    // credential holds a password):
    //   {"instances": [<a Get's result>...]}          listed
    //   {"instances": null, "cannot_export": "<why>"} cannot list itself
    //   {"instances": null, "errormessage": "<why>"}  failed
    // The instances are read with foreach statements, never a cmdlet's
    // pipeline (module logging records each object a cmdlet receives) nor
    // a .NET method's arguments (AMSI's method logging receives those as
    // text).
    public static class ExportDsc
    {
        public const string Script = @"$script:ErrorActionPreference = 'Stop'
$script:WarningPreference = 'SilentlyContinue'
$PwshlibExport = $null
try {
    if (-not [string]::IsNullOrEmpty($PwshlibDscArguments.VendoredPath)) {
        Add-PwshlibVendoredModulePath -Path $PwshlibDscArguments.VendoredPath
    }
    $PwshlibResolved = Resolve-PwshlibDscResource -InvokeParams $InvokeParams
    $PwshlibWhy = $null
    $PwshlibItems = $null
    if ($null -eq $PwshlibResolved) {
        $PwshlibWhy = 'it is not implemented in PowerShell (a binary resource), which has no Export'
    }
    elseif ($PwshlibResolved.Kind -eq 'Class') {
        $PwshlibMethod = $PwshlibResolved.Type.GetMethod('Export', [type[]] @())
        if ($null -eq $PwshlibMethod -or -not $PwshlibMethod.IsStatic) {
            $PwshlibWhy = ""its class '$($InvokeParams.Name)' defines no static Export() method""
        }
        else {
            $PwshlibType = $PwshlibResolved.Type
            $PwshlibItems = @(& { $PwshlibType::Export() })
        }
    }
    else {
        $PwshlibCommand = $PwshlibResolved.Module.ExportedFunctions['Export-TargetResource']
        $PwshlibNeeded = @(if ($null -ne $PwshlibCommand) {
            foreach ($PwshlibParameter in $PwshlibCommand.Parameters.Values) {
                foreach ($PwshlibAttribute in $PwshlibParameter.Attributes) {
                    if ($PwshlibAttribute -is [System.Management.Automation.ParameterAttribute] -and $PwshlibAttribute.Mandatory) { $PwshlibParameter.Name }
                }
            }
        })
        if ($null -eq $PwshlibCommand) {
            $PwshlibWhy = 'its module defines no Export-TargetResource function'
        }
        elseif ($PwshlibNeeded.Count -gt 0) {
            $PwshlibWhy = ""its Export-TargetResource needs arguments a listing cannot give ($($PwshlibNeeded -join ', '))""
        }
        else {
            $PwshlibItems = @(& $PwshlibCommand)
            foreach ($PwshlibItem in $PwshlibItems) {
                if ($PwshlibItem -is [string]) { $PwshlibWhy = 'its Export-TargetResource returns DSC configuration text, not instances' }
            }
        }
    }
    if ($null -ne $PwshlibWhy) {
        $PwshlibExport = [ordered]@{ instances = $null; cannot_export = $PwshlibWhy; errormessage = '' }
    }
    else {
        $PwshlibListed = @(foreach ($PwshlibItem in $PwshlibItems) {
            if ($null -ne $PwshlibItem) { ConvertTo-PwshlibCanonicalResult -Result $PwshlibItem }
        })
        $PwshlibExport = [ordered]@{ instances = $PwshlibListed; errormessage = '' }
    }
}
catch {
    $PwshlibExport = [ordered]@{ instances = $null; errormessage = ""Export of the DSC resource '$($InvokeParams.Name)' failed: $($_.Exception.Message)"" }
}
$global:PwshlibDscOutput = [string[]] @(ConvertTo-Json -InputObject $PwshlibExport -Compress -Depth 11)
";
    }
}
