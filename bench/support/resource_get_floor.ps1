# The resource's own Get, the floor bench/fresh_host_bench.rb sets an
# in-sync Get through the whole provider against, in this
# process, in a warm runspace (one untimed call first), each of -Count
# calls timed with a Stopwatch; prints one line of JSON:
# {"times_ms": [...]}.
#   -Kind Class:  RealSetting: new, the properties set, Get().
#   -Kind Script: MSFT_RealKeyed's Get-TargetResource -Name.
# The state is the bench's own (PWSHLIB_REAL_DSC_STATE), so each Get reads
# the same small JSON file as through the provider.
param(
    [ValidateSet('Class', 'Script')] [string] $Kind = 'Class',
    [int] $Count = 100,
    [string] $Prefix = 'bench'
)
$ErrorActionPreference = 'Stop'
$Root = Split-Path -Parent (Split-Path -Parent $PSScriptRoot)
$Module = Join-Path $Root 'spec/real_pwsh/dsc/modules/realdsc/lib/puppet_x/pwshlibrealdsc/dsc_resources/PwshlibRealDsc'
# The module's RealVault names [Microsoft.PowerShell.Commands.JsonObject],
# which PowerShell resolves when it parses the module: its assembly is
# Microsoft.PowerShell.Utility's, loaded here first (in a fresh process
# nothing has loaded it yet).
Import-Module -Name Microsoft.PowerShell.Utility
if ($Kind -eq 'Class') {
    $Loaded = Import-Module -Name (Join-Path $Module 'PwshlibRealDsc.psd1') -PassThru
    # Classes are not exported to the caller: the type from inside.
    $Type = & $Loaded { [RealSetting] }
    $Call = {
        param([int] $i)
        $Resource = $Type::new()
        $Resource.Name = "$Prefix-$i"
        $Resource.Ensure = 'Present'
        $Resource.Count = $i
        $Resource.Description = "resource $i"
        $null = $Resource.Get()
    }
} else {
    $Loaded = Import-Module -Name (Join-Path $Module 'DSCResources/MSFT_RealKeyed/MSFT_RealKeyed.psm1') -PassThru
    $Call = {
        param([int] $i)
        $null = & $Loaded { param($Name) Get-TargetResource -Name $Name } "$Prefix-$i"
    }
}
& $Call 0
$Clock = [System.Diagnostics.Stopwatch]::new()
$Times = [double[]]::new($Count)
for ($i = 0; $i -lt $Count; $i++) {
    $Clock.Restart()
    & $Call $i
    $Clock.Stop()
    $Times[$i] = $Clock.Elapsed.TotalMilliseconds
}
ConvertTo-Json -Compress -InputObject ([ordered]@{ times_ms = $Times })
