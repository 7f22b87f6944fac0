# frozen_string_literal: true

require 'spec_helper'

RSpec.describe 'Puppet::Provider::DscBaseProvider invocation errors' do
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'x') }
  let(:credential) { { 'user' => 'svc', 'password' => Puppet::Pops::Types::PSensitiveType::Sensitive.new('S3cr3t!') } }
  let(:query) { { name: 'Title', dsc_destinationpath: 'c:\\foo' } }

  before(:each) { allow(provider).to receive(:ps_manager).and_return(manager) }

  it 'reports nothing returned, mentioning a host-reported timeout', :gc_stress do
    manager.queued << FakePwshManager.output(nil, 'Catastrophic failure: PowerShell module timeout (5000 ms) exceeded while executing')
    expect(provider.invoke_get_method(context, query)).to be_nil
    expect(context.logged(:err)).to contain_exactly(a_string_matching(/\Adsc_fixturefile\[Title\]: Nothing returned.*timeout \(5000 ms\) exceeded/))
  end

  it 'reports invalid JSON with the parse error and a short excerpt' do
    manager.queued << FakePwshManager.output("<html>#{'x' * 500}")
    expect(provider.invoke_get_method(context, query)).to be_nil
    message = context.logged(:err).first
    expect(message).to match(/dsc_fixturefile\[Title\]: .*invalid JSON.*starts with: <html>x+…\z/)
    expect(message.length).to be < 300
  end

  it 'remembers a logon failure and skips later calls with that credential' do
    manager.queued << FakePwshManager.output('{"errormessage":"Logon failure: the user has not been granted the requested logon type at this computer"}')
    expect(provider.invoke_get_method(context, query.merge(dsc_psdscrunascredential: credential))).to be_nil
    expect(provider.logon_failed_already?(credential)).to be(true)
    other = { name: 'Other', dsc_destinationpath: 'c:\\bar', dsc_psdscrunascredential: credential }
    expect(provider.invoke_get_method(context, other)).to be_nil
    provider.invoke_set_method(context, other, other.merge(dsc_ensure: 'Present'))
    expect(manager.calls.size).to eq(1)
    errors = context.logged(:err)
    expect(errors.first).to match(/dsc_fixturefile\[Title\]: PSDscRunAsCredential account specified \(svc\) does not have appropriate logon rights/)
    expect(errors[1..]).to all(match(/dsc_fixturefile\[Other\]: Skipping Invoke-DscResource/))
    expect(errors.join).not_to include('S3cr3t!')
  end

  it 'retries a collision after a configurable wait and uses the result of the retry' do
    provider.collision_retry_seconds = 0.01
    collision = '{"errormessage":"The Invoke-DscResource cmdlet is in progress and must return before Invoke-DscResource can be invoked"}'
    2.times { manager.queued << FakePwshManager.output(collision) }
    expect(provider).to receive(:sleep).with(0.01).twice
    result = provider.invoke_get_method(context, query)
    expect(result).to include(dsc_contents: 'x')
    expect(manager.calls.size).to eq(3)
    expect(context.logged(:notice).first).to match(/collision detected/)
    expect(context.logged(:err)).to be_empty
  end

  it 'reads the collision wait from PWSHLIB_COLLISION_RETRY_SECONDS, defaulting to 60' do
    expect(provider_class_for(:dsc_fixturefile).new.collision_retry_seconds).to eq(60.0)
    ENV['PWSHLIB_COLLISION_RETRY_SECONDS'] = '0.5'
    expect(provider_class_for(:dsc_fixturefile).new.collision_retry_seconds).to eq(0.5)
  ensure
    ENV.delete('PWSHLIB_COLLISION_RETRY_SECONDS')
  end

  it 'applies dsc_timeout (seconds) to that resource only, in ms' do
    provider.invoke_get_method(context, query.merge(dsc_timeout: 7))
    provider.invoke_get_method(context, { name: 'Next', dsc_destinationpath: 'c:\\next' })
    expect(manager.calls.map(&:timeout_ms)).to eq([7000, nil])
    expect(provider.specify_dsc_timeout({ dsc_timeout: 2 })).to eq(2000)
  end

  it 'reports a DSC error naming the resource and goes on' do
    manager.queued << FakePwshManager.output('{"errormessage":"The resource failed"}')
    expect(provider.invoke_dsc_resource(context, query, {}, 'test')).to be_nil
    expect(context.logged(:err)).to eq(['dsc_fixturefile[Title]: The resource failed'])
  end

  it 'logs the duration of each PowerShell call and the raw JSON' do
    provider.invoke_get_method(context, query)
    debug = context.logged(:debug).join("\n")
    expect(debug).to match(/Invoke-DscResource Get took \d+\.\d{5} s/)
    expect(debug).to include('raw data received: {"DestinationPath"')
    expect(debug).to include('Returned to Puppet as')
  end

  describe 'pwshlib 2.x helpers' do
    it 'keeps their names and behaviour' do
      expect(provider.same?(%w[b a], %w[a b])).to be(true)
      expect(provider.recursively_downcase({ 'A' => ['B'] })).to eq({ 'a' => ['b'] })
      expect(provider.recursively_sort({ b: [2, 1], a: 1 })).to eq({ a: 1, b: [1, 2] })
      nested = [{ 'cim_instance_type' => 'X', 'Name' => { 'Inner' => 1, 'cim_instance_type' => 'Y' } }]
      provider.downcase_hash_keys!(nested)
      provider.munge_cim_instances!(nested)
      expect(nested).to eq([{ 'name' => { 'inner' => 1, 'cim_instance_type' => 'Y' } }])
      data = { dsc_destinationpath: nil, dsc_contents: nil }
      expect(provider.stringify_nil_attributes(context, data)).to eq(dsc_destinationpath: '', dsc_contents: nil)
      cache = [{ name: 'a', x: 1 }, { name: 'b', x: 2 }]
      expect(provider.fetch_cached_hashes(cache, [{ name: 'b' }])).to eq([{ name: 'b', x: 2 }])
      expect(provider.method(:retry_invoke_dsc_resource).arity).to eq(4)
      expect(provider.method(:invoke_get_method_for_canonicalize).arity).to eq(2)
    end

    it 'ps_manager asks Pwsh::Manager for an instance through Ruby' do
      fresh = provider_class_for(:dsc_fixturefile).new
      # The real manager is built in parallel; a stand-in with its class API.
      stub_const('Pwsh::Manager', Class.new do
        def self.pwsh_path(_additional_paths = []) = '/usr/bin/pwsh'
        def self.pwsh_args = ['-NoProfile']
        def self.powershell_path = 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe'
        def self.powershell_args = ['-NoProfile', '-NonInteractive']
        def self.instance(_cmd, _args, _options = {}) = nil
      end)
      # Windows PowerShell on Windows (the Windows suite runs this file too),
      # PowerShell 7 elsewhere, as ruby-pwsh's provider chooses.
      path, args = if Pwsh::Util.on_windows?
                     [Pwsh::Manager.powershell_path, Pwsh::Manager.powershell_args]
                   else
                     [Pwsh::Manager.pwsh_path, Pwsh::Manager.pwsh_args]
                   end
      # A positional options hash, as Pwsh::Manager.instance(cmd, args, options = {}) takes it.
      expect(Pwsh::Manager).to receive(:instance).with(path, args, { debug: false }).and_return(:the_manager)
      expect(fresh.ps_manager).to eq(:the_manager)
    end

    it 'ps_manager finds Pwsh::Manager anew on every call (a replaced class is used, not one seen before)' do
      stand_in = lambda do |answer|
        Class.new do
          define_singleton_method(:pwsh_path) { |_additional_paths = []| '/usr/bin/pwsh' }
          define_singleton_method(:pwsh_args) { ['-NoProfile'] }
          define_singleton_method(:powershell_path) { 'powershell.exe' }
          define_singleton_method(:powershell_args) { ['-NoProfile'] }
          define_singleton_method(:instance) { |_cmd, _args, _options = {}| answer }
        end
      end
      stub_const('Pwsh::Manager', stand_in.call(:first))
      expect(provider_class_for(:dsc_fixturefile).new.ps_manager).to eq(:first)
      stub_const('Pwsh::Manager', stand_in.call(:second))
      expect(provider_class_for(:dsc_fixturefile).new.ps_manager).to eq(:second)
    end
  end

  describe 'a value that cannot go to PowerShell' do
    let(:provider) { provider_class_for(:dsc_fixturevault).new }
    let(:context) { recording_context(:dsc_fixturevault) }
    let(:manager) { FakePwshManager.new('VaultName' => 'v', 'Ensure' => 'Absent') }
    let(:title) { { name: 'bad', dsc_vaultname: 'bad' } }
    let(:span) { Puppet::Pops::Time::Timespan.from_fields(false, 0, 1, 0, 0) }
    let(:manifest) { title.merge(dsc_ensure: 'Present', dsc_options: { 'f' => span }) }

    it 'leaves canonicalize (catalog building) alone and fails the resource in insync? and set, naming it and the path' do
      good = { name: 'good', dsc_vaultname: 'good', dsc_ensure: 'Present' }
      canonical = provider.canonicalize(context, [manifest, good])
      expect(canonical.first).to equal(manifest)
      expect(canonical.last).to include(name: 'good')
      message = 'dsc_fixturevault[bad]: dsc_options.f: unsupported value: a value of class Puppet::Pops::Time::Timespan cannot be passed to PowerShell'
      expect { provider.insync?(context, title, :dsc_ensure, {}, manifest) }.to raise_error(Puppet::Error, message)
      expect { provider.set(context, title => { is: {}, should: manifest }) }.to raise_error(Puppet::Error, message)
      expect(manager.methods_called).not_to include('Set')
    end

    it 'names the whole path of a value nested in hashes and arrays' do
      nested = manifest.merge(dsc_options: { 'outer' => { 'inner' => ['ok', span] } })
      expect { provider.insync?(context, title, :dsc_ensure, {}, nested) }
        .to raise_error(Puppet::Error, /\Adsc_fixturevault\[bad\]: dsc_options\.outer\.inner: unsupported value: a value of class/)
    end

    it 'names no key below a Sensitive value in the path' do
      hidden = manifest.merge(dsc_options: Puppet::Pops::Types::PSensitiveType::Sensitive.new({ 'HiddenKey' => { 'x' => span } }))
      expect { provider.insync?(context, title, :dsc_ensure, {}, hidden) }
        .to raise_error(Puppet::Error, /\Adsc_fixturevault\[bad\]: dsc_options \(inside a Sensitive value\): unsupported value/) do |e|
          expect(e.message).not_to include('HiddenKey')
        end
    end
  end
end
