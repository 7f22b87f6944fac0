# A class-based fixture resource (spec/real_pwsh/dsc/lcm_semantics_spec.rb):
# its Get reports the ErrorActionPreference it runs with, and writes a
# non-terminating error first when its Name says 'error'.
[DscResource()]
class LcmClass {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty(NotConfigurable)]
    [string] $Seen

    [LcmClass] Get() {
        if ($this.Name -like 'error*') {
            Write-Error -Message "LcmClass wrote an error for $($this.Name)"
        }
        $Result = [LcmClass]::new()
        $Result.Name = $this.Name
        # A class method may not read a variable it does not assign by its
        # bare name.
        $Result.Seen = [string] (Get-Variable -Name ErrorActionPreference -ValueOnly)
        return $Result
    }

    [bool] Test() {
        return $true
    }

    [void] Set() {
    }
}
