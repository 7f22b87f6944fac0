# frozen_string_literal: true

require 'fileutils'
require 'json'

# DSC modules laid out as modules from the PowerShell Gallery are, each
# with one rule of how Import-Module and the DSC engines load a module
# (module_loading_spec.rb), and a Puppet module `loaddsc` that declares
# their resources as the DSC module builder scaffolds them, the DSC modules
# vendored in it. Written into a folder at the spec's start: the modules'
# resources share one shape (a key Name and a few properties), generated
# from the templates below, and keep their state and a log of every call
# under $env:PWSHLIB_REAL_DSC_STATE, as the realdsc fixtures do.
module ModuleLayouts
  # What every fixture module's code file defines before its classes: the
  # call log (calls.jsonl, passwords in the clear: a test artefact) and one
  # state file per instance (<Resource>-<Name>.json).
  HELPERS = <<~'PS'
    function ConvertTo-LoadPlain {
        param($Value)
        if ($Value -is [System.Management.Automation.PSCredential]) {
            return [ordered]@{ user = $Value.UserName; password = $Value.GetNetworkCredential().Password }
        }
        if ($Value -is [enum]) { return $Value.ToString() }
        $Value
    }

    function ConvertTo-LoadStored {
        param($Object)
        $Stored = [ordered]@{}
        $Properties = if ($Object -is [System.Collections.IDictionary]) { $Object.GetEnumerator() | ForEach-Object { [pscustomobject]@{ Name = $_.Key; Value = $_.Value } } } else { $Object.PSObject.Properties }
        foreach ($Property in $Properties) { $Stored[$Property.Name] = ConvertTo-LoadPlain $Property.Value }
        $Stored
    }

    function Write-LoadCall {
        param([string] $Resource, [string] $Method, $Object, $Note)
        $Line = ConvertTo-Json -Compress -Depth 5 -InputObject ([ordered]@{ resource = $Resource; method = $Method; pid = $PID; properties = (ConvertTo-LoadStored $Object); note = $Note })
        [System.IO.File]::AppendAllText([System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, 'calls.jsonl'), "$Line`n")
    }

    function Get-LoadStatePath {
        param([string] $Resource, [string] $Name)
        [System.IO.Path]::Combine($env:PWSHLIB_REAL_DSC_STATE, "$Resource-$Name.json")
    }

    function Read-LoadState {
        param([string] $Resource, [string] $Name)
        $Path = Get-LoadStatePath $Resource $Name
        if (-not [System.IO.File]::Exists($Path)) { return $null }
        [System.IO.File]::ReadAllText($Path) | ConvertFrom-Json
    }

    function Write-LoadState {
        param([string] $Resource, [string] $Name, $Object)
        [System.IO.File]::WriteAllText((Get-LoadStatePath $Resource $Name), (ConvertTo-Json -Depth 5 -InputObject (ConvertTo-LoadStored $Object)))
    }

    function ConvertFrom-LoadStored {
        param($Value)
        if ($null -ne $Value -and $null -ne $Value.PSObject.Properties['password']) {
            $Secure = ConvertTo-SecureString -String $Value.password -AsPlainText -Force
            return [System.Management.Automation.PSCredential]::new($Value.user, $Secure)
        }
        $Value
    }
  PS

  # A class-based resource with a key Name and `properties` (name =>
  # PowerShell type); its Get reads the stored instance, and logs `note`
  # (PowerShell code) with the call; its Set stores the instance and warns.
  def self.dsc_class(name, properties, note: '$null')
    declared = properties.map { |property, type| "    [DscProperty()] [#{type}] $#{property}" }.join("\n")
    <<~PS
      [DscResource()]
      class #{name} {
          [DscProperty(Key)] [string] $Name
      #{declared}

          [#{name}] Get() {
              Write-LoadCall '#{name}' 'Get' $this (#{note})
              $Current = [#{name}]::new()
              $Current.Name = $this.Name
              $Stored = Read-LoadState '#{name}' $this.Name
              if ($null -ne $Stored) {
                  foreach ($Property in $Stored.PSObject.Properties) { $Current.($Property.Name) = ConvertFrom-LoadStored $Property.Value }
              }
              return $Current
          }

          [bool] Test() {
              Write-LoadCall '#{name}' 'Test' $this $null
              return $true
          }

          [void] Set() {
              Write-LoadCall '#{name}' 'Set' $this $null
              Write-Warning "#{name} '$($this.Name)' was set"
              Write-LoadState '#{name}' $this.Name $this
          }
      }
    PS
  end

  # A script-based resource's .psm1 (key Name, a Value), and its schema.
  def self.script_resource(name)
    psm1 = <<~PS
      #{HELPERS}
      function Get-TargetResource {
          param([Parameter(Mandatory = $true)] [string] $Name)
          Write-LoadCall '#{name}' 'Get' @{ Name = $Name } $null
          $Stored = Read-LoadState '#{name}' $Name
          @{ Name = $Name; Value = $(if ($null -ne $Stored) { $Stored.Value } else { $null }) }
      }

      function Test-TargetResource {
          param([Parameter(Mandatory = $true)] [string] $Name, [string] $Value)
          Write-LoadCall '#{name}' 'Test' @{ Name = $Name; Value = $Value } $null
          $true
      }

      function Set-TargetResource {
          param([Parameter(Mandatory = $true)] [string] $Name, [string] $Value)
          Write-LoadCall '#{name}' 'Set' @{ Name = $Name; Value = $Value } $null
          Write-Warning "#{name} '$Name' was set"
          Write-LoadState '#{name}' $Name @{ Name = $Name; Value = $Value }
      }
    PS
    mof = <<~MOF
      [ClassVersion("1.0.0.0"), FriendlyName("#{name}")]
      class MSFT_#{name} : OMI_BaseResource
      {
          [Key] String Name;
          [Write] String Value;
      };
    MOF
    [psm1, mof]
  end

  def self.manifest(name, fields)
    guid = "00000000-0000-4000-8000-#{name.unpack1('H*')[-12, 12]}"
    body = { 'ModuleVersion' => "'1.0.0'", 'GUID' => "'#{guid}'", 'PowerShellVersion' => "'5.1'" }.merge(fields)
    "@{\n#{body.map { |key, value| "    #{key} = #{value}" }.join("\n")}\n}\n"
  end

  def self.list(*items)
    "@(#{items.map { |item| "'#{item}'" }.join(', ')})"
  end

  SHADE_TYPE = <<~'PS'
    # A type the module's classes use, defined before the module is
    # imported, as ScriptsToProcess is for.
    if (-not ('PwshlibLoad.Shade' -as [type])) {
        Add-Type -TypeDefinition 'namespace PwshlibLoad { public enum Shade { Light, Dark } }'
    }
  PS

  # Extended type data a manifest's TypesToProcess loads: a property on
  # every string.
  TYPES_XML = <<~XML
    <?xml version="1.0" encoding="utf-8"?>
    <Types>
      <Type>
        <Name>System.String</Name>
        <Members>
          <ScriptProperty>
            <Name>PwshlibLoadMark</Name>
            <GetScriptBlock>'typed ' + $this</GetScriptBlock>
          </ScriptProperty>
        </Members>
      </Type>
    </Types>
  XML

  ENV_CLASSES = <<~'PS'
    # Sets an environment variable for the process, as an environment
    # resource with a process target does.
    [DscResource()]
    class LoadEnvSet {
        [DscProperty(Key)] [string] $Name
        [DscProperty()] [string] $Value
        [LoadEnvSet] Get() {
            Write-LoadCall 'LoadEnvSet' 'Get' $this $null
            $Current = [LoadEnvSet]::new()
            $Current.Name = $this.Name
            $Current.Value = [System.Environment]::GetEnvironmentVariable($this.Name)
            return $Current
        }
        [bool] Test() { return $true }
        [void] Set() {
            Write-LoadCall 'LoadEnvSet' 'Set' $this $null
            [System.Environment]::SetEnvironmentVariable($this.Name, $this.Value, 'Process')
        }
    }

    # Reports the environment variable it is named after as it finds it,
    # and logs what its Set finds there (a Puppet run reads every
    # resource's state before it sets any: the later resource's Set is what
    # runs after the earlier one's).
    [DscResource()]
    class LoadEnvRead {
        [DscProperty(Key)] [string] $Name
        [DscProperty()] [string] $Value
        [LoadEnvRead] Get() {
            Write-LoadCall 'LoadEnvRead' 'Get' $this ([System.Environment]::GetEnvironmentVariable($this.Name))
            $Current = [LoadEnvRead]::new()
            $Current.Name = $this.Name
            $Current.Value = [System.Environment]::GetEnvironmentVariable($this.Name)
            return $Current
        }
        [bool] Test() { return $true }
        [void] Set() { Write-LoadCall 'LoadEnvRead' 'Set' $this ([System.Environment]::GetEnvironmentVariable($this.Name)) }
    }
  PS

  # Each DSC module by name: its files (relative path => text).
  def self.modules
    shade = { 'Value' => 'string', 'Shade' => 'PwshlibLoad.Shade', 'Credential' => 'PSCredential' }
    value = { 'Value' => 'string' }
    folder_psm1, folder_mof = script_resource('LoadFolder')
    {
      'PwshlibLoadScripts' => {
        'PwshlibLoadScripts.psd1' => manifest('PwshlibLoadScripts', 'RootModule' => "'PwshlibLoadScripts.psm1'",
                                                                    'ScriptsToProcess' => list('Types.ps1'),
                                                                    'DscResourcesToExport' => list('LoadShade')),
        'Types.ps1' => SHADE_TYPE,
        'PwshlibLoadScripts.psm1' => HELPERS + dsc_class('LoadShade', shade),
      },
      # The classes in a nested module alone (its path written with '\',
      # as many Gallery modules write it), the root module without any.
      'PwshlibLoadNested' => {
        'PwshlibLoadNested.psd1' => manifest('PwshlibLoadNested', 'RootModule' => "'PwshlibLoadNested.psm1'",
                                                                  'NestedModules' => list('Classes\\LoadNestedClasses.psm1'),
                                                                  'DscResourcesToExport' => list('LoadNested')),
        'PwshlibLoadNested.psm1' => "function Get-PwshlibLoadNothing { 'no class here' }\n",
        'Classes/LoadNestedClasses.psm1' => HELPERS + dsc_class('LoadNested', value),
      },
      'PwshlibLoadPs1' => {
        'PwshlibLoadPs1.psd1' => manifest('PwshlibLoadPs1', 'RootModule' => "'PwshlibLoadPs1.ps1'",
                                                            'DscResourcesToExport' => "'LoadPs1'"),
        'PwshlibLoadPs1.ps1' => HELPERS + dsc_class('LoadPs1', value),
      },
      'PwshlibLoadFolder' => {
        'PwshlibLoadFolder.psd1' => manifest('PwshlibLoadFolder', 'DscResourcesToExport' => "'LoadFolder'"),
        'DscResources/MSFT_LoadFolder/MSFT_LoadFolder.psm1' => folder_psm1,
        'DscResources/MSFT_LoadFolder/MSFT_LoadFolder.schema.mof' => folder_mof,
      },
      'PwshlibLoadRequired' => {
        'PwshlibLoadRequired.psd1' => manifest('PwshlibLoadRequired', 'RootModule' => "'PwshlibLoadRequired.psm1'",
                                                                      'RequiredModules' => list('PwshlibLoadHelper'),
                                                                      'TypesToProcess' => list('PwshlibLoad.types.ps1xml'),
                                                                      'DscResourcesToExport' => list('LoadRequired')),
        'PwshlibLoad.types.ps1xml' => TYPES_XML,
        'PwshlibLoadRequired.psm1' => HELPERS + dsc_class('LoadRequired', value,
                                                          note: '"$(Get-PwshlibLoadGreeting), $($this.Name.PwshlibLoadMark)"'),
        # Vendored beside the module, as the DSC module builder vendors a
        # module's dependencies.
        '../PwshlibLoadHelper/PwshlibLoadHelper.psd1' => manifest('PwshlibLoadHelper', 'RootModule' => "'PwshlibLoadHelper.psm1'",
                                                                                       'FunctionsToExport' => list('Get-PwshlibLoadGreeting')),
        '../PwshlibLoadHelper/PwshlibLoadHelper.psm1' => "function Get-PwshlibLoadGreeting { 'hello from PwshlibLoadHelper' }\n",
      },
      'PwshlibLoadEnv' => {
        'PwshlibLoadEnv.psd1' => manifest('PwshlibLoadEnv', 'RootModule' => "'PwshlibLoadEnv.psm1'",
                                                            'DscResourcesToExport' => list('LoadEnvSet', 'LoadEnvRead')),
        'PwshlibLoadEnv.psm1' => HELPERS + ENV_CLASSES,
      },
    }
  end

  # Each Puppet type: [DSC module, implementation, properties (name =>
  # [Puppet type, MOF type])].
  SECRET_STRUCT = 'Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]'
  TYPES = {
    'LoadShade' => ['PwshlibLoadScripts', 'Class', {
      'value' => ['Optional[String]', 'String'],
      'shade' => ["Optional[Enum['Light', 'light', 'Dark', 'dark']]", 'String'],
      'credential' => [SECRET_STRUCT, 'PSCredential'],
    }],
    'LoadNested' => ['PwshlibLoadNested', 'Class', { 'value' => ['Optional[String]', 'String'] }],
    'LoadPs1' => ['PwshlibLoadPs1', 'Class', { 'value' => ['Optional[String]', 'String'] }],
    'LoadFolder' => ['PwshlibLoadFolder', 'MOF', { 'value' => ['Optional[String]', 'String'] }],
    'LoadRequired' => ['PwshlibLoadRequired', 'Class', { 'value' => ['Optional[String]', 'String'] }],
    'LoadEnvSet' => ['PwshlibLoadEnv', 'Class', { 'value' => ['Optional[String]', 'String'] }],
    'LoadEnvRead' => ['PwshlibLoadEnv', 'Class', { 'value' => ['Optional[String]', 'String'] }],
    # Declared in a module that does not hold it.
    'LoadMissing' => ['PwshlibLoadScripts', 'Class', { 'value' => ['Optional[String]', 'String'] }],
  }.freeze

  def self.puppet_type(friendly, (module_name, implementation, properties))
    attributes = properties.map do |property, (type, mof)|
      embedded = mof == 'PSCredential'
      "    dsc_#{property}: { type: #{type.inspect}, desc: 'A property.', mandatory_for_get: false, " \
        "mandatory_for_set: false, mof_type: '#{mof}', mof_is_embedded: #{embedded} },"
    end
    resource_name = implementation == 'MOF' ? "MSFT_#{friendly}" : friendly
    <<~RUBY
      # frozen_string_literal: true

      require 'puppet/resource_api'

      Puppet::ResourceApi.register_type(
        name: 'dsc_#{friendly.downcase}',
        dscmeta_resource_friendly_name: '#{friendly}',
        dscmeta_resource_name: '#{resource_name}',
        dscmeta_resource_implementation: '#{implementation}',
        dscmeta_module_name: '#{module_name}',
        dscmeta_module_version: '1.0.0',
        docs: 'The DSC #{friendly} resource type.',
        features: ['simple_get_filter', 'canonicalize', 'custom_insync'],
        attributes: {
          name: { type: 'String', desc: 'The declaration.', behaviour: :namevar },
          validation_mode: { type: 'Enum[property, resource]', desc: 'How to test.', behaviour: :parameter, default: 'property' },
          dsc_name: { type: 'String', desc: 'The key.', behaviour: :namevar, mandatory_for_get: true, mandatory_for_set: true, mof_type: 'String', mof_is_embedded: false },
      #{attributes.join("\n")}
        },
      )
    RUBY
  end

  def self.provider(friendly)
    class_name = "Dsc#{friendly.downcase.capitalize}"
    <<~RUBY
      # frozen_string_literal: true

      require 'puppet/provider/dsc_base_provider/dsc_base_provider'

      class Puppet::Provider::#{class_name}::#{class_name} < Puppet::Provider::DscBaseProvider
      end
    RUBY
  end

  def self.write(path, text)
    FileUtils.mkdir_p(File.dirname(path))
    File.write(path, text)
  end

  # Writes the Puppet module loaddsc under root/modules; returns the module
  # path. Each DSC module is vendored in its own folder,
  # lib/puppet_x/<name in lowercase>/dsc_resources/<Name>.
  def self.write_puppet_module(root)
    module_path = File.join(root, 'modules')
    lib = File.join(module_path, 'loaddsc', 'lib')
    write(File.join(module_path, 'loaddsc', 'metadata.json'),
          JSON.generate('name' => 'pwshlib-loaddsc', 'version' => '1.0.0', 'author' => 'pwshlib developers',
                        'summary' => 'DSC modules of every layout', 'license' => 'MIT', 'source' => 'https://example.invalid/pwshlib',
                        'dependencies' => []))
    modules.each do |name, files|
      files.each { |relative, text| write(File.expand_path(relative, vendored_module(lib, name)), text) }
    end
    TYPES.each do |friendly, meta|
      write(File.join(lib, 'puppet', 'type', "dsc_#{friendly.downcase}.rb"), puppet_type(friendly, meta))
      write(File.join(lib, 'puppet', 'provider', "dsc_#{friendly.downcase}", "dsc_#{friendly.downcase}.rb"), provider(friendly))
    end
    module_path
  end

  def self.vendored_module(lib, name)
    File.join(vendored_folder(lib, name), name)
  end

  def self.vendored_folder(lib, name)
    File.join(lib, 'puppet_x', name.downcase, 'dsc_resources')
  end
end
