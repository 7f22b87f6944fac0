# Runs each DSC call of -Cases twice in one runspace of pwshlib's host code,
# as the host does: through the prelude's Invoke-PwshlibDscResource (which
# also resolves and loads the resource), then through the compiled
# DirectDsc (PwshlibHost.Direct.cs); and once more in a second runspace as
# a resource's first call there (DirectDsc's first-call form, the
# runspace's cache of resolved resources emptied before each), and prints
# one line of JSON with the three answers per call, for
# direct_compiled_spec.rb to compare. The runspace is
# reset after every call (ResetRunspaceState), as the host resets it after
# each reply. -Cases: a JSON file, a list of {resource, method, module,
# property, strict}; a property value {"credential": [user, password]} is
# a PSCredential.
param(
    [Parameter(Mandatory = $true)] [string] $Templates,
    [Parameter(Mandatory = $true)] [string] $Cases
)
$ErrorActionPreference = 'Stop'
& (Join-Path $PSScriptRoot 'host_types.ps1') -Templates $Templates
$Prelude = [string]::Join('', @(foreach ($Part in 'values', 'cmdlet', 'results', 'modules', 'direct', 'call') { [IO.File]::ReadAllText((Join-Path $Templates "dsc_prelude_$Part.ps1")) }))

$Runspace = [runspacefactory]::CreateRunspace([initialsessionstate]::CreateDefault2())
$Runspace.Open()
$Define = [powershell]::Create()
$Define.Runspace = $Runspace
$null = $Define.AddScript($Prelude).Invoke()
$FirstRunspace = [runspacefactory]::CreateRunspace([initialsessionstate]::CreateDefault2())
$FirstRunspace.Open()
$Define = [powershell]::Create()
$Define.Runspace = $FirstRunspace
$null = $Define.AddScript($Prelude).Invoke()

function ConvertTo-CaseValue($Value) {
    if ($Value -is [System.Management.Automation.PSCustomObject] -and $null -ne $Value.credential) {
        $Secure = [System.Security.SecureString]::new()
        foreach ($Char in $Value.credential[1].ToCharArray()) { $Secure.AppendChar($Char) }
        return [pscredential]::new($Value.credential[0], $Secure)
    }
    if ($Value -is [array]) { return , @($Value) }
    $Value
}

function New-InvokeParams($Case) {
    $Property = @{}
    foreach ($Member in $Case.property.PSObject.Properties) { $Property[$Member.Name] = ConvertTo-CaseValue $Member.Value }
    $Module = $Case.module
    if ($Module -is [System.Management.Automation.PSCustomObject]) { $Module = @{ ModuleName = $Module.ModuleName; RequiredVersion = $Module.RequiredVersion } }
    @{ Name = $Case.resource; Method = $Case.method; Property = $Property; ModuleName = $Module }
}

function Reset-Case($Case, $In = $Runspace) {
    $In.ResetRunspaceState()
    if ($null -ne $Case.strict) { $In.SessionStateProxy.SetVariable('PwshlibDscStrict', [bool] $Case.strict) }
}

function Invoke-ThroughPrelude($Case) {
    Reset-Case $Case
    # The prelude's own functions write a Get's line (not DirectResult,
    # which the compiled side uses): the two are compared.
    $Runspace.SessionStateProxy.SetVariable('PwshlibDscResultFunctions', $true)
    $Runspace.SessionStateProxy.SetVariable('InvokeParams', (New-InvokeParams $Case))
    $Call = [powershell]::Create()
    $Call.Runspace = $Runspace
    $null = $Call.AddScript("`$script:ErrorActionPreference = 'Stop'`n`$script:WarningPreference = 'SilentlyContinue'`nInvoke-PwshlibDscResource -InvokeParams `$InvokeParams`n").Invoke()
    $Call.Dispose()
    @($Runspace.SessionStateProxy.GetVariable('PwshlibDscOutput'))
}

function Invoke-Compiled($Case, [switch] $First) {
    $In = if ($First) { $FirstRunspace } else { $Runspace }
    Reset-Case $Case $In
    if ($First) {
        # Nothing resolved in the runspace: the call is a first call.
        [System.AppDomain]::CurrentDomain.SetData("pwshlib.direct.$($In.InstanceId)", $null)
    }
    $Request = [PwshlibHost.DscRequest]::new()
    $Request.InvokeParams = New-InvokeParams $Case
    $Direct = [PwshlibHost.DirectDsc]::Prepare($In, $Request, [bool] $First)
    if ($null -eq $Direct) { return $null }
    $Call = [powershell]::Create()
    $Call.Runspace = $In
    [PwshlibHost.DirectDsc]::AddTo($Direct, $Call, $In)
    $Output = [System.Management.Automation.PSDataCollection[psobject]]::new()
    $Inputs = [System.Management.Automation.PSDataCollection[psobject]]::new()
    $Inputs.Complete()
    try { $Call.Invoke($Inputs, $Output) }
    catch { $Direct.Failure = $_.Exception.InnerException }
    $Call.Dispose()
    @([PwshlibHost.DirectDsc]::Finish($Direct, $In, $Output))
}

$Answers = foreach ($Case in (Get-Content -Raw -LiteralPath $Cases | ConvertFrom-Json)) {
    $ByPrelude = Invoke-ThroughPrelude $Case
    $Compiled = Invoke-Compiled $Case
    $FirstCall = Invoke-Compiled $Case -First
    [ordered]@{ case = $Case; prelude = $ByPrelude; compiled = $Compiled; first = $FirstCall }
}
"PWSHLIB-ANSWERS $(ConvertTo-Json -InputObject @($Answers) -Depth 8 -Compress)"
