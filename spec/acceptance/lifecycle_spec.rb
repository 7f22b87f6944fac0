# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/acceptance_scenario'

# The whole life of one resource of every fixture type on one simulated
# machine, in seven `puppet apply` runs (runs are expensive; every run carries
# every type):
#
#   1 create        declared values        → exit 2, state = declared values
#   2 again         same manifest          → exit 0
#   3 variants      case / order / number  → exit 0 (no flapping)
#   4 change        one real change each   → exit 2, per-property messages
#   5 again         same manifest          → exit 0
#   6 absent        ensure => absent       → exit 2, resources gone
#   7 again         same manifest          → exit 0
#
# Two resources use `validation_mode => resource`; the run-as credential and a
# PSCredential property carry generated secrets through every run.
# The scenario's constants live in this module, not at the top level, so
# that a whole `rspec spec` run cannot mix them up with other specs'.
module AcceptanceLifecycle
  RUNAS_SECRET = Acceptance.generate_secret('runas')
  USER_SECRET = Acceptance.generate_secret('user')
  # A very long one (about 20 kB), quotes all along.
  LONG_SECRET = Acceptance.generate_secret('long').then { |s| "#{s}#{"ä'‘\"`$ " * 3000}#{s}" }
  SECRETS = [RUNAS_SECRET, USER_SECRET, LONG_SECRET].freeze
  RUNAS = Acceptance.credential('CONTOSO\\runner', RUNAS_SECRET)

  # The properties each change of run 4 must report: [property, old, new].
  CHANGES = {
    'file-a' => ['dsc_contents', 'Hello', 'Hello, world'],
    'class-a' => %w[dsc_value Enabled Disabled],
    'user-a' => ['dsc_fullname', 'Alice Liddell', 'Alice Pleasance Liddell'],
    'site-a' => ['dsc_physicalpath', 'C:\\inetpub\\Contoso', 'D:\\Sites\\Contoso'],
    'sched-a' => %w[dsc_repeatintervalminutes 1440 60],
    'reg-a' => %w[dsc_valuedata Beta Gamma],
    'svc-a' => %w[dsc_state Running Stopped],
    'file-vm' => %w[dsc_contents v1 v2],
  }.freeze

  ENSURABLE = %w[file-a class-a user-a site-a sched-a reg-a file-vm].freeze

  # The key property values each resource's calls carry.
  KEYS = Acceptance::COMMON_KEYS.merge(
    'site-a' => { 'name' => 'Contoso' },
    'sched-a' => { 'name' => 'NightlyBackup' },
    'reg-a' => { 'key' => 'HKLM:\\Software\\Contoso', 'valuename' => 'Mode' },
    'file-vm' => { 'destinationpath' => 'C:\\Temp\\Pwshlib\\Validated.txt' },
    'svc-vm' => { 'name' => 'W32Time' }
  ).freeze
  TITLES = KEYS.keys.freeze

  RSpec.describe 'puppet apply with every fixture type' do
    include AcceptanceSecrets

    # Title → [type, attributes] for each run's manifest.
    # file-a, class-a, user-a and svc-a are the ones the suite under wine
    # declares too (Acceptance.common_resources); file-a also forces.
    def self.base_resources
      common = Acceptance.common_resources(RUNAS, USER_SECRET)
      file_type, file_attributes = common.fetch('file-a')
      {
        'file-a' => [file_type, file_attributes.merge('dsc_force' => true)],
        'class-a' => common.fetch('class-a'),
        'user-a' => common.fetch('user-a'),
        'site-a' => ['dsc_fixturewebsite', {
          'dsc_name' => 'Contoso',
          'dsc_ensure' => 'Present',
          'dsc_physicalpath' => 'C:\\inetpub\\Contoso',
          'dsc_bindinginfo' => [
            { 'protocol' => 'http', 'port' => 80, 'hostname' => 'www.contoso.com' },
            {
              'protocol' => 'https', 'port' => 443, 'hostname' => 'Secure.Contoso.com',
              'certificatesubjects' => ['CN=Contoso', 'CN=Backup'],
              'authentication' => {
                'cim_instance_type' => 'MSFT_FixtureAuthenticationInformation', 'anonymous' => false, 'basic' => true
              }
            },
          ],
        }],
        'sched-a' => ['dsc_fixtureschedule', {
          'dsc_name' => 'NightlyBackup',
          'dsc_ensure' => 'Present',
          'dsc_starttime' => Acceptance::Raw.new("Timestamp('2024-05-06T07:08:09.000Z')"),
          'dsc_repeatintervalminutes' => 1440,
        }],
        'reg-a' => ['dsc_fixtureregistry', {
          'dsc_key' => 'HKLM:\\Software\\Contoso',
          'dsc_valuename' => 'Mode',
          'dsc_ensure' => 'Present',
          'dsc_valuedata' => %w[Alpha Beta],
          'dsc_valuetype' => 'MultiString',
        }],
        'svc-a' => common.fetch('svc-a'),
        'file-vm' => ['dsc_fixturefile', {
          'dsc_destinationpath' => 'C:\\Temp\\Pwshlib\\Validated.txt',
          'dsc_ensure' => 'Present',
          'dsc_contents' => 'v1',
          'validation_mode' => 'resource',
        }],
        'svc-vm' => ['dsc_fixtureservice', {
          'dsc_name' => 'W32Time',
          'dsc_state' => 'Stopped',
          'dsc_startuptype' => 'Manual',
          'validation_mode' => 'resource',
          'dsc_psdscrunascredential' => Acceptance.credential('CONTOSO\\timekeeper', LONG_SECRET),
        }],
      }
    end

    # Differs from the base only in case, array order and number form.
    def self.variant_resources
      edit(base_resources,
           'file-a' => {
             'dsc_destinationpath' => 'c:\\temp\\PWSHLIB\\readme.TXT', 'dsc_ensure' => 'present',
             'dsc_contents' => 'HELLO', 'dsc_type' => 'file', 'dsc_attributes' => %w[readonly ARCHIVE]
           },
           'class-a' => { 'dsc_name' => 'featureflag', 'dsc_value' => 'ENABLED', 'dsc_ensure' => 'present' },
           'user-a' => { 'dsc_username' => 'ALICE', 'dsc_fullname' => 'alice liddell' },
           'site-a' => {
             'dsc_physicalpath' => 'c:\\INETPUB\\contoso',
             'dsc_bindinginfo' => [
               {
                 'hostname' => 'SECURE.contoso.COM', 'protocol' => 'https', 'port' => 443,
                 'certificatesubjects' => ['cn=backup', 'CN=CONTOSO'],
                 'authentication' => {
                   'basic' => true, 'anonymous' => false, 'cim_instance_type' => 'MSFT_FixtureAuthenticationInformation'
                 }
               },
               { 'port' => 80, 'hostname' => 'WWW.Contoso.Com', 'protocol' => 'http' },
             ],
           },
           # The same instant written in another zone; the number is stored as
           # text before this run (see store_numbers_as_text).
           'sched-a' => {
             'dsc_name' => 'NIGHTLYBACKUP',
             'dsc_starttime' => Acceptance::Raw.new("Timestamp('2024-05-06T09:08:09+02:00')"),
           },
           'reg-a' => { 'dsc_valuename' => 'MODE', 'dsc_valuedata' => %w[beta ALPHA], 'dsc_valuetype' => 'multistring' },
           'svc-a' => { 'dsc_state' => 'running', 'dsc_startuptype' => 'automatic' },
           'file-vm' => { 'dsc_contents' => 'V1' },
           'svc-vm' => { 'dsc_state' => 'stopped' })
    end

    # One real change per resource, except svc-vm (stays in sync, resource mode).
    def self.changed_resources
      edit(base_resources,
           'file-a' => { 'dsc_contents' => 'Hello, world' },
           'class-a' => { 'dsc_value' => 'Disabled' },
           'user-a' => { 'dsc_fullname' => 'Alice Pleasance Liddell' },
           'site-a' => { 'dsc_physicalpath' => 'D:\\Sites\\Contoso' },
           'sched-a' => { 'dsc_repeatintervalminutes' => 60 },
           'reg-a' => { 'dsc_valuedata' => %w[Alpha Gamma] },
           'svc-a' => { 'dsc_state' => 'Stopped' },
           'file-vm' => { 'dsc_contents' => 'v2' })
    end

    # Ensurable resources go away: keys, the mandatory-for-set value name and
    # the run-as credential stay; services (no Ensure) stay as in run 4.
    def self.absent_resources
      changed = changed_resources
      changed.to_h do |title, (type, attributes)|
        next [title, [type, attributes]] unless ENSURABLE.include?(title)

        keep = attributes.slice('dsc_destinationpath', 'dsc_name', 'dsc_username', 'dsc_key', 'dsc_valuename',
                                'dsc_psdscrunascredential', 'validation_mode')
        [title, [type, keep.merge('dsc_ensure' => title == 'class-a' ? 'absent' : 'Absent')]]
      end
    end

    # DSC resources report numbers in other forms than they were given: the
    # machine now says "1440" and "443" where the manifest says 1440 and 443.
    def self.store_numbers_as_text(state)
      resources = state.fetch('resources')
      schedule = resources.fetch('FixtureSchedule').find { |r| r['name'] == 'NightlyBackup' }
      schedule['repeatintervalminutes'] = schedule.fetch('repeatintervalminutes').to_s
      site = resources.fetch('FixtureWebsite').find { |r| r['name'] == 'Contoso' }
      site.fetch('bindinginfo').each { |binding| binding['port'] = binding.fetch('port').to_s }
    end

    def self.edit(resources, edits)
      resources.to_h do |title, (type, attributes)|
        [title, [type, attributes.merge(edits.fetch(title, {}))]]
      end
    end

    def self.manifest(resources)
      resources.map { |title, (type, attributes)| Acceptance.resource(type, title, attributes) }.join("\n")
    end

    def self.ref(title)
      type, = base_resources.fetch(title)
      "#{type.capitalize}[#{title}]"
    end

    def counts(run, title)
      type, = self.class.base_resources.fetch(title)
      run.call_counts(type, KEYS.fetch(title))
    end

    # One Get per resource, `sets` Sets, and one Test in resource mode
    # (the titles ending in -vm).
    def expected_calls(title, sets:)
      { 'Get' => 1, 'Set' => sets, 'Test' => title.end_with?('-vm') ? 1 : 0 }
    end

    # The examples of run number `description` names (`run N: ...`).
    def self.describe_run(description, &examples)
      index = Integer(description[/\Arun (\d+):/, 1]) - 1
      describe description do
        let(:run) { runs[index] }

        class_exec(&examples)
      end
    end

    def self.it_exits(description, exitcode)
      it(description) { expect(run.exitcode).to eq(exitcode), run.to_s }
    end

    # Every resource costs one Get, no Set (and one Test in resource mode).
    def self.it_costs_one_get_each(description)
      it description do
        TITLES.each do |title|
          expect(counts(run, title)).to eq(expected_calls(title, sets: 0)), title
        end
      end
    end

    # Instance variables: the runs are made once and shared by the examples.
    before(:all) do
      @machine = Acceptance::Machine.new('lifecycle')
      @created = @machine.apply(self.class.manifest(self.class.base_resources))
      @state_after_create = @machine.state
      @again = @machine.apply(self.class.manifest(self.class.base_resources))
      @state_after_again = @machine.state
      @machine.edit_state { |state| self.class.store_numbers_as_text(state) }
      @state_before_variants = @machine.state
      @variants = @machine.apply(self.class.manifest(self.class.variant_resources))
      @state_after_variants = @machine.state
      @changed = @machine.apply(self.class.manifest(self.class.changed_resources))
      @state_after_change = @machine.state
      @changed_again = @machine.apply(self.class.manifest(self.class.changed_resources))
      @absent = @machine.apply(self.class.manifest(self.class.absent_resources))
      @state_after_absent = @machine.state
      @absent_again = @machine.apply(self.class.manifest(self.class.absent_resources))
    end

    after(:all) { @machine&.cleanup }

    let(:machine) { @machine }
    let(:runs) { @machine.runs }
    describe_run 'run 1: creating everything' do
      it 'exits 2 (changes, no failures)' do
        expect(run.exitcode).to eq(2), run.to_s
      end

      it 'changes every resource' do
        TITLES.each { |title| expect(run.changed?(self.class.ref(title))).to be(true), "#{title} unchanged\n#{run}" }
      end

      # svc-a, a service with no Ensure that is not there yet, gets one Test
      # too: the simulated Get of a missing resource reports its key alone,
      # leaving out the State and StartupType the manifest sets, so its own
      # Test judges it (docs/behavior.md §3 "insync?").
      it 'costs exactly one Get and one Set per resource, and at most one Test in resource mode or for svc-a' do
        TITLES.each do |title|
          c = counts(run, title)
          expect([c['Get'], c['Set']]).to eq([1, 1]), "#{title}: #{c}"
          expect(c['Test']).to be <= (title.end_with?('-vm') || title == 'svc-a' ? 1 : 0), "#{title}: #{c}"
        end
        expect(counts(run, 'svc-a')['Test']).to eq(1)
      end

      it 'calls each resource directly, and through Invoke-DscResource only to run as PsDscRunAsCredential (5.1)' do
        # The simulated host plays Windows PowerShell 5.1, whose
        # LCM alone can start a resource as the run-as account.
        kinds = run.calls.map { |call| [call['run_as_user'] ? 'run-as' : 'plain', call['kind']] }.uniq.sort
        expect(kinds).to eq([%w[plain direct], %w[run-as invoke_dsc_resource]])
      end

      it 'leaves exactly the declared values in the simulator state' do
        expect_state(@state_after_create, 'file-a', 'destinationpath' => 'C:\\Temp\\Pwshlib\\Readme.txt', 'ensure' => 'Present',
                                                    'contents' => 'Hello', 'type' => 'File', 'force' => true,
                                                    'attributes' => %w[Archive ReadOnly])
        expect_state(@state_after_create, 'class-a', 'name' => 'FeatureFlag', 'ensure' => 'Present', 'value' => 'Enabled')
        expect_state(@state_after_create, 'user-a', 'username' => 'Alice', 'ensure' => 'Present', 'fullname' => 'Alice Liddell',
                                                    'password' => { 'user' => 'Alice', 'password' => USER_SECRET })
        expect_state(@state_after_create, 'site-a', 'name' => 'Contoso', 'ensure' => 'Present', 'physicalpath' => 'C:\\inetpub\\Contoso',
                                                    'bindinginfo' => [
                                                      { 'protocol' => 'http', 'port' => 80, 'hostname' => 'www.contoso.com' },
                                                      { 'protocol' => 'https', 'port' => 443, 'hostname' => 'Secure.Contoso.com',
                                                        'certificatesubjects' => ['CN=Contoso', 'CN=Backup'],
                                                        'authentication' => { 'anonymous' => false, 'basic' => true } },
                                                    ])
        expect_state(@state_after_create, 'sched-a', 'name' => 'NightlyBackup', 'ensure' => 'Present',
                                                     'starttime' => Time.utc(2024, 5, 6, 7, 8, 9), 'repeatintervalminutes' => 1440)
        expect_state(@state_after_create, 'reg-a', 'key' => 'HKLM:\\Software\\Contoso', 'valuename' => 'Mode', 'ensure' => 'Present',
                                                   'valuedata' => %w[Alpha Beta], 'valuetype' => 'MultiString')
        expect_state(@state_after_create, 'svc-a', 'name' => 'Spooler', 'state' => 'Running', 'startuptype' => 'Automatic')
        expect_state(@state_after_create, 'file-vm', 'destinationpath' => 'C:\\Temp\\Pwshlib\\Validated.txt', 'ensure' => 'Present',
                                                     'contents' => 'v1')
        expect_state(@state_after_create, 'svc-vm', 'name' => 'W32Time', 'state' => 'Stopped', 'startuptype' => 'Manual')
      end

      it 'stores the CIM instances with their classes, the nested one too' do
        bindings = stored_value(@state_after_create, 'site-a', 'bindinginfo')
        expect(bindings.map { |b| Acceptance.fetch_ci(b, 'cim_instance_type') }).to eq(%w[MSFT_FixtureBindingInformation] * 2)
        https = bindings.find { |b| Acceptance.fetch_ci(b, 'protocol') == 'https' }
        expect(Acceptance.fetch_ci(Acceptance.fetch_ci(https, 'authentication'), 'cim_instance_type'))
          .to eq('MSFT_FixtureAuthenticationInformation')
      end

      it 'loads MOF resources from the vendored module and Class-based ones by name and version' do
        vendored = File.join(Acceptance::MODULE_PATH, 'dscfixtures', 'lib', 'puppet_x', 'pwshlibfixturedsc', 'dsc_resources',
                             'PwshlibFixtureDsc', 'PwshlibFixtureDsc.psd1')
        file_get = run.calls_for('dsc_fixturefile', KEYS['file-a'], method: 'Get').first
        expect(file_get['module']).to eq('ModuleName' => vendored, 'RequiredVersion' => '1.2.0')
        class_get = run.calls_for('dsc_fixtureclassresource', KEYS['class-a'], method: 'Get').first
        expect(class_get['module']).to eq('ModuleName' => 'PwshlibFixtureClass', 'RequiredVersion' => '0.3.1')
      end

      # Every resource puts its module's vendored folder
      # on PSModulePath (a vendored module may import a sibling by name).
      it 'adds the vendored path to PSModulePath for every resource, each its own module\'s' do
        lib = File.join(Acceptance::MODULE_PATH, 'dscfixtures', 'lib', 'puppet_x')
        class_dir = File.join(lib, 'pwshlibfixtureclass', 'dsc_resources')
        dsc_dir = File.join(lib, 'pwshlibfixturedsc', 'dsc_resources')
        additions = run.output.lines.grep(/Sending Invoke-DscResource .* vendored path /)
        class_calls = run.calls_for('dsc_fixtureclassresource')
        expect(class_calls.size).to eq(2)
        expect(additions.size).to eq(run.calls.size)
        expect(additions.grep(/'#{Regexp.escape(class_dir)}'/).size).to eq(class_calls.size)
        expect(additions.grep(/'#{Regexp.escape(dsc_dir)}'/).size).to eq(run.calls.size - class_calls.size)
      end

      it 'passes the run-as credential to every call of the resources that declare it, intact' do
        %w[file-a user-a].each do |title|
          calls = run.calls_for(self.class.base_resources[title][0], KEYS[title])
          expect(calls).not_to be_empty
          calls.each do |call|
            credential = Acceptance.fetch_ci(call['properties'], 'psdscrunascredential')
            expect(Acceptance.credential_parts(credential)).to eq(['CONTOSO\\runner', RUNAS_SECRET]), "#{title}: #{call['method']}"
          end
        end
      end

      it 'passes the PSCredential property to Set intact' do
        set = run.calls_for('dsc_fixtureuser', KEYS['user-a'], method: 'Set').first
        expect(Acceptance.credential_parts(Acceptance.fetch_ci(set['properties'], 'password'))).to eq(['Alice', USER_SECRET])
      end

      it 'shows each call as one line of its data, secrets redacted, in the debug output' do
        expect(run.output).to match(/Sending Invoke-DscResource Set FixtureUser from .*password => #<Sensitive \[value redacted\]>/)
      end
    end

    describe_run 'run 2: the same manifest again' do
      it_exits 'exits 0 (no changes)', 0

      it_costs_one_get_each 'costs exactly one Get per resource, plus one Test per resource in resource mode'

      it 'changes nothing in the simulator state' do
        expect(machine_state_resources(@state_after_again)).to eq(machine_state_resources(@state_after_create))
      end
    end

    describe_run 'run 3: a manifest that differs only in case, array order and number form' do
      it_exits 'exits 0: no flapping', 0

      it 'reports no change for any resource' do
        TITLES.each { |title| expect(run.changed?(self.class.ref(title))).to be(false), title }
      end

      it_costs_one_get_each 'costs exactly one Get per resource and no Set'

      it 'keeps the casing the values were set with: no Set touched the state' do
        expect(machine_state_resources(@state_after_variants)).to eq(machine_state_resources(@state_before_variants))
      end
    end

    describe_run 'run 4: one real change per resource' do
      it_exits 'exits 2', 2

      it 'reports each change with a per-property message naming the old and the new value' do
        CHANGES.each do |title, (property, old, new)|
          messages = run.event_messages(self.class.ref(title)).join("\n")
          expect(messages).to match(/#{property} changed/), "#{title}: #{messages.inspect}"
          expect(messages).to include(old).and(include(new)), "#{title}: #{messages.inspect}"
        end
      end

      it 'shows every step in the --debug output' do
        steps = {
          'the manifest data before canonicalization' => /Canonicalizing \{name: "file-a"/,
          'the invocation metadata' => /Invoke-DscResource Set for "file-a" \(FixtureFile 1\.2\.0\)/,
          'the call as sent' => /Sending Invoke-DscResource Set FixtureFile from PwshlibFixtureDsc 1\.2\.0, direct, vendored path '[^']+': \{psdscrunascredential => #<Sensitive \[value redacted\]>, destinationpath => 'C:\\Temp\\Pwshlib\\Readme\.txt'/, # rubocop:disable Layout/LineLength
          'the raw JSON' => /raw data received: .*Hello/,
          'the munged hash' => /Returned to Puppet as \{.*dsc_contents: "Hello"/,
          'the canonicalized resource' => /Canonicalized Resources: \[\{name: "file-a"/,
          'the current state' => /Current State: .*dsc_contents.*Hello/,
          'the target state' => /Target State: .*Hello, world/,
          'the time each call took' => /Invoke-DscResource Set took \d+(\.\d+)? m?s/,
        }
        missing = steps.reject { |_, pattern| run.output.match?(pattern) }.keys
        expect(missing).to eq([])
      end

      it 'leaves the in-sync resource alone' do
        expect(run.changed?(self.class.ref('svc-vm'))).to be(false)
      end

      it 'costs one Get and one Set per changed resource (and one Test in resource mode)' do
        CHANGES.each_key do |title|
          expect(counts(run, title)).to eq(expected_calls(title, sets: 1)), title
        end
        expect(counts(run, 'svc-vm')).to eq('Get' => 1, 'Set' => 0, 'Test' => 1)
      end

      it 'stores the new values' do
        expect(stored_value(@state_after_change, 'file-a', 'contents')).to eq('Hello, world')
        expect(stored_value(@state_after_change, 'class-a', 'value')).to eq('Disabled')
        expect(stored_value(@state_after_change, 'user-a', 'fullname')).to eq('Alice Pleasance Liddell')
        expect(stored_value(@state_after_change, 'site-a', 'physicalpath')).to eq('D:\\Sites\\Contoso')
        expect(stored_value(@state_after_change, 'sched-a', 'repeatintervalminutes')).to eq(60)
        expect(stored_value(@state_after_change, 'reg-a', 'valuedata')).to eq(%w[Alpha Gamma])
        expect(stored_value(@state_after_change, 'svc-a', 'state')).to eq('Stopped')
        expect(stored_value(@state_after_change, 'file-vm', 'contents')).to eq('v2')
      end
    end

    describe_run 'run 5: the changed manifest again' do
      it_exits 'exits 0', 0

      it_costs_one_get_each 'costs exactly one Get per resource and no Set'
    end

    describe_run 'run 6: ensure => absent' do
      it_exits 'exits 2', 2

      it 'removes every ensurable resource' do
        ENSURABLE.each do |title|
          expect(run.changed?(self.class.ref(title))).to be(true), title
          expect(stored(title, @state_after_absent)).to be_nil.or(satisfy { |r| Acceptance.fetch_ci(r, 'ensure').to_s.casecmp?('absent') }), title
        end
      end

      it 'keeps the services, which have no Ensure and stay in sync' do
        %w[svc-a svc-vm].each do |title|
          expect(run.changed?(self.class.ref(title))).to be(false), title
          expect(stored(title, @state_after_absent)).not_to be_nil
        end
      end

      it 'deletes with one Get and one Set with Ensure = Absent, the mandatory properties and the run-as credential' do
        ENSURABLE.each do |title|
          c = counts(run, title)
          expect([c['Get'], c['Set']]).to eq([1, 1]), "#{title}: #{c}"
          type, = self.class.base_resources[title]
          set = run.calls_for(type, KEYS[title], method: 'Set').first
          expect(Acceptance.fetch_ci(set['properties'], 'ensure')).to match(/\Aabsent\z/i), title
        end
        registry_set = run.calls_for('dsc_fixtureregistry', KEYS['reg-a'], method: 'Set').first
        expect(Acceptance.fetch_ci(registry_set['properties'], 'valuename')).to eq('Mode')
        file_set = run.calls_for('dsc_fixturefile', KEYS['file-a'], method: 'Set').first
        expect(Acceptance.credential_parts(Acceptance.fetch_ci(file_set['properties'], 'psdscrunascredential')))
          .to eq(['CONTOSO\\runner', RUNAS_SECRET])
      end
    end

    describe_run 'run 7: ensure => absent again' do
      it_exits 'exits 0', 0

      it 'costs at most one Get per absent resource and no Set' do
        ENSURABLE.each do |title|
          c = counts(run, title)
          expect(c['Set']).to eq(0), "#{title}: #{c}"
          expect(c['Get']).to be <= 1, "#{title}: #{c}"
        end
      end
    end

    describe 'across all seven runs' do
      it 'never shows a secret, or any piece of it, in the debug output, stdout, stderr or the report' do
        expect(runs.size).to eq(7)
        expect_no_secret_shown(runs, SECRETS)
      end

      it 'never writes a secret into any file Puppet keeps (state, reports, caches, logs)' do
        tokens = SECRETS.flat_map { |secret| [Acceptance.secret_token(secret), Acceptance.secret_token(secret).reverse] }
        expect_no_file_holding(runs, tokens)
      end

      it 'hands the secrets to the simulator intact' do
        sent = strings_sent(runs)
        expect(sent).to include(RUNAS_SECRET)
        expect(sent).to include(USER_SECRET)
        expect(sent).to include(LONG_SECRET)
      end

      it 'never warns that get returned values that are not canonical' do
        runs.each_with_index do |run, index|
          expect(run.output).not_to match(/has not provided canonicalized values/), "run #{index + 1}"
        end
      end

      it 'gets values that match the type schema (run 3 excepted: its machine reports numbers as text on purpose)' do
        runs.each_with_index do |run, index|
          next if index == 2

          expect(run.output).not_to match(/does not match the Type Schema/), "run #{index + 1}: #{run}"
        end
      end

      it 'logs no errors' do
        runs.each_with_index do |run, index|
          expect(run.logs.select { |level, _| %w[err crit alert emerg].include?(level) }).to eq([]), "run #{index + 1}"
        end
      end
    end

    def machine_state_resources(state)
      Acceptance.stored_all(state)
    end

    def stored(title, state = machine.state)
      type, = self.class.base_resources.fetch(title)
      Acceptance.stored_resource(state, Acceptance::FRIENDLY.fetch(type), KEYS.fetch(title))
    end

    def stored_value(state, title, property)
      resource = stored(title, state)
      expect(resource).not_to be_nil, "#{title} is not in the state"
      Acceptance.fetch_ci(resource, property)
    end

    # The stored properties are exactly the declared ones (names compared
    # without case), with exactly the declared values.
    def expect_state(state, title, expected)
      resource = stored(title, state)
      expect(resource).not_to be_nil, "#{title} is not in the simulator state"
      actual = Acceptance.normalize_stored(resource)
      expect(actual.keys.sort).to eq(expected.keys.map(&:downcase).sort), "#{title}: #{resource.inspect}"
      expected.each do |property, value|
        stored_value = actual[property.downcase]
        expect(Acceptance.same_stored_value?(stored_value, value)).to be(true),
                                                                      "#{title}.#{property}: stored #{stored_value.inspect}, declared #{value.inspect}"
      end
    end
  end
end
