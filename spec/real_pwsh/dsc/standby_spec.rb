# frozen_string_literal: true

require_relative '../spec_helper_real_pwsh'
require_relative '../../support/fake_manager'

# On the real pwsh: after a direct call, the host starts the
# runspace's next pipeline ahead of the next request (PwshlibHost.Standby.cs,
# Standby), so that starting it is off the call's critical path. The
# provider in this process (the realdsc fixture module's RealSetting and
# RealKeyed) drives the real pwsh: calls that go through the standby answer
# as every other call (values, a credential bound from secrets, a failure,
# a Test), and a request the standby cannot make (another resource's first
# call in that runspace) goes the usual way.
RSpec.describe 'the standby pipeline of a DSC call, on the real pwsh' do
  include_context 'the realdsc providers on the real pwsh'

  let(:setting) { provider_class_for(:dsc_realsetting).new }
  let(:keyed) { provider_class_for(:dsc_realkeyed).new }

  def counter(manager, name)
    result = manager.execute("[PwshlibHost.#{name}]::Calls")
    expect(result[:exitcode]).to eq(0), result.inspect
    Integer(result[:stdout].strip)
  end

  def setting_should(index)
    { dsc_name: "standby-#{index}", dsc_ensure: 'Present', dsc_count: index, dsc_description: "resource #{index}",
      dsc_credential: { 'user' => "svc#{index}", 'password' => sensitive.new("p'ss #{index}") } }
  end

  it 'makes the calls after a direct one, with their secrets, answering as a new pipeline does' do
    context = recording_context(:dsc_realsetting)
    manager = setting.ps_manager
    rounds = 6
    rounds.times { |i| setting.invoke_dsc_resource(context, { name: "standby-#{i}" }, setting_should(i), 'set') }
    direct_before = counter(manager, 'DirectDsc')
    standby_before = counter(manager, 'Standby')
    reads = Array.new(rounds) do |i|
      setting.invoke_dsc_resource(context, { name: "standby-#{i}" }, setting_should(i), 'get')
    end
    tests = Array.new(rounds) do |i|
      setting.invoke_dsc_resource(context, { name: "standby-#{i}" }, setting_should(i).merge(dsc_count: 99), 'test')
    end
    reads.each_with_index do |read, i|
      expect(read).to include('Name' => "standby-#{i}", 'Ensure' => 'Present', 'Count' => i,
                              'Description' => "resource #{i}")
      expect(read['Credential']).to include('user' => "svc#{i}")
    end
    expect(tests.map { |test| test['indesiredstate'] }).to all(be(false))
    # Every Get and Test was direct (each resource's first call in each
    # runspace was among the Sets), and after the first direct call of
    # each runspace the standby made them.
    expect(counter(manager, 'DirectDsc') - direct_before).to eq(2 * rounds)
    expect(counter(manager, 'Standby') - standby_before).to be >= (2 * rounds) - 2
    expect(context.logged(:err)).to be_empty
  end

  it 'hands a request it cannot make to a new pipeline, and a failure to its error' do
    context = recording_context(:dsc_realsetting)
    keyed_context = recording_context(:dsc_realkeyed)
    manager = setting.ps_manager
    allow(keyed).to receive(:ps_manager).and_return(manager)
    4.times { |i| setting.invoke_dsc_resource(context, { name: "standby-#{i}" }, setting_should(i), 'set') }
    standby_before = counter(manager, 'Standby')
    # RealKeyed's first calls in each runspace: the standby after the Sets
    # cannot make them (Prepare finds no entry); they go the prelude's way.
    2.times do |i|
      keyed.invoke_dsc_resource(keyed_context, { name: "keyed-#{i}" },
                                { dsc_name: "keyed-#{i}", dsc_ensure: 'Present', dsc_value: "v#{i}" }, 'set')
    end
    read = keyed.invoke_dsc_resource(keyed_context, { name: 'keyed-0' },
                                     { dsc_name: 'keyed-0', dsc_ensure: 'Present', dsc_value: 'v0' }, 'get')
    expect(read).to include('Name' => 'keyed-0', 'Value' => 'v0')
    expect(keyed_context.logged(:err)).to be_empty
    # The standbys that met them ended without a call.
    expect(counter(manager, 'Standby')).to eq(standby_before)
    # A resource that throws, through the standby: the call fails with the
    # resource's message (its secret redacted), and the runspace goes on.
    noisy = provider_class_for(:dsc_realnoisy).new
    noisy_context = recording_context(:dsc_realnoisy)
    allow(noisy).to receive(:ps_manager).and_return(manager)
    secret = { 'user' => 'noisy', 'password' => sensitive.new('standby-secret-9') }
    noisy_should = ->(mode) { { dsc_name: 'noisy', dsc_mode: mode, dsc_secret: secret } }
    4.times { noisy.invoke_dsc_resource(noisy_context, { name: 'noisy' }, noisy_should.call('ok'), 'set') }
    before_failure = counter(manager, 'Standby')
    2.times { noisy.invoke_dsc_resource(noisy_context, { name: 'noisy' }, noisy_should.call('fail'), 'set') }
    expect(counter(manager, 'Standby') - before_failure).to eq(2)
    # Every stream of every call shown, the standby's two among them: the
    # preferences its first steps set reach the resource's module.
    shown = noisy_context.messages.map(&:last)
    %w[verbose debug information host console].each do |stream|
      expect(shown.grep(/DSC resource #{stream}: RealNoisy Set #{stream}/).size).to eq(6), stream
    end
    expect(noisy_context.logged(:warning).grep(/RealNoisy Set warning: noisy/).size).to eq(6)
    expect(noisy_context.logged(:err).size).to eq(2)
    expect(noisy_context.logged(:err).join("\n")).to match(/RealNoisy refused noisy/)
    expect(noisy_context.logged(:err).join("\n")).not_to include('standby-secret-9')
  end
end
