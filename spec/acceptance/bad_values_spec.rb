# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/acceptance_scenario'

# Values that cannot go to PowerShell: a Timespan, a Regexp, a Puppet type or
# a SemVer inside a hash property, and hash keys that differ only in case.
# Each must fail its own resource, with an error that names the resource and
# the attribute path, while the good resources around it apply.
#
# Checks hold whether or not Puppet lists unchanged resources in its report
# (Puppet 8 leaves them out): failed resources always have a status, and what
# the good resources did is read from the simulator's call log and state.
module AcceptanceBadValues
  # Title → [Puppet source of dsc_options, the attribute path and the detail
  # the error must name].
  BAD = {
    'bad-regexp' => ["{ 'pattern' => /ab+c/ }", 'dsc_options.pattern', 'Regexp'],
    'bad-type' => ["{ 'kind' => String }", 'dsc_options.kind', 'Puppet::Pops::Types::PStringType'],
    'bad-semver' => ["{ 'nested' => { 'version' => SemVer('1.2.3') } }", 'dsc_options.nested.version', 'SemanticPuppet::Version'],
    'bad-case' => ["{ 'Key' => 'a', 'key' => 'b' }", 'dsc_options', "the keys 'Key' and 'key' differ only in case"],
  }.freeze

  RSpec.describe 'puppet apply with a resource holding a value PowerShell cannot take' do
    extend AcceptanceScenario

    def self.vault(title, attributes = {})
      Acceptance.resource('dsc_fixturevault', title, {
        'dsc_vaultname' => title,
        'dsc_ensure' => 'Present',
        'dsc_note' => "note of #{title}",
        'dsc_options' => { 'mode' => 'fast' },
      }.merge(attributes))
    end

    def self.bad_options(puppet_source)
      { 'dsc_options' => Acceptance::Raw.new(puppet_source) }
    end

    def ref(title)
      "Dsc_fixturevault[#{title}]"
    end

    def vault_calls(run, title, method: nil)
      run.calls_for('FixtureVault', { 'vaultname' => title }, method: method)
    end

    def stored_vault(machine, title)
      Acceptance.stored_resource(machine.state, 'FixtureVault', 'vaultname' => title)
    end

    def error_lines(run)
      run.output.lines.grep(/\AError:/)
    end

    apply_scenario 'one Timespan among good resources',
                   machine: 'bad-value',
                   manifest: [
                     vault('good-before'),
                     vault('bad-timespan', bad_options("{ 'mode' => 'fast', 'f' => Timespan(3600) }")),
                     vault('good-after'),
                   ].join("\n"),
                   exits: 'exits 6 (changes and failures): the catalog was not aborted', exitcode: 6 do
      it 'fails the bad resource with an error naming it, the attribute path and the value' do
        expect(run.failed?(ref('bad-timespan'))).to be(true)
        errors = error_lines(run).join
        expect(errors).to include('dsc_fixturevault[bad-timespan]: dsc_options.f: unsupported value'), run.to_s
        expect(errors).to include('a value of class Puppet::Pops::Time::Timespan cannot be passed to PowerShell')
      end

      it 'fails no other resource' do
        failed = (run.report['resource_statuses'] || {}).select { |_, status| status['failed'] == true }.keys
        expect(failed).to eq([ref('bad-timespan')])
      end

      it 'applies the good resources around it' do
        %w[good-before good-after].each do |title|
          expect(vault_calls(run, title, method: 'Set').size).to eq(1), "#{title}: #{vault_calls(run, title).inspect}"
          expect(Acceptance.fetch_ci(stored_vault(@machine, title), 'note')).to eq("note of #{title}")
        end
      end

      it 'sends nothing for the bad resource beyond the Get of its current state' do
        expect(vault_calls(run, 'bad-timespan').map { |call| call['method'] }).to eq(['Get'])
        expect(stored_vault(@machine, 'bad-timespan')).to be_nil
      end
    end

    apply_scenario 'a Regexp, a type, a SemVer and case-duplicate keys, each in its own resource',
                   machine: 'bad-values',
                   manifest: [
                     vault('good-first'),
                     *BAD.map { |title, (source, _, _)| vault(title, bad_options(source)) },
                     vault('good-last'),
                   ].join("\n"),
                   exits: 'exits 6', exitcode: 6 do
      BAD.each do |title, (_, path, detail)|
        it "fails #{title} with an error naming it and #{path}" do
          expect(run.failed?(ref(title))).to be(true), run.to_s
          error = error_lines(run).find { |line| line.include?("dsc_fixturevault[#{title}]") }
          expect(error).to include("#{path}: unsupported value").and(include(detail)), run.to_s
          expect(vault_calls(run, title, method: 'Set')).to be_empty
        end
      end

      it 'applies the good resources' do
        %w[good-first good-last].each do |title|
          expect(vault_calls(run, title, method: 'Set').size).to eq(1), "#{title}: #{vault_calls(run, title).inspect}"
        end
        failed = (run.report['resource_statuses'] || {}).select { |_, status| status['failed'] == true }.keys
        expect(failed).to match_array(BAD.keys.map { |title| ref(title) })
      end
    end
  end
end
