# Runs the one DSC call that $InvokeParams describes and writes its outcome
# as a single line of compressed JSON, the only output the provider reads.
# Written for pwshlib; embedded into the native library at build time.
try {
    $PwshlibResult = Invoke-DscResource @InvokeParams
    switch ($InvokeParams.Method) {
        'Get' {
            $PwshlibOutput = ConvertTo-PwshlibCanonicalResult -Result $PwshlibResult
        }
        'Set' {
            $Response.indesiredstate = $true
            $Response.rebootrequired = [bool] $PwshlibResult.RebootRequired
            $PwshlibOutput = $Response
        }
        'Test' {
            $PwshlibOutput = [ordered]@{
                indesiredstate = [bool] $PwshlibResult.InDesiredState
                errormessage   = ''
            }
        }
    }
}
catch {
    # A failure must never come back with an empty message: the provider
    # tells success from failure by it.
    $PwshlibMessage = $_.Exception.Message
    if ([string]::IsNullOrEmpty($PwshlibMessage)) {
        $PwshlibMessage = "Invoke-DscResource failed: $_"
    }
    $Response.errormessage = $PwshlibMessage
    if ($InvokeParams.Method -eq 'Test') {
        $PwshlibOutput = [ordered]@{
            indesiredstate = $false
            errormessage   = $PwshlibMessage
        }
    }
    else {
        $PwshlibOutput = $Response
    }
}
finally {
    # Class-based resources only: undo the machine-level PSModulePath change.
    Restore-PwshlibVendoredModulePath -Previous $PwshlibPSModulePathRestore
}
ConvertTo-Json -InputObject $PwshlibOutput -Compress -Depth 10
