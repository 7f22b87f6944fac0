@{
    RootModule           = 'PwshlibLcmDsc.psm1'
    ModuleVersion        = '1.0.0'
    GUID                 = '5b0f3c2e-41a1-4c4e-9a41-0000000041a1'
    Author               = 'pwshlib'
    Description          = 'Fixture DSC resources for What a resource sees and how its errors and answers are taken'
    DscResourcesToExport = @('LcmClass', 'LcmScript')
}
