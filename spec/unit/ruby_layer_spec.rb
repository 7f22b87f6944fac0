# frozen_string_literal: true

require 'spec_helper'

# The Ruby reopening of the native class
# (lib/puppet/provider/dsc_base_provider/dsc_base_provider.rb): the pure
# Ruby spine (every method a pwshlib 2.x provider overrides) over the
# native session's private steps.
RSpec.describe 'Puppet::Provider::DscBaseProvider Ruby layer' do
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'x') }

  it 'defines every overridable method in Ruby, over private native steps' do
    base = Puppet::Provider::DscBaseProvider
    %i[ps_manager load_path retry_invoke_dsc_resource get canonicalize set insync? create update delete
       invoke_get_method invoke_get_method_for_canonicalize invoke_set_method invoke_test_method
       invoke_export_method invoke_dsc_resource].each do |name|
      expect(base.instance_method(name).source_location&.first).to end_with('dsc_base_provider/dsc_base_provider.rb')
    end
    steps = base.private_instance_methods(false).grep(/\A_/)
    expect(steps).to include(:_dsc_call, :_get_result, :_insync)
    steps.each { |name| expect(base.instance_method(name).source_location).to be_nil }
  end

  describe '#get' do
    before { allow(provider).to receive(:ps_manager).and_return(manager) }

    it 'takes the names as an optional argument (the Resource API passes one or two)' do
      expect(provider.method(:get).arity).to eq(-2)
      expect(provider.get(context, [{ name: 'Title', dsc_destinationpath: 'c:\\foo' }]))
        .to contain_exactly(a_hash_including(dsc_contents: 'x'))
      expect(provider.get(context)).to contain_exactly(a_hash_including(title: 'C:\\Foo', dsc_destinationpath: 'C:\\Foo'))
      expect { provider.get }.to raise_error(ArgumentError, /wrong number of arguments \(given 0, expected 1\.\.2\)/)
      expect { provider.get(context, nil, 1) }.to raise_error(ArgumentError, /given 3, expected 1\.\.2/)
    end

    it 'without names (instances asks with []) lists what invoke_export_method exports, each a Get result' do
      expect(provider.get(context, [])).to eq([{ dsc_destinationpath: 'C:\\Foo', dsc_ensure: 'Present', dsc_contents: 'x',
                                                 name: 'C:\\Foo', title: 'C:\\Foo' }])
      expect(manager.methods_called).to eq(['Export'])
      # Cached as the run's Get: a catalog's get of that title makes no call.
      provider.get(context, [{ name: 'C:\\Foo', dsc_destinationpath: 'C:\\Foo' }])
      expect(manager.methods_called).to eq(['Export'])
    end

    it 'without names goes through an overriding invoke_export_method' do
      subclass = Class.new(provider_class_for(:dsc_fixturefile)) do
        define_method(:invoke_export_method) { |_ctx| [{ name: 'mine' }] }
      end
      expect(subclass.new.get(context)).to eq([{ name: 'mine' }])
    end

    it 'is what set calls when no current state is given (an override is honoured)' do
      calls = []
      subclass = Class.new(provider_class_for(:dsc_fixturefile)) do
        define_method(:get) do |ctx, names = nil|
          calls << names
          super(ctx, names)
        end
      end
      overriding = subclass.new
      allow(overriding).to receive(:ps_manager).and_return(manager)
      should = { name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'present', dsc_contents: 'x' }
      overriding.set(context, 'Title' => { should: should })
      expect(calls).to eq([['Title']])
    end
  end

  describe '#ps_manager' do
    let(:stand_in) do
      Class.new do
        class << self
          attr_accessor :lookups
        end
        self.lookups = 0
        def self.pwsh_path(_additional_paths = [])
          self.lookups += 1
          '/usr/bin/pwsh'
        end

        def self.powershell_path
          self.lookups += 1
          'powershell.exe'
        end

        def self.pwsh_args = ['-NoProfile']
        def self.powershell_args = ['-NoProfile']
        def self.instance(cmd, args, options = {}) = [cmd, args, options]
      end
    end

    it 'looks PowerShell up once per run, not once per call' do
      stub_const('Pwsh::Manager', stand_in)
      first = provider.ps_manager
      expect(provider.ps_manager).to eq(first)
      expect(first[2]).to eq(debug: false)
      expect(stand_in.lookups).to eq(1)
    end

    it 'looks PowerShell up again when the next run starts (the native side forgets the memo)' do
      stub_const('Pwsh::Manager', stand_in)
      2.times do
        Puppet::Util::Log.with_destination(Puppet::Transaction::Report.new(nil, 'production')) do
          provider.get(context)
          2.times { provider.ps_manager }
        end
      end
      expect(stand_in.lookups).to eq(2)
    end

    it 'looks PowerShell up again when no PowerShell was found' do
      stand_in.define_singleton_method(:pwsh_path) do |_additional_paths = []|
        self.lookups += 1
        nil
      end
      stand_in.define_singleton_method(:powershell_path) do
        self.lookups += 1
        nil
      end
      stub_const('Pwsh::Manager', stand_in)
      2.times { expect(provider.ps_manager.first).to be_nil }
      expect(stand_in.lookups).to eq(2)
    end

    it 'asks for a debug host while Puppet logs at debug level' do
      stub_const('Pwsh::Manager', stand_in)
      saved = Puppet::Util::Log.level
      Puppet::Util::Log.level = :debug
      expect(provider.ps_manager[2]).to eq(debug: true)
    ensure
      Puppet::Util::Log.level = saved
    end
  end

  it 'load_path is what the native vendored path search reads (an override is honoured)' do
    allow(provider).to receive(:load_path).and_return(['/nonexistent/pwshlib/lib'])
    expect { provider.vendored_modules_path('SomeModule') }
      .to raise_error(Puppet::Error, %r{SomeModule.*/nonexistent/pwshlib/lib})
  end

  describe '#retry_invoke_dsc_resource' do
    before { allow(provider).to receive(:sleep) }

    it 'waits, retries and returns the first result without an error' do
      outputs = ['{"errormessage":"busy"}', '{"errormessage":"","result":1}']
      result = provider.retry_invoke_dsc_resource(context, 3, 2, /busy/) { outputs.shift }
      expect(result).to eq('errormessage' => '', 'result' => 1)
      expect(provider).to have_received(:sleep).with(2).twice
      expect(context.logged(:notice)).to eq(['Sleeping for 2 seconds.', 'Retrying: attempt 1 of 3.',
                                             'Attempt 1 of 3 failed.', 'Sleeping for 2 seconds.',
                                             'Retrying: attempt 2 of 3.'].map { |m| "dsc_fixturefile: #{m}" })
      expect(context.logged(:err)).to be_empty
    end

    it 'reports the error and gives up when it no longer matches, or the retries run out' do
      expect(provider.retry_invoke_dsc_resource(context, 3, 0, /busy/) { '{"errormessage":"other"}' }).to be_nil
      expect(context.logged(:err)).to eq(['dsc_fixturefile: other'])
      expect(provider.retry_invoke_dsc_resource(context, 2, 0, /busy/) { '{"errormessage":"busy"}' }).to be_nil
      expect(context.logged(:err)).to eq(['dsc_fixturefile: other', 'dsc_fixturefile: busy'])
      expect(provider).to have_received(:sleep).exactly(3).times
    end

    it 'treats an error message that is not text as none, and raises on invalid JSON' do
      expect(provider.retry_invoke_dsc_resource(context, 1, 0, /x/) { '{"errormessage":3}' }).to eq('errormessage' => 3)
      expect { provider.retry_invoke_dsc_resource(context, 1, 0, /x/) { 'not json' } }
        .to raise_error(Puppet::Error, /invalid JSON on retry/)
    end
  end
end
