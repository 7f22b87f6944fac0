# frozen_string_literal: true

require 'open3'
require 'tmpdir'
require_relative 'real_dsc_machine'
require_relative 'module_layouts'
require_relative '../../support/acceptance_scenario'

# DSC modules laid out as the Gallery's are (module_layouts.rb): a
# manifest with ScriptsToProcess, classes only in NestedModules, a .ps1
# RootModule, a DscResources folder, DscResourcesToExport as one string,
# RequiredModules served from the vendored folder, TypesToProcess, and a
# resource its module does not hold. Each loads as Import-Module and the DSC
# engines load it, on the real pwsh 7 through `puppet apply` and called
# directly through Pwsh::Manager; and what a resource sets in the process
# environment lasts for the run's later DSC calls, as in the one process of
# the LCM.
module ModuleLoading
  SECRET = Acceptance.generate_secret('load')

  # title => [type, attributes] of the resources that load and apply.
  RESOURCES = {
    'shade' => ['dsc_loadshade', {
      'dsc_name' => 'shade', 'dsc_value' => 'v-shade', 'dsc_shade' => 'Dark',
      'dsc_credential' => Acceptance.credential('svc-load', SECRET)
    }],
    'nested' => ['dsc_loadnested', { 'dsc_name' => 'nested', 'dsc_value' => 'v-nested' }],
    'ps1' => ['dsc_loadps1', { 'dsc_name' => 'ps1', 'dsc_value' => 'v-ps1' }],
    'folder' => ['dsc_loadfolder', { 'dsc_name' => 'folder', 'dsc_value' => 'v-folder' }],
    'required' => ['dsc_loadrequired', { 'dsc_name' => 'required', 'dsc_value' => 'v-required' }],
  }.freeze

  FRIENDLY = {
    'shade' => 'LoadShade', 'nested' => 'LoadNested', 'ps1' => 'LoadPs1', 'folder' => 'LoadFolder', 'required' => 'LoadRequired'
  }.freeze

  def self.manifest(resources)
    resources.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
  end

  def self.counts(run, resource)
    counts = Hash.new(0)
    run.calls.each { |call| counts[call['method']] += 1 if call['resource'] == resource }
    %w[Get Set Test].to_h { |method| [method, counts[method]] }
  end

  RSpec.describe 'DSC modules of every layout on the real pwsh' do
    include AcceptanceSecrets

    before(:all) do
      @root = Dir.mktmpdir('pwshlib-module-layouts')
      @module_path = ModuleLayouts.write_puppet_module(@root)
      @lib = File.join(@module_path, 'loaddsc', 'lib')
    end

    after(:all) { FileUtils.rm_rf(@root) if @root }

    describe 'through puppet apply, applied twice' do
      before(:all) do
        @machine = RealPwshDsc::Machine.new('module-layouts', module_path: @module_path)
        @runs = Array.new(2) { @machine.apply(ModuleLoading.manifest(RESOURCES)) }
      end

      after(:all) { @machine&.cleanup }

      it 'run 1 creates each resource, one Get and one Set each, called directly' do
        run = @runs[0]
        expect(run.exitcode).to eq(2), run.to_s
        RESOURCES.each do |title, (type, _)|
          ref = "#{type.capitalize}[#{title}]"
          expect(run.failed?(ref)).to be(false), "#{ref}: #{run.output}"
          expect(run.changed?(ref)).to be(true), ref
          expect(ModuleLoading.counts(run, FRIENDLY[title])).to eq('Get' => 1, 'Set' => 1, 'Test' => 0), title
        end
        expect(@machine.standin_calls).to eq([])
        expect(run.output).not_to include('is not recognized')
      end

      it 'run 2 changes nothing, with one Get per resource' do
        run = @runs[1]
        expect(run.exitcode).to eq(0), run.to_s
        FRIENDLY.each_value do |resource|
          expect(ModuleLoading.counts(run, resource)).to eq('Get' => 1, 'Set' => 0, 'Test' => 0), resource
        end
      end

      it 'ran the ScriptsToProcess script first: the class took its type, the credential intact' do
        stored = JSON.parse(File.read(File.join(@machine.state_dir, 'LoadShade-shade.json')))
        expect(stored).to include('Name' => 'shade', 'Value' => 'v-shade', 'Shade' => 'Dark',
                                  'Credential' => { 'user' => 'svc-load', 'password' => SECRET })
      end

      it 'imported the RequiredModules entry from the vendored folder, and the TypesToProcess' do
        gets = @runs.flat_map(&:calls).select { |call| call['resource'] == 'LoadRequired' && call['method'] == 'Get' }
        expect(gets.map { |call| call['note'] }).to eq(['hello from PwshlibLoadHelper, typed required'] * 2)
      end

      it 'shows the warnings a Set wrote, and never the secret' do
        FRIENDLY.each_value { |resource| expect(@runs[0].output).to match(/Warning: .*#{resource} '\w+' was set/) }
        expect_no_secret_shown(@runs, [SECRET])
      end
    end

    describe 'a process environment variable set by one resource, read by a later one' do
      before(:all) do
        @machine = RealPwshDsc::Machine.new('module-env', module_path: @module_path)
        resources = {
          'setter' => ['dsc_loadenvset', { 'dsc_name' => 'PWSHLIB_LOAD_ENV', 'dsc_value' => 'set by LoadEnvSet' }],
          'reader' => ['dsc_loadenvread', { 'dsc_name' => 'PWSHLIB_LOAD_ENV', 'dsc_value' => 'set by LoadEnvSet' }],
        }
        @run = @machine.apply("#{ModuleLoading.manifest(resources)}\nDsc_loadenvset['setter'] -> Dsc_loadenvread['reader']\n")
      end

      after(:all) { @machine&.cleanup }

      it 'is there for the later resource of the same run, as in one engine process' do
        expect(@run.exitcode).to eq(2), @run.to_s
        expect(@run.changed?('Dsc_loadenvset[setter]')).to be(true)
        # Its Get ran before any Set (Puppet reads every resource first);
        # its Set ran after the setter's, in a later request to the host.
        expect(ModuleLoading.counts(@run, 'LoadEnvRead')).to eq('Get' => 1, 'Set' => 1, 'Test' => 0)
        set = @run.calls.find { |call| call['resource'] == 'LoadEnvRead' && call['method'] == 'Set' }
        expect(set['note']).to eq('set by LoadEnvSet')
      end
    end

    describe 'a resource its module does not hold' do
      before(:all) do
        @machine = RealPwshDsc::Machine.new('module-missing', module_path: @module_path)
        resources = {
          'missing' => ['dsc_loadmissing', { 'dsc_name' => 'missing', 'dsc_value' => 'v' }],
          'ps1' => ['dsc_loadps1', { 'dsc_name' => 'after', 'dsc_value' => 'v-after' }],
        }
        @run = @machine.apply(ModuleLoading.manifest(resources))
      end

      after(:all) { @machine&.cleanup }

      it 'fails with one error naming the resource, the module and what it holds, and the run goes on' do
        expect(@run.failed?('Dsc_loadmissing[missing]')).to be(true)
        manifest = File.join(ModuleLayouts.vendored_module(@lib, 'PwshlibLoadScripts'), 'PwshlibLoadScripts.psd1')
        expect(@run.output).to include("The DSC resource 'LoadMissing' is not in module 'PwshlibLoadScripts' version 1.0.0 (#{manifest})")
        expect(@run.output).to include('it holds class-based LoadShade in PwshlibLoadScripts.psm1.')
        expect(@run.output).to include("Its manifest's DscResourcesToExport: LoadShade.")
        expect(@run.output).not_to include('is not recognized')
        expect(@run.changed?('Dsc_loadps1[ps1]')).to be(true)
        expect(@machine.standin_calls).to eq([])
      end
    end

    describe 'called directly through Pwsh::Manager' do
      include_context 'a manager on the real pwsh'

      around do |example|
        Dir.mktmpdir('pwshlib-module-layouts-state') do |state|
          @state = state
          example.run
        end
      end

      def quote(text)
        "'#{text.gsub("'", "''")}'"
      end

      def module_name(friendly)
        dsc_module, implementation, = ModuleLayouts::TYPES.fetch(friendly)
        return quote(File.join(ModuleLayouts.vendored_module(@lib, dsc_module), "#{dsc_module}.psd1")) if implementation == 'MOF'

        "@{ModuleName = '#{dsc_module}'; RequiredVersion = '1.0.0'}"
      end

      # One call as the provider's script makes it; the outcome's JSON.
      def dsc_call(manager, friendly, method, property, env: [])
        dsc_module, = ModuleLayouts::TYPES.fetch(friendly)
        code = <<~PS
          $InvokeParams = @{Name = '#{friendly}'; Method = '#{method}'; Property = #{property}; ModuleName = #{module_name(friendly)}}
          Invoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath #{quote(ModuleLayouts.vendored_folder(@lib, dsc_module))}
          $global:PwshlibDscOutput
        PS
        result = manager.execute_with_prelude('dsc', code, nil, nil, ["PWSHLIB_REAL_DSC_STATE=#{@state}"] + env)
        expect(result[:exitcode]).to eq(0), result.inspect
        JSON.parse(result[:stdout].to_s.lines.last)
      end

      it 'sets and gets each resource' do
        manager = new_manager(spec: 'module layouts direct')
        %w[LoadNested LoadPs1 LoadFolder LoadRequired].each do |friendly|
          set = dsc_call(manager, friendly, 'Set', "@{Name = 'direct'; Value = 'v-#{friendly}'}")
          expect(set['errormessage']).to eq(''), "#{friendly}: #{set}"
          got = dsc_call(manager, friendly, 'Get', "@{Name = 'direct'}")
          expect(got).to include('Name' => 'direct', 'Value' => "v-#{friendly}"), friendly
        end
        got = dsc_call(manager, 'LoadShade', 'Set', "@{Name = 'direct'; Shade = 'Light'}")
        expect(got['errormessage']).to eq(''), got.inspect
        expect(dsc_call(manager, 'LoadShade', 'Get', "@{Name = 'direct'}")).to include('Shade' => 'Light')
      end

      it 'fails a resource its module does not hold with what the module holds, by kind and file' do
        manager = new_manager(spec: 'module layouts missing')
        code = <<~PS
          $InvokeParams = @{Name = 'NoSuch'; Method = 'Get'; Property = @{Name = 'x'}; ModuleName = #{module_name('LoadFolder')}}
          Invoke-PwshlibDscResource -InvokeParams $InvokeParams
          $global:PwshlibDscOutput
        PS
        message = JSON.parse(manager.execute_with_prelude('dsc', code)[:stdout].lines.last)['errormessage']
        expect(message).to start_with("The DSC resource 'NoSuch' is not in module 'PwshlibLoadFolder' version 1.0.0 (")
        expect(message).to include('it holds script-based LoadFolder / MSFT_LoadFolder in DscResources/MSFT_LoadFolder/MSFT_LoadFolder.psm1.')
        expect(message).to include("Its manifest's DscResourcesToExport: LoadFolder.")
      end

      it 'keeps what a DSC call set in the process for the later ones, but not its request env nor PSModulePath' do
        manager = new_manager(spec: 'module layouts env')
        set = dsc_call(manager, 'LoadEnvSet', 'Set', "@{Name = 'PWSHLIB_LOAD_DIRECT'; Value = 'kept'}")
        expect(set['errormessage']).to eq('')
        # Both of the host's DSC runspaces, in turn, see it.
        2.times do
          got = dsc_call(manager, 'LoadEnvRead', 'Get', "@{Name = 'PWSHLIB_LOAD_DIRECT'}")
          expect(got).to include('Value' => 'kept')
        end
        got = dsc_call(manager, 'LoadEnvRead', 'Get', "@{Name = 'PWSHLIB_LOAD_GIVEN'}", env: ['PWSHLIB_LOAD_GIVEN=for one call'])
        expect(got).to include('Value' => 'for one call')
        expect(dsc_call(manager, 'LoadEnvRead', 'Get', "@{Name = 'PWSHLIB_LOAD_GIVEN'}")['Value']).to be_nil
        vendored = ModuleLayouts.vendored_folder(@lib, 'PwshlibLoadEnv')
        expect(manager.execute_with_prelude('dsc', '$env:PSModulePath')[:stdout]).not_to include(vendored)
        # A plain execute still puts back what it sets itself.
        manager.execute("$env:PWSHLIB_LOAD_PLAIN = 'plain'")
        expect(manager.execute('Test-Path env:PWSHLIB_LOAD_PLAIN')[:stdout]).to eq("False\n")
      end
    end

    it 'reads the same index in compiled code and in PowerShell for every layout' do
      templates = File.expand_path('../../../lib/templates', __dir__)
      manifests = ModuleLayouts.modules.keys.map { |name| File.join(ModuleLayouts.vendored_module(@lib, name), "#{name}.psd1") }
      out, err, status = Open3.capture3(REAL_PWSH, '-NoProfile', '-NonInteractive', '-File', File.join(__dir__, 'module_index_tables.ps1'),
                                        '-Templates', templates, '-Manifests', manifests.join("\n"))
      expect(status).to be_success, err + out
      read = out.lines.map { |line| JSON.parse(line) }
      read.each { |entry| expect(entry['compiled']).to eq(entry['fallback']), entry['manifest'] }
      held = read.to_h { |entry| [File.basename(entry['manifest'], '.psd1'), entry['compiled']] }
      nested = File.join(ModuleLayouts.vendored_module(@lib, 'PwshlibLoadNested'), 'Classes', 'LoadNestedClasses.psm1')
      expect(held['PwshlibLoadNested']['Classes']).to eq([['LoadNested', nested]])
      expect(held['PwshlibLoadPs1']['Classes'].map(&:first)).to eq(['LoadPs1'])
      expect(held['PwshlibLoadFolder']['Scripts'].map(&:first)).to eq(%w[LoadFolder MSFT_LoadFolder])
      expect(held['PwshlibLoadEnv']['Classes'].map(&:first)).to eq(%w[LoadEnvRead LoadEnvSet])
    end
  end
end
