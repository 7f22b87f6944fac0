function Invoke-PwshlibDscCall {
    # The call itself, directly or through Invoke-DscResource, with every
    # stream the resource writes merged into its output in order: its
    # warnings, verbose, debug, information and Write-Host lines are shown
    # to the user (Write-PwshlibResult). The method of a resource reads the
    # preference variables of its module, whose parent is the global
    # scope, so they are set there for the call and put back after (tried
    # on pwsh 7.6.9: Write-Verbose in a class method is captured so).
    #
    # $ErrorActionPreference likewise: the script's header sets it to Stop
    # in the global scope (the host runs the script there), and a
    # resource's module, its top-level code when it is imported and its
    # classes all read it there. The LCM runs resources with Continue: a
    # non-terminating error does not stop the resource, and on Windows
    # PowerShell 5.1 (and 7.0, 7.1) a native program's stderr redirected
    # with 2>$null is not made a terminating error (item 1;
    # tried on pwsh 7.6.9: a Get-TargetResource called here saw Stop).
    # So the global value is Continue for the call, and our own code keeps
    # Stop in this function's scope: the functions called from here
    # (Resolve-PwshlibDscResource and its Import-Module, Invoke-PwshlibDirect)
    # read it through their callers, a module's code never does, since its
    # scopes end in the global one.
    param([hashtable] $InvokeParams, [bool] $Direct, [hashtable] $Seen = @{}, [string] $VendoredPath, [bool] $Strict = $false)
    $ErrorActionPreference = 'Stop'
    $Saved = @($global:VerbosePreference, $global:DebugPreference, $global:InformationPreference, $global:WarningPreference, $global:ErrorActionPreference)
    try {
        # Before the module is imported (its top-level code runs then), but
        # the streams only for the call itself: an import's own verbose
        # lines are not the resource's.
        $global:ErrorActionPreference = 'Continue'
        $Resolved = $null
        if ($Direct) {
            $Resolved = Resolve-PwshlibDscResource -InvokeParams $InvokeParams
        }
        $global:VerbosePreference = 'Continue'
        $global:DebugPreference = 'Continue'
        $global:InformationPreference = 'Continue'
        $global:WarningPreference = 'Continue'
        if ($null -ne $Resolved) {
            & { Invoke-PwshlibDirect -Resolved $Resolved -InvokeParams $InvokeParams -Seen $Seen -Strict $Strict } *>&1
        }
        else {
            # A function of its own: compiled only when a call needs it.
            Invoke-PwshlibDscCallThroughCmdlet -InvokeParams $InvokeParams -VendoredPath $VendoredPath -Seen $Seen
        }
    }
    finally {
        $global:VerbosePreference, $global:DebugPreference, $global:InformationPreference, $global:WarningPreference, $global:ErrorActionPreference = $Saved
    }
}

function Invoke-PwshlibDscCallThroughCmdlet {
    # Invoke-PwshlibDscCall's call through Invoke-DscResource, its streams
    # merged into its output in order. Invoke-DscResource hands back no
    # instance to compare with the one Get() was called on, so whether a
    # class's Get() returns $this is read from its syntax tree
    # ($Seen.GetReturnedThis, as the direct call sets it).
    param([hashtable] $InvokeParams, [string] $VendoredPath, [hashtable] $Seen = @{})
    # Our own statements stop at an error (Invoke-PwshlibDscCall's reasons).
    $ErrorActionPreference = 'Stop'
    if ($InvokeParams.Method -eq 'Get') {
        $Seen.GetReturnedThis = Test-PwshlibGetReturnsThis -InvokeParams $InvokeParams
        $InvokeParams = Select-PwshlibGetTargetResourceProperty -InvokeParams $InvokeParams
    }
    # -ErrorAction Stop (on Invoke-DscResource, in
    # Invoke-PwshlibDscResourceCmdlet): an error of Invoke-DscResource
    # itself (on 5.1, the LCM's report that the resource failed) ends
    # the call as the global Stop used to; it is set in the scope of
    # Invoke-DscResource, not of the resource.
    & { Invoke-PwshlibDscResourceCmdlet -InvokeParams $InvokeParams -VendoredPath $VendoredPath } *>&1
}

function Split-PwshlibStreams {
    # Separates the records of the merged streams of a call from its output:
    # returns @{ Output = the values; Streams = @({kind; text}, ...) }.
    # Collected by foreach statements, never List.Add: on PowerShell 7.3+
    # AMSI's method-invocation logging receives each argument of a .NET
    # method called from script as text (PowerShell/PowerShell#16496), and
    # these are the resource's values and stream texts.
    param([object[]] $Items)
    $Streams = @(foreach ($Item in $Items) {
            $Kind = $null
            $Text = $null
            if ($Item -is [System.Management.Automation.WarningRecord]) { $Kind = 'warning'; $Text = $Item.Message }
            elseif ($Item -is [System.Management.Automation.VerboseRecord]) { $Kind = 'verbose'; $Text = $Item.Message }
            elseif ($Item -is [System.Management.Automation.DebugRecord]) { $Kind = 'debug'; $Text = $Item.Message }
            elseif ($Item -is [System.Management.Automation.InformationRecord]) {
                # Write-Host writes an information record tagged PSHOST.
                $Kind = if ($Item.Tags -contains 'PSHOST') { 'host' } else { 'information' }
                $Text = [string] $Item.MessageData
            }
            # A string conversion, not ToString(): the record's text as an
            # ErrorRecord renders it, with no method call from script.
            elseif ($Item -is [System.Management.Automation.ErrorRecord]) { $Kind = 'error'; $Text = "$Item" }
            if ($null -ne $Kind) { [ordered]@{ kind = $Kind; text = [string] $Text } }
        })
    # The comma keeps each value one item, whatever it enumerates.
    $Values = @(foreach ($Item in $Items) {
            if (-not ($Item -is [System.Management.Automation.WarningRecord] -or $Item -is [System.Management.Automation.VerboseRecord] -or
                    $Item -is [System.Management.Automation.DebugRecord] -or $Item -is [System.Management.Automation.InformationRecord] -or
                    $Item -is [System.Management.Automation.ErrorRecord])) { , $Item }
        })
    @{ Output = $Values; Streams = $Streams }
}

function Invoke-PwshlibDscResource {
    # Runs the one DSC call that $InvokeParams describes and writes its
    # outcome as a single line of compressed JSON, the only output the
    # provider reads; when the resource wrote to its warning, verbose,
    # debug or information streams (or Write-Host), a line of JSON with
    # those records comes first ({"pwshlib_streams":[{kind,text}...]}).
    # -VendoredPath (the resource's vendored folder, when known) is added
    # to PSModulePath for the call (Add-PwshlibVendoredModulePath; for a
    # call through the 5.1 LCM to the machine-level value as well,
    # Invoke-PwshlibDscResourceCmdlet).
    #
    # The call is made directly (the class of the resource, or its
    # <Method>-TargetResource function, loaded once per host runspace) unless
    # -ThroughInvokeDscResource (PWSHLIB_DSC_DIRECT=0 for the agent), the
    # resource runs as PsDscRunAsCredential on Windows PowerShell 5.1 (the
    # LCM starts it as that account), -LcmUnlessSystem
    # (PWSHLIB_DSC_DIRECT=system) on 5.1 in a host that is not SYSTEM, or it
    # is not implemented in PowerShell files of its module (a binary
    # resource on 5.1). A direct call on 5.1 in a host that is not SYSTEM
    # adds a record {kind = 'identity'; text = the account} to the streams
    # line: the provider warns once per run that resources no longer run as
    # SYSTEM, as the LCM ran them.
    param(
        [Parameter(Mandatory = $true)]
        [hashtable] $InvokeParams,

        [switch] $ThroughInvokeDscResource,

        [switch] $LcmUnlessSystem,

        [string] $VendoredPath
    )
    # Asked on 5.1 only: a function call per DSC call is not free, and on
    # PowerShell 7 the answer is $null.
    $PwshlibUser = if ($PSVersionTable.PSVersion.Major -le 5) { Get-PwshlibNonSystemUser } else { $null }
    $PwshlibDirect = -not $ThroughInvokeDscResource -and -not $InvokeParams.Property.ContainsKey('PsDscRunAsCredential') -and -not ($LcmUnlessSystem -and $null -ne $PwshlibUser)
    $Streams = @()
    # The outcome, or the Get's line of JSON when the host wrote it.
    $PwshlibOutput = $null
    $PwshlibLine = $null
    # The output of the call and the records of its streams, collected as they
    # come, so that what the resource wrote before it failed is shown too.
    $Merged = @()
    # What the direct call saw of the resource (Invoke-PwshlibDirect).
    $Seen = @{}
    # On Windows PowerShell 5.1 as strict as its LCM, on 7 as lenient as
    # PSDesiredStateConfiguration 2.x: strict, a
    # resource's non-terminating errors fail the call, and a script-based
    # Test must return one boolean. $PwshlibDscStrict,
    # when a script sets it, picks the branch (a test's switch: the
    # real pwsh on Linux is 7).
    # In pwshlib's host (its types loaded): looked up once per call, and
    # read for the Get's line and for where the lines go.
    $PwshlibInHost = $null -ne ('PwshlibHost.SecretValues' -as [type])
    $Strict = $PSVersionTable.PSVersion.Major -le 5
    if ($null -ne $PwshlibDscStrict) {
        $Strict = [bool] $PwshlibDscStrict
    }
    # What a call rarely needs is in functions of its own (the run-as
    # check, the strict errors, a Set's or a Test's outcome, a failure):
    # PowerShell compiles a function's whole body at its first call, every
    # branch of it, which a fresh host's first call pays.
    try {
        if ($InvokeParams.Property.ContainsKey('PsDscRunAsCredential')) {
            Assert-PwshlibRunAsCredential -InvokeParams $InvokeParams
        }
        if (-not [string]::IsNullOrEmpty($VendoredPath)) {
            Add-PwshlibVendoredModulePath -Path $VendoredPath
        }
        # Collected by a dot-sourced process block (in this scope: += adds
        # to this $Merged), neither a cmdlet (module logging records each
        # object a cmdlet such as Out-Null receives) nor a .NET method
        # such as List.Add (AMSI, Split-PwshlibStreams) receiving each
        # value. -OutVariable would do neither, but it misses the merged
        # error and warning records (tried on pwsh 7.6.9).
        Invoke-PwshlibDscCall -InvokeParams $InvokeParams -Direct $PwshlibDirect -Seen $Seen -VendoredPath $VendoredPath -Strict $Strict | . { process { $Merged += , $_ } }
        $Split = Split-PwshlibStreams -Items @($Merged)
        $Streams = @($Split.Streams)
        if ($Strict) {
            Assert-PwshlibNoResourceError -InvokeParams $InvokeParams -Streams $Split.Streams
        }
        $PwshlibResult = if ($Split.Output.Count -gt 0) { $Split.Output[$Split.Output.Count - 1] } else { $null }
        if ($InvokeParams.Method -eq 'Get') {
            # pwshlib's host writes the line in compiled code when it
            # knows every value of the result (DirectResult, as for its
            # own calls after this one); otherwise, and without the
            # host, the functions that define it do.
            # $PwshlibDscResultFunctions, when a script sets it, keeps
            # to the functions (a test's switch:
            # spec/real_pwsh/dsc/direct_compiled.ps1 compares the two).
            # The result reaches the compiled code through a variable, not
            # as an argument, which AMSI would receive as text.
            if ($PwshlibInHost -and -not $PwshlibDscResultFunctions) {
                $PwshlibDscResult = $PwshlibResult
                $PwshlibLine = [PwshlibHost.DirectResult]::WriteVariable($ExecutionContext.SessionState, [bool] $Seen.GetReturnedThis)
                $PwshlibDscResult = $null
            }
            if ($null -eq $PwshlibLine) {
                $PwshlibOutput = ConvertTo-PwshlibCanonicalResult -Result $PwshlibResult
                if ($Seen.GetReturnedThis) {
                    # Read by the provider (GET_RETURNED_THIS), never a property.
                    $PwshlibOutput['pwshlib_get_returned_this'] = $true
                }
            }
        }
        else {
            $PwshlibOutput = Get-PwshlibMethodOutcome -Method $InvokeParams.Method -Result $PwshlibResult
        }
    }
    catch {
        $PwshlibLine = $null
        $Streams = @((Split-PwshlibStreams -Items @($Merged)).Streams)
        $PwshlibOutput = Get-PwshlibFailureOutcome -Method $InvokeParams.Method -Record $_
    }
    if ($PwshlibDirect -and $null -ne $PwshlibUser) {
        $Streams = @([ordered]@{ kind = 'identity'; text = $PwshlibUser }) + @($Streams)
    }
    # ConvertTo-Json's -InputObject is a table: module logging records
    # its type name, never its values.
    if ($null -eq $PwshlibLine) {
        $PwshlibLine = ConvertTo-Json -InputObject $PwshlibOutput -Compress -Depth 10
    }
    $Lines = [string[]] @(
        if ($Streams.Count -gt 0) { ConvertTo-Json -InputObject ([ordered]@{ pwshlib_streams = $Streams }) -Compress -Depth 4 }
        $PwshlibLine
    )
    if ($PwshlibInHost) {
        # pwshlib's host reads the lines from this variable after the call
        # (PwshlibHost.cs, DscOutputVariable): transcription records a
        # pipeline's output, and a Get's result may hold what the system
        # keeps secret. A variable's value is in no PowerShell log.
        $global:PwshlibDscOutput = $Lines
        return
    }
    $Lines
}

function Assert-PwshlibRunAsCredential {
    # PowerShell 7's PSDesiredStateConfiguration 2.x has no LCM: it runs
    # the resource in this process and cannot start it as the
    # PsDscRunAsCredential account, as the 5.1 LCM did. It rejects the
    # property with a message that does not say why; this one names the
    # resource and the reason. Checked before the call, so nothing runs as
    # the wrong account.
    param([hashtable] $InvokeParams)
    if ($PSVersionTable.PSVersion.Major -gt 5) {
        throw "The DSC resource '$($InvokeParams.Name)' cannot run as PsDscRunAsCredential on PowerShell $($PSVersionTable.PSVersion): Invoke-DscResource in PowerShell 7 (PSDesiredStateConfiguration 2.x) does not support PsDscRunAsCredential. Remove dsc_psdscrunascredential, or run this resource with Windows PowerShell 5.1."
    }
}

function Assert-PwshlibNoResourceError {
    # The 5.1 LCM fails a resource that wrote to its error stream, even
    # when it went on to return: "The PowerShell DSC resource '...' threw
    # one or more non-terminating errors while running the
    # Set-TargetResource functionality. These errors are logged to the ETW
    # channel called Microsoft-Windows-DSC/Operational" (its message, as
    # UKCloud's Azure Stack guide quotes it,
    # azs-how-deploy-sql-template-powershell.md). There is no ETW channel
    # here: the errors follow, and show at --debug too.
    param([hashtable] $InvokeParams, $Streams)
    $Errors = @(foreach ($Record in $Streams) { if ($Record.kind -eq 'error') { $Record.text } })
    if ($Errors.Count -gt 0) {
        throw "The PowerShell DSC resource '$($InvokeParams.Name)' threw one or more non-terminating errors while running the $($InvokeParams.Method)-TargetResource functionality: $($Errors -join ' ')"
    }
}

function Get-PwshlibMethodOutcome {
    # The outcome of a Set or a Test that returned.
    param([string] $Method, $Result)
    switch ($Method) {
        'Set' {
            [ordered]@{
                indesiredstate = $true
                rebootrequired = [bool] $Result.RebootRequired
                errormessage   = ''
            }
        }
        'Test' {
            [ordered]@{
                indesiredstate = [bool] $Result.InDesiredState
                errormessage   = ''
            }
        }
    }
}

function Get-PwshlibFailureOutcome {
    # The outcome of a call that failed ($Record, what it threw). A failure
    # must never come back with an empty message: the provider tells
    # success from failure by it. The exception of a class method arrives
    # wrapped in a MethodInvocationException ("Exception calling Get ..."):
    # the message the resource threw is the one inside.
    param([string] $Method, $Record)
    $PwshlibException = $Record.Exception
    if ($PwshlibException -is [System.Management.Automation.MethodInvocationException] -and $null -ne $PwshlibException.InnerException) {
        $PwshlibException = $PwshlibException.InnerException
    }
    $PwshlibMessage = $PwshlibException.Message
    if ([string]::IsNullOrEmpty($PwshlibMessage)) {
        $PwshlibMessage = "Invoke-DscResource failed: $Record"
    }
    $PwshlibOutcome = [ordered]@{ indesiredstate = $false }
    if ($Method -ne 'Test') { $PwshlibOutcome.rebootrequired = $false }
    $PwshlibOutcome.errormessage = $PwshlibMessage
    # A call through Invoke-DscResource ($PwshlibDirect of the caller,
    # Invoke-PwshlibDscResource, false) also says what no display language
    # changes, for the provider's collision and logon-failure checks (a
    # localized 5.1 translates the LCM's message): the record's category
    # name (CimCmdlets maps the LCM's CIM error to it: ResourceBusy when
    # another DSC operation is in progress) and the codes of each exception
    # inside it (HResult, and a CimException's error_Code: the Win32 error
    # or HRESULT the LCM failed with, such as LogonUser's for a run-as
    # account). A direct call meets neither.
    if ($PwshlibDirect) { return $PwshlibOutcome }
    $PwshlibCodes = [System.Collections.Generic.List[long]]::new()
    for ($PwshlibInner = $Record.Exception; $null -ne $PwshlibInner; $PwshlibInner = $PwshlibInner.InnerException) {
        $PwshlibCodes.Add($PwshlibInner.HResult)
        $PwshlibErrorData = $PwshlibInner.PSObject.Properties['ErrorData']
        if ($null -ne $PwshlibErrorData -and $null -ne $PwshlibErrorData.Value) {
            $PwshlibCode = $PwshlibErrorData.Value.CimInstanceProperties['error_Code']
            if ($null -ne $PwshlibCode -and $null -ne $PwshlibCode.Value) { $PwshlibCodes.Add([long] $PwshlibCode.Value) }
        }
    }
    $PwshlibOutcome.errorcategory = $Record.CategoryInfo.Category.ToString()
    $PwshlibOutcome.errorcodes = $PwshlibCodes.ToArray()
    $PwshlibOutcome
}
