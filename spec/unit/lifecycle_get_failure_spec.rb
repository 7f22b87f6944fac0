# frozen_string_literal: true

require 'spec_helper'

# A failed Get is reported once and ends that resource's run: no second
# Get, no blind Set, and the resource is marked failed.
RSpec.describe 'Puppet::Provider::DscBaseProvider when the Get fails' do
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'old') }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:credential) { { 'user' => 'CONTOSO\\locked', 'password' => sensitive.new('L0cked!') } }
  let(:manifest) { { name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'Present', dsc_contents: 'new' } }
  let(:logon_failure) do
    FakePwshManager.output('{"errormessage":"Logon failure: the user has not been granted the requested logon type at this computer"}')
  end

  before(:each) do
    Puppet::Provider::DscBaseProvider.forget_logon_failures
    allow(provider).to receive(:ps_manager).and_return(manager)
  end

  after(:each) { Puppet::Provider::DscBaseProvider.forget_logon_failures }

  {
    'nothing returned (the host died)' => [FakePwshManager.output(nil), /Nothing returned/],
    'a host timeout' => [FakePwshManager.output(nil, 'Catastrophic failure: PowerShell module timeout (5000 ms) exceeded while executing'),
                         /timeout/],
    'malformed JSON' => [FakePwshManager.output('{"DestinationPath": "C:\\\\Foo", garbled'), /invalid JSON/],
    'a DSC error' => [FakePwshManager.output('{"errormessage":"The resource failed"}'), /The resource failed/],
  }.each do |what, (output, reported)|
    it "makes exactly one Get after #{what} and marks the resource failed" do
      manager.queued << output
      expect(drive(provider, context, manifest.merge(validation_mode: 'resource'))).to be(true)
      expect(manager.methods_called).to eq(['Get'])
      expect(context.failed?).to be(true)
      errors = context.logged(:err)
      expect(errors.first).to match(/\Adsc_fixturefile\[Title\]: /).and match(reported)
      expect(errors.join("\n")).to match(/dsc_fixturefile\[Title\].*current state could not be read/)
    end
  end

  it 'leaves the other resources of the run alone' do
    manager.queued << FakePwshManager.output(nil)
    drive(provider, context, manifest)
    context.reset_failed
    manager.get_result = { 'DestinationPath' => 'C:\\Other', 'Ensure' => 'Present', 'Contents' => 'old' }
    other = { name: 'Other', dsc_destinationpath: 'c:\\other', dsc_ensure: 'Present', dsc_contents: 'new' }
    expect(drive(provider, context, other)).to be(true)
    expect(manager.methods_called).to eq(%w[Get Get Set])
    expect(context.failed?).to be_falsey
  end

  it 'skips every call for a later resource of another type with a credential that failed to log on' do
    manager.queued << logon_failure
    drive(provider, context, manifest.merge(dsc_psdscrunascredential: credential))
    expect(manager.methods_called).to eq(['Get'])

    service = provider_class_for(:dsc_fixtureservice).new
    allow(service).to receive(:ps_manager).and_return(manager)
    service_context = recording_context(:dsc_fixtureservice)
    resource = { name: 'locked-svc', dsc_name: 'Locked', dsc_state: 'Running', dsc_psdscrunascredential: credential }
    canonical = service.canonicalize(service_context, [resource]).first
    title = { name: 'locked-svc', dsc_name: 'Locked' }
    current = service.get(service_context, [title]).first
    result, = service.insync?(service_context, title, :dsc_state, current, canonical)
    expect(result).to be(false)
    service.set(service_context, title => { is: current, should: canonical })
    expect(manager.methods_called).to eq(['Get'])
    expect(service_context.failed?).to be(true)
    expect(service_context.logged(:err).first).to match(/dsc_fixtureservice\[locked-svc\]: Skipping Invoke-DscResource Get.*failed to log on/)
    shown = (context.messages + service_context.messages).map(&:last).join("\n")
    expect(shown).not_to include('L0cked!')
  end
end

RSpec.describe 'Puppet::Provider::DscBaseProvider with a PSCredential property that Get returns without password' do
  let(:provider) { provider_class_for(:dsc_fixtureuser).new }
  let(:context) { recording_context(:dsc_fixtureuser) }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:title) { { name: 'alice', dsc_username: 'alice' } }

  def run_once(system_user)
    manager = FakePwshManager.new('UserName' => 'alice', 'Ensure' => 'Present', 'Password' => { 'user' => system_user, 'password' => nil })
    allow(provider).to receive(:ps_manager).and_return(manager)
    manifest = { name: 'alice', dsc_username: 'alice', dsc_ensure: 'Present',
                 dsc_password: { 'user' => 'Alice', 'password' => sensitive.new('x') } }
    canonical = provider.canonicalize(context, [manifest]).first
    current = provider.get(context, [title]).first
    expect(provider.canonicalize(context, [Marshal.load(Marshal.dump(current))]).first).to eq(current)
    [manager, canonical, current]
  end

  it 'is in sync when the user matches case-insensitively, with a schema-valid current state' do
    manager, canonical, current = run_once('alice')
    expect(type_definition_for(:dsc_fixtureuser).check_schema_values(current)).to eq({})
    expect(current[:dsc_password]['password']).to be_a(sensitive)
    expect(provider.insync?(context, title, :dsc_password, current, canonical)).to be(true)
    expect(manager.methods_called).to eq(['Get'])
  end

  it 'reports a change of user without showing the password, with a schema-valid current state' do
    _, canonical, current = run_once('Bob')
    expect(type_definition_for(:dsc_fixtureuser).check_schema_values(current)).to eq({})
    result, message = provider.insync?(context, title, :dsc_password, current, canonical)
    expect(result).to be(false)
    expect(message).to match(/\Adsc_password changed .*Bob.*#<Sensitive \[value redacted\]>/)
    expect(message).not_to match(/=> "x"|'x'/)
  end
end
