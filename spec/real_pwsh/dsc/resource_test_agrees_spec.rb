# frozen_string_literal: true

require_relative 'real_dsc_machine'

# Exit 0 means the resource's own Test agrees, on the real pwsh: where a
# Get cannot report what property mode compares, the resource's one Test
# judges it, and the change says why (docs/behavior.md §3 "insync?").
# Each resource is applied twice, directly and through Invoke-DscResource,
# with its calls counted (spec/real_pwsh/dsc/modules/realdsc):
# * RealScript: every property a key, Result read-only (the Resource API's
#   hidden custom insync trigger);
# * RealChecksum: its Get leaves out the write-only Checksum;
# * RealCompliance: Machine Configuration's Reasons, the configurable
#   properties copied from the desired state, a "compliant" reason when
#   all is well;
# * RealAudited: DscResource.Base's style, the real state and Reasons only
#   where it differs.
module RealPwshDsc
  FLAG = "(Join-Path $env:PWSHLIB_REAL_DSC_STATE 'script-flag')"

  def self.test_agrees_manifest
    [
      Acceptance.resource('dsc_realscript', 'script',
                          'dsc_getscript' => "@{ Result = [string] (Test-Path -LiteralPath #{FLAG}) }",
                          'dsc_setscript' => "Set-Content -LiteralPath #{FLAG} -Value 'on'",
                          'dsc_testscript' => "Test-Path -LiteralPath #{FLAG}"),
      Acceptance.resource('dsc_realchecksum', 'checksum', 'dsc_path' => '/srv/checksum-ü', 'dsc_contents' => 'abc',
                                                          'dsc_checksum' => 'SHA-256'),
      Acceptance.resource('dsc_realcompliance', 'compliance', 'dsc_name' => 'compliance-ü', 'dsc_value' => 'wanted'),
      Acceptance.resource('dsc_realaudited', 'audited', 'dsc_name' => 'audited-ü', 'dsc_value' => 'wanted'),
    ].join("\n")
  end

  TEST_SAYS = "the resource's Test says it is not in the desired state"

  {
    'directly' => {},
    'through Invoke-DscResource (PWSHLIB_DSC_DIRECT=0)' => { 'PWSHLIB_DSC_DIRECT' => '0' },
  }.each do |how, env|
    RSpec.describe "exit 0 means the resource's own Test agrees, called #{how}" do
      include Runs

      before(:all) do
        @machine = Machine.new('real-dsc-test-agrees')
        @runs = Array.new(2) { @machine.apply(RealPwshDsc.test_agrees_manifest, env: env) }
      end

      after(:all) { @machine&.cleanup }

      it 'run 1 sets every resource, none failing' do
        expect(run(1).exitcode).to eq(2), run(1).to_s
        %w[Dsc_realscript[script] Dsc_realchecksum[checksum] Dsc_realcompliance[compliance] Dsc_realaudited[audited]]
          .each do |ref|
          expect(run(1).changed?(ref)).to be(true), ref
          expect(run(1).failed?(ref)).to be(false), ref
        end
      end

      it 'run 1 asks the Test only where the Get cannot report' do
        expect(counts(run(1), 'RealScript')).to eq('Get' => 1, 'Set' => 1, 'Test' => 1)
        expect(counts(run(1), 'RealCompliance')).to eq('Get' => 1, 'Set' => 1, 'Test' => 1)
        # Their reported values differ already: no Test.
        expect(counts(run(1), 'RealChecksum')).to eq('Get' => 1, 'Set' => 1, 'Test' => 0)
        expect(counts(run(1), 'RealAudited')).to eq('Get' => 1, 'Set' => 1, 'Test' => 0)
      end

      it 'run 1 says why: the Test, or the Reasons the Get returned' do
        expect(run(1).event_messages('Dsc_realscript[script]')).to eq([TEST_SAYS])
        expect(run(1).event_messages('Dsc_realcompliance[compliance]'))
          .to eq(["#{TEST_SAYS}: RealCompliance:RealCompliance:Value: The value is missing and should be 'wanted'."])
        expect(run(1).event_messages('Dsc_realaudited[audited]')).to eq(["dsc_value changed 'nil' to 'wanted'"])
      end

      it 'run 2 changes nothing: the Tests agree, and the one that reports its real state costs one Get' do
        expect(run(2).exitcode).to eq(0), run(2).to_s
        %w[RealScript RealChecksum RealCompliance].each do |resource|
          expect(counts(run(2), resource)).to eq('Get' => 1, 'Set' => 0, 'Test' => 1), resource
        end
        expect(counts(run(2), 'RealAudited')).to eq('Get' => 1, 'Set' => 0, 'Test' => 0)
        expect(@machine.stored('RealChecksum', '/srv/checksum-ü'))
          .to eq('Path' => '/srv/checksum-ü', 'Contents' => 'abc', 'Checksum' => 'SHA-256')
      end

      it 'says at debug why each is judged by its Test' do
        expect(run(2).output).to match(/Debug: .*checksum: its Get left out a property the manifest sets/)
        expect(run(2).output).to match(/Debug: .*compliance: its Get reports Reasons/)
        expect(run(2).output).not_to match(/Debug: .*audited: its Get/)
      end
    end
  end

  # ensure => absent hands the Get the desired state: RealScoped's Get
  # needs Scope to look in the right place, and fails without it.
  RSpec.describe 'an absent resource whose Get needs a non-key property' do
    include Runs

    before(:all) do
      @machine = Machine.new('real-dsc-absent-scope')
      scoped = lambda do |wanted|
        Acceptance.resource('dsc_realscoped', 'scoped', 'dsc_name' => 'item-ü', 'dsc_scope' => 'blue', 'dsc_ensure' => wanted)
      end
      @runs = [@machine.apply(scoped.call('Present'))]
      @runs += Array.new(2) { @machine.apply(scoped.call('Absent')) }
    end

    after(:all) { @machine&.cleanup }

    it 'creates, then deletes, then finds it absent, never failing' do
      expect(@runs.map(&:exitcode)).to eq([2, 2, 0]), @runs.join("\n")
      @runs.each { |r| expect(r.failed?('Dsc_realscoped[scoped]')).to be(false), r.to_s }
      expect(@machine.stored('RealScoped', 'blue/item-ü')).to be_nil
      expect(counts(run(3), 'RealScoped')).to eq('Get' => 1, 'Set' => 0, 'Test' => 0)
    end

    it 'hands the absent Get the Scope it looks in' do
      get = run(2).calls.find { |call| call['resource'] == 'RealScoped' && call['method'] == 'Get' }
      expect(get['properties']).to eq('Name' => 'item-ü', 'Scope' => 'blue')
    end
  end

  # A Set that calls a command without a mandatory parameter reads as
  # PowerShell's own error, naming the command's parameter (under Stop,
  # as a class method or a resource that sets it meets it: with the
  # LCM's Continue it is an error record of the call, shown alike).
  RSpec.describe 'a Set that calls a command without a mandatory parameter' do
    before(:all) do
      @machine = Machine.new('real-dsc-prompt')
      manifest = Acceptance.resource('dsc_realscript', 'prompt', 'dsc_getscript' => "@{ Result = 'x' }",
                                                                 'dsc_setscript' => "$ErrorActionPreference = 'Stop'; Get-Item",
                                                                 'dsc_testscript' => '$false')
      @run = @machine.apply(manifest)
    end

    after(:all) { @machine&.cleanup }

    it 'fails the resource with the message a -NonInteractive PowerShell gives' do
      expect(@run.failed?('Dsc_realscript[prompt]')).to be(true), @run.to_s
      expect(@run.output).to include('Cannot process command because of one or more missing mandatory parameters: Path.')
      expect(@run.output).not_to include('not interactive')
    end
  end
end
