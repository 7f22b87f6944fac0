# frozen_string_literal: true

require_relative 'real_dsc_machine'
require_relative '../../support/reboot_module'

# Reboots real DSC resources ask for on the real pwsh, through the real
# reboot module under the modulepath and a stand-in `shutdown` first on
# PATH that records its calls: a class-based resource (RealNoisy, Mode
# 'reboot': its Set sets $global:DSCMachineStatus = 1 and it never
# converges) and a script-based one (RealScript whose SetScript sets it,
# once, then is in sync), called directly and through Invoke-DscResource.
module RealPwshDsc
  SCRIPT_FLAG = "(Join-Path $env:PWSHLIB_REAL_DSC_STATE 'reboot-flag')"

  def self.reboot_manifest
    [
      Acceptance.resource('dsc_realnoisy', 'noisy-reboot', 'dsc_name' => 'noisy-reboot', 'dsc_mode' => 'reboot'),
      Acceptance.resource('dsc_realscript', 'script-asks',
                          'dsc_getscript' => "@{ Result = [string] (Test-Path -LiteralPath #{SCRIPT_FLAG}) }",
                          'dsc_setscript' => "Set-Content -LiteralPath #{SCRIPT_FLAG} -Value 'on'; $global:DSCMachineStatus = 1",
                          'dsc_testscript' => "Test-Path -LiteralPath #{SCRIPT_FLAG}"),
      Acceptance.resource('dsc_realsetting', 'plain', 'dsc_name' => 'plain-ü', 'dsc_ensure' => 'Present'),
      "reboot { 'dsc_reboot': apply => finished }",
    ].join("\n")
  end

  {
    'directly' => {},
    'through Invoke-DscResource (PWSHLIB_DSC_DIRECT=0)' => { 'PWSHLIB_DSC_DIRECT' => '0' },
  }.each do |how, env|
    RSpec.describe "a reboot real DSC resources ask for, called #{how}" do
      include Runs

      # Run 1 sets all three; run 2 sets RealNoisy alone (it asks again);
      # run 3, in --noop, sets nothing.
      before(:all) do
        @modules = Dir.mktmpdir('pwshlib-real-reboot-modules-')
        @machine = Machine.new('real-dsc-reboot', module_path: RebootModule.modulepath_with(@modules, MODULE_PATH))
        @shutdowns = []
        @runs = [[], [], ['--noop']].each_with_index.map do |arguments, index|
          log = File.join(@machine.dir, "shutdown-calls-#{index + 1}.txt")
          run = @machine.apply(RealPwshDsc.reboot_manifest, env: RebootModule.standin_env(log).merge(env),
                                                            arguments: arguments)
          @shutdowns << RebootModule.shutdown_calls(log, expected: run.output.include?('Scheduling system reboot'))
          run
        end
      end

      after(:all) do
        @machine&.cleanup
        FileUtils.rm_rf(@modules) unless ENV['PWSHLIB_ACCEPTANCE_KEEP']
      end

      it 'went through the route asked for' do
        expect(@machine.standin_calls.empty?).to eq(env.empty?)
        expect(counts(run(1), 'RealNoisy')['Set']).to eq(1)
        expect(counts(run(1), 'RealScript')['Set']).to eq(1)
      end

      it 'run 1: both Sets asked, the node restarts once, each asking resource named' do
        expect(run(1).exitcode).to eq(2), run(1).to_s
        expect(@shutdowns[0]).to eq(['-r +1 Puppet is rebooting the computer']), run(1).to_s
        expect(run(1).output).to include("Reboot[dsc_reboot]: Triggered 'refresh' from 2 events")
        expect(run(1).output).to match(/Dsc_realnoisy\[noisy-reboot\]: The DSC Set asked for a reboot: Reboot\[dsc_reboot\]/)
        expect(run(1).output).to match(/Dsc_realscript\[script-asks\]: The DSC Set asked for a reboot/)
        expect(run(1).output).not_to match(/Dsc_realsetting\[plain\]: The DSC Set asked/)
        expect(run(1).output).not_to match(/Warning: .*A reboot is required/)
      end

      it 'run 2: the resource that asks on every Set restarts the node once more, as it says' do
        expect(counts(run(2), 'RealScript')['Set']).to eq(0)
        expect(@shutdowns[1]).to eq(['-r +1 Puppet is rebooting the computer']), run(2).to_s
        expect(run(2).output).to include("Reboot[dsc_reboot]: Triggered 'refresh' from 1 event")
      end

      it 'run 3, in --noop: no Set, no reboot' do
        expect(run(3).exitcode).to eq(0), run(3).to_s
        expect(counts(run(3), 'RealNoisy')['Set']).to eq(0)
        expect(@shutdowns[2]).to eq([])
        expect(run(3).output).not_to include('Scheduling system reboot')
        expect(run(3).output).to match(/Dsc_realnoisy\[noisy-reboot\]: Would be changed: if its DSC Set asks for a reboot/)
        expect(run(3).output).to include("Reboot[dsc_reboot]: Would have triggered 'refresh' from 1 event")
      end
    end
  end
end
