# frozen_string_literal: true

require 'json'
require_relative '../spec_helper_real_pwsh'
require_relative '../../support/fake_manager'

# On the real pwsh: a DSC call goes to pwshlib's host as data
# (docs/protocol.md, "DSC calls as data"), which the host binds as
# $InvokeParams and makes with one constant script. The provider in this
# process (the realdsc fixture module's RealSetting) drives the real pwsh;
# each request's frame is the data one, not the call's lines, and every
# value the script's literal would type arrives typed the same (a string
# array, a uint32, a bool, a date-time, a credential bound from secrets).
RSpec.describe 'DSC calls as data, on the real pwsh' do
  include_context 'the realdsc providers on the real pwsh'

  let(:context) { recording_context(:dsc_realsetting) }
  let(:provider) { provider_class_for(:dsc_realsetting).new }

  # Each execute_dsc call: its lines and the bytes its request frame took.
  def record(manager)
    sent = []
    allow(manager).to receive(:execute_dsc).and_wrap_original do |original, call|
      result = original.call(call)
      script = call.script
      stats = manager.wire_stats
      sent << { body: script.body, names: script.secret_names, bytes: stats[:last_sent], dsc: stats[:dsc_version],
                prelude: stats[:prelude], request: stats[:requests] }
      result
    end
    allow(provider).to receive(:ps_manager).and_return(manager)
    sent
  end

  it 'sends the call as data, and the resource gets every value typed as the script would give it' do
    sent = record(provider.ps_manager)
    title = { name: 'typed', dsc_name: 'typed' }
    should = { dsc_name: 'typed', dsc_ensure: 'Present', dsc_tags: %w[a b], dsc_count: 7, dsc_enabled: true,
               dsc_expires: '2030-01-02T03:04:05Z', dsc_description: "it's 'quoted' \u00fc",
               dsc_credential: { 'user' => 'svc', 'password' => sensitive.new("p'ss") } }
    provider.invoke_dsc_resource(context, title, should, 'set')
    read = provider.invoke_dsc_resource(context, title, should, 'get')

    expect(sent.map { |call| call[:dsc] }).to eq([2, 2])
    # The Get's frame holds the data, not the lines: smaller than the frame
    # of its lines would be (docs/protocol.md: the fields in serde's order).
    get = sent.last
    secrets = [{ name: get[:names].first, kind: 'credential', user: 'svc', password: "p'ss" }]
    as_lines = 4 + JSON.generate(type: 'execute', id: get[:request], code: get[:body], timeout_ms: 300_000,
                                 working_dir: nil, env: [], prelude: { id: get[:prelude] }, secrets: secrets).bytesize
    expect(get[:bytes]).to be < as_lines - 50
    # The resource's own Get (invoke_dsc_resource hands back its result).
    expect(read).to include('Name' => 'typed', 'Ensure' => 'Present', 'Tags' => %w[a b], 'Count' => 7,
                            'Enabled' => true, 'Description' => "it's 'quoted' \u00fc",
                            'Expires' => '2030-01-02T03:04:05.0000000Z')
    expect(read['Credential']).to include('user' => 'svc')
  end

  # PWSHLIB_DSC_DIRECT=0: the call goes through Invoke-DscResource (here the
  # stand-in, which logs what it receives), still as data, and the host
  # makes it in compiled code around the prelude's Invoke-PwshlibDscCall.
  it 'makes a call through Invoke-DscResource as data, in the compiled envelope' do
    manager = provider.ps_manager
    sent = record(manager)
    calls = -> { Integer(manager.execute('[PwshlibHost.DirectDsc]::Calls')[:stdout]) }
    before = calls.call
    title = { name: 'through', dsc_name: 'through' }
    should = { dsc_name: 'through', dsc_ensure: 'Present', dsc_count: 3 }
    ENV['PWSHLIB_DSC_DIRECT'] = '0'
    begin
      set = provider.invoke_dsc_resource(context, title, should, 'set')
      read = provider.invoke_dsc_resource(context, title, should, 'get')
    ensure
      ENV.delete('PWSHLIB_DSC_DIRECT')
    end
    expect(sent.map { |call| call[:dsc] }).to eq([2, 2])
    expect(calls.call - before).to eq(2)
    expect(set).to include('indesiredstate' => true, 'errormessage' => '')
    expect(read).to include('Name' => 'through', 'Ensure' => 'Present', 'Count' => 3)
    standin = File.readlines(File.join(ENV.fetch('PWSHLIB_REAL_DSC_STATE'), 'standin.jsonl')).map { |line| JSON.parse(line) }
    expect(standin.size).to eq(2), standin.inspect
  end

  describe 'a class-based resource with embedded instances' do
    let(:context) { recording_context(:dsc_realpool) }
    let(:provider) { provider_class_for(:dsc_realpool).new }

    it 'sends them as data, and the resource gets them as its nested class' do
      manager = provider.ps_manager
      frames = []
      allow(manager).to receive(:execute_dsc).and_wrap_original do |original, call|
        result = original.call(call)
        frames << { dsc: manager.wire_stats[:dsc_version], bytes: manager.wire_stats[:last_sent], body: call.script.body }
        result
      end
      allow(provider).to receive(:ps_manager).and_return(manager)
      title = { name: 'data-pool', dsc_name: 'data-pool' }
      should = { dsc_name: 'data-pool', dsc_ensure: 'Present',
                 dsc_options: [{ 'key' => 'a', 'mode' => 'slow' }, { 'key' => 'b', 'mode' => 'Fast' }],
                 dsc_primary: { 'key' => 'p', 'mode' => 'Slow' } }
      provider.invoke_dsc_resource(context, title, should, 'set')
      read = provider.invoke_dsc_resource(context, title, should, 'get')
      expect(frames.map { |frame| frame[:dsc] }).to eq([2, 2])
      # The frame holds the data, not the lines that make the instances.
      expect(frames.last[:body]).to include('New-PwshlibEmbeddedInstance')
      expect(frames.last[:bytes]).to be < JSON.generate(code: frames.last[:body]).bytesize
      # Read back as RealOption instances: the class PowerShell converted
      # each hashtable to.
      option = ->(key, mode) { { 'Key' => key, 'Mode' => mode, 'cim_instance_type' => 'RealOption' } }
      expect(read['Options']).to eq([option.call('a', 'Slow'), option.call('b', 'Fast')])
      expect(read['Primary']).to eq(option.call('p', 'Slow'))
    end
  end
end
