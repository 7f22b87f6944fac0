# Class-based DSC resources for the real-PowerShell tier. They run for real
# in pwsh 7 through the stand-in Invoke-DscResource
# (spec/real_pwsh/dsc/standin), and keep "the machine" in JSON files under
# $env:PWSHLIB_REAL_DSC_STATE, one per resource type, keyed by the key
# property. Every call appends a line to calls.jsonl there, with the
# properties as the resource received them, passwords in the clear: the log
# is a test artefact, and it is how a test proves a secret arrived intact
# while Puppet never showed it.

enum RealEnsure {
    Absent
    Present
}

# Slow is 1: ConvertTo-Json writes an enum as its number, the flapping a
# class-based enum causes ({"Key" => "a", "Mode" => 1}).
enum RealMode {
    Fast
    Slow
}

function Get-RealStatePath {
    # One file per resource instance, <State>/<Resource>/<key as UTF-8 hex>.json
    # (any key is a valid file name so): a Get reads its own instance, as a
    # real resource reads its one registry key or file, and costs the same
    # however many instances the machine holds. (One file per type, read
    # whole by every call, made a Get of 100 instances 4 times as slow as a
    # Get of one: a benchmark then measured the file, not the call.)
    param([string] $Resource, [string] $Key)
    if ([string]::IsNullOrEmpty($env:PWSHLIB_REAL_DSC_STATE)) {
        throw 'PWSHLIB_REAL_DSC_STATE is not set: the fixture resources keep their state there'
    }
    $Hex = [System.BitConverter]::ToString([System.Text.Encoding]::UTF8.GetBytes($Key)).Replace('-', '').ToLowerInvariant()
    [System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, $Resource, "$Hex.json")
}

function Read-RealState {
    # The stored properties of one instance, or $null when it is absent.
    param([string] $Resource, [string] $Key)
    $Path = Get-RealStatePath $Resource $Key
    if (-not [System.IO.File]::Exists($Path)) { return $null }
    [System.IO.File]::ReadAllText($Path, [System.Text.Encoding]::UTF8) | ConvertFrom-Json
}

function Write-RealState {
    # Stores one instance's properties; $null removes it.
    param([string] $Resource, [string] $Key, $Stored)
    $Path = Get-RealStatePath $Resource $Key
    if ($null -eq $Stored) {
        [System.IO.File]::Delete($Path)
        return
    }
    $null = [System.IO.Directory]::CreateDirectory([System.IO.Path]::GetDirectoryName($Path))
    $Json = ConvertTo-Json -InputObject $Stored -Depth 10
    [System.IO.File]::WriteAllText($Path, $Json, [System.Text.UTF8Encoding]::new($false))
}

function ConvertTo-RealPlain {
    # A property value as the state file and the call log keep it: a
    # credential as user and password (in the clear), an enum by name, a
    # DateTime as round-trip UTC text, a class instance as a table of its
    # properties.
    param($Value)
    if ($null -eq $Value) { return $null }
    if ($Value -is [System.Management.Automation.PSCredential]) {
        return [ordered]@{ user = $Value.UserName; password = $Value.GetNetworkCredential().Password }
    }
    if ($Value -is [enum]) { return $Value.ToString() }
    if ($Value -is [datetime]) { return $Value.ToUniversalTime().ToString('o', [cultureinfo]::InvariantCulture) }
    if ($Value -is [string] -or $Value.GetType().IsPrimitive) { return $Value }
    if ($Value -is [System.Collections.IDictionary]) {
        $Table = [ordered]@{}
        foreach ($Key in $Value.Keys) { $Table[[string] $Key] = ConvertTo-RealPlain $Value[$Key] }
        return $Table
    }
    if ($Value -is [System.Collections.IEnumerable]) {
        return , @(foreach ($Item in $Value) { ConvertTo-RealPlain $Item })
    }
    $Table = [ordered]@{}
    foreach ($Property in $Value.PSObject.Properties) { $Table[$Property.Name] = ConvertTo-RealPlain $Property.Value }
    $Table
}

function Read-RealStates {
    # The stored properties of every instance of a resource, in the order
    # of their files' names: what an Export lists.
    param([string] $Resource)
    $Folder = [System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, $Resource)
    if (-not [System.IO.Directory]::Exists($Folder)) { return }
    $Files = [System.IO.Directory]::GetFiles($Folder, '*.json')
    [Array]::Sort($Files, [StringComparer]::Ordinal)
    foreach ($File in $Files) {
        [System.IO.File]::ReadAllText($File, [System.Text.Encoding]::UTF8) | ConvertFrom-Json
    }
}

function Write-RealCall {
    param([string] $Resource, [string] $Method, [System.Collections.IDictionary] $Properties)
    $Plain = [ordered]@{}
    foreach ($Key in $Properties.Keys) { $Plain[$Key] = ConvertTo-RealPlain $Properties[$Key] }
    $Line = ConvertTo-Json -InputObject ([ordered]@{ resource = $Resource; method = $Method; properties = $Plain; pid = $PID }) -Depth 10 -Compress
    $Path = Join-Path $env:PWSHLIB_REAL_DSC_STATE 'calls.jsonl'
    [System.IO.File]::AppendAllText($Path, $Line + "`n", [System.Text.UTF8Encoding]::new($false))
}

function New-RealCredential {
    param($Stored)
    if ($null -eq $Stored) { return $null }
    $Secure = [System.Security.SecureString]::new()
    foreach ($Char in ([string] $Stored.password).ToCharArray()) { $Secure.AppendChar($Char) }
    [System.Management.Automation.PSCredential]::new($Stored.user, $Secure)
}

# Credential, enum, string array, integer, boolean, DateTime and non-ASCII
# text at the top level; Get returns the credential with its password, as a
# resource that reads one back may.
[DscResource()]
class RealSetting {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [RealEnsure] $Ensure = [RealEnsure]::Present

    [DscProperty()]
    [PSCredential] $Credential

    [DscProperty()]
    [string[]] $Tags

    [DscProperty()]
    [uint32] $Count

    [DscProperty()]
    [bool] $Enabled

    [DscProperty()]
    [datetime] $Expires

    [DscProperty()]
    [string] $Description

    [hashtable] Properties() {
        return [ordered]@{
            Name = $this.Name; Ensure = $this.Ensure; Credential = $this.Credential; Tags = $this.Tags
            Count = $this.Count; Enabled = $this.Enabled; Expires = $this.Expires; Description = $this.Description
        }
    }

    [RealSetting] Get() {
        Write-RealCall 'RealSetting' 'Get' $this.Properties()
        $Stored = Read-RealState 'RealSetting' $this.Name
        $Result = [RealSetting]::new()
        $Result.Name = $this.Name
        if ($null -eq $Stored) {
            $Result.Ensure = [RealEnsure]::Absent
            return $Result
        }
        $Result.Ensure = [RealEnsure]::Present
        $Result.Credential = New-RealCredential $Stored.Credential
        $Result.Tags = $Stored.Tags
        $Result.Count = $Stored.Count
        $Result.Enabled = $Stored.Enabled
        if ($null -ne $Stored.Expires) {
            $Result.Expires = [datetime]::Parse($Stored.Expires, [cultureinfo]::InvariantCulture, [System.Globalization.DateTimeStyles]::RoundtripKind)
        }
        $Result.Description = $Stored.Description
        return $Result
    }

    # What the machine has, as a class-based resource lists itself for
    # DSC v3's `dsc resource export`: each instance as its Get reads it.
    static [RealSetting[]] Export() {
        Write-RealCall 'RealSetting' 'Export' @{}
        $Listed = [System.Collections.Generic.List[RealSetting]]::new()
        foreach ($Stored in @(Read-RealStates 'RealSetting')) {
            $Item = [RealSetting]::new()
            $Item.Name = $Stored.Name
            $Item.Ensure = [RealEnsure]::Present
            $Item.Credential = New-RealCredential $Stored.Credential
            $Item.Tags = $Stored.Tags
            $Item.Count = $Stored.Count
            $Item.Enabled = $Stored.Enabled
            if ($null -ne $Stored.Expires) {
                $Item.Expires = [datetime]::Parse($Stored.Expires, [cultureinfo]::InvariantCulture, [System.Globalization.DateTimeStyles]::RoundtripKind)
            }
            $Item.Description = $Stored.Description
            $Listed.Add($Item)
        }
        return $Listed.ToArray()
    }

    [bool] Test() {
        Write-RealCall 'RealSetting' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealSetting' $this.Name
        if ($this.Ensure -eq [RealEnsure]::Absent) { return $null -eq $Stored }
        if ($null -eq $Stored) { return $false }
        $Wanted = ConvertTo-RealPlain $this.Properties()
        $Wanted.Remove('Ensure')
        $Have = ConvertTo-Json -InputObject $Stored -Depth 10 -Compress
        return (ConvertTo-Json -InputObject $Wanted -Depth 10 -Compress) -eq $Have
    }

    [void] Set() {
        Write-RealCall 'RealSetting' 'Set' $this.Properties()
        $Plain = $null
        if ($this.Ensure -ne [RealEnsure]::Absent) {
            $Plain = ConvertTo-RealPlain $this.Properties()
            $Plain.Remove('Ensure')
        }
        Write-RealState 'RealSetting' $this.Name $Plain
    }
}

# A nested class: what a class-based resource's embedded instance is. On
# PowerShell 7, PSDesiredStateConfiguration 2.x assigns the -Property value
# to the resource's property, so a hashtable becomes this class (PowerShell's
# own conversion); a CIM instance would not convert.
class RealOption {
    [DscProperty(Key)]
    [string] $Key

    [DscProperty()]
    [RealMode] $Mode
}

function New-RealOption {
    param($Stored)
    $Option = [RealOption]::new()
    $Option.Key = $Stored.Key
    $Option.Mode = $Stored.Mode
    $Option
}

# Embedded instances: an array of a nested class (with an enum inside) and a
# single one.
[DscResource()]
class RealPool {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [RealEnsure] $Ensure = [RealEnsure]::Present

    [DscProperty()]
    [RealOption[]] $Options

    [DscProperty()]
    [RealOption] $Primary

    [hashtable] Properties() {
        return [ordered]@{ Name = $this.Name; Ensure = $this.Ensure; Options = $this.Options; Primary = $this.Primary }
    }

    [RealPool] Get() {
        Write-RealCall 'RealPool' 'Get' $this.Properties()
        $Stored = Read-RealState 'RealPool' $this.Name
        $Result = [RealPool]::new()
        $Result.Name = $this.Name
        if ($null -eq $Stored) {
            $Result.Ensure = [RealEnsure]::Absent
            return $Result
        }
        $Result.Ensure = [RealEnsure]::Present
        if ($null -ne $Stored.Options) {
            $Result.Options = @(foreach ($Option in $Stored.Options) { New-RealOption $Option })
        }
        if ($null -ne $Stored.Primary) {
            $Result.Primary = New-RealOption $Stored.Primary
        }
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealPool' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealPool' $this.Name
        if ($this.Ensure -eq [RealEnsure]::Absent) { return $null -eq $Stored }
        if ($null -eq $Stored) { return $false }
        $Wanted = ConvertTo-RealPlain $this.Properties()
        $Wanted.Remove('Ensure')
        return (ConvertTo-Json -InputObject $Wanted -Depth 10 -Compress) -eq (ConvertTo-Json -InputObject $Stored -Depth 10 -Compress)
    }

    [void] Set() {
        Write-RealCall 'RealPool' 'Set' $this.Properties()
        $Plain = $null
        if ($this.Ensure -ne [RealEnsure]::Absent) {
            $Plain = ConvertTo-RealPlain $this.Properties()
            $Plain.Remove('Ensure')
        }
        Write-RealState 'RealPool' $this.Name $Plain
    }
}

# Writes to every stream, and on Set does what Mode says: nothing, asks
# for a reboot ($global:DSCMachineStatus = 1), or fails with the password
# of Secret in its message. Its verbose and host
# lines carry the password too: what it writes must reach the user
# scrubbed. Get always reports Mode 'ok', so another Mode is a change.
[DscResource()]
class RealNoisy {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [string] $Mode

    [DscProperty()]
    [PSCredential] $Secret

    [string] Password() {
        if ($null -eq $this.Secret) { return '' }
        return $this.Secret.GetNetworkCredential().Password
    }

    [void] Speak([string] $Method) {
        Write-Verbose "RealNoisy $Method verbose: $($this.Name) with $($this.Password())"
        Write-Warning "RealNoisy $Method warning: $($this.Name)"
        Write-Host "RealNoisy $Method host: $($this.Password())"
        Write-Information "RealNoisy $Method information"
        Write-Debug "RealNoisy $Method debug"
        [Console]::WriteLine("RealNoisy $Method console")
    }

    [RealNoisy] Get() {
        Write-RealCall 'RealNoisy' 'Get' ([ordered]@{ Name = $this.Name; Mode = $this.Mode; Secret = $this.Secret })
        $this.Speak('Get')
        $Result = [RealNoisy]::new()
        $Result.Name = $this.Name
        $Result.Mode = 'ok'
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealNoisy' 'Test' ([ordered]@{ Name = $this.Name; Mode = $this.Mode; Secret = $this.Secret })
        return $this.Mode -eq 'ok'
    }

    [void] Set() {
        Write-RealCall 'RealNoisy' 'Set' ([ordered]@{ Name = $this.Name; Mode = $this.Mode; Secret = $this.Secret })
        $this.Speak('Set')
        if ($this.Mode -eq 'fail') {
            throw "RealNoisy refused $($this.Name): $($this.Password())"
        }
        if ($this.Mode -eq 'reboot') {
            $global:DSCMachineStatus = 1
        }
    }
}

# The nested class of RealVault's endpoints: a secret member (ApiKey).
class RealVaultEndpoint {
    [DscProperty(Key)]
    [string] $Address

    [DscProperty()]
    [string] $ApiKey
}

# Secrets in every place a manifest can put one: a credential
# that Get needs too (Mandatory: the type says mandatory_for_get), a
# Sensitive string, a hashtable with secrets inside (and an array and a
# hashtable within it), an array of nested class objects with a secret
# member, and an array of secrets. Get returns them all, as stored, and
# echoes its Secret and Phrases back when nothing is stored yet.
#
# Unlike the resources above, its code never hands a value to a command
# (cmdlet or function): module logging records every command's parameter
# values, and this resource proves that pwshlib leaks nothing into
# PowerShell's logs, so it must leak nothing itself. It works in class
# methods and .NET calls only (neither is a command), and keeps its state
# as JSON through System.Text.Json and PowerShell's JsonObject class, not
# ConvertTo-Json/ConvertFrom-Json.
[DscResource()]
class RealVault {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [RealEnsure] $Ensure = [RealEnsure]::Present

    [DscProperty(Mandatory)]
    [PSCredential] $Credential

    [DscProperty()]
    [string] $Secret

    [DscProperty()]
    [hashtable] $Settings

    [DscProperty()]
    [RealVaultEndpoint[]] $Endpoints

    [DscProperty()]
    [string[]] $Phrases

    [DscProperty()]
    [string] $Note

    # A value as the state file keeps it: a credential as user and password
    # (in the clear: a test artefact), an enum by name, dictionaries with
    # their keys sorted, class objects as dictionaries of their properties.
    static [object] Plain([object] $Value) {
        if ($null -eq $Value) { return $null }
        if ($Value -is [PSCredential]) {
            $Table = [System.Collections.Generic.SortedDictionary[string, object]]::new([System.StringComparer]::Ordinal)
            $Table['password'] = $Value.GetNetworkCredential().Password
            $Table['user'] = $Value.UserName
            return $Table
        }
        if ($Value -is [enum]) { return $Value.ToString() }
        if ($Value -is [string] -or $Value.GetType().IsPrimitive) { return $Value }
        if ($Value -is [System.Collections.IDictionary]) {
            $Table = [System.Collections.Generic.SortedDictionary[string, object]]::new([System.StringComparer]::Ordinal)
            foreach ($Key in $Value.Keys) { $Table[[string] $Key] = [RealVault]::Plain($Value[$Key]) }
            return $Table
        }
        if ($Value -is [System.Collections.IEnumerable]) {
            $List = [System.Collections.Generic.List[object]]::new()
            foreach ($Item in $Value) { $List.Add([RealVault]::Plain($Item)) }
            return $List
        }
        if ($Value -is [RealVaultEndpoint]) {
            $Table = [System.Collections.Generic.SortedDictionary[string, object]]::new([System.StringComparer]::Ordinal)
            $Table['Address'] = $Value.Address
            $Table['ApiKey'] = $Value.ApiKey
            return $Table
        }
        return [string] $Value
    }

    static [string] Json([object] $Value) {
        return [System.Text.Json.JsonSerializer]::Serialize([RealVault]::Plain($Value), [object])
    }

    static [string] StatePath([string] $Key) {
        if ([string]::IsNullOrEmpty($env:PWSHLIB_REAL_DSC_STATE)) {
            throw 'PWSHLIB_REAL_DSC_STATE is not set: the fixture resources keep their state there'
        }
        $Hex = [System.Convert]::ToHexString([System.Text.Encoding]::UTF8.GetBytes($Key)).ToLowerInvariant()
        return [System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, 'RealVault', "$Hex.json")
    }

    [System.Collections.IDictionary] Properties() {
        $Table = [System.Collections.Specialized.OrderedDictionary]::new()
        $Table['Name'] = $this.Name
        $Table['Ensure'] = $this.Ensure
        $Table['Credential'] = $this.Credential
        $Table['Secret'] = $this.Secret
        $Table['Settings'] = $this.Settings
        $Table['Endpoints'] = $this.Endpoints
        $Table['Phrases'] = $this.Phrases
        $Table['Note'] = $this.Note
        return $Table
    }

    # Appends the call to calls.jsonl, as Write-RealCall does for the others.
    [void] Log([string] $Method) {
        $Call = [System.Collections.Specialized.OrderedDictionary]::new()
        $Call['resource'] = 'RealVault'
        $Call['method'] = $Method
        $Call['properties'] = $this.Properties()
        $Call['pid'] = [System.Environment]::ProcessId
        $Path = [System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, 'calls.jsonl')
        [System.IO.File]::AppendAllText($Path, [RealVault]::Json($Call) + "`n", [System.Text.UTF8Encoding]::new($false))
    }

    # The stored properties (without Ensure) as a hashtable, or $null.
    [hashtable] Stored() {
        $Path = [RealVault]::StatePath($this.Name)
        if (-not [System.IO.File]::Exists($Path)) { return $null }
        $Problem = $null
        $Text = [System.IO.File]::ReadAllText($Path, [System.Text.Encoding]::UTF8)
        $Table = [Microsoft.PowerShell.Commands.JsonObject]::ConvertFromJson($Text, $true, [ref] $Problem)
        if ($null -ne $Problem) { throw $Problem.Exception }
        return $Table
    }

    [string] Wanted() {
        $Table = $this.Properties()
        $Table.Remove('Ensure')
        return [RealVault]::Json($Table)
    }

    [RealVault] Get() {
        $this.Log('Get')
        $Stored = $this.Stored()
        $Result = [RealVault]::new()
        $Result.Name = $this.Name
        if ($null -eq $Stored) {
            # Echoes its Sensitive input back, as a resource that reports
            # the desired value it was handed does: the Get's result then
            # holds the secret on the first run too.
            $Result.Ensure = [RealEnsure]::Absent
            $Result.Secret = $this.Secret
            $Result.Phrases = $this.Phrases
            return $Result
        }
        $Result.Ensure = [RealEnsure]::Present
        $Secure = [System.Security.SecureString]::new()
        foreach ($Char in ([string] $Stored['Credential']['password']).ToCharArray()) { $Secure.AppendChar($Char) }
        $Result.Credential = [PSCredential]::new([string] $Stored['Credential']['user'], $Secure)
        $Result.Secret = $Stored['Secret']
        $Result.Settings = $Stored['Settings']
        if ($null -ne $Stored['Endpoints']) {
            $Result.Endpoints = foreach ($Item in $Stored['Endpoints']) {
                $Endpoint = [RealVaultEndpoint]::new()
                $Endpoint.Address = $Item['Address']
                $Endpoint.ApiKey = $Item['ApiKey']
                $Endpoint
            }
        }
        $Result.Phrases = $Stored['Phrases']
        $Result.Note = $Stored['Note']
        return $Result
    }

    [bool] Test() {
        $this.Log('Test')
        $Path = [RealVault]::StatePath($this.Name)
        if ($this.Ensure -eq [RealEnsure]::Absent) { return -not [System.IO.File]::Exists($Path) }
        if (-not [System.IO.File]::Exists($Path)) { return $false }
        return [System.IO.File]::ReadAllText($Path, [System.Text.Encoding]::UTF8) -ceq $this.Wanted()
    }

    [void] Set() {
        $this.Log('Set')
        $Path = [RealVault]::StatePath($this.Name)
        if ($this.Ensure -eq [RealEnsure]::Absent) {
            [System.IO.File]::Delete($Path)
            return
        }
        $null = [System.IO.Directory]::CreateDirectory([System.IO.Path]::GetDirectoryName($Path))
        [System.IO.File]::WriteAllText($Path, $this.Wanted(), [System.Text.UTF8Encoding]::new($false))
    }
}

# Resources that read what they report through the desired state
# their Get is handed, as the DSC engines hand it (and one whose Get()
# returns $this).

# Like nxFile: Contents and Mode are reported only when their desired value
# is set (nxFile reads a file's contents only when contents are wanted, and
# its mode in octal only when the desired mode is octal), the mode as four
# octal digits. A keys-only Get reads neither, so they would differ on
# every run.
[DscResource()]
class RealReport {
    [DscProperty(Key)]
    [string] $Path

    [DscProperty()]
    [RealEnsure] $Ensure = [RealEnsure]::Present

    [DscProperty()]
    [string] $Contents

    [DscProperty()]
    [string] $Mode

    [hashtable] Properties() {
        return [ordered]@{ Path = $this.Path; Ensure = $this.Ensure; Contents = $this.Contents; Mode = $this.Mode }
    }

    [RealReport] Get() {
        Write-RealCall 'RealReport' 'Get' $this.Properties()
        $Stored = Read-RealState 'RealReport' $this.Path
        $Result = [RealReport]::new()
        $Result.Path = $this.Path
        if ($null -eq $Stored) {
            $Result.Ensure = [RealEnsure]::Absent
            return $Result
        }
        if (-not [string]::IsNullOrEmpty($this.Contents)) { $Result.Contents = $Stored.Contents }
        if ($this.Mode -match '^[0-7]+$') { $Result.Mode = ([string] $Stored.Mode).PadLeft(4, '0') }
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealReport' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealReport' $this.Path
        if ($this.Ensure -eq [RealEnsure]::Absent) { return $null -eq $Stored }
        if ($null -eq $Stored) { return $false }
        if (-not [string]::IsNullOrEmpty($this.Contents) -and $Stored.Contents -cne $this.Contents) { return $false }
        return [string]::IsNullOrEmpty($this.Mode) -or [Convert]::ToInt32($Stored.Mode, 8) -eq [Convert]::ToInt32($this.Mode, 8)
    }

    [void] Set() {
        Write-RealCall 'RealReport' 'Set' $this.Properties()
        $Plain = $null
        if ($this.Ensure -ne [RealEnsure]::Absent) {
            $Plain = [ordered]@{ Path = $this.Path; Contents = $this.Contents; Mode = $this.Mode }
        }
        Write-RealState 'RealReport' $this.Path $Plain
    }
}

# Like SqlServerDsc's class resources: ServerName, not a key, picks the
# server Get reads (the state of each server apart, under
# "<ServerName>|<Name>"); without it Get reads 'localhost', the wrong
# server, and reports what it found there.
[DscResource()]
class RealConnection {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [string] $ServerName = 'localhost'

    [DscProperty()]
    [string] $Value

    [hashtable] Properties() {
        return [ordered]@{ Name = $this.Name; ServerName = $this.ServerName; Value = $this.Value }
    }

    [RealConnection] Get() {
        Write-RealCall 'RealConnection' 'Get' $this.Properties()
        $Stored = Read-RealState 'RealConnection' "$($this.ServerName)|$($this.Name)"
        $Result = [RealConnection]::new()
        $Result.Name = $this.Name
        $Result.ServerName = $this.ServerName
        if ($null -ne $Stored) { $Result.Value = $Stored.Value }
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealConnection' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealConnection' "$($this.ServerName)|$($this.Name)"
        return $null -ne $Stored -and $Stored.Value -ceq $this.Value
    }

    [void] Set() {
        Write-RealCall 'RealConnection' 'Set' $this.Properties()
        Write-RealState 'RealConnection' "$($this.ServerName)|$($this.Name)" ([ordered]@{ Name = $this.Name; Value = $this.Value })
    }
}

# A Get() that returns the very instance it was called on: it reads
# whether the instance exists, and leaves every other property as it was
# handed (the desired value), so what it reports says nothing about the
# system. Its Test reads the system.
[DscResource()]
class RealEcho {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [RealEnsure] $Ensure = [RealEnsure]::Present

    [DscProperty()]
    [string] $Value

    [hashtable] Properties() {
        return [ordered]@{ Name = $this.Name; Ensure = $this.Ensure; Value = $this.Value }
    }

    [RealEcho] Get() {
        Write-RealCall 'RealEcho' 'Get' $this.Properties()
        if ($null -eq (Read-RealState 'RealEcho' $this.Name)) { $this.Ensure = [RealEnsure]::Absent }
        return $this
    }

    [bool] Test() {
        Write-RealCall 'RealEcho' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealEcho' $this.Name
        if ($this.Ensure -eq [RealEnsure]::Absent) { return $null -eq $Stored }
        return $null -ne $Stored -and $Stored.Value -ceq $this.Value
    }

    [void] Set() {
        Write-RealCall 'RealEcho' 'Set' $this.Properties()
        $Plain = $null
        if ($this.Ensure -ne [RealEnsure]::Absent) { $Plain = [ordered]@{ Name = $this.Name; Value = $this.Value } }
        Write-RealState 'RealEcho' $this.Name $Plain
    }
}

# The reason a property is not in the desired state, in the Azure Machine
# Configuration convention (Code and Phrase).
class RealReason {
    [DscProperty()]
    [string] $Code

    [DscProperty()]
    [string] $Phrase
}

# The Machine Configuration convention: Get copies the configurable
# properties from the desired state it was handed and reports the truth in
# Reasons, a "compliant" reason included when all is well; its Test reads
# the Reasons. Comparing the copies always agrees.
[DscResource()]
class RealCompliance {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [string] $Value

    [DscProperty(NotConfigurable)]
    [RealReason[]] $Reasons

    [hashtable] Properties() {
        return [ordered]@{ Name = $this.Name; Value = $this.Value }
    }

    [RealReason[]] Audit() {
        $Stored = Read-RealState 'RealCompliance' $this.Name
        $Reason = [RealReason]::new()
        if ($null -ne $Stored -and $Stored.Value -ceq $this.Value) {
            $Reason.Code = 'RealCompliance:RealCompliance:Compliant'
            $Reason.Phrase = "The value is '$($this.Value)' as wanted."
        }
        else {
            $Actual = if ($null -eq $Stored) { 'missing' } else { "'$($Stored.Value)'" }
            $Reason.Code = 'RealCompliance:RealCompliance:Value'
            $Reason.Phrase = "The value is $Actual and should be '$($this.Value)'."
        }
        return @($Reason)
    }

    [RealCompliance] Get() {
        Write-RealCall 'RealCompliance' 'Get' $this.Properties()
        $Result = [RealCompliance]::new()
        $Result.Name = $this.Name
        $Result.Value = $this.Value
        $Result.Reasons = $this.Audit()
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealCompliance' 'Test' $this.Properties()
        return $this.Audit()[0].Code -like '*:Compliant'
    }

    [void] Set() {
        Write-RealCall 'RealCompliance' 'Set' $this.Properties()
        Write-RealState 'RealCompliance' $this.Name ([ordered]@{ Name = $this.Name; Value = $this.Value })
    }
}

# Like DscResource.Base's ResourceBase: Get reports the real state, and
# Reasons only for the properties that differ (none when in sync).
[DscResource()]
class RealAudited {
    [DscProperty(Key)]
    [string] $Name

    [DscProperty()]
    [string] $Value

    [DscProperty(NotConfigurable)]
    [RealReason[]] $Reasons

    [hashtable] Properties() {
        return [ordered]@{ Name = $this.Name; Value = $this.Value }
    }

    [RealAudited] Get() {
        Write-RealCall 'RealAudited' 'Get' $this.Properties()
        $Stored = Read-RealState 'RealAudited' $this.Name
        $Result = [RealAudited]::new()
        $Result.Name = $this.Name
        $Result.Reasons = @()
        if ($null -ne $Stored) { $Result.Value = $Stored.Value }
        if ($Result.Value -cne $this.Value) {
            $Reason = [RealReason]::new()
            $Reason.Code = 'RealAudited:RealAudited:Value'
            $Reason.Phrase = "The value is '$($Result.Value)' and should be '$($this.Value)'."
            $Result.Reasons = @($Reason)
        }
        return $Result
    }

    [bool] Test() {
        Write-RealCall 'RealAudited' 'Test' $this.Properties()
        $Stored = Read-RealState 'RealAudited' $this.Name
        return $null -ne $Stored -and $Stored.Value -ceq $this.Value
    }

    [void] Set() {
        Write-RealCall 'RealAudited' 'Set' $this.Properties()
        Write-RealState 'RealAudited' $this.Name ([ordered]@{ Name = $this.Name; Value = $this.Value })
    }
}
