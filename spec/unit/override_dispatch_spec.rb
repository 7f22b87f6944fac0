# frozen_string_literal: true

require 'spec_helper'

# Every method a pwshlib 2.x provider overrides is a plain Ruby method of the
# spine (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb): an
# override of each, made as a subclass method, an RSpec stub or a prepended
# module, is honoured on the paths a run takes.
RSpec.describe 'Puppet::Provider::DscBaseProvider overridable methods' do
  let(:type_name) { :dsc_fixturefile }
  let(:context) { recording_context(type_name) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello') }
  let(:manifest) do
    { name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'present', dsc_contents: 'hello',
      validation_mode: 'property' }
  end
  let(:title) { { name: 'Title', dsc_destinationpath: 'C:\\Foo' } }
  let(:seen) { [] }

  def with_manager(provider)
    allow(provider).to receive(:ps_manager).and_return(manager)
    provider
  end

  # The run's paths, each reaching a set of overridable methods.
  def canonicalize_path(provider)
    provider.canonicalize(context, [manifest.transform_values { |v| v.is_a?(String) ? v.dup : v }]).first
  end

  def change_path(provider)
    provider.set(context, title => { is: nil, should: manifest.merge(dsc_contents: 'changed') })
  end

  def insync_path(provider)
    should = manifest.merge(validation_mode: 'resource')
    provider.canonicalize(context, [should.dup])
    provider.insync?(context, title, :dsc_contents, nil, should)
  end

  # method => [path, the DSC methods the path makes with no override]
  paths = {
    invoke_get_method_for_canonicalize: [:canonicalize_path, %w[Get]],
    invoke_get_method: [:canonicalize_path, %w[Get]],
    invoke_dsc_resource: [:canonicalize_path, %w[Get]],
    get: [:change_path, %w[Get Set]],
    update: [:change_path, %w[Get Set]],
    invoke_set_method: [:change_path, %w[Get Set]],
    invoke_test_method: [:insync_path, %w[Get Test]],
    insync?: [:insync_path, %w[Get Test]],
  }.freeze

  paths.each do |method_name, (path, methods)|
    describe method_name.to_s do
      it 'calls a subclass override, which reaches the base method through super' do
        calls = seen
        subclass = Class.new(provider_class_for(type_name)) do
          define_method(method_name) do |*args, &block|
            calls << method_name
            super(*args, &block)
          end
        end
        send(path, with_manager(subclass.new))
        expect(seen).to include(method_name)
        expect(manager.methods_called).to eq(methods)
      end

      it 'calls an RSpec stub on the instance' do
        provider = with_manager(provider_class_for(type_name).new)
        expect(provider).to receive(method_name).at_least(:once).and_call_original
        send(path, provider)
        expect(manager.methods_called).to eq(methods)
      end

      it 'calls a module prepended to the provider class' do
        calls = seen
        subclass = Class.new(provider_class_for(type_name))
        subclass.prepend(Module.new do
          define_method(method_name) do |*args, &block|
            calls << :prepended
            super(*args, &block)
          end
        end)
        send(path, with_manager(subclass.new))
        expect(seen).to include(:prepended)
      end
    end
  end

  describe 'an override that answers instead of the base method' do
    it 'invoke_get_method answering nil: no Get is made, and the resource comes back as given' do
      provider = with_manager(provider_class_for(type_name).new)
      allow(provider).to receive(:invoke_get_method).and_return(nil)
      expect(canonicalize_path(provider)).to eq(manifest)
      expect(manager.methods_called).to eq([])
    end

    it "invoke_dsc_resource answering a Get's data: the data is munged as DSC's own" do
      provider = with_manager(provider_class_for(type_name).new)
      allow(provider).to receive(:invoke_dsc_resource)
        .and_return('DestinationPath' => 'C:\\FOO', 'Ensure' => 'Present', 'Contents' => 'from the override')
      expect(canonicalize_path(provider)).to include(dsc_destinationpath: 'C:\\FOO')
      expect(provider.get(context, [title]).first).to include(dsc_contents: 'from the override')
      expect(manager.methods_called).to eq([])
    end

    it 'invoke_test_method answering true: insync? says so, with no Test made' do
      provider = with_manager(provider_class_for(type_name).new)
      allow(provider).to receive(:invoke_test_method).and_return(true)
      expect(insync_path(provider)).to be(true)
      expect(manager.methods_called).to eq(%w[Get])
    end

    it 'invoke_set_method answering without a call: no Set is made, and the change is not failed' do
      provider = with_manager(provider_class_for(type_name).new)
      allow(provider).to receive(:invoke_set_method).and_return('indesiredstate' => true)
      change_path(provider)
      expect(manager.methods_called).to eq(%w[Get])
    end

    it 'ps_manager: a subclass method is the manager every call goes to' do
      answers = manager
      subclass = Class.new(provider_class_for(type_name)) { define_method(:ps_manager) { answers } }
      canonicalize_path(subclass.new)
      expect(manager.methods_called).to eq(%w[Get])
    end

    it 'ps_script_content: a subclass override is the script the manager runs, as in 2.x' do
      subclass = Class.new(provider_class_for(type_name)) do
        define_method(:ps_script_content) { |resource| "# from the override\n#{super(resource)}" }
      end
      canonicalize_path(with_manager(subclass.new))
      expect(manager.methods_called).to eq(%w[Get])
      expect(manager.calls.map(&:script)).to all(start_with("# from the override\n"))
    end

    it 'ps_script_content: an RSpec stub on the instance is the script the manager runs' do
      provider = with_manager(provider_class_for(type_name).new)
      allow(provider).to(receive(:ps_script_content).and_wrap_original { |original, resource| "# stubbed\n#{original.call(resource)}" })
      change_path(provider)
      expect(manager.methods_called).to eq(%w[Get Set])
      expect(manager.calls.map(&:script)).to all(start_with("# stubbed\n"))
    end

    it 'ps_script_content: with no override, the session call goes to execute_dsc whole' do
      sent = []
      manager.define_singleton_method(:execute_dsc) do |call|
        sent << call
        execute(call.script_text, call.timeout_ms)
        { 'DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello' }
      end
      canonicalize_path(with_manager(provider_class_for(type_name).new))
      expect(sent.map(&:class)).to eq([Pwshlib::DscCall])
      expect(manager.methods_called).to eq(%w[Get])
    end

    it 'load_path: an override decides where the vendored resources are sought' do
      provider = with_manager(provider_class_for(type_name).new)
      expect(provider).to receive(:load_path).at_least(:once).and_call_original
      canonicalize_path(provider)
    end
  end

  # pwshlib 2.x passed canonicalize's `r` to invoke_get_method, and that
  # method's `name_hash` on to invoke_dsc_resource: overrides written for it
  # may rely on seeing the caller's own hash.
  it 'passes the hash it was given on, as the very object, as pwshlib 2.x did', :gc_stress do
    received = {}
    subclass = Class.new(provider_class_for(type_name)) do
      %i[invoke_get_method invoke_dsc_resource].each do |method_name|
        define_method(method_name) do |*args|
          received[method_name] = args[1]
          super(*args)
        end
      end
    end
    resource = manifest.dup
    provider = with_manager(subclass.new)
    provider.canonicalize(context, [{ name: 'other', dsc_destinationpath: 'c:\\other' }, resource])
    expect(received[:invoke_get_method]).to equal(resource)
    expect(received[:invoke_dsc_resource]).to equal(resource)
  end

  it "passes invoke_dsc_resource a Get's props as name_hash's own values, as pwshlib 2.x selected them", :gc_stress do
    seen = {}
    subclass = Class.new(provider_class_for(type_name)) do
      define_method(:invoke_dsc_resource) do |*args|
        seen[:name_hash] = args[1]
        seen[:props] = args[2]
        super(*args)
      end
    end
    canonicalize_path(with_manager(subclass.new))
    expect(seen[:props]).to include(:dsc_destinationpath)
    seen[:props].each { |key, value| expect(value).to equal(seen[:name_hash][key]) }
  end

  it 'sees a result that an override changed in place', :gc_stress do
    subclass = Class.new(provider_class_for(type_name)) do
      define_method(:invoke_dsc_resource) do |*args|
        result = super(*args)
        result['DestinationPath'].replace('C:\\FOO')
        result
      end
    end
    expect(canonicalize_path(with_manager(subclass.new))[:dsc_destinationpath]).to eq('C:\\FOO')
  end

  it 'sees arguments that an override changed in place' do
    subclass = Class.new(provider_class_for(type_name)) do
      define_method(:invoke_dsc_resource) do |*args|
        args[2][:dsc_destinationpath].replace('c:\\changed')
        super(*args)
      end
    end
    canonicalize_path(with_manager(subclass.new))
    expect(manager.calls.map(&:script).join).to include("'c:\\changed'")
  end

  it 'makes the same Get when an override runs the call in another Fiber or Thread', :gc_stress do
    { fiber: ->(&call) { Fiber.new(&call).resume }, thread: ->(&call) { Thread.new(&call).value } }.each do |how, run|
      subclass = Class.new(provider_class_for(type_name)) do
        %i[invoke_get_method invoke_dsc_resource].each do |method_name|
          define_method(method_name) { |*args| run.call { super(*args) } }
        end
      end
      expect([how, canonicalize_path(with_manager(subclass.new))])
        .to eq([how, manifest.merge(dsc_ensure: 'Present', dsc_destinationpath: 'C:\\Foo')])
    end
    expect(manager.methods_called).to eq(%w[Get Get])
  end

  it 'calls a stub added after an earlier Get, on the next Get' do
    provider = with_manager(provider_class_for(type_name).new)
    canonicalize_path(provider)
    calls = seen
    allow(provider).to receive(:invoke_dsc_resource).and_wrap_original do |original, *args|
      calls << args[1][:dsc_destinationpath]
      original.call(*args)
    end
    provider.canonicalize(context, [manifest.merge(name: 'second', dsc_destinationpath: 'c:\\second')])
    expect(seen).to eq(['c:\\second'])
    expect(manager.methods_called).to eq(%w[Get Get])
  end

  it 'calls a stub on every instance of the base class (allow_any_instance_of)' do
    allow_any_instance_of(Puppet::Provider::DscBaseProvider).to receive(:invoke_get_method).and_return(nil)
    canonicalize_path(with_manager(provider_class_for(type_name).new))
    expect(manager.methods_called).to eq([])
  end

  it 'makes the same Get, and returns the same result, with no override' do
    expect(canonicalize_path(with_manager(provider_class_for(type_name).new)))
      .to eq(manifest.merge(dsc_ensure: 'Present', dsc_destinationpath: 'C:\\Foo'))
    expect(manager.methods_called).to eq(['Get'])
  end
end
