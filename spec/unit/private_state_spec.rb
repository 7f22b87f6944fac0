# frozen_string_literal: true

require 'spec_helper'

# The shapes of Puppet's and the Resource API's non-public state that the
# binding relies on (ext/pwshlib/src/dsc_base_provider/private_state.rs),
# checked on every root this suite runs in (Puppet 7 / Resource API 1.8,
# Puppet 8 / 1.9, OpenVox 9 / 2.0): a shape that is gone fails here, not
# silently in an agent.
RSpec.describe 'the private state the provider reads' do
  let(:resource_api_version) { Gem::Version.new(Puppet::ResourceApi::VERSION) }

  it "reads Puppet's bindings where Puppet.lookup does: @context, @stack, value, @bindings" do
    stack = Puppet.instance_variable_get(:@context).instance_variable_get(:@stack)
    bindings = stack.value.instance_variable_get(:@bindings)
    expect(bindings).to be_a(Hash)
    marker = Object.new
    Puppet.override(loaders: marker) do
      top = Puppet.instance_variable_get(:@context).instance_variable_get(:@stack).value
      expect(top.instance_variable_get(:@bindings)[:loaders]).to be(marker)
      expect(Puppet.lookup(:loaders)).to be(marker)
    end
  end

  it "reads the log destinations from Puppet::Util::Log's @destinations" do
    expect(Puppet::Util::Log.instance_variable_get(:@destinations)).to be(Puppet::Util::Log.destinations)
  end

  it "reads the log level from Puppet::Util::Log's @levels and @loglevel" do
    saved = Puppet::Util::Log.level
    %i[debug notice].each do |level|
      Puppet::Util::Log.level = level
      levels = Puppet::Util::Log.instance_variable_get(:@levels)
      index = Puppet::Util::Log.instance_variable_get(:@loglevel)
      expect(levels[index]).to eq(level)
    end
  ensure
    Puppet::Util::Log.level = saved
  end

  describe "the Resource API's cache of get results" do
    let(:type) { Puppet::Type.type(:dsc_fixturefile) }
    let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'old') }

    def new_resource
      type.new(title: 'Cached', dsc_destinationpath: 'c:\\foo', dsc_contents: 'new')
    end

    # A provider of its own for each "run", as a new run's first call sees it.
    def fresh_provider
      type.instance_variable_set(:@my_provider, nil)
      allow(type.my_provider).to receive(:ps_manager).and_return(manager)
    end

    it 'is there from Resource API 2.0 on, with the methods the provider uses' do
      if resource_api_version >= Gem::Version.new('2.0.0')
        expect(type).to respond_to(:rsapi_provider_get_cache)
        expect(type.rsapi_provider_get_cache).to respond_to(:clear, :get, :add)
      else
        expect(type).not_to respond_to(:rsapi_provider_get_cache)
      end
    end

    it "is emptied when a provider's work on the type begins, so the next run calls get again" do
      fresh_provider
      new_resource.retrieve
      # The system drifts between the runs.
      manager.get_result = manager.get_result.merge('Contents' => 'drifted')
      fresh_provider
      resource = new_resource
      title = { name: 'Cached', dsc_destinationpath: 'C:\\Foo' }
      expect(type.rsapi_provider_get_cache.get(title)).to be_nil if type.respond_to?(:rsapi_provider_get_cache)
      expect(resource.retrieve[:dsc_contents]).to eq('drifted')
      expect(manager.methods_called).to eq(%w[Get Get])
    end
  end
end
