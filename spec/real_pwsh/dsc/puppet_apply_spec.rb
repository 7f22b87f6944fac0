# frozen_string_literal: true

require_relative 'real_dsc_machine'
require_relative '../../support/acceptance_scenario'

# `puppet apply` of real DSC resources written in PowerShell
# (spec/real_pwsh/dsc/modules/realdsc: class-based and script-based),
# through the provider, Pwsh::Manager and host.ps1 on the real pwsh 7, with
# the stand-in Invoke-DscResource (spec/real_pwsh/dsc/standin) in
# PSDesiredStateConfiguration's place. Nothing here is simulated: the
# resources keep their state in files and log each call they receive.
module RealPwshDsc
  # Quotes of every kind, a backtick, `$(whoami)`, `$env:PATH`, ü and a
  # newline, around a unique token (Acceptance.generate_secret).
  SETTING_SECRET = Acceptance.generate_secret('setting')
  ACCOUNT_SECRET = Acceptance.generate_secret('account')
  SECRETS = [SETTING_SECRET, ACCOUNT_SECRET].freeze

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
    # Embedded instances of a class-based resource: an
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

  # What the resources stored after run 1, the same whichever way they
  # were called.
  STORED = {
    %w[RealSetting Größe-ü] => {
      'Name' => 'Größe-ü',
      'Credential' => { 'user' => 'CONTOSO\\svc-ü', 'password' => SETTING_SECRET },
      'Tags' => %w[blue grün],
      'Count' => 42,
      'Enabled' => true,
      'Expires' => '2030-01-02T03:04:05.0000000Z',
      'Description' => 'Grüße, 世界 🔑',
    },
    %w[RealAccount jörg] => {
      'UserName' => 'jörg',
      'Password' => { 'user' => 'jörg', 'password' => ACCOUNT_SECRET },
      'FullName' => 'Jörg Müller',
    },
    %w[RealPool Pool-ü] => {
      'Name' => 'Pool-ü',
      'Options' => [
        { 'Key' => 'a', 'Mode' => 'Slow' },
        { 'Key' => 'b', 'Mode' => 'Fast' },
      ],
      'Primary' => { 'Key' => 'p', 'Mode' => 'Slow' },
    },
  }.freeze

  def self.manifest
    RESOURCES.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
  end

  RSpec.describe 'puppet apply of real DSC resources on the real pwsh' do
    include AcceptanceSecrets
    include Runs

    before(:all) do
      @machine = Machine.new('real-dsc')
      @runs = Array.new(2) { @machine.apply(RealPwshDsc.manifest) }
    end

    it 'called every resource directly, never through Invoke-DscResource' do
      expect(run(1).calls.size).to eq(6)
      expect(@machine.standin_calls).to eq([])
    end

    after(:all) { @machine&.cleanup }

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

    it 'handed Get the desired state, the credential\'s password intact' do
      get = run(2).calls.find { |call| call['resource'] == 'RealSetting' && call['method'] == 'Get' }
      expect(get['properties']).to include('Count' => 42, 'Description' => 'Grüße, 世界 🔑',
                                           'Credential' => { 'user' => 'CONTOSO\\svc-ü', 'password' => SETTING_SECRET })
      # The script-based one: only what its Get-TargetResource declares.
      account = run(2).calls.find { |call| call['resource'] == 'RealAccount' && call['method'] == 'Get' }
      expect(account['properties'].keys).to eq(['UserName'])
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

  # The escape hatch: with PWSHLIB_DSC_DIRECT=0 in the agent's
  # environment every call goes through Invoke-DscResource (the stand-in),
  # with the same outcomes as the direct calls above.
  RSpec.describe 'puppet apply of real DSC resources through Invoke-DscResource (PWSHLIB_DSC_DIRECT=0)' do
    include AcceptanceSecrets

    before(:all) do
      @machine = Machine.new('real-dsc-idr')
      @runs = Array.new(2) { @machine.apply(RealPwshDsc.manifest, env: { 'PWSHLIB_DSC_DIRECT' => '0' }) }
    end

    after(:all) { @machine&.cleanup }

    it 'run 1 creates every resource and run 2 changes nothing' do
      expect(@runs[0].exitcode).to eq(2), @runs[0].to_s
      expect(@runs[1].exitcode).to eq(0), @runs[1].to_s
    end

    it 'the resources stored what the direct calls store' do
      STORED.each do |(resource, key), stored|
        expect(@machine.stored(resource, key)).to eq(stored), resource
      end
    end

    it 'every call reached the stand-in Invoke-DscResource' do
      made = @runs.flat_map(&:calls).map { |call| [call['resource'], call['method']] }
      expect(made.size).to eq(9)
      expect(@machine.standin_calls.map { |call| [call['resource'], call['method']] }).to eq(made)
    end

    it 'never shows a secret' do
      expect_no_secret_shown(@runs, SECRETS)
    end
  end

  # A resource that writes to every stream, asks for a reboot, or fails,
  # directly and through Invoke-DscResource.
  NOISY_SECRET = Acceptance.generate_secret('noisy')

  def self.noisy_manifest
    # noisy-ok is in sync (a Get only); the other two are changed, and their
    # Sets write the secret to their streams.
    %w[ok reboot fail].map do |mode|
      attributes = { 'dsc_name' => "noisy-#{mode}", 'dsc_mode' => mode }
      attributes['dsc_secret'] = Acceptance.credential('svc', NOISY_SECRET) unless mode == 'ok'
      Acceptance.resource('dsc_realnoisy', "noisy-#{mode}", attributes)
    end.join("\n")
  end

  { 'directly' => {}, 'through Invoke-DscResource' => { 'PWSHLIB_DSC_DIRECT' => '0' } }.each do |how, env|
    RSpec.describe "what a real DSC resource writes, called #{how}" do
      include AcceptanceSecrets

      before(:all) do
        @machine = Machine.new('real-dsc-noisy')
        @run = @machine.apply(RealPwshDsc.noisy_manifest, env: env)
      end

      after(:all) { @machine&.cleanup }

      it 'was called as asked' do
        expect(@machine.standin_calls.size).to eq(env.empty? ? 0 : @run.calls.size)
        expect(@run.calls.map { |call| call['method'] }.tally).to eq('Get' => 3, 'Set' => 2)
      end

      it 'a reboot-requesting Set changes the resource and warns that a reboot is needed' do
        expect(@run.changed?('Dsc_realnoisy[noisy-reboot]')).to be(true), @run.to_s
        expect(@run.failed?('Dsc_realnoisy[noisy-reboot]')).to be(false), @run.to_s
        expect(@run.output).to match(/Warning: .*Dsc_realnoisy\[noisy-reboot\].*A reboot is required/i), @run.to_s
      end

      it 'a failing Set fails its resource with the resource\'s own message, its secret scrubbed' do
        expect(@run.exitcode).to eq(6), @run.to_s
        expect(@run.failed?('Dsc_realnoisy[noisy-fail]')).to be(true), @run.to_s
        expect(@run.output).to match(/Error: .*Dsc_realnoisy\[noisy-fail\]: RealNoisy refused noisy-fail: /i), @run.to_s
      end

      it 'its warnings are Puppet warnings on the resource, in order' do
        warnings = @run.output.lines.grep(/\AWarning: .*RealNoisy \w+ warning: /)
        expect(warnings.grep(/\AWarning: dsc_realnoisy\[noisy-ok\]: RealNoisy Get warning: noisy-ok$/).size).to eq(1), @run.to_s
        %w[reboot fail].each do |mode|
          shown = warnings.grep(/\AWarning: dsc_realnoisy\[noisy-#{mode}\]: /).map { |l| l[/RealNoisy (\w+) warning/, 1] }
          expect(shown).to eq(%w[Get Set]), @run.to_s
        end
      end

      it 'its verbose, debug, information and host lines show at --debug, in order' do
        lines = @run.output.lines.grep(/\ADebug: dsc_realnoisy.*: noisy-reboot: DSC resource \w+: RealNoisy /)
        shown = lines.map { |l| l.match(/DSC resource (\w+): RealNoisy (\w+)/).captures.join(' ') }
        # The console comes first: the host hands it over apart from the
        # records, so it is not interleaved with them.
        expect(shown).to eq(['console Get', 'verbose Get', 'host Get', 'information Get', 'debug Get',
                             'console Set', 'verbose Set', 'host Set', 'information Set', 'debug Set'])
      end

      it 'its console output shows at --debug' do
        expect(@run.output).to match(/^Debug: dsc_realnoisy.*: noisy-ok: DSC resource console: RealNoisy Get console$/), @run.to_s
      end

      it 'never shows its secret, not even from what it wrote' do
        expect(@run.output).to include('RealNoisy Set host: ', 'RealNoisy Set verbose: noisy-reboot with ')
        expect_no_secret_shown([@run], [NOISY_SECRET])
      end
    end
  end

  # Resources that read what they report through the desired state
  # a Get is handed, and one whose Get() returns $this, directly and through
  # Invoke-DscResource (where its syntax tree says so). Run 1 creates them,
  # run 2 finds them in sync, then RealEcho's stored value drifts and run 3
  # puts it back.
  def self.handed_to_get_manifest
    echo = { 'dsc_name' => 'echo-ü', 'dsc_ensure' => 'Present', 'dsc_value' => 'wanted' }
    [
      Acceptance.resource('dsc_realreport', 'report', 'dsc_path' => '/srv/report-ü.txt', 'dsc_ensure' => 'Present',
                                                      'dsc_contents' => "line 1\nline 2", 'dsc_mode' => '0644'),
      Acceptance.resource('dsc_realconnection', 'connection', 'dsc_name' => 'conn', 'dsc_servername' => 'sql-ü-01',
                                                              'dsc_value' => 'v1'),
      Acceptance.resource('dsc_realtask', 'task', 'dsc_taskname' => 'Nightly', 'dsc_taskpath' => '\\Pwshlib\\',
                                                  'dsc_ensure' => 'Present', 'dsc_description' => 'Runs at night'),
      Acceptance.resource('dsc_realkeyed', 'keyed', 'dsc_name' => 'keyed-ü', 'dsc_ensure' => 'Present', 'dsc_value' => 'v'),
      Acceptance.resource('dsc_realecho', 'echo', echo),
    ].join("\n")
  end

  GET_INPUT_RESOURCES = %w[RealReport RealConnection RealTask RealKeyed RealEcho].freeze
  GET_INPUT_REFS = %w[Dsc_realreport[report] Dsc_realconnection[connection] Dsc_realtask[task] Dsc_realkeyed[keyed]
                      Dsc_realecho[echo]].freeze

  {
    'directly' => {},
    'through Invoke-DscResource (PWSHLIB_DSC_DIRECT=0)' => { 'PWSHLIB_DSC_DIRECT' => '0' },
  }.each do |how, env|
    RSpec.describe "Get handed the desired state, called #{how}" do
      include Runs

      before(:all) do
        @machine = Machine.new('real-dsc-get-input')
        manifest = RealPwshDsc.handed_to_get_manifest
        @runs = Array.new(2) { @machine.apply(manifest, env: env) }
        # The system drifts where RealEcho's Get does not look.
        echo = File.join(@machine.state_dir, 'RealEcho', "#{'echo-ü'.b.unpack1('H*')}.json")
        File.write(echo, JSON.generate('Name' => 'echo-ü', 'Value' => 'drifted'))
        @runs << @machine.apply(manifest, env: env)
      end

      after(:all) { @machine&.cleanup }

      it 'run 1 creates every resource, none failing' do
        expect(run(1).exitcode).to eq(2), run(1).to_s
        GET_INPUT_REFS.each do |ref|
          expect(run(1).changed?(ref)).to be(true), ref
          expect(run(1).failed?(ref)).to be(false), ref
        end
      end

      it 'run 2 changes nothing and makes one Get per resource (and RealEcho its one Test)' do
        expect(run(2).exitcode).to eq(0), run(2).to_s
        GET_INPUT_REFS.each { |ref| expect(run(2).changed?(ref)).to be(false), ref }
        (GET_INPUT_RESOURCES - ['RealEcho']).each do |resource|
          expect(counts(run(2), resource)).to eq('Get' => 1, 'Set' => 0, 'Test' => 0), resource
        end
        expect(counts(run(2), 'RealEcho')).to eq('Get' => 1, 'Set' => 0, 'Test' => 1)
      end

      it 'the class-based resources were handed every desired value' do
        gets = run(2).calls.select { |call| call['method'] == 'Get' }
        report = gets.find { |call| call['resource'] == 'RealReport' }
        expect(report['properties']).to include('Contents' => "line 1\nline 2", 'Mode' => '0644')
        connection = gets.find { |call| call['resource'] == 'RealConnection' }
        expect(connection['properties']).to include('ServerName' => 'sql-ü-01')
        expect(@machine.stored('RealConnection', 'sql-ü-01|conn')).to eq('Name' => 'conn', 'Value' => 'v1')
      end

      it 'the script-based ones only what their Get-TargetResource declares, and never failed' do
        gets = run(2).calls.select { |call| call['method'] == 'Get' }
        expect(gets.find { |call| call['resource'] == 'RealTask' }['properties'])
          .to eq('TaskName' => 'Nightly', 'TaskPath' => '\\Pwshlib\\')
        expect(gets.find { |call| call['resource'] == 'RealKeyed' }['properties']).to eq('Name' => 'keyed-ü')
        @runs.each do |r|
          expect(r.output).not_to match(/^Error: .*dsc_real/i), r.to_s
          GET_INPUT_REFS.each { |ref| expect(r.failed?(ref)).to be(false), ref }
        end
      end

      it 'the Get() that returns $this still has its drift corrected' do
        expect(run(3).exitcode).to eq(2), run(3).to_s
        expect(run(3).changed?('Dsc_realecho[echo]')).to be(true), run(3).to_s
        (GET_INPUT_REFS - ['Dsc_realecho[echo]']).each { |ref| expect(run(3).changed?(ref)).to be(false), ref }
        expect(counts(run(3), 'RealEcho')).to eq('Get' => 1, 'Set' => 1, 'Test' => 1)
        expect(@machine.stored('RealEcho', 'echo-ü')).to eq('Name' => 'echo-ü', 'Value' => 'wanted')
      end

      it 'says why RealEcho is judged by its Test' do
        guard = /Debug: .*echo: its Get\(\) returned the very instance it was called on/
        expect(run(2).output).to match(guard), run(2).to_s
      end

      it 'was called as asked' do
        expect(@machine.standin_calls.empty?).to eq(env.empty?)
      end
    end
  end
end

module RealPwshDsc
  # RealShape's Get-TargetResource returns one tag of a
  # String[] as a bare string, a Boolean as 'True', a TimeSpan and a Version
  # for String properties. The LCM converted them to the MOF class's types;
  # so does the provider, or Puppet's strict=error (the harness runs with
  # it, Puppet 8's default) raises "Provider returned data that does not
  # match the Type Schema" and the resource changes every run.
  RSpec.describe 'a Get result shaped to the schema, as the LCM did' do
    include Runs

    before(:all) do
      @machine = Machine.new('real-dsc-shape')
      attributes = { 'dsc_name' => 'shape-ü', 'dsc_tags' => ['only-one'], 'dsc_enabled' => true,
                     'dsc_interval' => '00:05:00', 'dsc_release' => '1.2.3' }
      manifest = Acceptance.resource('dsc_realshape', 'shape', attributes)
      @runs = Array.new(2) { @machine.apply(manifest) }
    end

    after(:all) { @machine&.cleanup }

    it 'run 1 creates the resource' do
      expect(run(1).exitcode).to eq(2), run(1).to_s
      expect(run(1).changed?('Dsc_realshape[shape]')).to be(true), run(1).to_s
      expect(@machine.stored('RealShape', 'shape-ü')).to eq('Name' => 'shape-ü', 'Tags' => ['only-one'], 'Enabled' => true,
                                                            'Interval' => '00:05:00', 'Release' => '1.2.3')
    end

    it 'run 2 reads the loose shapes as the schema says and changes nothing' do
      expect(run(2).exitcode).to eq(0), run(2).to_s
      expect(run(2).changed?('Dsc_realshape[shape]')).to be(false), run(2).to_s
      expect(run(2).failed?('Dsc_realshape[shape]')).to be(false), run(2).to_s
      expect(counts(run(2), 'RealShape')).to eq('Get' => 1, 'Set' => 0, 'Test' => 0)
      expect(run(2).output).not_to match(/does not match the Type Schema/), run(2).to_s
    end
  end
end
