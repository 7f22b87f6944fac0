@{
    RootModule        = 'PSDesiredStateConfiguration.psm1'
    # The version whose behaviour this stand-in follows, so that a script
    # asking for PSDesiredStateConfiguration finds it in the real one's place.
    ModuleVersion     = '2.0.7'
    GUID              = '00000000-0000-4000-8000-316231620007'
    Author            = 'pwshlib developers'
    Description       = "pwshlib's test stand-in for PSDesiredStateConfiguration 2.0.7's Invoke-DscResource on PowerShell 7 (spec/real_pwsh/dsc/README.md); not the real module."
    PowerShellVersion = '7.0'
    FunctionsToExport = @('Invoke-DscResource')
}
