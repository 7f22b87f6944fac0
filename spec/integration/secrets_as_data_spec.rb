# frozen_string_literal: true

require 'spec_helper'
require 'json'
require 'tmpdir'

# Through the real Pwsh::Manager and pwshlib-sim: a DSC call's
# secrets travel as data (docs/protocol.md, "Secrets"). The provider hands
# the manager a Pwshlib::DscScript whose lines hold no secret; the host
# binds each secret from the request and the resource gets it intact. A
# host that binds nothing gets the inline form and the same values.
RSpec.describe 'Secrets sent as data through Pwsh::Manager and pwshlib-sim' do
  let(:context) { recording_context(:dsc_fixturevault) }
  let(:provider) { provider_class_for(:dsc_fixturevault).new }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:rng) { Random.new(38) }
  # Every quote PowerShell knows, what a literal or an expandable string
  # would read as code, a marker look-alike, newlines and non-ASCII text.
  let(:pieces) { ["'", "\u2018", "\u2019", '"', '`', '$(whoami)', '@{', '#<', "\r\n", "\n", 'ü漢', ' ', '}'] }

  def secret(tag)
    body = Array.new(rng.rand(2..10)) { pieces.sample(random: rng) }.join
    "#{tag}-#{body}-#{tag.reverse}"
  end

  def props(secrets)
    { dsc_vaultname: 'vault', dsc_ensure: 'Present',
      dsc_secret: sensitive.new(secrets[0]),
      dsc_settings: { 'label' => 'public', 'token' => sensitive.new(secrets[1]) },
      dsc_endpoints: [{ 'address' => 'https://e.example', 'apikey' => sensitive.new(secrets[2]) }],
      dsc_credential: { 'user' => 'svc', 'password' => sensitive.new(secrets[3]) } }
  end

  def unwrap(value)
    value.is_a?(sensitive) ? value.unwrap : value
  end

  around do |example|
    Dir.mktmpdir('pwshlib-secrets') do |dir|
      keys = %w[PWSHLIB_POWERSHELL PWSHLIB_SIM_STATE PWSHLIB_SIM_NO_SECRETS]
      saved = ENV.to_h.slice(*keys)
      state = File.join(dir, 'state.json')
      # A Get is handed the desired state: the simulator cannot
      # learn the keys from it, so they are declared.
      File.write(state, JSON.generate(keys: { FixtureVault: ['vaultname'] }))
      ENV.update('PWSHLIB_POWERSHELL' => PWSHLIB_SIM, 'PWSHLIB_SIM_STATE' => state)
      begin
        example.run
      ensure
        Pwsh::Manager.shutdown_all
        keys.each { |k| ENV[k] = saved[k] }
      end
    end
  end

  # Sets the vault, then reads it back; returns what each execute_dsc
  # call carried and what the manager said of the host.
  def apply_and_read(secrets)
    manager = provider.ps_manager
    calls = []
    allow(manager).to receive(:execute_dsc).and_wrap_original do |original, call|
      result = original.call(call)
      script = call.script
      calls << { body: script.body, names: script.secret_names, shown: script.inspect,
                 binds: manager.wire_stats[:secrets_version] }
      result
    end
    allow(provider).to receive(:ps_manager).and_return(manager)
    title = { name: 'vault', dsc_vaultname: 'vault' }
    provider.invoke_dsc_resource(context, title, props(secrets), 'set')
    read = provider.invoke_dsc_resource(context, title, props(secrets), 'get')
    [calls, read]
  end

  it 'sends no secret in the lines, binds each, and the resource gets them intact' do
    secrets = Array.new(4) { |i| secret("tok#{i}x") }
    calls, read = apply_and_read(secrets)
    expect(calls.size).to eq(2)
    calls.each do |call|
      expect(call[:binds]).to eq(1)
      secrets.each do |s|
        expect(call[:body]).not_to include(s)
        expect(call[:shown]).not_to include(s)
      end
    end
    # The Set binds the credential and the three Sensitive leaves.
    expect(calls.first[:names].grep(/\Acred_\h{32}\z/).size).to eq(1)
    expect(calls.first[:names].grep(/\Asecret_\h{32}\z/).size).to eq(3)
    calls.first[:names].each { |name| expect(calls.first[:body]).to include("$#{name}") }
    expect(unwrap(read['secret'])).to eq(secrets[0])
    expect(context.logged(:err)).to eq([])
    logged = context.messages.map(&:last).join("\n")
    secrets.each { |s| expect(logged).not_to include(s) }
  end

  it 'gives a host that binds nothing the inline form, with the same values' do
    ENV['PWSHLIB_SIM_NO_SECRETS'] = '1'
    secrets = Array.new(4) { |i| secret("inl#{i}x") }
    calls, read = apply_and_read(secrets)
    expect(calls.map { |call| call[:binds] }).to eq([0, 0])
    expect(unwrap(read['secret'])).to eq(secrets[0])
    expect(context.logged(:err)).to eq([])
  end
end
