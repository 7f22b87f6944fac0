@{
    RootModule           = 'PwshlibRealDsc.psm1'
    ModuleVersion        = '1.0.0'
    GUID                 = '00000000-0000-4000-8000-316231620001'
    Author               = 'pwshlib developers'
    Description          = 'Real DSC resources in PowerShell for the real-PowerShell tier (spec/real_pwsh/dsc): they keep their state in files under $env:PWSHLIB_REAL_DSC_STATE and log every call there.'
    PowerShellVersion    = '5.1'
    DscResourcesToExport = @('RealSetting', 'RealAccount', 'RealPool', 'RealNoisy', 'RealVault', 'RealReport', 'RealConnection', 'RealEcho', 'RealTask', 'RealKeyed', 'RealShape', 'RealCompliance', 'RealAudited', 'RealScript', 'RealChecksum', 'RealScoped', 'RealLogins')
}
