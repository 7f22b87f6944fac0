# frozen_string_literal: true

require 'spec_helper'

# pwshlib 2.x details that subclasses and scaffolded modules rely on, the
# scaffolder's `ensurable: Boolean[false]`, and the per-run caches.
RSpec.describe 'Puppet::Provider::DscBaseProvider drop-in compatibility' do
  let(:type_name) { :dsc_fixturefile }
  let(:provider) { provider_class_for(type_name).new }
  let(:context) { recording_context(type_name) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello') }
  let(:title) { { name: 'r0', dsc_destinationpath: 'C:\\Foo' } }
  let(:should) { title.merge(dsc_ensure: 'Present', dsc_contents: 'x') }
  let(:dsc_result) { { 'indesiredstate' => true, 'rebootrequired' => false, 'errormessage' => '' } }

  before(:each) do
    allow(provider).to receive(:ps_manager).and_return(manager)
  end

  describe 'the Set family returns the DSC result hash' do
    it 'from invoke_set_method' do
      expect(provider.invoke_set_method(context, title, should)).to eq(dsc_result)
    end

    it 'from create, update and delete' do
      manager.reboot_required = true
      expect(provider.create(context, title, should)).to eq(dsc_result.merge('rebootrequired' => true))
      expect(provider.update(context, title, should)).to eq(dsc_result.merge('rebootrequired' => true))
      expect(provider.delete(context, title)).to eq(dsc_result.merge('rebootrequired' => true))
      expect(manager.methods_called).to eq(%w[Set Set Set])
    end

    it 'from a subclass override of invoke_set_method, through create' do
      allow(provider).to receive(:invoke_set_method).and_return('rebootrequired' => true, 'marker' => 1)
      expect(provider.create(context, title, should)).to eq('rebootrequired' => true, 'marker' => 1)
    end

    it 'nil when the Set fails' do
      manager.queued << FakePwshManager.output('{"errormessage":"boom"}')
      expect(provider.invoke_set_method(context, title, should)).to be_nil
    end
  end

  it 'invocable_resource carries the type name as :name, as in 2.x' do
    definition = Puppet::Type.type(:dsc_fixturefile).type_definition.definition
    resource = provider.invocable_resource(should, Puppet::ResourceApi::PuppetContext.new(definition), 'set')
    expect(resource[:name]).to eq('dsc_fixturefile')
  end

  it 'hands context.creating/updating/deleting the name as the Resource API gave it' do
    seen = []
    %i[creating updating deleting].each do |action|
      allow(context).to receive(action) do |name, &block|
        seen << [action, name]
        block.call
      end
    end
    provider.canonicalize(context, [should])
    provider.set(context, title => { is: title.merge(dsc_ensure: 'Absent'), should: should })
    provider.set(context, title => { is: title.merge(dsc_ensure: 'Present'), should: should })
    provider.set(context, title => { is: title.merge(dsc_ensure: 'Present'), should: title.merge(dsc_ensure: 'Absent') })
    provider.set(context, 'plain' => { is: { name: 'plain', dsc_ensure: 'Present' }, should: { name: 'plain', dsc_contents: 'x' } })
    expect(seen).to eq([[:creating, title], [:updating, title], [:deleting, title], [:updating, 'plain']])
  end

  it 'does not quote titles twice in debug lines' do
    provider.create(context, 'r0', should)
    provider.update(context, 'r0', should)
    provider.delete(context, 'r0')
    debug = context.logged(:debug).join("\n")
    expect(debug).to include("Creating 'r0' with", "Updating 'r0' with", "Deleting 'r0'", "Invoking Set Method for 'r0'")
    expect(debug).not_to include("'\"r0\"'")
  end

  describe 'ensurable: Boolean[false] (dsc_fixturesetting)' do
    let(:type_name) { :dsc_fixturesetting }
    let(:manager) { FakePwshManager.new('SettingName' => 'OptionA', 'Value' => 'on', 'MaxSizeKB' => 4_294_967_295) }
    let(:manifest) do
      { name: 'first option', dsc_settingname: 'optiona', dsc_value: 'ON', dsc_maxsizekb: 4_294_967_295,
        ensurable: false, validation_mode: 'property' }
    end

    it 'is in sync when its dsc_ properties are: one Get, no Set' do
      canonical = provider.canonicalize(context, [manifest]).first
      name = { name: 'first option', dsc_settingname: 'optiona' }
      current = provider.get(context, [name]).first
      expect(current).to include(ensurable: false, dsc_maxsizekb: 4_294_967_295)
      expect(provider.canonicalize(context, [current]).first).to eq(current)
      # Puppet asks for every property, `ensurable` included, whatever the
      # current state holds for it.
      (canonical.keys - %i[name validation_mode]).each do |property|
        expect(provider.insync?(context, name, property, current, canonical)).to be(true), property.to_s
        expect(provider.insync?(context, name, property, {}, canonical)).to be(true) if property == :ensurable
      end
      expect(manager.methods_called).to eq(['Get'])
    end

    it 'passes no attribute to DSC but the documented ones' do
      provider.canonicalize(context, [manifest.merge(dsc_timeout: 5, loglevel: 'debug')])
      provider.set(context, { name: 'first option', dsc_settingname: 'optiona' } =>
        { is: { name: 'first option', dsc_settingname: 'optiona' }, should: manifest.merge(dsc_value: 'off', dsc_timeout: 5) })
      scripts = manager.calls.map(&:script)
      expect(manager.methods_called).to eq(%w[Get Set])
      properties = scripts.map { |script| script[/Property = @\{(.*?)\}; ModuleName/, 1].scan(/(\w+) = /).flatten }
      # Get is handed the desired state too, never `ensurable`.
      expect(properties[0]).to contain_exactly('settingname', 'value', 'maxsizekb')
      expect(properties[1]).to contain_exactly('settingname', 'value', 'maxsizekb')
    end
  end

  # Every fixture type: the only non-dsc_ attributes are the documented
  # ones, none reaches DSC, and Puppet compares none but `ensurable`, which
  # is always in sync.
  it 'keeps every non-dsc_ attribute of every fixture type away from DSC' do
    types = Dir[File.join(FIXTURE_MODULE_LIB, 'puppet', 'type', '*.rb')].map { |f| File.basename(f, '.rb').to_sym }
    expect(types).to include(:dsc_fixturesetting, :dsc_fixtureaccessrule)
    types.each do |type|
      attributes = Puppet::Type.type(type).type_definition.attributes
      non_dsc = attributes.keys.reject { |name| name.to_s.start_with?('dsc_') }
      expect(non_dsc - %i[name validation_mode ensurable]).to eq([]), type.to_s
      compared = non_dsc.select { |name| attributes[name][:behaviour].nil? }
      expect(compared - [:ensurable]).to eq([]), type.to_s
      definition = Puppet::Type.type(type).type_definition.definition
      everything = attributes.keys.to_h { |name| [name, name == :ensurable ? false : 'v'] }
      %w[get set test].each do |method|
        resource = provider.invocable_resource(everything, Puppet::ResourceApi::PuppetContext.new(definition), method)
        passed = resource[:parameters].keys
        expect(passed.reject { |n| n.to_s.start_with?('dsc_') }).to eq([]), "#{type} #{method}"
        expect(passed).not_to include(:dsc_timeout)
      end
    end
  end

  describe 'a new run in the same process' do
    def in_run(report, &block)
      Puppet::Util::Log.with_destination(report, &block)
    end

    def new_report
      Puppet::Transaction::Report.new(nil, 'production')
    end

    let(:manifest) { title.merge(dsc_ensure: 'Present', dsc_contents: 'hello', validation_mode: 'property') }

    it 'reads the system again, once, when the next run starts' do
      in_run(new_report) { drive(provider, context, manifest) }
      in_run(new_report) do
        manager.get_result = manager.get_result.merge('Contents' => 'drifted')
        expect(drive(provider, context, manifest)).to be(true)
      end
      expect(manager.methods_called).to eq(%w[Get Get Set])
    end

    it 'keeps the caches within one run (the catalog converted before the report exists)' do
      provider.canonicalize(context, [manifest])
      in_run(new_report) do
        provider.get(context, [title])
        provider.get(context, [title])
      end
      expect(manager.methods_called).to eq(['Get'])
    end

    # With no report in view (rspec-puppet, a catalog built before its run),
    # the loaders Puppet has bound tell the runs apart. The provider reads
    # them from Puppet's context stack; a binding still a Proc goes through
    # Puppet.lookup, which calls and memoizes it.
    it 'tells runs apart by the loaders bound when no report is in view' do
      first_loaders = Object.new
      Puppet.override(loaders: first_loaders) do
        provider.canonicalize(context, [manifest])
        Puppet.override(unrelated_binding: 1) { provider.canonicalize(context, [manifest]) }
      end
      Puppet.override(loaders: first_loaders) { provider.canonicalize(context, [manifest]) }
      expect(manager.methods_called).to eq(['Get'])
      Puppet.override(loaders: Object.new) { provider.canonicalize(context, [manifest]) }
      expect(manager.methods_called).to eq(%w[Get Get])
      lazy = Object.new
      Puppet.override(loaders: -> { lazy }) do
        provider.canonicalize(context, [manifest])
        provider.canonicalize(context, [manifest])
      end
      expect(manager.methods_called).to eq(%w[Get Get Get])
    end

    it 'forgets the logon failures of the previous run' do
      cred = { 'user' => 'locked', 'password' => Puppet::Pops::Types::PSensitiveType::Sensitive.new('pw') }
      failing = manifest.merge(dsc_psdscrunascredential: cred)
      logon = FakePwshManager.output('{"errormessage":"Logon failure: the user has not been granted the requested logon type at this computer"}')
      in_run(new_report) do
        manager.queued << logon
        provider.canonicalize(context, [failing])
        expect(provider.logon_failed_already?(cred)).to be(true)
      end
      in_run(new_report) do
        provider.canonicalize(context, [failing])
        expect(provider.logon_failed_already?(cred)).to be(false)
      end
      expect(manager.methods_called).to eq(%w[Get Get])
    end
  end
end
