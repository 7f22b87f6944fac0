# The outcome of a Set or Test call, and of any failed call. Written for
# pwshlib; embedded into the native library at build time.
$Response = [ordered]@{
    indesiredstate = $false
    rebootrequired = $false
    errormessage   = ''
}
# Set only by the PSModulePath block of Class-based resources.
$PwshlibPSModulePathRestore = $null
