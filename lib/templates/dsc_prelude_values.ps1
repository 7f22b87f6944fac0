# The prelude of every script pwshlib sends for an Invoke-DscResource call:
# the helper functions, and Invoke-PwshlibDscResource, which makes the one
# DSC call and prints its outcome. Written for pwshlib; embedded into the
# native library at build time.
#
# A host that offers preludes (docs/protocol.md) defines these functions once
# per session, so each call carries only its own lines; otherwise, and in the
# --debug dump, this text comes first in the script. It must therefore only
# define functions: nothing here may run, print or set a variable.

function New-PsCredential {
    # DSC wants a PSCredential; Puppet hands over a user name and a plain
    # password.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]
        [AllowEmptyString()]
        [string] $User,

        [Parameter(Mandatory = $true)]
        [AllowEmptyString()]
        [string] $Password
    )
    # The password reaches no command and no .NET method as an argument:
    # module logging records every parameter a cmdlet binds
    # (ConvertTo-SecureString -String would show it), and on PowerShell
    # 7.3+ AMSI's method-invocation logging receives every argument of a
    # .NET method called from script as text ("<Type>.Method(<argument>)",
    # PowerShell/PowerShell#16496 and #25022). A hashtable converted to a
    # NetworkCredential sets its properties by reflection
    # (LanguagePrimitives' conversion through the default constructor),
    # which neither logs; its SecurePassword is the SecureString, empty
    # for an empty password.
    $SecurePassword = ([System.Net.NetworkCredential] @{ Password = $Password }).SecurePassword
    [System.Management.Automation.PSCredential]::new($User, $SecurePassword)
}

function New-PwshlibEmbeddedInstance {
    # One embedded instance (a nested class) of a class-based resource; the
    # generated script calls this where the script of a MOF resource calls
    # New-CimInstance. Which form it takes depends on the PowerShell that
    # runs the resource, so it is decided here, at run time:
    #
    # Windows PowerShell 5.1 (PSEdition Desktop; older versions have no
    # PSEdition): Invoke-DscResource hands the call to the LCM, which takes
    # embedded instances as CIM instances only. Made as before.
    #
    # PowerShell 6 and 7 (PSEdition Core): PSDesiredStateConfiguration 2.x
    # has no LCM. It creates the class of the resource in this process and
    # assigns each -Property value to the instance ($resource.$Name =
    # $Value), so PowerShell converts the value to the type of the
    # property. It converts a hashtable to a class (a type with a default constructor,
    # each key set as a property, nested hashtables likewise), but not a
    # CIM instance to a class; and pwsh on Linux has no New-CimInstance.
    # So the instance is the hashtable itself, and a credential inside one a
    # PSCredential (which a hashtable cannot become: it has no default
    # constructor).
    param(
        [Parameter(Mandatory = $true)]
        [string] $ClassName,

        [Parameter(Mandatory = $true)]
        [AllowEmptyCollection()]
        [hashtable] $Property
    )
    if ($PSVersionTable.PSEdition -ne 'Core') {
        return New-CimInstance -ClientOnly -ClassName $ClassName -Property $Property
    }
    if ($ClassName -eq 'MSFT_Credential') {
        return New-PsCredential -User $Property.UserName -Password $Property.Password
    }
    $Property
}

function New-PwshlibCredentialInstance {
    # A credential inside an embedded instance, from the PSCredential the
    # host bound for the call (docs/protocol.md, "Secrets"): never a plain
    # password handed to a command, which module logging would record.
    #
    # A class-based resource on PowerShell 6 and 7 takes the credential as
    # it is (New-PwshlibEmbeddedInstance's reasons). Anywhere else the value
    # is an MSFT_Credential CIM instance, as DSC's MOF schemas declare it
    # and the 5.1 LCM takes it: the host's compiled code builds it from the
    # credential (New-CimInstance would need the password as a string in
    # its -Property). Outside pwshlib's host (a script run by hand, a
    # pwshlib 2.x host) there is no such code, and New-CimInstance it is.
    param(
        [Parameter(Mandatory = $true)]
        [System.Management.Automation.PSCredential] $Credential,

        [switch] $ClassBased
    )
    if ($ClassBased -and $PSVersionTable.PSEdition -eq 'Core') {
        return $Credential
    }
    $Builder = 'PwshlibHost.SecretValues' -as [type]
    if ($null -ne $Builder) {
        return $Builder::NewCredentialInstance($Credential)
    }
    New-CimInstance -ClientOnly -ClassName 'MSFT_Credential' -Property @{
        UserName = $Credential.UserName
        Password = $Credential.GetNetworkCredential().Password
    }
}

function New-PwshlibEmbeddedInstanceArray {
    # An array of the embedded instances of a class-based resource (made by
    # New-PwshlibEmbeddedInstance): typed CimInstance[] for the LCM of
    # Windows PowerShell 5.1, as the script of a MOF resource writes it; on
    # PowerShell 6 and 7 a plain array, which PowerShell converts item by
    # item to the class array of the property (a cast to CimInstance[] would
    # fail there: a hashtable does not convert to a CIM instance).
    param(
        [AllowEmptyCollection()]
        [object[]] $Instances = @()
    )
    if ($PSVersionTable.PSEdition -ne 'Core') {
        return , [Microsoft.Management.Infrastructure.CimInstance[]] $Instances
    }
    , $Instances
}
