# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/acceptance_scenario'

# Faults injected into the simulated host. In each run one resource is hit;
# it must fail alone, with a clear error that names it, while the rest of the
# catalog still applies. One `puppet apply` per fault, each on a fresh machine.
# The scenario's constants live in this module, not at the top level, so
# that a whole `rspec spec` run cannot mix them up with other specs'.
module AcceptanceFaults
  FAULT_SECRET = Acceptance.generate_secret('fault')
  FAULT_RUNAS = Acceptance.credential('CONTOSO\\runner', FAULT_SECRET)

  RSpec.describe 'puppet apply when the PowerShell host misbehaves' do
    extend AcceptanceScenario

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

    # `title` was applied: changed, and the simulator holds its contents.
    def expect_applied(title, contents)
      expect(run.changed?(ref(title))).to be(true)
      expect(Acceptance.fetch_ci(stored_file(@machine, title), 'contents')).to eq(contents)
    end

    # `title` cost one Get and nothing more: no second Get, no blind Set.
    def expect_only_a_get(title)
      expect(file_calls(run, title).map { |call| call['method'] }).to eq(['Get'])
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

    # The host process dies (exits without answering) on the first call for
    # the middle resource, after it has served the first one.
    apply_scenario 'the host crashes mid-run',
                   machine: 'crash',
                   manifest: [file('before-crash', 'one'), file('crashing', 'two'), file('after-crash', 'three')].join("\n"),
                   env: {
                     'PWSHLIB_SIM_CRASH_RESOURCE' => 'FixtureFile:C:\\Faults\\crashing.txt',
                     'PWSHLIB_SIM_CRASH_ON_CALL' => '1',
                   },
                   exits: 'exits 6 (changes and failures)', exitcode: 6 do
      it 'fails only the resource whose call crashed the host, with an error naming it' do
        expect(run.failed?(ref('crashing'))).to be(true)
        expect(error_lines(run).join).to include('crashing').or include('Crashing')
      end

      it 'applies the resources before and after the crash, on a fresh host' do
        expect(run.changed?(ref('before-crash'))).to be(true)
        expect_applied('after-crash', 'three')
        expect(run.failed?(ref('after-crash'))).to be(false)
        expect(run.calls.map { |call| call['pid'] }.uniq.size).to eq(2)
      end

      it 'does not call the crashed resource again: one Get, no blind Set on an unknown state' do
        expect_only_a_get('crashing')
        expect(stored_file(@machine, 'crashing')).to be_nil
      end

      include_examples 'a run that keeps its secrets'
    end

    apply_scenario 'a call runs past dsc_timeout',
                   machine: 'timeout',
                   manifest: [
                     file('hanging', 'one', 'dsc_timeout' => 2),
                     # No dsc_timeout: the 2 s must not stick, so 2.5 s of latency is fine.
                     file('slow', 'two'),
                   ].join("\n"),
                   env: {
                     'PWSHLIB_SIM_HANG_RESOURCE' => 'FixtureFile:C:\\Faults\\hanging.txt',
                     'PWSHLIB_SIM_LATENCY_MS' => '2500',
                   },
                   exits: 'exits 6', exitcode: 6 do
      it 'fails the hung resource with a timeout error naming it' do
        expect(run.failed?(ref('hanging'))).to be(true)
        expect(error_lines(run).join).to match(/hanging/).and match(/timeout|timed out/i)
      end

      it 'gives up on the hung resource after its one Get: no second Get, no blind Set' do
        expect_only_a_get('hanging')
      end

      it 'does not apply the short timeout to the next resource' do
        expect(run.failed?(ref('slow'))).to be(false)
        expect_applied('slow', 'two')
      end

      include_examples 'a run that keeps its secrets'
    end

    apply_scenario 'Invoke-DscResource collides twice, then succeeds',
                   machine: 'collision',
                   manifest: [file('contended', 'one'), file('next', 'two')].join("\n"),
                   env: { 'PWSHLIB_SIM_COLLISIONS' => '2', 'PWSHLIB_COLLISION_RETRY_SECONDS' => '0.5' },
                   exits: 'exits 2: the retries succeed', exitcode: 2 do
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

    locked = Acceptance.credential('CONTOSO\\locked', FAULT_SECRET)
    apply_scenario 'the run-as account may not log on',
                   machine: 'logon',
                   manifest: [
                     file('locked-1', 'one', 'dsc_psdscrunascredential' => locked),
                     file('allowed', 'two'),
                     file('locked-2', 'three', 'dsc_psdscrunascredential' => locked),
                     Acceptance.resource('dsc_fixtureservice', 'locked-svc', 'dsc_name' => 'Locked', 'dsc_state' => 'Running',
                                                                             'dsc_psdscrunascredential' => locked),
                   ].join("\n"),
                   env: { 'PWSHLIB_SIM_LOGON_FAILURE_USER' => 'CONTOSO\\locked' },
                   exits: 'exits 6', exitcode: 6 do
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
        expect_applied('allowed', 'two')
      end

      include_examples 'a run that keeps its secrets'
    end

    # A German Windows words both failures in German: the provider goes by
    # the category and the codes the prelude adds (the simulator adds them
    # as the prelude does).
    apply_scenario 'on a localized Windows, a collision and a logon failure',
                   machine: 'localized',
                   manifest: [
                     file('contended', 'one'),
                     file('locked-1', 'two', 'dsc_psdscrunascredential' => locked),
                     file('locked-2', 'three', 'dsc_psdscrunascredential' => locked),
                   ].join("\n"),
                   env: { 'PWSHLIB_SIM_LOCALIZED' => '1', 'PWSHLIB_SIM_COLLISIONS' => '1',
                          'PWSHLIB_SIM_COLLISIONS_RESOURCE' => 'FixtureFile:C:\\Faults\\contended.txt',
                          'PWSHLIB_COLLISION_RETRY_SECONDS' => '0.1',
                          'PWSHLIB_SIM_LOGON_FAILURE_USER' => 'CONTOSO\\locked' },
                   exits: 'exits 6', exitcode: 6 do
      it 'retries the collision and applies the resource' do
        expect(run.output.lines.grep(/\ANotice: /).grep(/collision/i)).not_to be_empty
        expect(file_calls(run, 'contended', method: 'Get').size).to eq(2)
        expect_applied('contended', 'one')
      end

      it 'tries the locked account once, never again with the same credential' do
        expect(error_lines(run).join).to include('Anmeldung fehlgeschlagen').or match(/logon rights/)
        expect(file_calls(run, 'locked-1').size).to eq(1)
        expect(file_calls(run, 'locked-2')).to eq([])
        expect(run.failed?(ref('locked-2'))).to be(true)
      end

      include_examples 'a run that keeps its secrets'
    end

    apply_scenario 'the host returns malformed JSON',
                   machine: 'malformed',
                   manifest: [file('garbled', 'one'), file('fine', 'two')].join("\n"),
                   env: { 'PWSHLIB_SIM_MALFORMED_JSON' => 'FixtureFile:C:\\Faults\\garbled.txt' },
                   exits: 'exits 6', exitcode: 6 do
      it 'fails that resource with the parse error' do
        expect(run.failed?(ref('garbled'))).to be(true)
        expect(error_lines(run).join).to match(/garbled/).and match(/json|parse/i)
      end

      it 'gives up on that resource after its one Get: no second Get, no blind Set' do
        expect_only_a_get('garbled')
      end

      it 'applies the others' do
        expect_applied('fine', 'two')
      end

      include_examples 'a run that keeps its secrets'
    end

    apply_scenario 'a Set that requires a reboot',
                   machine: 'reboot',
                   manifest: [file('needs-reboot', 'one'), file('no-reboot', 'two')].join("\n"),
                   env: { 'PWSHLIB_SIM_REBOOT_REQUIRED' => 'Set/FixtureFile:C:\\Faults\\needs-reboot.txt' },
                   exits: 'exits 2: applied, not failed', exitcode: 2 do
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

    # The escape hatch PWSHLIB_DSC_DIRECT=0, read by the provider from the agent's
    # environment and carried in the script: every call goes through
    # Invoke-DscResource; without it, only the run-as calls do (the
    # simulated host plays 5.1).
    apply_scenario 'PWSHLIB_DSC_DIRECT=0 in the agent\'s environment',
                   machine: 'no-direct',
                   manifest: [file('through-idr', 'one'),
                              Acceptance.resource('dsc_fixturefile', 'plain', 'dsc_destinationpath' => 'C:\\Faults\\plain.txt',
                                                                              'dsc_ensure' => 'Present', 'dsc_contents' => 'two')].join("\n"),
                   env: { 'PWSHLIB_DSC_DIRECT' => '0' },
                   exits: 'exits 2: applied, not failed', exitcode: 2 do
      it 'makes every call through Invoke-DscResource' do
        expect(run.calls.size).to eq(4)
        expect(run.calls.map { |call| call['kind'] }.uniq).to eq(['invoke_dsc_resource'])
      end

      it 'applies both resources' do
        expect_applied('through-idr', 'one')
        expect_applied('plain', 'two')
      end
    end
  end
end
