# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/acceptance_scenario'

# On the simulated host playing Windows PowerShell
# 5.1: whose account direct calls run as (PWSHLIB_SIM_USER; unset is
# SYSTEM), the opt-in that sends a run that is not SYSTEM through the LCM
# (PWSHLIB_DSC_DIRECT=system), and which calls write the machine-level
# PSModulePath (the call log's machine_module_path; PWSHLIB_SIM_ELEVATED=0
# plays an unelevated run).
module AcceptanceIdentity
  ADMIN = 'CONTOSO\\admin'
  IDENTITY_WARNING = /DSC resources run as CONTOSO\\admin, not as SYSTEM as the LCM ran them/

  MANIFEST = %w[one two three].map do |title|
    Acceptance.resource('dsc_fixturefile', title, 'dsc_destinationpath' => "C:\\Identity\\#{title}.txt",
                                                  'dsc_ensure' => 'Present', 'dsc_contents' => "contents of #{title}")
  end.join("\n")

  RSpec.describe 'puppet apply as an account that is not SYSTEM, on Windows PowerShell 5.1' do
    extend AcceptanceScenario

    def identity_warnings(run)
      run.output.lines.grep(/\AWarning: .*#{IDENTITY_WARNING.source}/)
    end

    def changed_all(run)
      %w[one two three].each { |title| expect(run.changed?("Dsc_fixturefile[#{title}]")).to be(true), run.to_s }
    end

    apply_scenario 'direct calls in a host that is not SYSTEM',
                   machine: 'identity-admin', manifest: MANIFEST, env: { 'PWSHLIB_SIM_USER' => ADMIN },
                   exits: 'exits 2: applied', exitcode: 2 do
      it 'warns once per run, not per resource, naming the account and the opt-in' do
        warnings = identity_warnings(run)
        expect(warnings.size).to eq(1), run.to_s
        expect(warnings.first).to include('PWSHLIB_DSC_DIRECT=system')
        changed_all(run)
      end

      it 'calls every resource directly, never writing the machine-level PSModulePath' do
        expect(run.calls.size).to eq(6)
        expect(run.calls.map { |call| call['kind'] }.uniq).to eq(['direct'])
        expect(run.calls.map { |call| call['machine_module_path'] }.uniq).to eq([false])
      end
    end

    apply_scenario 'PWSHLIB_DSC_DIRECT=system in a host that is not SYSTEM',
                   machine: 'identity-lcm', manifest: MANIFEST,
                   env: { 'PWSHLIB_SIM_USER' => ADMIN, 'PWSHLIB_DSC_DIRECT' => 'system' },
                   exits: 'exits 2: applied', exitcode: 2 do
      it 'sends every call through the LCM, which writes the machine-level PSModulePath, and does not warn' do
        expect(run.calls.size).to eq(6)
        expect(run.calls.map { |call| call['kind'] }.uniq).to eq(['invoke_dsc_resource'])
        expect(run.calls.map { |call| call['machine_module_path'] }.uniq).to eq([true])
        expect(identity_warnings(run)).to eq([])
        changed_all(run)
      end
    end

    apply_scenario 'PWSHLIB_DSC_DIRECT=system as SYSTEM',
                   machine: 'identity-system', manifest: MANIFEST, env: { 'PWSHLIB_DSC_DIRECT' => 'system' },
                   exits: 'exits 2: applied', exitcode: 2 do
      it 'calls every resource directly, without a warning' do
        expect(run.calls.map { |call| call['kind'] }.uniq).to eq(['direct'])
        expect(identity_warnings(run)).to eq([])
      end
    end

    apply_scenario 'an account that is not SYSTEM on PowerShell 7',
                   machine: 'identity-pwsh7', manifest: MANIFEST,
                   env: { 'PWSHLIB_SIM_USER' => ADMIN, 'PWSHLIB_SIM_PSVERSION' => '7.4.6', 'PWSHLIB_DSC_DIRECT' => 'system' },
                   exits: 'exits 2: applied', exitcode: 2 do
      it 'neither warns nor routes (PSDesiredStateConfiguration 2.x runs resources as the user too)' do
        expect(run.calls.map { |call| call['kind'] }.uniq).to eq(['direct'])
        expect(identity_warnings(run)).to eq([])
      end
    end

    apply_scenario 'an unelevated run, called directly',
                   machine: 'identity-unelevated', manifest: MANIFEST,
                   env: { 'PWSHLIB_SIM_USER' => ADMIN, 'PWSHLIB_SIM_ELEVATED' => '0' },
                   exits: 'exits 2: applied', exitcode: 2 do
      it 'applies every resource: a direct call writes no registry value' do
        changed_all(run)
        expect(run.calls.map { |call| call['fault'] }.uniq).to eq([nil])
      end
    end

    apply_scenario 'an unelevated run through Invoke-DscResource',
                   machine: 'identity-unelevated-lcm', manifest: MANIFEST,
                   env: { 'PWSHLIB_SIM_USER' => ADMIN, 'PWSHLIB_SIM_ELEVATED' => '0', 'PWSHLIB_DSC_DIRECT' => '0' },
                   exits: 'exits 6: failed', exitcode: 6 do
      it 'fails each resource saying the machine-level PSModulePath needs an elevated run' do
        errors = run.output.lines.grep(/\AError: dsc_fixturefile\[\w+\]: Cannot add .*dsc_resources to the machine-level PSModulePath/)
        expect(errors.grep(/Requested registry access is not allowed\. Such a call needs an elevated run/).size).to eq(3), run.to_s
        expect(run.calls.map { |call| call['fault'] }.uniq).to eq(['unelevated'])
      end
    end
  end
end
