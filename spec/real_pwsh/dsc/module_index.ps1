# Finds the [DscResource()] classes of each -Files module (one per line) both ways: the
# host's compiled predicate (PwshlibHost.DscClasses, PwshlibHost.Direct.cs)
# and the prelude's script block predicate, its fallback without the host
# (Get-PwshlibDscModuleIndex), and prints one line of JSON per file with
# both lists, for module_index_spec.rb to compare.
param(
    [Parameter(Mandatory = $true)] [string] $Templates,
    # The files, one per line.
    [Parameter(Mandatory = $true)] [string] $Files
)
$ErrorActionPreference = 'Stop'
& (Join-Path $PSScriptRoot 'host_types.ps1') -Templates $Templates
foreach ($File in $Files.Split("`n")) {
    $Ast = [System.Management.Automation.Language.Parser]::ParseFile($File, [ref] $null, [ref] $null)
    $Fallback = @($Ast.FindAll({
                param($Node)
                $Node -is [System.Management.Automation.Language.TypeDefinitionAst] -and
                @($Node.Attributes | Where-Object { $_.TypeName.Name -eq 'DscResource' }).Count -gt 0
            }, $true) | ForEach-Object { $_.Name })
    $Compiled = @([PwshlibHost.DscClasses]::Find($Ast))
    ConvertTo-Json -Compress -InputObject ([ordered]@{ file = $File; compiled = $Compiled; fallback = $Fallback })
}
