# frozen_string_literal: true

require 'json'
require 'tmpdir'
require 'fileutils'
require_relative '../spec_helper_real_pwsh'

# How the prelude loads a resource's module for a direct call,
# on the real pwsh 7 through Pwsh::Manager and
# host.ps1: the calls are Invoke-PwshlibDscResource as the provider's
# script makes them, against fixture modules this spec writes.
module PreludeModules
  # A class-based module with two resources whose top-level code counts its
  # imports in a file beside it, and whose $script: counter the Gets read.
  COUNTER_PSM1 = <<~'PS'
    [System.IO.File]::AppendAllText([System.IO.Path]::Combine($PSScriptRoot, 'imports.txt'), "imported`n")
    $script:Calls = 0

    [DscResource()]
    class CountA {
        [DscProperty(Key)] [string] $Name
        [DscProperty()] [int] $Seen
        [CountA] Get() { $script:Calls++; $this.Seen = $script:Calls; return $this }
        [bool] Test() { return $true }
        [void] Set() {}
    }

    [DscResource()]
    class CountB {
        [DscProperty(Key)] [string] $Name
        [DscProperty()] [int] $Seen
        [CountB] Get() { $script:Calls++; $this.Seen = $script:Calls; return $this }
        [bool] Test() { return $true }
        [void] Set() {}
    }
  PS

  # A script-based resource whose module also defines functions named as
  # the prelude's (New-PsCredential, ConvertTo-PwshlibCanonicalResult) and
  # exports every function, as a module without Export-ModuleMember does.
  SHADOW_PSM1 = <<~'PS'
    function Get-TargetResource {
        param([Parameter(Mandatory = $true)] [string] $Name)
        @{ Name = $Name; Value = 'from the resource' }
    }
    function Test-TargetResource {
        param([Parameter(Mandatory = $true)] [string] $Name)
        $true
    }
    function Set-TargetResource {
        param([Parameter(Mandatory = $true)] [string] $Name)
    }
    function New-PsCredential { 'the resource module took over New-PsCredential' }
    function ConvertTo-PwshlibCanonicalResult { @{ Name = 'hijacked' } }
  PS

  SHADOW_MOF = <<~MOF
    [ClassVersion("1.0.0.0"), FriendlyName("Shadow")]
    class MSFT_Shadow : OMI_BaseResource
    {
        [Key] String Name;
        [Read] String Value;
    };
  MOF

  ODDITIES_MOF = <<~MOF
    [ClassVersion("1.0.0.0"), FriendlyName("OddBinary")]
    class MSFT_OddBinary : OMI_BaseResource
    {
        [Key] String Name;
    };
  MOF

  ODDITIES_COMPOSITE = <<~'PS'
    Configuration OddComposite {
        param([string] $Name)
    }
  PS

  # A stand-in for a RegistryKey with the members the prelude calls (item 6).
  FAKE_KEY = <<~'PS'
    $Store = @{}
    $Key = [pscustomobject]@{ Store = $Store; Kind = 'ExpandString'; Writes = 0 }
    $Key | Add-Member ScriptMethod GetValueNames { @($this.Store.Keys) }
    $Key | Add-Member ScriptMethod GetValueKind { param($Name) [Microsoft.Win32.RegistryValueKind] $this.Kind }
    $Key | Add-Member ScriptMethod GetValue {
        param($Name, $Default, $Options)
        if ($Options -ne [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames) { throw 'read expanded' }
        $this.Store[$Name]
    }
    $Key | Add-Member ScriptMethod SetValue { param($Name, $Value, $Kind) $this.Store[$Name] = $Value; $this.Kind = [string] $Kind; $this.Writes++ }
    $Key | Add-Member ScriptMethod DeleteValue { param($Name, $Throw) $this.Store.Remove($Name) }
    $S = [string] [System.IO.Path]::PathSeparator
  PS

  RSpec.describe 'the prelude loading DSC resource modules on the real pwsh' do
    include_context 'a manager on the real pwsh'

    def write_module(root, name, files)
      base = File.join(root, name, '1.0.0')
      files.each do |relative, text|
        path = File.join(base, relative)
        FileUtils.mkdir_p(File.dirname(path))
        File.write(path, text)
      end
      base
    end

    def manifest(name, resources, root_module: "#{name}.psm1")
      <<~PSD1
        @{
            RootModule           = '#{root_module}'
            ModuleVersion        = '1.0.0'
            GUID                 = '00000000-0000-4000-8000-#{name.unpack1('H*')[0, 12].ljust(12, '0')}'
            PowerShellVersion    = '5.1'
            DscResourcesToExport = @(#{resources.map { |r| "'#{r}'" }.join(', ')})
        }
      PSD1
    end

    before(:all) do
      @root = Dir.mktmpdir('pwshlib-prelude-modules')
      write_module(@root, 'PwshlibCounter',
                   'PwshlibCounter.psd1' => manifest('PwshlibCounter', %w[CountA CountB]),
                   'PwshlibCounter.psm1' => COUNTER_PSM1)
      @shadow = write_module(@root, 'PwshlibShadow',
                             'PwshlibShadow.psd1' => manifest('PwshlibShadow', %w[Shadow], root_module: ''),
                             'DSCResources/MSFT_Shadow/MSFT_Shadow.psm1' => SHADOW_PSM1,
                             'DSCResources/MSFT_Shadow/MSFT_Shadow.schema.mof' => SHADOW_MOF)
    end

    before(:all) do
      write_module(@root, 'PwshlibOddities',
                   'PwshlibOddities.psd1' => manifest('PwshlibOddities', %w[OddBinary OddComposite], root_module: ''),
                   'DSCResources/MSFT_OddBinary/MSFT_OddBinary.schema.mof' => ODDITIES_MOF,
                   'DSCResources/OddComposite/OddComposite.psd1' => "@{ RootModule = 'OddComposite.schema.psm1'; ModuleVersion = '1.0.0' }\n",
                   'DSCResources/OddComposite/OddComposite.schema.psm1' => ODDITIES_COMPOSITE)
    end

    after(:all) { FileUtils.rm_rf(@root) if @root }

    def own_manager(name)
      new_manager(spec: "prelude modules #{name}")
    end

    def quote(text)
      "'#{text.gsub("'", "''")}'"
    end

    # One call as the provider's script makes it; the JSON lines the prelude
    # left for the host, parsed (the streams line, when there is one, first).
    def dsc_call(manager, resource, module_name, method: 'Get', property: "@{Name = 'n'}", extra: '', prefix: '')
      code = <<~PS
        #{prefix}$InvokeParams = @{Name = #{quote(resource)}; Method = '#{method}'; Property = #{property}; ModuleName = #{module_name}}
        Invoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath #{quote(@root)}#{extra}
        $global:PwshlibDscOutput
      PS
      result = manager.execute_with_prelude('dsc', code)
      expect(result[:exitcode]).to eq(0), result.inspect
      result[:stdout].to_s.lines.map { |line| JSON.parse(line) }
    end

    def counter_module
      "@{ModuleName = 'PwshlibCounter'; RequiredVersion = '1.0.0'}"
    end

    describe 'item 9: a class-based module with several resources' do
      # The host runs prelude requests in two runspaces in turn
      # (PwshlibHost.Server.cs, preludeSlots), each with its own imports: calls in
      # pairs reach both with the same resource.
      def seen_in_pairs(manager, resources)
        resources.flat_map { |resource| Array.new(2) { dsc_call(manager, resource, counter_module).last['Seen'] } }
      end

      let(:imports) { File.join(@root, 'PwshlibCounter', '1.0.0', 'imports.txt') }

      before { FileUtils.rm_f(imports) }

      it 'is imported once per runspace, its top-level code run once and its $script: state kept' do
        # Imported for each resource type, CountB's import would reset the
        # counter CountA's Get left (imported per type it would read 1 1 1 1 1 1).
        expect(seen_in_pairs(own_manager('counter'), %w[CountA CountB CountA])).to eq([1, 1, 2, 2, 3, 3])
        expect(File.read(imports).lines.size).to eq(2)
      end

      it 'is imported again when its files change on disk' do
        manager = own_manager('counter reload')
        expect(seen_in_pairs(manager, %w[CountA])).to eq([1, 1])
        psm1 = File.join(@root, 'PwshlibCounter', '1.0.0', 'PwshlibCounter.psm1')
        File.utime(Time.now + 5, Time.now + 5, psm1)
        expect(seen_in_pairs(manager, %w[CountB CountA])).to eq([1, 1, 2, 2])
        expect(File.read(imports).lines.size).to eq(4)
      end
    end

    describe 'item 8: a PSModulePath entry with a character .NET Framework\'s paths refuse' do
      # On Windows PowerShell 5.1, Path.Combine throws for '"', '<', '>' and
      # '|' (Path.CheckInvalidPathChars); pwsh 7 on Linux does not, so a decoy
      # module under such a folder, first on PSModulePath, shows whether the
      # prelude looks there at all.
      it 'is skipped when a module is looked up by name' do
        decoy = File.join(@root, 'decoy "<>|', 'PwshlibCounter', '1.0.0')
        FileUtils.mkdir_p(decoy)
        File.write(File.join(decoy, 'PwshlibCounter.psd1'), manifest('PwshlibCounter', %w[CountA]))
        File.write(File.join(decoy, 'PwshlibCounter.psm1'), "throw 'the decoy module was imported'\n")
        manager = own_manager('illegal path')
        first = "$env:PSModulePath = #{quote(File.dirname(File.dirname(decoy)))} + [IO.Path]::PathSeparator + $env:PSModulePath; "
        result = dsc_call(manager, 'CountA', counter_module, prefix: first)
        expect(result.last).to include('Name' => 'n', 'Seen' => 1)
        expect(result.last['errormessage'].to_s).to eq('')
      ensure
        FileUtils.rm_rf(File.join(@root, 'decoy "<>|'))
      end
    end

    describe 'item 11: a resource nothing can run on PowerShell 7' do
      let(:oddities) { "@{ModuleName = 'PwshlibOddities'; RequiredVersion = '1.0.0'}" }

      it 'a binary resource fails with a message naming it and where it runs' do
        result = dsc_call(own_manager('binary'), 'OddBinary', oddities)
        expect(result.last['errormessage']).to match(
          /\AThe DSC resource 'OddBinary' of module 'PwshlibOddities' is a binary resource .*PowerShell 7\.\d+\.\d+ cannot run it/
        )
        expect(result.last['errormessage']).to include('Windows PowerShell 5.1', "LCM's RefreshMode set to Disabled")
      end

      it 'a call for Invoke-DscResource where there is none fails naming the resource and the missing module' do
        # This pwsh has no PSDesiredStateConfiguration (the puppet_apply suites
        # bring a stand-in of their own).
        result = dsc_call(own_manager('no idr'), 'CountA', counter_module, extra: ' -ThroughInvokeDscResource')
        expect(result.last['errormessage']).to match(
          /\AThe DSC resource 'CountA' cannot run: .*PowerShell 7\.\d+\.\d+ has no Invoke-DscResource\. .*PSDesiredStateConfiguration module/
        )
      end

      it 'a composite resource fails with a message naming it' do
        result = dsc_call(own_manager('composite'), 'OddComposite', oddities, method: 'Test')
        expect(result.last).to include('indesiredstate' => false)
        expect(result.last['errormessage']).to match(
          /\AThe DSC resource 'OddComposite' of module 'PwshlibOddities' is a composite resource .*nothing can run it/
        )
      end
    end

    # Item 6's registry access runs on Windows only (Microsoft.Win32.Registry
    # throws on Linux), but the logic between the reads and writes is the
    # prelude's own: here against a stand-in for a RegistryKey with the
    # members the prelude calls.
    describe 'item 6: taking back the machine-level PSModulePath entry' do
      def run_prelude(code)
        result = own_manager('module path').execute_with_prelude('dsc', FAKE_KEY + code)
        expect(result[:exitcode]).to eq(0), result.inspect
        result[:stdout].to_s.lines.map(&:chomp)
      end

      it 'removes only that entry from the value as it is now, keeping its kind and a change made meanwhile' do
        lines = run_prelude(<<~'PS')
          # Added by the call, then an installer appended its own folder.
          $Store.PSModulePath = "/opt/modules$S/vendored$S/installer/modules"
          Remove-PwshlibModulePathEntry -Key $Key -Path '/vendored/'
          "$($Store.PSModulePath)|$($Key.Kind)|$($Key.Writes)"
          # Gone already (a resource took it out): nothing written.
          Remove-PwshlibModulePathEntry -Key $Key -Path '/vendored'
          "$($Store.PSModulePath)|$($Key.Writes)"
          # The last entry: the value goes.
          $Store.PSModulePath = '/vendored'
          Remove-PwshlibModulePathEntry -Key $Key -Path '/vendored'
          "$($Store.ContainsKey('PSModulePath'))"
        PS
        sep = File::PATH_SEPARATOR
        expect(lines).to eq(["/opt/modules#{sep}/installer/modules|ExpandString|1", "/opt/modules#{sep}/installer/modules|1", 'False'])
      end

      it 'tells a running host\'s note from a dead one\'s' do
        lines = run_prelude(<<~'PS')
          Test-PwshlibModulePathOwner -Owner (Get-PwshlibProcessStamp)
          Test-PwshlibModulePathOwner -Owner "$PID 1"
          Test-PwshlibModulePathOwner -Owner '2147483000 1'
          Test-PwshlibModulePathOwner -Owner 'not a note'
        PS
        expect(lines).to eq(%w[True False False False])
      end
    end

    describe 'item 7: a resource module defining functions named as the prelude\'s' do
      it 'cannot replace the prelude\'s helpers' do
        manager = own_manager('shadow')
        module_name = "@{ModuleName = #{quote(File.join(@shadow, 'PwshlibShadow.psd1'))}; RequiredVersion = '1.0.0'}"
        first = dsc_call(manager, 'Shadow', module_name)
        expect(first.last).to include('Name' => 'n', 'Value' => 'from the resource')
        # The next call, in the same host: the prelude's own functions.
        again = dsc_call(manager, 'Shadow', module_name)
        expect(again.last).to include('Name' => 'n', 'Value' => 'from the resource')
        credential = manager.execute_with_prelude('dsc', "(New-PsCredential -User 'u' -Password 'p').UserName")
        expect(credential[:stdout]).to eq("u\n")
        where = manager.execute_with_prelude('dsc', '(Get-Command New-PsCredential).Module.Name; (Get-Command ConvertTo-PwshlibCanonicalResult).Module.Name')
        expect(where[:stdout].to_s).not_to include('MSFT_Shadow')
      end
    end
  end
end
