# Where a direct DSC Get spends its time inside PowerShell: the
# prelude's functions timed one by one in this process, on the real-PowerShell
# tier's RealSetting resource. Run by hand, not by `rake bench`:
#
#   $(script/find-pwsh) -NoProfile -File bench/support/direct_dsc_breakdown.ps1
#
# Each figure is the mean of 200 calls after one warm-up call, in one
# runspace, without the host's reset between calls (docs/performance.md,
# "Direct DSC calls").
$Root = Split-Path -Parent (Split-Path -Parent $PSScriptRoot)
$Vendored = Join-Path $Root 'spec/real_pwsh/dsc/modules/realdsc/lib/puppet_x/pwshlibrealdsc/dsc_resources'
$Manifest = Join-Path $Vendored 'PwshlibRealDsc/PwshlibRealDsc.psd1'
$State = Join-Path ([System.IO.Path]::GetTempPath()) "pwshlib-breakdown-$PID"
$null = New-Item -ItemType Directory -Force -Path $State
$env:PWSHLIB_REAL_DSC_STATE = $State
# The prelude's files, in the order ext/pwshlib_core/src/templates.rs joins them.
foreach ($Part in 'values', 'cmdlet', 'results', 'modules', 'direct', 'call') {
    . (Join-Path $Root "lib/templates/dsc_prelude_$Part.ps1")
}

$InvokeParams = @{
    Name       = 'RealSetting'
    Method     = 'Get'
    Property   = @{ Name = 'bench-1'; Ensure = 'Present'; Count = 1; Description = 'resource 1' }
    ModuleName = @{ ModuleName = $Manifest; RequiredVersion = '1.0.0' }
}
$null = Invoke-PwshlibDscResource -InvokeParams $InvokeParams

function Measure-PwshlibStep([string] $Name, [scriptblock] $Step, [int] $Count = 200) {
    $Watch = [System.Diagnostics.Stopwatch]::StartNew()
    for ($i = 0; $i -lt $Count; $i++) { $null = & $Step }
    $Watch.Stop()
    '{0,-45} {1,8:N3} ms' -f $Name, ($Watch.Elapsed.TotalMilliseconds / $Count)
}

$Resolved = Resolve-PwshlibDscResource -InvokeParams $InvokeParams
$Merged = @(Invoke-PwshlibDscCall -InvokeParams $InvokeParams -Direct $true)
$Result = $Merged[-1]
$Canonical = ConvertTo-PwshlibCanonicalResult -Result $Result
Measure-PwshlibStep 'Invoke-PwshlibDscResource (all of it)' { Invoke-PwshlibDscResource -InvokeParams $InvokeParams }
Measure-PwshlibStep 'the resource: new, properties, Get()' {
    $Resource = $Resolved.Type::new()
    foreach ($Key in $InvokeParams.Property.Keys) { $Resource.$Key = $InvokeParams.Property[$Key] }
    $Resource.Get()
}
Measure-PwshlibStep 'Add-PwshlibVendoredModulePath' { Add-PwshlibVendoredModulePath -Path $Vendored }
Measure-PwshlibStep 'Resolve-PwshlibDscResource (cached)' { Resolve-PwshlibDscResource -InvokeParams $InvokeParams }
Measure-PwshlibStep 'Invoke-PwshlibDirect' { Invoke-PwshlibDirect -Resolved $Resolved -InvokeParams $InvokeParams }
Measure-PwshlibStep 'Invoke-PwshlibDscCall (streams merged)' { Invoke-PwshlibDscCall -InvokeParams $InvokeParams -Direct $true }
Measure-PwshlibStep 'Split-PwshlibStreams' { Split-PwshlibStreams -Items $Merged }
Measure-PwshlibStep 'ConvertTo-PwshlibCanonicalResult' { ConvertTo-PwshlibCanonicalResult -Result $Result }
Measure-PwshlibStep 'ConvertTo-Json' { ConvertTo-Json -InputObject $Canonical -Compress -Depth 10 }
Remove-Item -Recurse -Force -Path $State
