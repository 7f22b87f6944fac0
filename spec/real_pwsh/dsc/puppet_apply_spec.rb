# frozen_string_literal: true

require_relative '../spec_helper_real_pwsh'
require_relative '../../acceptance/spec_helper_acceptance'
require_relative '../../support/acceptance_scenario'

# `puppet apply` of real DSC resources written in PowerShell
# (spec/real_pwsh/dsc/modules/realdsc: class-based and script-based),
# through the provider, Pwsh::Manager and host.ps1 on the real pwsh 7, with
# the stand-in Invoke-DscResource (spec/real_pwsh/dsc/standin) in
# PSDesiredStateConfiguration's place. Nothing here is simulated: the
# resources keep their state in files and log each call they receive.
module RealPwshDsc
  ROOT = __dir__
  MODULE_PATH = File.join(ROOT, 'modules')
  STANDIN = File.join(ROOT, 'standin')

  # Quotes of every kind, a backtick, `$(whoami)`, `$env:PATH`, ü and a
  # newline, around a unique token (Acceptance.generate_secret).
  SETTING_SECRET = Acceptance.generate_secret('setting')
  ACCOUNT_SECRET = Acceptance.generate_secret('account')
  SECRETS = [SETTING_SECRET, ACCOUNT_SECRET].freeze

  # A machine whose PowerShell is the real pwsh and whose DSC resources are
  # the fixture module's, with their state under state_dir.
  class Machine < Acceptance::Machine
    attr_reader :state_dir

    def initialize(name)
      super(name, module_path: MODULE_PATH)
      @state_dir = File.join(dir, 'dsc-state')
      FileUtils.mkdir_p(@state_dir)
    end

    def apply(manifest, env: {})
      before = calls.size
      run = super(manifest, env: real_env.merge(env))
      # The calls the resources logged during this run (the simulator's log,
      # which the harness reads, stays empty).
      run.instance_variable_set(:@calls, calls.drop(before))
      run
    end

    def real_env
      {
        # Pwsh::Manager.pwsh_path: the provider starts this PowerShell.
        'PWSHLIB_POWERSHELL' => REAL_PWSH,
        # The stand-in module is found before any other
        # PSDesiredStateConfiguration (pwsh adds its own folders to this).
        'PSModulePath' => STANDIN,
        'PWSHLIB_REAL_DSC_STATE' => state_dir,
      }
    end

    def calls
      Acceptance.read_call_log(File.join(state_dir, 'calls.jsonl'))
    end

    # The stored properties of one resource, as the resource wrote them.
    def stored(resource, key)
      path = File.join(state_dir, "#{resource}.json")
      File.exist?(path) ? JSON.parse(File.read(path, encoding: 'UTF-8'))[key] : nil
    end
  end

  RESOURCES = {
    'setting' => ['dsc_realsetting', {
      'dsc_name' => 'Größe-ü',
      'dsc_ensure' => 'Present',
      'dsc_credential' => Acceptance.credential('CONTOSO\\svc-ü', SETTING_SECRET),
      'dsc_tags' => %w[blue grün],
      'dsc_count' => 42,
      'dsc_enabled' => true,
      'dsc_expires' => Acceptance::Raw.new("Timestamp('2030-01-02T03:04:05.000 UTC')"),
      'dsc_description' => 'Grüße, 世界 🔑',
    }],
    'account' => ['dsc_realaccount', {
      'dsc_username' => 'jörg',
      'dsc_ensure' => 'Present',
      'dsc_password' => Acceptance.credential('jörg', ACCOUNT_SECRET),
      'dsc_fullname' => 'Jörg Müller',
    }],
    # Embedded instances of a class-based resource (issue 31 item 14): an
    # enum inside nested class objects.
    'pool' => ['dsc_realpool', {
      'dsc_name' => 'Pool-ü',
      'dsc_ensure' => 'Present',
      'dsc_options' => [
        { 'key' => 'a', 'mode' => 'slow' },
        { 'key' => 'b', 'mode' => 'Fast' },
      ],
      'dsc_primary' => { 'key' => 'p', 'mode' => 'Slow' },
    }],
  }.freeze

  def self.manifest
    RESOURCES.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
  end

  RSpec.describe 'puppet apply of real DSC resources on the real pwsh' do
    include AcceptanceSecrets

    before(:all) do
      @machine = Machine.new('real-dsc')
      @runs = Array.new(2) { @machine.apply(RealPwshDsc.manifest) }
    end

    after(:all) { @machine&.cleanup }

    def run(index)
      @runs.fetch(index - 1)
    end

    def counts(run, resource)
      counts = Hash.new(0)
      run.calls.each { |call| counts[call['method']] += 1 if call['resource'] == resource }
      %w[Get Set Test].to_h { |method| [method, counts[method]] }
    end

    it 'run 1 creates every resource' do
      expect(run(1).exitcode).to eq(2), run(1).to_s
      %w[Dsc_realsetting[setting] Dsc_realaccount[account] Dsc_realpool[pool]].each do |ref|
        expect(run(1).changed?(ref)).to be(true), ref
        expect(run(1).failed?(ref)).to be(false), ref
      end
      %w[RealSetting RealAccount RealPool].each do |resource|
        expect(counts(run(1), resource)).to eq('Get' => 1, 'Set' => 1, 'Test' => 0), resource
      end
    end

    it 'the class-based resource received every value intact' do
      expect(@machine.stored('RealSetting', 'Größe-ü')).to eq(
        'Name' => 'Größe-ü',
        'Credential' => { 'user' => 'CONTOSO\\svc-ü', 'password' => SETTING_SECRET },
        'Tags' => %w[blue grün],
        'Count' => 42,
        'Enabled' => true,
        'Expires' => '2030-01-02T03:04:05.0000000Z',
        'Description' => 'Grüße, 世界 🔑'
      )
    end

    it 'the script-based resource received every value intact' do
      expect(@machine.stored('RealAccount', 'jörg')).to eq(
        'UserName' => 'jörg',
        'Password' => { 'user' => 'jörg', 'password' => ACCOUNT_SECRET },
        'FullName' => 'Jörg Müller'
      )
    end

    it 'the class-based resource received its embedded instances as the nested class (item 14)' do
      # On PowerShell 7 the script passes them as hashtables, which
      # PowerShell converts to RealOption when the stand-in assigns them.
      expect(@machine.stored('RealPool', 'Pool-ü')).to eq(
        'Name' => 'Pool-ü',
        'Options' => [
          { 'Key' => 'a', 'Mode' => 'Slow' },
          { 'Key' => 'b', 'Mode' => 'Fast' },
        ],
        'Primary' => { 'Key' => 'p', 'Mode' => 'Slow' }
      )
    end

    it 'run 2 changes nothing, with one Get per resource' do
      expect(run(2).exitcode).to eq(0), run(2).to_s
      # The pool among them: the enum inside its nested objects reads as a
      # name, not a number (item 14's flapping).
      %w[Dsc_realsetting[setting] Dsc_realaccount[account] Dsc_realpool[pool]].each do |ref|
        expect(run(2).changed?(ref)).to be(false), ref
      end
      %w[RealSetting RealAccount RealPool].each do |resource|
        expect(counts(run(2), resource)).to eq('Get' => 1, 'Set' => 0, 'Test' => 0), resource
      end
    end

    it 'ran on the real pwsh with --debug' do
      # The harness runs every apply with --debug: the debug log is part of
      # what the secrets examples below search.
      expect(run(1).output).to include('Debug:')
      expect(run(1).calls.map { |call| call['pid'] }.uniq.size).to eq(1)
    end

    it 'never shows a secret, in the output at --debug, the report or the files Puppet keeps' do
      expect_no_secret_shown(@runs, SECRETS)
      expect_no_file_holding(@runs, SECRETS.map { |secret| Acceptance.secret_token(secret) })
    end

    it 'never shows the passwords that Get returned' do
      # Both resources' Get return their credential with the password (run
      # 2's Gets found them stored): Puppet logged the Get results at --debug.
      expect(run(2).output).to include('raw data received')
      gets = run(2).calls.select { |call| call['method'] == 'Get' }
      expect(gets.size).to eq(3)
      expect_no_secret_shown([run(2)], SECRETS)
    end
  end
end
