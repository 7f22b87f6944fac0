# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# Faults injected into the simulated host. In each run one resource is hit;
# it must fail alone, with a clear error that names it, while the rest of the
# catalog still applies. One `puppet apply` per fault, each on a fresh machine.
# The scenario's constants live in this module, not at the top level, so
# that a whole `rspec spec` run cannot mix them up with other specs'.
module AcceptanceFaults
  RSpec.describe 'puppet apply when the PowerShell host misbehaves' do
    FAULT_SECRET = Acceptance.generate_secret('fault')
    FAULT_RUNAS = Acceptance.credential('CONTOSO\\runner', FAULT_SECRET)

    def self.file(title, contents, extra = {})
      Acceptance.resource('dsc_fixturefile', title, {
        'dsc_destinationpath' => "C:\\Faults\\#{title}.txt",
        'dsc_ensure' => 'Present',
        'dsc_contents' => contents,
        'dsc_psdscrunascredential' => FAULT_RUNAS,
      }.merge(extra))
    end

    def file_calls(run, title, method: nil)
      run.calls_for('dsc_fixturefile', { 'destinationpath' => "C:\\Faults\\#{title}.txt" }, method: method)
    end

    def stored_file(machine, title)
      Acceptance.stored_resource(machine.state, 'FixtureFile', 'destinationpath' => "C:\\Faults\\#{title}.txt")
    end

    def ref(title)
      "Dsc_fixturefile[#{title}]"
    end

    def error_lines(run)
      run.output.lines.grep(/Error/)
    end

    shared_examples 'a run that keeps its secrets' do
      it 'shows no piece of the run-as password anywhere' do
        token = Acceptance.secret_token(FAULT_SECRET)
        expect(run.visible_text).not_to include(token)
        expect(run.visible_text).not_to include(token.reverse)
        leaks = run.puppet_files.select { |path| File.binread(path).include?(token) }
        expect(leaks).to eq([])
      end

      it 'hands the password to the simulator intact' do
        expect(run.calls.flat_map { |call| Acceptance.strings_in(call) }).to include(FAULT_SECRET)
      end
    end

    describe 'the host crashes mid-run' do
      before(:all) do
        @machine = Acceptance::Machine.new('crash')
        # The host process dies (exits without answering) on the first call for
        # the middle resource, after it has served the first one.
        manifest = [self.class.file('before-crash', 'one'), self.class.file('crashing', 'two'),
                    self.class.file('after-crash', 'three')].join("\n")
        @run = @machine.apply(manifest, env: {
                                'PWSHLIB_SIM_CRASH_RESOURCE' => 'FixtureFile:C:\\Faults\\crashing.txt',
                                'PWSHLIB_SIM_CRASH_ON_CALL' => '1',
                              })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 6 (changes and failures)') { expect(run.exitcode).to eq(6), run.to_s }

      it 'fails only the resource whose call crashed the host, with an error naming it' do
        expect(run.failed?(ref('crashing'))).to be(true)
        expect(error_lines(run).join).to include('crashing').or include('Crashing')
      end

      it 'applies the resources before and after the crash, on a fresh host' do
        expect(run.changed?(ref('before-crash'))).to be(true)
        expect(run.changed?(ref('after-crash'))).to be(true)
        expect(run.failed?(ref('after-crash'))).to be(false)
        expect(Acceptance.fetch_ci(stored_file(@machine, 'after-crash'), 'contents')).to eq('three')
        expect(run.calls.map { |call| call['pid'] }.uniq.size).to eq(2)
      end

      it 'does not call the crashed resource again: one Get, no blind Set on an unknown state' do
        expect(file_calls(run, 'crashing').map { |call| call['method'] }).to eq(['Get'])
        expect(stored_file(@machine, 'crashing')).to be_nil
      end

      include_examples 'a run that keeps its secrets'
    end

    describe 'a call runs past dsc_timeout' do
      before(:all) do
        @machine = Acceptance::Machine.new('timeout')
        manifest = [
          self.class.file('hanging', 'one', 'dsc_timeout' => 2),
          # No dsc_timeout: the 2 s must not stick, so 2.5 s of latency is fine.
          self.class.file('slow', 'two'),
        ].join("\n")
        @run = @machine.apply(manifest, env: {
                                'PWSHLIB_SIM_HANG_RESOURCE' => 'FixtureFile:C:\\Faults\\hanging.txt',
                                'PWSHLIB_SIM_LATENCY_MS' => '2500',
                              })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 6') { expect(run.exitcode).to eq(6), run.to_s }

      it 'fails the hung resource with a timeout error naming it' do
        expect(run.failed?(ref('hanging'))).to be(true)
        expect(error_lines(run).join).to match(/hanging/).and match(/timeout|timed out/i)
      end

      it 'gives up on the hung resource after its one Get: no second Get, no blind Set' do
        expect(file_calls(run, 'hanging').map { |call| call['method'] }).to eq(['Get'])
      end

      it 'does not apply the short timeout to the next resource' do
        expect(run.failed?(ref('slow'))).to be(false)
        expect(run.changed?(ref('slow'))).to be(true)
        expect(Acceptance.fetch_ci(stored_file(@machine, 'slow'), 'contents')).to eq('two')
      end

      include_examples 'a run that keeps its secrets'
    end

    describe 'Invoke-DscResource collides twice, then succeeds' do
      before(:all) do
        @machine = Acceptance::Machine.new('collision')
        manifest = [self.class.file('contended', 'one'), self.class.file('next', 'two')].join("\n")
        @run = @machine.apply(manifest, env: {
                                'PWSHLIB_SIM_COLLISIONS' => '2',
                                'PWSHLIB_COLLISION_RETRY_SECONDS' => '0.5',
                              })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 2: the retries succeed') { expect(run.exitcode).to eq(2), run.to_s }

      it 'sends a notice about the collision and retries twice' do
        # The first Get runs while Puppet builds the catalog, before the report
        # collects logs: read the notices from the output.
        notices = run.output.lines.grep(/\ANotice: /)
        expect(notices.grep(/collision/i)).not_to be_empty
        expect(notices.grep(/\bRetrying\b/).size).to eq(2), notices.join("\n")
      end

      it 'retries the colliding call and uses the successful answer' do
        expect(file_calls(run, 'contended', method: 'Get').size).to eq(3)
        expect(file_calls(run, 'contended', method: 'Set').size).to eq(1)
        expect(Acceptance.fetch_ci(stored_file(@machine, 'contended'), 'contents')).to eq('one')
        expect(Acceptance.fetch_ci(stored_file(@machine, 'next'), 'contents')).to eq('two')
      end

      include_examples 'a run that keeps its secrets'
    end

    describe 'the run-as account may not log on' do
      before(:all) do
        @machine = Acceptance::Machine.new('logon')
        bad = Acceptance.credential('CONTOSO\\locked', FAULT_SECRET)
        manifest = [
          self.class.file('locked-1', 'one', 'dsc_psdscrunascredential' => bad),
          self.class.file('allowed', 'two'),
          self.class.file('locked-2', 'three', 'dsc_psdscrunascredential' => bad),
          Acceptance.resource('dsc_fixtureservice', 'locked-svc', 'dsc_name' => 'Locked', 'dsc_state' => 'Running',
                                                                  'dsc_psdscrunascredential' => bad),
        ].join("\n")
        @run = @machine.apply(manifest, env: { 'PWSHLIB_SIM_LOGON_FAILURE_USER' => 'CONTOSO\\locked' })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 6') { expect(run.exitcode).to eq(6), run.to_s }

      it 'fails the first resource with an error saying the account lacks logon rights' do
        expect(run.failed?(ref('locked-1'))).to be(true)
        expect(error_lines(run).join).to match(/locked-1|C:\\Faults\\locked-1\.txt/).and match(/logon/i)
      end

      it 'skips the other resources with the same credential without calling PowerShell' do
        expect(run.failed?(ref('locked-2'))).to be(true)
        expect(run.failed?('Dsc_fixtureservice[locked-svc]')).to be(true)
        expect(file_calls(run, 'locked-2')).to eq([])
        expect(run.calls_for('dsc_fixtureservice')).to eq([])
        expect(file_calls(run, 'locked-1').size).to eq(1)
      end

      it 'applies the resource with another credential' do
        expect(run.changed?(ref('allowed'))).to be(true)
        expect(Acceptance.fetch_ci(stored_file(@machine, 'allowed'), 'contents')).to eq('two')
      end

      include_examples 'a run that keeps its secrets'
    end

    describe 'the host returns malformed JSON' do
      before(:all) do
        @machine = Acceptance::Machine.new('malformed')
        manifest = [self.class.file('garbled', 'one'), self.class.file('fine', 'two')].join("\n")
        @run = @machine.apply(manifest, env: { 'PWSHLIB_SIM_MALFORMED_JSON' => 'FixtureFile:C:\\Faults\\garbled.txt' })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 6') { expect(run.exitcode).to eq(6), run.to_s }

      it 'fails that resource with the parse error' do
        expect(run.failed?(ref('garbled'))).to be(true)
        expect(error_lines(run).join).to match(/garbled/).and match(/json|parse/i)
      end

      it 'gives up on that resource after its one Get: no second Get, no blind Set' do
        expect(file_calls(run, 'garbled').map { |call| call['method'] }).to eq(['Get'])
      end

      it 'applies the others' do
        expect(run.changed?(ref('fine'))).to be(true)
        expect(Acceptance.fetch_ci(stored_file(@machine, 'fine'), 'contents')).to eq('two')
      end

      include_examples 'a run that keeps its secrets'
    end

    describe 'a Set that requires a reboot' do
      before(:all) do
        @machine = Acceptance::Machine.new('reboot')
        manifest = [self.class.file('needs-reboot', 'one'), self.class.file('no-reboot', 'two')].join("\n")
        @run = @machine.apply(manifest, env: { 'PWSHLIB_SIM_REBOOT_REQUIRED' => 'Set/FixtureFile:C:\\Faults\\needs-reboot.txt' })
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it('exits 2: applied, not failed') { expect(run.exitcode).to eq(2), run.to_s }

      it 'logs a warning that names the resource' do
        warnings = run.logs.select { |level, _| level == 'warning' }.map(&:last)
        expect(warnings.grep(/reboot/i).join).to match(/needs-reboot|C:\\Faults\\needs-reboot\.txt/)
        expect(warnings.grep(/reboot/i).join).not_to match(/no-reboot/)
      end

      it 'applies both resources' do
        expect(run.changed?(ref('needs-reboot'))).to be(true)
        expect(run.changed?(ref('no-reboot'))).to be(true)
      end

      include_examples 'a run that keeps its secrets'
    end
  end
end
