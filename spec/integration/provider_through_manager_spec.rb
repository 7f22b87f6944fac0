# frozen_string_literal: true

require 'spec_helper'
require 'json'
require 'tmpdir'

# The provider, the real Rust Pwsh::Manager and the simulated host over the
# real socket: no test double anywhere in between.
RSpec.describe 'DscBaseProvider through Pwsh::Manager and pwshlib-sim' do
  let(:type) { Puppet::Type.type(:dsc_fixturefile) }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:path) { 'C:\\Temp\\Chain.txt' }
  let(:manifest) do
    { name: 'chain', dsc_destinationpath: path, dsc_ensure: 'Present', dsc_contents: "it's here",
      dsc_attributes: %w[Hidden Archive], validation_mode: 'property' }
  end

  around do |example|
    Dir.mktmpdir('pwshlib-chain') do |dir|
      @state_file = File.join(dir, 'state.json')
      @log_file = File.join(dir, 'calls.jsonl')
      saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PWSHLIB_SIM_STATE', 'PWSHLIB_SIM_LOG')
      ENV.update('PWSHLIB_POWERSHELL' => PWSHLIB_SIM, 'PWSHLIB_SIM_STATE' => @state_file, 'PWSHLIB_SIM_LOG' => @log_file)
      begin
        example.run
      ensure
        # A host keeps the environment it was spawned with (the state file):
        # the next example needs a fresh one.
        Pwsh::Manager.shutdown_all
        %w[PWSHLIB_POWERSHELL PWSHLIB_SIM_STATE PWSHLIB_SIM_LOG].each { |k| ENV[k] = saved[k] }
      end
    end
  end

  def calls
    File.readlines(@log_file).map { |line| JSON.parse(line) }
  end

  it 'uses a live Pwsh::Manager for the configured PowerShell' do
    manager = provider.ps_manager
    expect(manager).to be_a(Pwsh::Manager)
    expect(manager).to be_alive
  end

  it 'creates a resource with one Get and one Set, then finds it in sync with one Get' do
    expect(drive(provider, context, manifest)).to be(true)
    expect(calls.map { |c| c['method'] }).to eq(%w[Get Set])

    stored = JSON.parse(File.read(@state_file))['resources']['FixtureFile']
    expect(stored).to contain_exactly(include('destinationpath' => path, 'ensure' => 'Present',
                                              'contents' => "it's here", 'attributes' => %w[Hidden Archive]))

    # A new provider instance is a new Puppet run: the system now matches, in a different case.
    second_run = provider_class_for(:dsc_fixturefile).new
    second_context = recording_context(:dsc_fixturefile)
    recased = manifest.merge(dsc_destinationpath: path.upcase, dsc_attributes: %w[archive hidden])
    expect(drive(second_run, second_context, recased)).to be(false)
    expect(calls.map { |c| c['method'] }).to eq(%w[Get Set Get])
  end
end
