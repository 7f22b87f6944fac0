# frozen_string_literal: true

require 'spec_helper'
require 'json'
require 'tmpdir'

# The host prelude (docs/protocol.md, "Preludes") through the real
# Pwsh::Manager and pwshlib-sim: the DSC helpers cross the pipe once per host
# session, each call carries only its own lines, plain callers never see the
# helpers, and a new host is given them again.
RSpec.describe 'The DSC prelude through Pwsh::Manager and pwshlib-sim' do
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:path) { 'C:\\Temp\\Chain.txt' }
  let(:manifest) do
    { name: 'chain', dsc_destinationpath: path, dsc_ensure: 'Present', dsc_contents: "it's here", validation_mode: 'property' }
  end
  let(:prelude) { PWSHLIB_PRELUDE }
  let(:vendored) { File.join(PWSHLIB_ROOT, 'spec/fixtures/modules/dscfixtures/lib/puppet_x/pwshlibfixturedsc/dsc_resources') }
  let(:module_path) { File.join(vendored, 'PwshlibFixtureDsc/PwshlibFixtureDsc.psd1') }
  let(:call) { "Invoke-PwshlibDscResource -InvokeParams $InvokeParams -VendoredPath '#{vendored}'\n" }

  around do |example|
    Dir.mktmpdir('pwshlib-prelude') do |dir|
      saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PWSHLIB_SIM_STATE', 'PWSHLIB_SIM_NO_PRELUDE', 'PWSHLIB_SIM_NO_DSC')
      ENV.update('PWSHLIB_POWERSHELL' => PWSHLIB_SIM, 'PWSHLIB_SIM_STATE' => File.join(dir, 'state.json'))
      begin
        example.run
      ensure
        Pwsh::Manager.shutdown_all
        %w[PWSHLIB_POWERSHELL PWSHLIB_SIM_STATE PWSHLIB_SIM_NO_PRELUDE PWSHLIB_SIM_NO_DSC].each { |k| ENV[k] = saved[k] }
      end
    end
  end

  # Each call the provider makes, with the bytes of its request frame.
  def record_calls(manager)
    sent = []
    # The provider hands this library's manager the whole call
    # (execute_dsc): its lines, and its secrets as data.
    allow(manager).to receive(:execute_dsc).and_wrap_original do |original, *args|
      result = original.call(*args)
      sent << { body: args[0].script.body, bytes: manager.wire_stats[:last_sent], prelude: manager.wire_stats[:prelude] }
      result
    end
    allow(provider).to receive(:ps_manager).and_return(manager)
    sent
  end

  # The request frame for a body run with the prelude held: a 4-byte length,
  # then the JSON the manager writes (serde's field order). A host numbers
  # its requests from 1, and each example starts a fresh host.
  # With dsc: the call as data, its code then empty.
  def frame_bytes(body, id, request:, prelude_code: nil, dsc: nil)
    prelude = { id: id }
    prelude[:code] = prelude_code if prelude_code
    frame = { type: 'execute', id: request, code: dsc ? '' : body, timeout_ms: 300_000, working_dir: nil, env: [],
              prelude: prelude }
    frame[:dsc] = dsc if dsc
    4 + JSON.generate(frame).bytesize
  end

  # The data the host is handed for the FixtureFile call (docs/protocol.md,
  # "DSC calls as data").
  def data_for(method)
    { name: 'FixtureFile', method: method,
      module: { version: '1.2.0', path: module_path },
      vendored_path: vendored,
      properties: { destinationpath: path, ensure: 'Present', contents: "it's here" } }
  end

  # Every body's call carries the vendored folder, which the prelude puts
  # on PSModulePath and restores.
  def body_for(method, properties)
    "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n" \
      "$InvokeParams = @{Name = 'FixtureFile'; Method = '#{method}'; Property = @{#{properties}}; " \
      "ModuleName = @{ModuleName = '#{module_path}'; RequiredVersion = '1.2.0'}}\n" \
      "#{call}"
  end

  it 'sends the prelude with the first call only; an in-sync Get and a Set carry their own data alone' do
    sent = record_calls(provider.ps_manager)
    expect(drive(provider, context, manifest)).to be(true) # Get, then Set
    second_run = provider_class_for(:dsc_fixturefile).new
    allow(second_run).to receive(:ps_manager).and_return(provider.ps_manager)
    expect(drive(second_run, recording_context(:dsc_fixturefile), manifest)).to be(false) # one in-sync Get

    id = sent.first[:prelude]
    expect(sent.map { |call| call[:bytes] }).to eq(
      [frame_bytes(nil, id, request: 1, prelude_code: prelude, dsc: data_for('Get')),
       frame_bytes(nil, id, request: 2, dsc: data_for('Set')), frame_bytes(nil, id, request: 3, dsc: data_for('Get'))]
    )
    # Exact, apart from the checkout's paths (as below): 178 bytes fewer
    # than the call's lines (504); 349 with dsc version 1, whose module was
    # a hash of ModuleName and RequiredVersion.
    expect(sent[2][:bytes] - module_path.bytesize - vendored.bytesize).to eq(326)
    expect(sent[1][:bytes] - module_path.bytesize - vendored.bytesize).to eq(326)
  end

  it 'sends a host that takes no data the call\'s lines, the prelude with the first call only' do
    ENV['PWSHLIB_SIM_NO_DSC'] = '1'
    sent = record_calls(provider.ps_manager)
    expect(drive(provider, context, manifest)).to be(true) # Get, then Set
    second_run = provider_class_for(:dsc_fixturefile).new
    allow(second_run).to receive(:ps_manager).and_return(provider.ps_manager)
    expect(drive(second_run, recording_context(:dsc_fixturefile), manifest)).to be(false) # one in-sync Get

    # The Get is handed the desired state, as the Set.
    desired = "destinationpath = 'C:\\Temp\\Chain.txt'; ensure = 'Present'; contents = 'it''s here'"
    get = body_for('Get', desired)
    set = body_for('Set', desired)
    expect(sent.map { |call| call[:body] }).to eq([get, set, get])
    id = sent.first[:prelude]
    expect(id).to match(/\Adsc-\h{16}\z/)
    # The first request of the session defines the prelude; the rest name it.
    expect(sent.map { |call| call[:bytes] }).to eq([frame_bytes(get, id, request: 1, prelude_code: prelude),
                                                    frame_bytes(set, id, request: 2), frame_bytes(get, id, request: 3)])
    in_sync_get = sent[2][:bytes]
    set_call = sent[1][:bytes]
    # Exact, apart from the checkout's path to the vendored module, which
    # each body holds twice (request ids below 10 take 7 bytes: `"id":3,`).
    # The call's -VendoredPath adds 17 bytes to each frame besides the
    # path; a Get carries the desired state, as a Set does.
    expect(in_sync_get - module_path.bytesize - vendored.bytesize).to eq(504)
    expect(set_call - module_path.bytesize - vendored.bytesize).to eq(504)
    expect(in_sync_get).to be <= 1024 + vendored.bytesize
    expect(sent.first[:bytes]).to be > prelude.bytesize
  end

  # The prelude once per host session, with its id.
  it 'shows the prelude once by its id and files, and each call as one line of its data, in the debug log' do
    record_calls(provider.ps_manager)
    drive(provider, context, manifest)
    id = provider.ps_manager.wire_stats[:prelude]
    debug = context.logged(:debug)
    files = %w[values cmdlet results modules direct call].map { |part| "dsc_prelude_#{part}.ps1" }.join(', ')
    expect(debug.filter_map { |m| m[/Prelude dsc-.*/m] })
      .to eq(["Prelude #{id} (lib/templates/#{files}; sent once per PowerShell host session)"])
    sends = debug.filter_map { |m| m[/Sending Invoke-DscResource .*/m] }
    expect(sends).to eq(%w[Get Set].map do |method|
      "Sending Invoke-DscResource #{method} FixtureFile from PwshlibFixtureDsc 1.2.0, direct, vendored path '#{vendored}': " \
        "{destinationpath => 'C:\\Temp\\Chain.txt', ensure => 'Present', contents => 'it's here'}"
    end)
  end

  # The debug log of five resources (created, then
  # found in sync by a second run on the same host) holds the prelude once;
  # it held it with every call (some 770 lines each) before.
  it 'logs the prelude once for five resources over two runs on one host' do
    manifests = Array.new(5) do |i|
      { name: "five#{i}", dsc_destinationpath: "C:\\Temp\\Five#{i}.txt", dsc_ensure: 'Present', dsc_contents: "n#{i}" }
    end
    manifests.each { |m| drive(provider, context, m) }
    second = recording_context(:dsc_fixturefile)
    provider_class_for(:dsc_fixturefile).new.get(second, manifests.map { |m| m.slice(:name, :dsc_destinationpath) })
    debug = context.logged(:debug) + second.logged(:debug)
    calls = debug.grep(/: Sending Invoke-DscResource /)
    expect(calls.size).to be >= 15
    expect(debug.grep(/: Prelude dsc-/).size).to eq(1)
    puts "debug lines for #{calls.size} calls of 5 resources: #{debug.sum { |m| m.lines.size }}" if ENV['PWSHLIB_SHOW_FIGURES']
    lines = debug.sum { |m| m.lines.size }
    # The prelude's id once, and a few lines per call besides: the five
    # resources' second, in-sync run stays within 150 lines.
    expect(lines).to be < calls.size * 12
    expect(second.logged(:debug).sum { |m| m.lines.size }).to be <= 150
  end

  it 'gives a restarted host the prelude again' do
    manager = provider.ps_manager
    sent = record_calls(manager)
    provider.get(context, [{ name: 'chain', dsc_destinationpath: path }])
    first_pid = manager.pid
    expect(manager.execute('Stop-Process -Id $PID')[:errormessage]).to match(/died|closed/)
    expect(manager).not_to be_alive

    restarted = provider_class_for(:dsc_fixturefile).new
    fresh = restarted.ps_manager
    expect(fresh.pid).not_to eq(first_pid)
    sent_again = []
    allow(fresh).to receive(:execute_dsc).and_wrap_original do |original, *args|
      result = original.call(*args)
      sent_again << fresh.wire_stats.merge(data: result)
      result
    end
    allow(restarted).to receive(:ps_manager).and_return(fresh)
    expect(restarted.get(context, [{ name: 'chain', dsc_destinationpath: path }]).first).to include(dsc_ensure: 'Absent')
    expect(sent_again.size).to eq(1)
    # The call's data: it did not fail.
    expect(sent_again.first[:data]).to be_a(Hash)
    expect(sent_again.first[:last_sent]).to be > prelude.bytesize
    expect(sent_again.first[:prelude]).to eq(sent.first[:prelude])
  end

  it 'keeps the prelude functions from a plain Pwsh::Manager#execute' do
    manager = provider.ps_manager
    provider.get(context, [{ name: 'chain', dsc_destinationpath: path }])
    expect(manager.wire_stats[:prelude]).to match(/\Adsc-/)
    %w[New-PsCredential Invoke-PwshlibDscResource ConvertTo-PwshlibCanonicalResult].each do |function|
      expect(manager.execute("Test-Path 'function:#{function}'")[:stdout]).to eq("False\n")
      expect(manager.execute_with_prelude('dsc', "Test-Path 'function:#{function}'")[:stdout]).to eq("True\n")
    end
    # A plain request cannot call them either.
    plain = manager.execute("$c = New-PsCredential -User 'u' -Password 'p'")
    expect(plain[:errormessage]).to include("The term 'New-PsCredential' is not recognized")
  end

  it 'refuses an unknown prelude name' do
    expect { provider.ps_manager.execute_with_prelude('other', 'Write-Output 1') }.to raise_error(ArgumentError, /unknown prelude/)
  end

  it 'sends the whole script to a host that offers no prelude (an older host)' do
    ENV['PWSHLIB_SIM_NO_PRELUDE'] = '1'
    manager = provider.ps_manager
    sent = record_calls(manager)
    expect(drive(provider, context, manifest)).to be(true)
    expect(manager.wire_stats).to include(prelude_version: 0, prelude: nil)
    expect(sent.map { |call| call[:bytes] }).to all(be > prelude.bytesize)
  end

  it 'sends the whole script through #execute to a manager without execute_with_prelude (pwshlib 2.x)' do
    fake = FakePwshManager.new({ 'destinationpath' => path, 'ensure' => 'Absent' })
    allow(provider).to receive(:ps_manager).and_return(fake)
    provider.get(context, [{ name: 'chain', dsc_destinationpath: path }])
    expect(fake.calls.size).to eq(1)
    expect(fake.calls.first.script).to start_with(prelude)
    expect(fake.calls.first.script).to end_with(call)
  end
end
