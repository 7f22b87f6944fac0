# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# Against the simulator: a Get is handed the desired state (an absent one
# too), and a class-based resource whose Get() returns $this (the
# simulator's get_returns_this) is judged by its Test on every route, so
# a drift its Get cannot show is corrected: the direct call sees the
# instance come back, a call through Invoke-DscResource reads the class's
# syntax tree.
module AcceptanceGetInput
  def self.manifest(flag_value: 'Enabled')
    echo = { 'dsc_name' => 'Echo', 'dsc_ensure' => 'Present', 'dsc_value' => flag_value }
    [
      Acceptance.resource('dsc_fixturefile', 'file', 'dsc_destinationpath' => 'C:\\Temp\\Input.txt',
                                                     'dsc_ensure' => 'Present', 'dsc_contents' => 'Hello'),
      Acceptance.resource('dsc_fixturefile', 'gone', 'dsc_destinationpath' => 'C:\\Temp\\Gone.txt', 'dsc_ensure' => 'Absent'),
      Acceptance.resource('dsc_fixtureclassresource', 'echo', echo),
    ].join("\n")
  end

  { 'directly' => {}, 'through Invoke-DscResource' => { 'PWSHLIB_DSC_DIRECT' => '0' } }.each do |how, env|
    RSpec.describe "puppet apply: what a Get is handed, called #{how}" do
      before(:all) do
        @machine = Acceptance::Machine.new('get-input')
        @machine.edit_state { |state| state['get_returns_this'] = ['FixtureClassResource'] }
        manifest = AcceptanceGetInput.manifest
        @runs = Array.new(2) { @machine.apply(manifest, env: env) }
        # The machine drifts where the echoing Get does not look.
        @machine.edit_state do |state|
          state['resources'].find { |name, _| name.casecmp?('FixtureClassResource') }[1].first['value'] = 'Drifted'
        end
        @runs << @machine.apply(manifest, env: env)
      end

      after(:all) { @machine&.cleanup }

      it 'hands Get the desired state, an absent one too' do
        get = @runs[1].calls_for('dsc_fixturefile', { 'destinationpath' => 'C:\\Temp\\Input.txt' }, method: 'Get').first
        expect(get['properties'].transform_keys(&:downcase))
          .to eq('destinationpath' => 'C:\\Temp\\Input.txt', 'ensure' => 'Present', 'contents' => 'Hello')
        gone = @runs[1].calls_for('dsc_fixturefile', { 'destinationpath' => 'C:\\Temp\\Gone.txt' }, method: 'Get').first
        expect(gone['properties'].transform_keys(&:downcase))
          .to eq('destinationpath' => 'C:\\Temp\\Gone.txt', 'ensure' => 'Absent')
      end

      it 'creates on run 1, changes nothing on run 2 with one Get per resource' do
        expect(@runs[0].exitcode).to eq(2), @runs[0].to_s
        expect(@runs[1].exitcode).to eq(0), @runs[1].to_s
        expect(@runs[1].call_counts('dsc_fixturefile', 'destinationpath' => 'C:\\Temp\\Input.txt'))
          .to eq('Get' => 1, 'Set' => 0, 'Test' => 0)
        expect(@runs[1].call_counts('dsc_fixtureclassresource', 'name' => 'Echo')).to eq('Get' => 1, 'Set' => 0, 'Test' => 1)
      end

      it 'corrects the drift of the resource whose Get() returns $this' do
        expect(@runs[2].exitcode).to eq(2), @runs[2].to_s
        expect(@runs[2].call_counts('dsc_fixtureclassresource', 'name' => 'Echo')).to eq('Get' => 1, 'Set' => 1, 'Test' => 1)
        stored = Acceptance.stored_resource(@machine.state, 'FixtureClassResource', 'name' => 'Echo')
        expect(stored['value']).to eq('Enabled')
      end

      it 'says why at debug' do
        expect(@runs[1].output).to include('its Get() returned the very instance it was called on'), @runs[1].to_s
      end
    end
  end
end
