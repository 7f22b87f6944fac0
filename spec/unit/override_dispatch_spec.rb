# frozen_string_literal: true

require 'spec_helper'

# The lifecycle calls invoke_get_method and invoke_dsc_resource through Ruby
# (funcall on the provider), so every way of replacing one of them is called,
# with Ruby values.
RSpec.describe 'Puppet::Provider::DscBaseProvider overridable Get methods' do
  let(:type_name) { :dsc_fixturefile }
  let(:context) { recording_context(type_name) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello') }
  let(:manifest) do
    { name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'present', dsc_contents: 'hello',
      validation_mode: 'property' }
  end
  let(:seen) { [] }

  # The resource with strings of its own, not frozen, so that an override
  # can change them in place (invoke_get_method gets this very hash).
  def canonicalize_with(provider)
    allow(provider).to receive(:ps_manager).and_return(manager)
    provider.canonicalize(context, [manifest.transform_values { |v| v.is_a?(String) ? v.dup : v }]).first
  end

  %i[invoke_get_method invoke_dsc_resource].each do |method_name|
    context "with #{method_name}" do
      it 'calls a subclass override' do
        calls = seen
        subclass = Class.new(provider_class_for(type_name)) do
          define_method(method_name) do |*args|
            calls << args[1].class
            super(*args)
          end
        end
        expect(canonicalize_with(subclass.new)[:dsc_contents]).to eq('hello')
        expect(seen).to eq([Hash])
        expect(manager.methods_called).to eq(['Get'])
      end

      it 'calls an RSpec stub on the instance' do
        provider = provider_class_for(type_name).new
        expect(provider).to receive(method_name).once.and_call_original
        expect(canonicalize_with(provider)[:dsc_contents]).to eq('hello')
      end

      it 'calls a stub that answers for it (no Get is made)' do
        provider = provider_class_for(type_name).new
        expect(provider).to receive(method_name).once.and_return(nil)
        canonicalize_with(provider)
        expect(manager.methods_called).to eq([])
      end

      it 'calls a module prepended to the provider class' do
        calls = seen
        subclass = Class.new(provider_class_for(type_name))
        subclass.prepend(Module.new do
          define_method(method_name) do |*args|
            calls << :prepended
            super(*args)
          end
        end)
        canonicalize_with(subclass.new)
        expect(seen).to eq([:prepended])
      end

      # The provider does not convert back a value it has just made in Ruby
      # when it comes back unchanged; what an override changes in place, in
      # its arguments or in the result of super, must still be seen.
      it 'sees a result that an override changed in place', :gc_stress do
        subclass = Class.new(provider_class_for(type_name)) do
          define_method(method_name) do |*args|
            result = super(*args)
            path_key = result.keys.find { |key| key.to_s =~ /destinationpath/i }
            result[path_key].replace('C:\\FOO')
            result
          end
        end
        expect(canonicalize_with(subclass.new)[:dsc_destinationpath]).to eq('C:\\FOO')
      end

      it 'sees arguments that an override changed in place' do
        subclass = Class.new(provider_class_for(type_name)) do
          # invoke_dsc_resource(context, name_hash, props, method): the props
          # are what the Get is made with.
          changed = method_name == :invoke_dsc_resource ? 2 : 1
          define_method(method_name) do |*args|
            args[changed][:dsc_destinationpath].replace('c:\\changed')
            super(*args)
          end
        end
        canonicalize_with(subclass.new)
        expect(manager.calls.map(&:script).join).to include("'c:\\changed'")
      end

      it 'calls a Ruby redefinition in the base class itself' do
        base = Puppet::Provider::DscBaseProvider
        calls = seen
        base.alias_method(:__native_for_spec, method_name)
        base.define_method(method_name) do |*args|
          calls << :redefined
          __native_for_spec(*args)
        end
        begin
          canonicalize_with(provider_class_for(type_name).new)
        ensure
          base.alias_method(method_name, :__native_for_spec)
          base.remove_method(:__native_for_spec)
        end
        expect(seen).to eq([:redefined])
        # Restored: the native method is the one found again.
        expect(base.instance_method(method_name).source_location).to be_nil
      end
    end
  end

  # pwshlib 2.x passed canonicalize's `r` to invoke_get_method, and that
  # method's `name_hash` on to invoke_dsc_resource: overrides written for it
  # may rely on seeing the caller's own hash (no copy is made either).
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
    provider = subclass.new
    allow(provider).to receive(:ps_manager).and_return(manager)
    provider.canonicalize(context, [{ name: 'other', dsc_destinationpath: 'c:\\other' }, resource])
    expect(received[:invoke_get_method]).to equal(resource)
    expect(received[:invoke_dsc_resource]).to equal(resource)
  end

  # pwshlib 2.x selected the props out of name_hash, and returned the DSC
  # answer's own hash, re-keyed, with `name` from name_hash: the Strings
  # were those very objects, not copies. Overrides may hold on to them; and
  # each copy was an object the collector had to sweep.
  describe 'the Strings of a Get, as pwshlib 2.x passed them on' do
    let(:seen_by) { {} }
    let(:provider) do
      seen = seen_by
      subclass = Class.new(provider_class_for(type_name)) do
        define_method(:invoke_dsc_resource) do |*args|
          seen[:name_hash] = args[1]
          seen[:props] = args[2]
          seen[:answer] = super(*args)
        end
        define_method(:invoke_get_method) do |*args|
          seen[:result] = super(*args)
        end
      end
      subclass.new.tap { |instance| allow(instance).to receive(:ps_manager).and_return(manager) }
    end

    def canonicalize_manifest
      provider.canonicalize(context, [manifest.transform_values { |v| v.is_a?(String) ? v.dup : v }])
    end

    # The DSC answer invoke_dsc_resource gave and invoke_get_method's result,
    # for a Get whose system state is `system`.
    def answer_and_result_for(system)
      manager.get_result = system
      canonicalize_manifest
      seen_by.values_at(:answer, :result)
    end

    # Each attribute of `result` is the very String its property had in `answer`.
    def expect_passed_on(result, answer, properties)
      properties.each { |attribute, property| expect(result[attribute]).to equal(answer[property]), attribute.to_s }
    end

    it "passes the props name_hash's own Strings", :gc_stress do
      canonicalize_manifest
      name_hash, props = seen_by.values_at(:name_hash, :props)
      expect(props).not_to be_empty
      props.each { |key, value| expect(value).to equal(name_hash[key]) if value.is_a?(String) }
    end

    it "returns the answer's own Strings under the attributes they came under, and name_hash's name", :gc_stress do
      canonicalize_manifest
      answer, result, name_hash = seen_by.values_at(:answer, :result, :name_hash)
      expect(result).to include(dsc_destinationpath: 'C:\\Foo', dsc_ensure: 'Present', dsc_contents: 'hello')
      expect_passed_on(result, answer, dsc_destinationpath: 'DestinationPath', dsc_ensure: 'Ensure', dsc_contents: 'Contents')
      expect(result[:name]).to equal(name_hash[:name])
    end

    it 'takes each String from its own property, when two hold the same text' do
      answer, result = answer_and_result_for('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'Present')
      expect_passed_on(result, answer, dsc_ensure: 'Ensure', dsc_contents: 'Contents')
      expect(result[:dsc_contents]).not_to equal(result[:dsc_ensure])
    end

    # Only a String whose text the result holds unchanged is passed on: an
    # enum value the Get result conforms to its declared case is a String of
    # its own, and the answer keeps its text.
    it "makes a String of its own where the result changes the answer's text" do
      answer, result = answer_and_result_for('DestinationPath' => 'C:\\Foo', 'Ensure' => 'PRESENT', 'Contents' => 'hello')
      expect(result[:dsc_ensure]).to eq('Present')
      expect(answer['Ensure']).to eq('PRESENT')
      expect(result[:dsc_ensure]).not_to equal(answer['Ensure'])
      expect_passed_on(result, answer, dsc_contents: 'Contents')
    end
  end

  # What invoke_dsc_resource receives when an invoke_get_method override
  # hands super `change`'s result instead of the hash it was given.
  def name_hash_received_after(resource, &change)
    received = {}
    subclass = Class.new(provider_class_for(type_name)) do
      define_method(:invoke_get_method) do |context, name_hash|
        super(context, change.call(name_hash))
      end
      define_method(:invoke_dsc_resource) do |*args|
        received[:name_hash] = args[1]
        super(*args)
      end
    end
    provider = subclass.new
    allow(provider).to receive(:ps_manager).and_return(manager)
    provider.canonicalize(context, [resource])
    received[:name_hash]
  end

  it 'passes a new hash on when an override hands super a changed one' do
    resource = manifest.dup
    received = name_hash_received_after(resource) { |name_hash| name_hash.merge(dsc_contents: 'changed') }
    expect(received).not_to equal(resource)
    expect(received).to eq(manifest.merge(dsc_contents: 'changed'))
    expect(resource).to eq(manifest)
  end

  # The hand-over compares Symbol keys by their names' bytes: a key renamed
  # to another Symbol of the same length is a changed hash.
  it 'passes a new hash on when an override renames a key of the hash it hands super' do
    received = name_hash_received_after(manifest.dup) do |name_hash|
      name_hash.transform_keys { |key| key == :dsc_contents ? :dsc_Contents : key }
    end
    expect(received.keys).to include(:dsc_Contents)
    expect(received.keys).not_to include(:dsc_contents)
  end

  # The hash arguments are lent to the native method the call reaches in
  # the same Fiber only: one an override runs in another Fiber (or Thread)
  # converts them, and gets the same answer.
  it 'makes the same Get when an override runs the call in another Fiber or Thread', :gc_stress do
    { fiber: ->(&call) { Fiber.new(&call).resume }, thread: ->(&call) { Thread.new(&call).value } }.each do |how, run|
      subclass = Class.new(provider_class_for(type_name)) do
        %i[invoke_get_method invoke_dsc_resource].each do |method_name|
          define_method(method_name) do |*args|
            run.call { super(*args) }
          end
        end
      end
      provider = subclass.new
      allow(provider).to receive(:ps_manager).and_return(manager)
      expect([how, canonicalize_with(provider)]).to eq([how, manifest.merge(dsc_ensure: 'Present', dsc_destinationpath: 'C:\\Foo')])
    end
    expect(manager.methods_called).to eq(%w[Get Get])
  end

  describe 'when nothing replaces the Get methods' do
    # The contract: the lifecycle reaches them through Ruby dispatch even
    # then (a call Ruby traces), so that whatever is put in the way later is
    # called.
    it 'still calls them through Ruby' do
      calls = []
      trace = TracePoint.new(:c_call) do |event|
        calls << event.method_id if %i[invoke_get_method invoke_dsc_resource].include?(event.method_id)
      end
      trace.enable { canonicalize_with(provider_class_for(type_name).new) }
      expect(calls).to eq(%i[invoke_get_method invoke_dsc_resource])
      expect(manager.methods_called).to eq(['Get'])
    end

    it 'gives the same result and the same messages as a pass-through override, for a Get that fails too' do
      pass_through = Class.new(provider_class_for(type_name)) do
        %i[invoke_get_method invoke_dsc_resource].each do |method_name|
          define_method(method_name) { |*args| super(*args) }
        end
      end
      outcomes = [provider_class_for(type_name), pass_through].map do |provider_class|
        recorder = recording_context(type_name)
        allow(Puppet::Util::Log).to receive(:level).and_return(:debug)
        provider = provider_class.new
        answers = FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello')
        answers.queued << FakePwshManager.output({ errormessage: 'the resource is locked' }.to_json)
        allow(provider).to receive(:ps_manager).and_return(answers)
        failed = provider.canonicalize(recorder, [manifest.merge(name: 'locked', dsc_destinationpath: 'c:\\locked')])
        found = provider.canonicalize(recorder, [manifest.dup])
        # The time a call took is the one part that may differ between two
        # runs of the same calls (a busy machine): compared without it.
        messages = recorder.messages.map { |level, text| [level, text.gsub(/took \d+(\.\d+)? s/, 'took N s')] }
        [failed, found, messages, answers.calls.map(&:script)]
      end
      expect(outcomes[1]).to eq(outcomes[0])
      expect(outcomes[0][2].map(&:last).join("\n")).to include('the resource is locked')
    end

    it 'calls a stub added after an earlier Get, on the next Get' do
      provider = provider_class_for(type_name).new
      canonicalize_with(provider)
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
      canonicalize_with(provider_class_for(type_name).new)
      expect(manager.methods_called).to eq([])
    end
  end

  it 'makes the same Get, and returns the same result, with no override' do
    provider = provider_class_for(type_name).new
    expect(canonicalize_with(provider)).to eq(manifest.merge(dsc_ensure: 'Present', dsc_destinationpath: 'C:\\Foo'))
    expect(manager.methods_called).to eq(['Get'])
  end
end
