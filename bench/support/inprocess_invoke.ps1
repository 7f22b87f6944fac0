# PowerShell's own in-process invoke of some code in a warm runspace: the
# floor bench/host_bench.rb sets a Pwsh::Manager round trip against. Times
# [powershell]::Create() on a runspace opened once and reused,
# AddScript(code).Invoke() and Dispose(), -Iterations times after -Warmup
# untimed ones, and prints one line of JSON: {"median_ms": m, "p90_ms": p,
# "first_ms": f, "runs": n} (first: the first timed call; with -Warmup 0
# the first call of the runspace, as bench/fresh_host_bench.rb wants).
# The code's output is collected as objects, not formatted: what a caller
# inside PowerShell pays, with no host of its own.
#
# -SessionState Default2 (the default): a runspace built from
# InitialSessionState.CreateDefault2(), as the host builds its own, the
# faster floor (modules load on first use). Default:
# [runspacefactory]::CreateRunspace() with no session state, pwsh 7's
# CreateDefault(), slower per call (about twice, here).
param(
    [Parameter(Mandatory = $true)] [string] $Code,
    [int] $Iterations = 2000,
    [int] $Warmup = 3000,
    [ValidateSet('Default2', 'Default')] [string] $SessionState = 'Default2'
)
$ErrorActionPreference = 'Stop'
$runspace = if ($SessionState -eq 'Default2') {
    [runspacefactory]::CreateRunspace([System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2())
} else {
    [runspacefactory]::CreateRunspace()
}
$runspace.Open()
$clock = [System.Diagnostics.Stopwatch]::new()
$times = [double[]]::new($Iterations)
for ($i = -$Warmup; $i -lt $Iterations; $i++) {
    $clock.Restart()
    $ps = [powershell]::Create()
    $ps.Runspace = $runspace
    $null = $ps.AddScript($Code).Invoke()
    $ps.Dispose()
    $clock.Stop()
    if ($i -ge 0) {
        $times[$i] = $clock.Elapsed.TotalMilliseconds
    }
}
$first = $times[0]
[array]::Sort($times)
$p90 = $times[[math]::Min($Iterations - 1, [math]::Ceiling($Iterations * 0.9) - 1)]
$median = if ($Iterations % 2) { $times[($Iterations - 1) / 2] } else { ($times[$Iterations / 2 - 1] + $times[$Iterations / 2]) / 2 }
ConvertTo-Json -Compress -InputObject ([ordered]@{ median_ms = $median; p90_ms = $p90; first_ms = $first; runs = $Iterations })
