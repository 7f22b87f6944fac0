# frozen_string_literal: true

require 'spec_helper'

# Drives the real Resource API 1.8.16 type class end to end: the calls it
# makes must land on our native methods with the expected arguments.
RSpec.describe 'Resource API type dsc_fixturefile driving the native provider' do
  let(:type) { Puppet::Type.type(:dsc_fixturefile) }
  let(:manager) do
    FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'old', 'Type' => 'File')
  end
  let(:provider) { type.my_provider }
  let(:logs) { [] }

  before(:each) do
    # one provider per type per run: start each example with a fresh one
    type.instance_variable_set(:@my_provider, nil)
    allow(provider).to receive(:ps_manager).and_return(manager)
    Puppet::Util::Log.newdestination(Puppet::Test::LogCollector.new(logs))
    Puppet::Util::Log.level = :debug
  end

  after(:each) do
    Puppet::Util::Log.close_all
    Puppet::Util::Log.level = :notice
  end

  def new_resource(**attrs)
    type.new({ title: 'Title', dsc_destinationpath: 'c:\\foo' }.merge(attrs))
  end

  it 'canonicalizes on creation, retrieves once, reports the change and syncs with update' do
    expect(provider).to receive(:canonicalize).at_least(:once).and_call_original
    resource = new_resource(dsc_ensure: 'present', dsc_contents: 'new', dsc_type: 'file')
    expect(resource[:dsc_destinationpath]).to eq('C:\\Foo')
    expect(resource.parameter(:dsc_ensure).should).to eq('Present')

    expect(provider).to receive(:get).with(anything, [{ name: 'Title', dsc_destinationpath: 'C:\\Foo' }]).and_call_original
    current = resource.retrieve
    expect(current[:dsc_contents]).to eq('old')

    contents = resource.property(:dsc_contents)
    expect(contents.safe_insync?(current[:dsc_contents])).to be(false)
    expect(contents.change_to_s('old', 'new')).to eq("dsc_contents changed 'old' to 'new'")
    expect(resource.property(:dsc_type).safe_insync?(current[:dsc_type])).to be(true)
    expect(resource.property(:dsc_ensure).safe_insync?(current[:dsc_ensure])).to be(true)

    expect(provider).to receive(:update).with(anything, { name: 'Title', dsc_destinationpath: 'C:\\Foo' },
                                              hash_including(dsc_contents: 'new', dsc_destinationpath: 'C:\\Foo'))
                                        .and_call_original
    resource.flush
    expect(manager.methods_called).to eq(%w[Get Set])
    expect(logs.map(&:message).join("\n")).not_to match(/has not provided canonicalized values/)
  end

  it 'creates a resource that is absent, through create' do
    manager.get_result = { 'DestinationPath' => nil, 'Ensure' => 'Absent' }
    resource = new_resource(dsc_ensure: 'Present', dsc_contents: 'new')
    resource.retrieve
    expect(resource.property(:dsc_ensure).safe_insync?('Absent')).to be(false)
    expect(provider).to receive(:create).and_call_original
    resource.flush
    expect(manager.methods_called).to eq(%w[Get Set])
  end

  it 'uses one Test in resource validation mode' do
    manager.in_desired_state = true
    resource = new_resource(dsc_contents: 'new', validation_mode: 'resource')
    current = resource.retrieve
    expect(resource.property(:dsc_contents).safe_insync?(current[:dsc_contents])).to be(true)
    expect(manager.methods_called).to eq(%w[Get Test])
  end

  it 'is in sync with no PowerShell call beyond the one Get when only case differs' do
    resource = new_resource(dsc_contents: 'OLD', dsc_type: 'file', dsc_ensure: 'present')
    current = resource.retrieve
    %i[dsc_contents dsc_type dsc_ensure].each do |name|
      expect(resource.property(name).safe_insync?(current[name])).to be(true)
    end
    expect(manager.methods_called).to eq(['Get'])
  end
end
