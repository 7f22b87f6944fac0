# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# Types shaped the way the DSC scaffolder really generates them
# (dsc_fixtureaccessrule, dsc_fixturesetting): enums listed in several
# casings at the top level and inside the Struct members of a CIM array
# (one member an array of enums), `ensurable: Boolean[false]` without
# Ensure, a key that is not the title, UInt32 values up to 4294967295.
#
#   1 create        → exit 2
#   2 again         → 0 changes, one Get per resource, no Set or Test
#   3 the stored state differs only in case, at every depth
#                   → 0 changes, no warnings, one Get per resource
#
# Then two catalogs applied in one Ruby process (real Puppet, real Resource
# API, Puppet's configurer), the stored state drifting in between.
#
# Unchanged resources may be left out of the report (Puppet 8), so changes
# are counted with the run's exit code and the report's status, and calls
# with the simulator's call log.
module AcceptanceScaffolded
  RESOURCES = {
    'data acl' => ['dsc_fixtureaccessrule', {
      'dsc_path' => 'C:\\Data\\Shared',
      'dsc_ensure' => 'present',
      'dsc_inheritance' => 'disabled',
      'dsc_accessrules' => [
        { 'principal' => 'BUILTIN\\Users', 'accesscontroltype' => 'grant', 'rights' => %w[read Write],
          'appliesto' => 'thisfolderonly' },
        { 'principal' => 'Guests', 'accesscontroltype' => 'Deny', 'rights' => ['FullControl'] },
      ],
    }],
    'first option' => ['dsc_fixturesetting', {
      'dsc_settingname' => 'OptionA',
      'dsc_value' => 'On',
      'dsc_schedule' => 'once',
      'dsc_maxsizekb' => 4_294_967_295,
      'dsc_retrycount' => 0,
    }],
  }.freeze
  FRIENDLY = { 'dsc_fixtureaccessrule' => 'FixtureAccessRule', 'dsc_fixturesetting' => 'FixtureSetting' }.freeze
  KEYS = { 'data acl' => { 'Path' => 'C:\\Data\\Shared' }, 'first option' => { 'SettingName' => 'OptionA' } }.freeze

  def self.manifest
    RESOURCES.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
  end

  # Every string at every depth in another case (class markers aside).
  def self.swap_case(value)
    case value
    when String then value.swapcase
    when Array then value.map { |v| swap_case(v) }
    when Hash then value.to_h { |k, v| [k, k.to_s.casecmp?('cim_instance_type') ? v : swap_case(v)] }
    else value
    end
  end

  def self.new_machine(name)
    machine = Acceptance::Machine.new(name)
    # FixtureSetting has no Ensure: its Get results carry none.
    machine.edit_state { |state| state['no_ensure'] = (state['no_ensure'] || []) + ['FixtureSetting'] }
    machine
  end

  RSpec.describe 'puppet apply with scaffolded type shapes' do
    def expect_one_get_each(run, calls = run.calls)
      RESOURCES.each do |title, (type, _)|
        keyed = calls.select do |call|
          call['resource'].to_s.casecmp?(FRIENDLY[type]) &&
            KEYS[title].all? { |k, v| Acceptance.fetch_ci(call['properties'] || {}, k).to_s.casecmp?(v) }
        end
        expect(keyed.map { |c| c['method'] }).to eq(['Get']), "#{title}: #{keyed.map { |c| c['method'] }} in\n#{run}"
      end
    end

    def expect_unchanged(run)
      expect(run.exitcode).to eq(0), run.to_s
      expect(run.report['status']).to eq('unchanged'), run.to_s
    end

    # Applies the manifest again: nothing changes, each resource costs one
    # Get and nothing else, nothing warns.
    def expect_quiet_rerun
      run = @machine.apply(AcceptanceScaffolded.manifest)
      expect_unchanged(run)
      expect_one_get_each(run)
      expect(run.calls.map { |c| c['method'] }.uniq).to eq(['Get'])
      expect_no_warnings(run)
    end

    # Warnings and errors a user sees (Facter's complaints about this
    # container aside), and Puppet's schema/canonicalize warnings anywhere.
    def expect_no_warnings(run)
      shown = run.output.lines.grep(/\A(Warning|Error):/).reject { |l| l.include?('Facter:') }
      expect(shown).to eq([]), run.to_s
      expect(run.output).not_to match(/does not match the Type Schema|has not provided canonicalized values/)
      expect(run.logs.map(&:first) & %w[warning err crit alert emerg]).to eq([]), run.to_s
    end

    before(:all) { @machine = AcceptanceScaffolded.new_machine('scaffolded') }
    after(:all) { @machine&.cleanup }

    it 'run 1 creates every resource' do
      run = @machine.apply(AcceptanceScaffolded.manifest)
      expect(run.exitcode).to eq(2), run.to_s
      expect(run.report['status']).to eq('changed')
      stored = Acceptance.stored_resource(@machine.state, 'FixtureAccessRule', 'Path' => 'C:\\Data\\Shared')
      rules = Acceptance.fetch_ci(stored, 'AccessRules')
      expect(rules.map { |r| Acceptance.fetch_ci(r, 'accesscontroltype') }).to eq(%w[grant Deny])
      setting = Acceptance.stored_resource(@machine.state, 'FixtureSetting', 'SettingName' => 'OptionA')
      expect(Acceptance.fetch_ci(setting, 'MaxSizeKB')).to eq(4_294_967_295)
      expect(setting.keys.map(&:downcase)).not_to include('ensurable', 'name')
    end

    it 'run 2 (same manifest) changes nothing: one Get per resource' do
      expect_quiet_rerun
    end

    it 'run 3 (stored state differs only in case, at every depth) changes nothing and warns of nothing' do
      @machine.edit_state do |state|
        state['resources'].each do |name, items|
          next unless FRIENDLY.value?(name)

          items.map! do |item|
            item.to_h { |k, v| [k, KEYS.values.any? { |keys| keys.key?(k) } ? v : AcceptanceScaffolded.swap_case(v)] }
          end
        end
      end
      stored = Acceptance.stored_resource(@machine.state, 'FixtureAccessRule', 'Path' => 'C:\\Data\\Shared')
      expect(Acceptance.fetch_ci(stored, 'AccessRules').first).to include('accesscontroltype' => 'GRANT', 'rights' => %w[READ wRITE])
      expect_quiet_rerun
    end
  end

  # Compiles and applies the manifest twice, as `puppet apply` does
  # (compile, convert to the RAL catalog, Puppet::Configurer#run), in one
  # process and one set of loaders; in between it makes the stored state
  # drift. Prints one JSON line: each run's exit status and how many calls
  # the simulator had logged when it ended.
  TWO_RUNS_SCRIPT = <<~'RUBY'
    require 'puppet'
    require 'puppet/configurer'
    require 'json'
    dir, manifest_path, state_path, log_path, module_path = ARGV
    # Where an agent's pluginsync would have put the module's lib (the
    # vendored DSC resources are found along the load path).
    $LOAD_PATH << File.join(module_path, 'dscfixtures', 'lib')
    dirs = %w[confdir codedir vardir logdir rundir].flat_map { |d| ["--#{d}", File.join(dir, d)] }
    Puppet.initialize_settings(dirs + ['--modulepath', module_path, '--reports', 'none', '--color', 'false'])
    Puppet::Util::Log.newdestination(:console)
    code = File.read(manifest_path)
    env = Puppet.lookup(:environments).get!(Puppet[:environment])
    call_count = -> { File.exist?(log_path) ? File.readlines(log_path).size : 0 }
    apply = lambda do
      Puppet[:code] = code
      # The node is this process's certname, as an agent's: OpenVox 9's
      # configurer refuses a catalog named otherwise.
      node = Puppet::Node.new(Puppet[:certname], environment: env)
      catalog = Puppet::Parser::Compiler.compile(node).to_ral
      catalog.finalize
      catalog.retrieval_duration = 0
      { 'exit' => Puppet::Configurer.new.run(catalog: catalog, pluginsync: false), 'calls' => call_count.call }
    end
    runs = []
    Puppet.override(current_environment: env, loaders: Puppet::Pops::Loaders.new(env)) do
      runs << apply.call
      state = JSON.parse(File.read(state_path))
      setting = state['resources']['FixtureSetting'].first
      setting[setting.keys.find { |k| k.casecmp?('Value') }] = 'Off'
      File.write(state_path, JSON.generate(state))
      runs << apply.call
      runs << apply.call
    end
    puts JSON.generate(runs)
  RUBY

  RSpec.describe 'two catalogs applied in one Ruby process' do
    it 'the second run corrects the drift with one Get per resource; the third changes nothing' do
      machine = AcceptanceScaffolded.new_machine('two-runs')
      begin
        script = File.join(machine.dir, 'two_runs.rb')
        manifest = File.join(machine.dir, 'site.pp')
        log = File.join(machine.dir, 'sim-calls.jsonl')
        File.write(script, TWO_RUNS_SCRIPT)
        File.write(manifest, AcceptanceScaffolded::RESOURCES.map { |t, (type, a)| Acceptance.resource(type, t, a) }.join("\n"))
        out, err, status = Open3.capture3(Acceptance.run_env(machine.state_path, log),
                                          'timeout', Acceptance::RUN_DEADLINE_SECONDS.to_s,
                                          RbConfig.ruby, script, machine.dir, manifest, machine.state_path, log,
                                          Acceptance::MODULE_PATH)
        expect(status).to be_success, "#{out}\n#{err}"
        runs = JSON.parse(out.lines.last)
        calls = Acceptance.read_call_log(log)
        pids = calls.map { |c| c['pid'] }.uniq
        expect(pids.size).to eq(1) # one host for the process: the runs share it
        per_run = [calls[0...runs[0]['calls']], calls[runs[0]['calls']...runs[1]['calls']], calls[runs[1]['calls']..]]
        methods = per_run.map { |cs| cs.map { |c| [c['resource'], c['method']] } }
        expect(runs.map { |r| r['exit'] }).to eq([2, 2, 0]), "#{out}\n#{err}"
        # Run 2 read the system again (one Get each) and set only the drifted one.
        expect(methods[1].sort).to eq([%w[FixtureAccessRule Get], %w[FixtureSetting Get], %w[FixtureSetting Set]])
        expect(methods[2].sort).to eq([%w[FixtureAccessRule Get], %w[FixtureSetting Get]])
        setting = Acceptance.stored_resource(machine.state, 'FixtureSetting', 'SettingName' => 'OptionA')
        expect(Acceptance.fetch_ci(setting, 'Value')).to eq('On')
        expect("#{out}\n#{err}".lines.grep(/\A(Warning|Error):/).reject { |l| l.include?('Facter:') }).to eq([])
      ensure
        machine.cleanup
      end
    end
  end
end
