# frozen_string_literal: true

require 'spec_helper'

# Debug messages (the whole script among them) are built only when they are
# kept: a stock PuppetContext below Puppet's debug level drops them.
RSpec.describe 'DscBaseProvider debug messages' do
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:manager) { FakePwshManager.new({ 'DestinationPath' => 'c:\\x', 'Ensure' => 'Present' }) }
  let(:query) { { name: 'x', dsc_destinationpath: 'c:\\x' } }

  before { allow(provider).to receive(:ps_manager).and_return(manager) }

  around do |example|
    saved = Puppet::Util::Log.level
    example.run
  ensure
    Puppet::Util::Log.level = saved
  end

  it 'are not built for a stock PuppetContext when Puppet does not log debug' do
    Puppet::Util::Log.level = :notice
    context = Puppet::ResourceApi::PuppetContext.new(type_definition_for(:dsc_fixturefile))
    expect(context).not_to receive(:debug)
    expect(provider.invoke_get_method(context, query)).to include(dsc_ensure: 'Present')
  end

  it 'are built, whole script included, when Puppet logs debug' do
    Puppet::Util::Log.level = :debug
    context = Puppet::ResourceApi::PuppetContext.new(type_definition_for(:dsc_fixturefile))
    logged = []
    allow(context).to receive(:debug) { |message| logged << message }
    provider.invoke_get_method(context, query)
    # A stand-in manager names no host session: the prelude's id and files
    # come with each call (never its text), then the call's one line.
    expect(logged.grep(%r{\APrelude dsc-\h{16} \(lib/templates/dsc_prelude_values\.ps1, .*\)\z}).size).to eq(1)
    expect(logged.grep(/\ASending Invoke-DscResource Get FixtureFile from /).size).to eq(1)
    expect(logged.join("\n")).not_to include('function ')
  end

  it 'are built for any other context, whatever the level' do
    Puppet::Util::Log.level = :err
    context = recording_context(:dsc_fixturefile)
    provider.invoke_get_method(context, query)
    expect(context.logged(:debug).grep(/Sending Invoke-DscResource /).size).to eq(1)
  end

  it 'are built for a PuppetContext given a send_log of its own, whatever the level' do
    Puppet::Util::Log.level = :err
    context = Puppet::ResourceApi::PuppetContext.new(type_definition_for(:dsc_fixturefile))
    sent = []
    context.define_singleton_method(:send_log) { |level, message| sent << [level, message] }
    provider.invoke_get_method(context, query)
    expect(sent.count { |level, message| level == :debug && message.include?('Sending Invoke-DscResource ') }).to eq(1)
  end
end
