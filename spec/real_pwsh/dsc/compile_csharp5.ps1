# Compiles C# as Windows PowerShell 5.1's Add-Type would,
# with the Roslyn inside pwsh 7: language version C# 5 (5.1's
# Add-Type compiles with the .NET Framework's csc through CodeDom, which
# knows no later C#), warnings as errors (5.1's Add-Type fails on a warning
# unless -IgnoreWarnings), against the reference assemblies of the 5.1 API
# in -ReferenceDirectory (mscorlib, System, System.Core of .NET Framework
# 4.7.2 and System.Management.Automation of PowerShell Standard 5.1).
#
# The source is the host's C# files (lib/templates/PwshlibHost*.cs, given in
# -Source in host.ps1's order, separated by the path separator), joined by a
# newline as host.ps1 joins them before it hands the text to
# `Add-Type -TypeDefinition`, so it is exactly the text Add-Type receives.
# -Append adds C# after it (the tests' C# 6 probe).
#
# Prints one line of JSON: {"success": bool, "diagnostics": [...]}.
param(
    [Parameter(Mandatory = $true)] [string] $Source,
    [Parameter(Mandatory = $true)] [string] $ReferenceDirectory,
    [string] $Append = ''
)
$ErrorActionPreference = 'Stop'

$Parts = foreach ($Path in $Source.Split([System.IO.Path]::PathSeparator)) { [System.IO.File]::ReadAllText($Path) }
$Source = [string]::Join("`n", @($Parts)) + "`n" + $Append

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
