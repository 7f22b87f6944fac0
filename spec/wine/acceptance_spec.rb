# frozen_string_literal: true

require_relative '../acceptance/spec_helper_acceptance'
require_relative '../support/acceptance_scenario'
require_relative '../windows/closing_line'

# `puppet apply` on a Windows agent, as far as one can be had on Linux: the
# Windows Ruby (script/windows-ruby) under wine runs Debian trixie's Puppet 8,
# Facter 4 and Resource API (the same packages and versions as the Linux
# Puppet 8 job), with ffi built for that Ruby (script/windows-puppet); our
# provider loads the Windows library from lib/ and talks to pwshlib-sim.exe
# over a named pipe. The fixture module and the acceptance harness are the
# Linux suite's (spec/acceptance); only who runs Puppet differs.
#
#   1 create               → exit 2, the declared values stored
#   2 the same manifest    → exit 0, one Get per resource, nothing else
#   3 drift (state edited) → exit 2, the drifted resource set back, alone
#   4 a resource's call crashes the host → that resource fails, the others apply
#   and in no run a secret in the output, the report or Puppet's files.
#
# Run by script/windows-ruby-check, which sets PWSHLIB_WINDOWS_RUBY (the
# Windows Ruby's prefix), PWSHLIB_WINDOWS_PUPPET (script/windows-puppet's
# prefix), PWSHLIB_SIM (pwshlib-sim.exe) and the wine environment.
module AcceptanceWindows
  # Starts Puppet with the Windows Ruby under wine. Wine shows this machine's
  # root as drive Z:, and Puppet on Windows takes only drive-lettered paths as
  # absolute (Puppet::Util.absolute_path? with :windows), so every path it is
  # given is spelled Z:/...; Windows separates RUBYLIB entries with `;`.
  class WinePuppet
    def initialize(ruby_prefix, puppet_prefix)
      @ruby = File.join(ruby_prefix, 'bin', 'ruby.exe')
      @puppet_prefix = puppet_prefix
    end

    def command
      ['wine', @ruby, '-I', path(File.join(@puppet_prefix, 'lib')), path(File.join(@puppet_prefix, 'bin', 'puppet'))]
    end

    def path(path)
      "Z:#{path}"
    end

    def path_list(paths)
      paths.join(';')
    end

    # Puppet 8 on Windows keeps its public files under C:/ProgramData, which a
    # Windows agent's installer creates and wine does not: a run's own instead.
    def extra_arguments(run_dir)
      public_dir = File.join(run_dir, 'publicdir')
      FileUtils.mkdir_p(public_dir)
      ['--publicdir', path(public_dir)]
    end

    # What runs Puppet, for the closing line: asked of the Windows Ruby itself.
    def description
      out, status = Open3.capture2('wine', @ruby, '-I', path(File.join(@puppet_prefix, 'lib')), '-rpuppet', '-e',
                                   'print RUBY_PLATFORM, " (Ruby ", RUBY_VERSION, ", Puppet ", Puppet.version, ", under wine)"')
      status.success? ? out.delete("\r") : 'the Windows Ruby (which did not say what it is)'
    end
  end

  # The Linux harness's RUBYLIB holds Linux paths: none for the Windows Ruby.
  ENV.delete('RUBYLIB')
  PUPPET = WinePuppet.new(ENV.fetch('PWSHLIB_WINDOWS_RUBY'), ENV.fetch('PWSHLIB_WINDOWS_PUPPET'))
  Acceptance.puppet = PUPPET
  WindowsClosingLine.platform = PUPPET.description

  RUNAS_SECRET = Acceptance.generate_secret('winrunas')
  USER_SECRET = Acceptance.generate_secret('winuser')
  SECRETS = [RUNAS_SECRET, USER_SECRET].freeze
  RUNAS = Acceptance.credential('CONTOSO\\runner', RUNAS_SECRET)

  # A file, a Class-based resource, a user with a PSCredential and a service:
  # the same as in the Linux lifecycle suite.
  RESOURCES = Acceptance.common_resources(RUNAS, USER_SECRET).freeze
  # The simulator's key properties of each resource, to find its calls.
  KEYS = Acceptance::COMMON_KEYS

  def self.manifest(resources = RESOURCES)
    resources.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
  end

  def self.ref(type, title)
    "#{type.capitalize}[#{title}]"
  end

  def self.file(title, contents)
    ['dsc_fixturefile', {
      'dsc_destinationpath' => "C:\\Faults\\#{title}.txt",
      'dsc_ensure' => 'Present',
      'dsc_contents' => contents,
      'dsc_psdscrunascredential' => RUNAS,
    }]
  end

  RSpec.describe 'puppet apply on the Windows Ruby under wine' do
    include AcceptanceSecrets

    before(:all) do
      @machine = Acceptance::Machine.new('windows')
      manifest = AcceptanceWindows.manifest
      @create = @machine.apply(manifest)
      @state_after_create = @machine.state
      @again = @machine.apply(manifest)
      @machine.edit_state do |state|
        file = Acceptance.stored_resource(state, 'FixtureFile', 'destinationpath' => 'C:\\Temp\\Pwshlib\\Readme.txt')
        file[file.keys.find { |k| k.casecmp?('contents') }] = 'Tampered'
      end
      @drift = @machine.apply(manifest)
      @state_after_drift = @machine.state
      # The host dies on the first call for 'crashing': a fresh host must
      # serve the resources after it.
      with_crash = RESOURCES.merge('crashing' => AcceptanceWindows.file('crashing', 'two'),
                                   'after-crash' => AcceptanceWindows.file('after-crash', 'three'))
      @crash = @machine.apply(AcceptanceWindows.manifest(with_crash),
                              env: { 'PWSHLIB_SIM_CRASH_RESOURCE' => 'FixtureFile:C:\\Faults\\crashing.txt' })
    end

    after(:all) { @machine&.cleanup }

    def counts(run, title)
      type, = RESOURCES.fetch(title)
      run.call_counts(type, KEYS.fetch(title))
    end

    # Each of `titles` changed (or not, `changed: false`) in `run`.
    def expect_changed(run, titles, changed: true)
      titles.each do |title|
        expect(run.changed?(AcceptanceWindows.ref(RESOURCES[title][0], title))).to be(changed), title
      end
    end

    # Each of `titles` cost `sets` Sets, one Get and no Test in `run`.
    def expect_one_get_each(run, titles, sets:)
      titles.each { |title| expect(counts(run, title)).to eq({ 'Get' => 1, 'Set' => sets, 'Test' => 0 }), title }
    end

    describe 'run 1: create' do
      let(:run) { @create }

      it 'exits 2 (changes, no failures) and changes every resource' do
        expect(run.exitcode).to eq(2), run.to_s
        expect_changed(run, RESOURCES.keys)
      end

      # svc-a, a service with no Ensure that is not there yet: the simulated
      # Get of a missing resource reports its key alone, leaving out what the
      # manifest sets, so its own Test judges it (docs/behavior.md §3).
      it 'costs one Get and one Set per resource, and svc-a its Test' do
        expect_one_get_each(run, RESOURCES.keys - ['svc-a'], sets: 1)
        expect(counts(run, 'svc-a')).to eq({ 'Get' => 1, 'Set' => 1, 'Test' => 1 })
      end

      it 'stores the declared values' do
        file = Acceptance.stored_resource(@state_after_create, 'FixtureFile', KEYS['file-a'])
        expect(Acceptance.fetch_ci(file, 'contents')).to eq('Hello')
        expect(Acceptance.fetch_ci(file, 'attributes')).to eq(%w[Archive ReadOnly])
        flag = Acceptance.stored_resource(@state_after_create, 'FixtureClassResource', KEYS['class-a'])
        expect(Acceptance.fetch_ci(flag, 'value')).to eq('Enabled')
        user = Acceptance.stored_resource(@state_after_create, 'FixtureUser', KEYS['user-a'])
        expect(Acceptance.fetch_ci(user, 'fullname')).to eq('Alice Liddell')
        service = Acceptance.stored_resource(@state_after_create, 'FixtureService', KEYS['svc-a'])
        expect(Acceptance.fetch_ci(service, 'state')).to eq('Running')
      end

      it 'runs Puppet 8 on the Windows Ruby, with Facter resolving a Windows machine, and one simulated host' do
        expect(run.output).to match(/Runtime environment: puppet_version=8\.\d+\.\d+, ruby_version=3\.3\./)
        expect(run.output).to include('fact "os.family" has resolved to: windows')
        expect(run.calls).not_to be_empty
        expect(run.calls.map { |call| call['pid'] }.uniq.size).to eq(1)
      end
    end

    describe 'run 2: the same manifest again' do
      let(:run) { @again }

      it 'exits 0: no changes' do
        expect(run.exitcode).to eq(0), run.to_s
        expect_changed(run, RESOURCES.keys, changed: false)
      end

      it 'costs exactly one Get per resource and nothing else' do
        expect_one_get_each(run, RESOURCES.keys, sets: 0)
        expect(run.calls.size).to eq(RESOURCES.size)
      end
    end

    describe 'run 3: the machine drifted (the file contents edited behind Puppet)' do
      let(:run) { @drift }

      it 'exits 2 and changes the drifted resource only' do
        expect(run.exitcode).to eq(2), run.to_s
        expect(run.changed?('Dsc_fixturefile[file-a]')).to be(true)
        expect_changed(run, RESOURCES.keys - ['file-a'], changed: false)
      end

      it 'reads each resource once and sets the drifted one back' do
        expect_one_get_each(run, ['file-a'], sets: 1)
        expect_one_get_each(run, RESOURCES.keys - ['file-a'], sets: 0)
        file = Acceptance.stored_resource(@state_after_drift, 'FixtureFile', KEYS['file-a'])
        expect(Acceptance.fetch_ci(file, 'contents')).to eq('Hello')
      end

      it 'reports the change from the drifted value' do
        expect(run.event_messages('Dsc_fixturefile[file-a]').join("\n")).to include('Tampered').and include('Hello')
      end
    end

    describe 'run 4: a call that crashes the host' do
      let(:run) { @crash }

      it 'exits 6 (changes and failures) and fails only the resource whose call crashed the host' do
        expect(run.exitcode).to eq(6), run.to_s
        expect(run.failed?('Dsc_fixturefile[crashing]')).to be(true)
        expect(run.output.lines.grep(/Error/).join).to include('crashing')
        (RESOURCES.keys + ['after-crash']).each do |title|
          type = title == 'after-crash' ? 'dsc_fixturefile' : RESOURCES[title][0]
          expect(run.failed?(AcceptanceWindows.ref(type, title))).to be(false), title
        end
      end

      it 'applies the resource after the crash on a fresh host, and does not set the crashed one blindly' do
        expect(run.changed?('Dsc_fixturefile[after-crash]')).to be(true)
        stored = Acceptance.stored_resource(@machine.state, 'FixtureFile', 'destinationpath' => 'C:\\Faults\\after-crash.txt')
        expect(Acceptance.fetch_ci(stored, 'contents')).to eq('three')
        expect(run.calls.map { |call| call['pid'] }.uniq.size).to eq(2)
        crashed = run.calls_for('dsc_fixturefile', { 'destinationpath' => 'C:\\Faults\\crashing.txt' })
        expect(crashed.map { |call| call['method'] }).to eq(['Get'])
      end
    end

    describe 'across all four runs' do
      it 'never shows a secret, or any piece of it, in the output or the report' do
        expect_no_secret_shown(@machine.runs, SECRETS)
      end

      it 'never writes a secret into any file Puppet keeps (state, reports, caches, logs)' do
        expect_no_file_holding(@machine.runs, SECRETS.map { |secret| Acceptance.secret_token(secret) })
      end

      it 'hands the secrets to the simulator intact' do
        expect(strings_sent(@machine.runs)).to include(RUNAS_SECRET, USER_SECRET)
      end
    end
  end
end
