# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# Environment isolation (`puppet generate types`): with generated
# .resource_types, Puppet loads each type's provider from the environment's
# modules, not from whatever the agent's Ruby has on its load path. pwshlib
# 2.x's base provider failed to load there (ruby-pwsh #349). Here the
# environment holds the fixture module and pwshlib itself as a module, our
# lib/ is not on RUBYLIB, and the catalog must converge.
module AcceptanceEnvironmentIsolation
  MANIFEST = Acceptance.resource('dsc_fixturefile', 'isolated', {
                                   'dsc_destinationpath' => 'C:\\Temp\\Pwshlib\\Isolated.txt',
                                   'dsc_ensure' => 'Present',
                                   'dsc_contents' => 'generated types',
                                 }) +
             Acceptance.resource('dsc_fixtureclassresource', 'isolated-class', {
                                   'dsc_name' => 'IsolatedFlag',
                                   'dsc_ensure' => 'Present',
                                   'dsc_value' => 'Enabled',
                                 })

  # An environment directory whose `production` environment has the given
  # modules (name → directory, linked in).
  def self.environment(under, modules)
    environmentpath = File.join(under, 'environments')
    module_dir = File.join(environmentpath, 'production', 'modules')
    FileUtils.mkdir_p(module_dir)
    modules.each { |name, dir| File.symlink(dir, File.join(module_dir, name)) }
    environmentpath
  end

  # `puppet generate types` for that environment, with private Puppet
  # directories and without our lib/ on the load path.
  def self.generate_types(under, environmentpath)
    dirs = %w[confdir codedir vardir logdir rundir].flat_map do |dir|
      FileUtils.mkdir_p(File.join(under, 'generate', dir))
      ["--#{dir}", File.join(under, 'generate', dir)]
    end
    env = Acceptance.run_env(File.join(under, 'unused-state.json'), File.join(under, 'unused-log.jsonl'), with_our_lib: false)
    command = ['puppet', 'generate', 'types', '--environmentpath', environmentpath, '--environment', 'production',
               '--color', 'false', *dirs]
    Open3.capture3(env, *command)
  end

  RSpec.describe 'environment isolation: puppet generate types, then puppet apply' do
    before(:all) do
      @machine = Acceptance::Machine.new('isolation')
      fixtures = File.join(Acceptance::MODULE_PATH, 'dscfixtures')
      @without_pwshlib = AcceptanceEnvironmentIsolation.environment(File.join(@machine.dir, 'bare'), 'dscfixtures' => fixtures)
      @bare_generate = AcceptanceEnvironmentIsolation.generate_types(File.join(@machine.dir, 'bare'), @without_pwshlib)

      @environmentpath = AcceptanceEnvironmentIsolation.environment(
        @machine.dir, 'dscfixtures' => fixtures, 'pwshlib' => Acceptance::ROOT
      )
      @generate = AcceptanceEnvironmentIsolation.generate_types(@machine.dir, @environmentpath)
      @first = @machine.apply(MANIFEST, environmentpath: @environmentpath)
      @second = @machine.apply(MANIFEST, environmentpath: @environmentpath)
    end

    after(:all) { @machine&.cleanup }

    it 'is isolated: without pwshlib in the environment the providers cannot load' do
      # The control: our lib/ really is out of reach, so the runs below found
      # the base provider through the environment's pwshlib module.
      output = @bare_generate[0] + @bare_generate[1]
      expect(output).to include('cannot load such file -- puppet/provider/dsc_base_provider/dsc_base_provider')
    end

    it 'generates the pcore types of the fixture module' do
      stdout, stderr, status = @generate
      expect(status).to be_success, "#{stdout}\n#{stderr}"
      generated = File.join(@environmentpath, 'production', '.resource_types')
      expect(File).to exist(File.join(generated, 'dsc_fixturefile.pp'))
      expect(File).to exist(File.join(generated, 'dsc_fixtureclassresource.pp'))
      expect(stdout + stderr).not_to match(/Error:/)
    end

    it 'applies the catalog: changes on the first run' do
      expect(@first.exitcode).to eq(2), @first.to_s
      # (Facter says it cannot load sys/filesystem in a bare root: only
      # Puppet's own loads count here.)
      expect(@first.output).not_to match(%r{Could not autoload puppet/|cannot load such file -- puppet/})
      expect(@first.call_counts('dsc_fixturefile', 'destinationpath' => 'C:\\Temp\\Pwshlib\\Isolated.txt'))
        .to eq('Get' => 1, 'Set' => 1, 'Test' => 0)
    end

    it 'converges: nothing to do on the second run, one Get per resource' do
      expect(@second.exitcode).to eq(0), @second.to_s
      expect(@second.calls.map { |call| call['method'] }).to eq(%w[Get Get])
    end
  end
end
