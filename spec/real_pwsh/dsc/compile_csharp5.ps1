# Compiles C# as Windows PowerShell 5.1's Add-Type would (deliverable 4 of
# issue 31), with the Roslyn inside pwsh 7: language version C# 5 (5.1's
# Add-Type compiles with the .NET Framework's csc through CodeDom, which
# knows no later C#), warnings as errors (5.1's Add-Type fails on a warning
# unless -IgnoreWarnings), against the reference assemblies of the 5.1 API
# in -ReferenceDirectory (mscorlib, System, System.Core of .NET Framework
# 4.7.2 and System.Management.Automation of PowerShell Standard 5.1).
#
# The source is host.ps1's own: the here-string that host.ps1 assigns to
# $script:HostSource and hands to `Add-Type -TypeDefinition`, read through
# PowerShell's parser, so it is exactly the text Add-Type receives.
# -Append adds C# after it (the tests' C# 6 probe).
#
# Prints one line of JSON: {"success": bool, "diagnostics": [...]}.
param(
    [Parameter(Mandatory = $true)] [string] $HostScript,
    [Parameter(Mandatory = $true)] [string] $ReferenceDirectory,
    [string] $Append = ''
)
$ErrorActionPreference = 'Stop'

$Ast = [System.Management.Automation.Language.Parser]::ParseFile($HostScript, [ref] $null, [ref] $null)
# host.ps1 must compile its C# the one way this script checks: one
# `Add-Type -TypeDefinition $script:HostSource`.
$AddTypes = @($Ast.FindAll({
            param($Node)
            $Node -is [System.Management.Automation.Language.CommandAst] -and
            $Node.GetCommandName() -eq 'Add-Type' -and
            @($Node.CommandElements | Where-Object { $_ -is [System.Management.Automation.Language.CommandParameterAst] -and $_.ParameterName -eq 'TypeDefinition' }).Count -eq 1
        }, $true))
if ($AddTypes.Count -ne 1) {
    throw "host.ps1 has $($AddTypes.Count) Add-Type -TypeDefinition calls, not one"
}
$Elements = @($AddTypes[0].CommandElements)
$At = [array]::FindIndex($Elements, [Predicate[object]] { param($E) $E -is [System.Management.Automation.Language.CommandParameterAst] -and $E.ParameterName -eq 'TypeDefinition' })
$Argument = $Elements[$At + 1]
if ($Argument -isnot [System.Management.Automation.Language.VariableExpressionAst]) {
    throw "host.ps1's Add-Type -TypeDefinition takes $($Argument.Extent.Text), not a variable"
}
$Name = $Argument.VariablePath.UserPath
$Assignments = @($Ast.FindAll({
            param($Node)
            $Node -is [System.Management.Automation.Language.AssignmentStatementAst] -and
            $Node.Left -is [System.Management.Automation.Language.VariableExpressionAst] -and
            $Node.Left.VariablePath.UserPath -eq $Name
        }, $true))
if ($Assignments.Count -ne 1) {
    throw "host.ps1 assigns `$$Name $($Assignments.Count) times, not once"
}
$Value = $Assignments[0].Right.Expression
if ($Value -isnot [System.Management.Automation.Language.StringConstantExpressionAst]) {
    throw "`$$Name is not assigned a constant string (a single-quoted here-string)"
}
$Source = $Value.Value + "`n" + $Append

Add-Type -Path (Join-Path $PSHOME 'Microsoft.CodeAnalysis.dll')
Add-Type -Path (Join-Path $PSHOME 'Microsoft.CodeAnalysis.CSharp.dll')
$ParseOptions = [Microsoft.CodeAnalysis.CSharp.CSharpParseOptions]::new([Microsoft.CodeAnalysis.CSharp.LanguageVersion]::CSharp5)
$Tree = [Microsoft.CodeAnalysis.CSharp.CSharpSyntaxTree]::ParseText($Source, $ParseOptions)
$References = [System.Collections.Generic.List[Microsoft.CodeAnalysis.MetadataReference]]::new()
foreach ($Dll in Get-ChildItem -LiteralPath $ReferenceDirectory -Filter '*.dll') {
    $References.Add([Microsoft.CodeAnalysis.MetadataReference]::CreateFromFile($Dll.FullName))
}
if ($References.Count -lt 4) {
    throw "expected the four 5.1 reference assemblies in $ReferenceDirectory, found $($References.Count)"
}
$Options = [Microsoft.CodeAnalysis.CSharp.CSharpCompilationOptions]::new([Microsoft.CodeAnalysis.OutputKind]::DynamicallyLinkedLibrary).
    WithGeneralDiagnosticOption([Microsoft.CodeAnalysis.ReportDiagnostic]::Error).
    WithWarningLevel(4)
$Compilation = [Microsoft.CodeAnalysis.CSharp.CSharpCompilation]::Create('PwshlibHostCSharp5', [Microsoft.CodeAnalysis.SyntaxTree[]] @($Tree), $References, $Options)
$Stream = [System.IO.MemoryStream]::new()
$Result = $Compilation.Emit($Stream)
$Diagnostics = @($Result.Diagnostics |
        Where-Object { $_.Severity -ne [Microsoft.CodeAnalysis.DiagnosticSeverity]::Hidden } |
        ForEach-Object { $_.ToString() })
ConvertTo-Json -Compress -InputObject ([ordered]@{ success = $Result.Success; diagnostics = $Diagnostics; bytes = $Source.Length })
