# What PwshlibHost.DscClasses.InFile (the module index's classes, kept
# between host processes) answers for -File, step by step, as one line of
# JSON for module_index_spec.rb: parsed and kept, the kept answer believed
# while the file's length and last write time hold (a forged one proves
# the parse was skipped), parsed again when either changes, and parsed
# without keeping when the directory cannot be written or is not set.
param(
    [Parameter(Mandatory = $true)] [string] $Templates,
    [Parameter(Mandatory = $true)] [string] $File,
    [Parameter(Mandatory = $true)] [string] $Cache
)
$ErrorActionPreference = 'Stop'
& (Join-Path $PSScriptRoot 'host_types.ps1') -Templates $Templates
$Steps = [ordered]@{}
function Get-Kept { @(Get-ChildItem -LiteralPath $Cache -Filter 'DscClasses-*.txt' | ForEach-Object FullName) }
[PwshlibHost.DscClasses]::CacheDirectory = $Cache
$Steps.first = @([PwshlibHost.DscClasses]::InFile($File))
$Kept = @(Get-Kept)
$Steps.kept_files = $Kept.Count
$Steps.temporary_files = @(Get-ChildItem -LiteralPath $Cache -Filter 'tmp-*').Count
$Lines = [System.IO.File]::ReadAllLines($Kept[0])
$Steps.kept_lines = $Lines
# Forged: the same file, length and time, other classes.
[System.IO.File]::WriteAllLines($Kept[0], [string[]] (@($Lines[0..3]) + 'Forged'))
$Steps.forged = @([PwshlibHost.DscClasses]::InFile($File))
# The same length, another last write time: parsed again, kept anew.
[System.IO.File]::SetLastWriteTimeUtc($File, [System.IO.File]::GetLastWriteTimeUtc($File).AddSeconds(-5))
$Steps.touched = @([PwshlibHost.DscClasses]::InFile($File))
$Steps.touched_again = @([PwshlibHost.DscClasses]::InFile($File))
# Forged again, then the file grows by a class: parsed again.
$Lines = [System.IO.File]::ReadAllLines($Kept[0])
[System.IO.File]::WriteAllLines($Kept[0], [string[]] (@($Lines[0..3]) + 'Forged'))
$Time = [System.IO.File]::GetLastWriteTimeUtc($File)
[System.IO.File]::AppendAllText($File, "`n[DscResource()] class Added { [DscProperty(Key)] [string] `$Name }`n")
[System.IO.File]::SetLastWriteTimeUtc($File, $Time)
$Steps.grown = @([PwshlibHost.DscClasses]::InFile($File))
# Another file's forged answer under this file's name is not believed.
$Lines = [System.IO.File]::ReadAllLines($Kept[0])
[System.IO.File]::WriteAllLines($Kept[0], [string[]] (@($Lines[0], ($File + '.other')) + @($Lines[2..3]) + 'Forged'))
$Steps.other_path = @([PwshlibHost.DscClasses]::InFile($File))
# No directory, or none set: parsed, nothing kept, no error.
[PwshlibHost.DscClasses]::CacheDirectory = Join-Path $Cache 'missing'
$Steps.missing_directory = @([PwshlibHost.DscClasses]::InFile($File))
[PwshlibHost.DscClasses]::CacheDirectory = $null
$Steps.no_directory = @([PwshlibHost.DscClasses]::InFile($File))
$Steps.kept_files_at_end = @(Get-Kept).Count
ConvertTo-Json -Compress -Depth 3 -InputObject $Steps
