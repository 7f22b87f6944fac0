# frozen_string_literal: true

require 'spec_helper'
require 'json'
require 'tmpdir'
require 'securerandom'

# The provider, the real Rust Pwsh::Manager and the simulated host over the
# real socket: no test double anywhere in between.
RSpec.describe 'DscBaseProvider through Pwsh::Manager and pwshlib-sim' do
  let(:type) { Puppet::Type.type(:dsc_fixturefile) }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:path) { 'C:\\Temp\\Chain.txt' }
  let(:manifest) do
    { name: 'chain', dsc_destinationpath: path, dsc_ensure: 'Present', dsc_contents: "it's here",
      dsc_attributes: %w[Hidden Archive], validation_mode: 'property' }
  end

  around do |example|
    Dir.mktmpdir('pwshlib-chain') do |dir|
      @state_file = File.join(dir, 'state.json')
      @log_file = File.join(dir, 'calls.jsonl')
      saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PWSHLIB_SIM_STATE', 'PWSHLIB_SIM_LOG', 'PWSHLIB_SIM_PSVERSION')
      ENV.update('PWSHLIB_POWERSHELL' => PWSHLIB_SIM, 'PWSHLIB_SIM_STATE' => @state_file, 'PWSHLIB_SIM_LOG' => @log_file)
      # A Get is handed the desired state: the simulator cannot
      # learn the keys from the first one, so they are declared.
      File.write(@state_file, JSON.generate(keys: { FixtureFile: ['destinationpath'], FixtureUser: ['username'] }))
      begin
        example.run
      ensure
        # A host keeps the environment it was spawned with (the state file):
        # the next example needs a fresh one.
        Pwsh::Manager.shutdown_all
        %w[PWSHLIB_POWERSHELL PWSHLIB_SIM_STATE PWSHLIB_SIM_LOG PWSHLIB_SIM_PSVERSION].each { |k| ENV[k] = saved[k] }
      end
    end
  end

  def calls
    File.readlines(@log_file).map { |line| JSON.parse(line) }
  end

  it 'uses a live Pwsh::Manager for the configured PowerShell' do
    manager = provider.ps_manager
    expect(manager).to be_a(Pwsh::Manager)
    expect(manager).to be_alive
  end

  it 'creates a resource with one Get and one Set, then finds it in sync with one Get' do
    expect(drive(provider, context, manifest)).to be(true)
    expect(calls.map { |c| c['method'] }).to eq(%w[Get Set])

    stored = JSON.parse(File.read(@state_file))['resources']['FixtureFile']
    expect(stored).to contain_exactly(include('destinationpath' => path, 'ensure' => 'Present',
                                              'contents' => "it's here", 'attributes' => %w[Hidden Archive]))

    # A new provider instance is a new Puppet run: the system now matches, in a different case.
    second_run = provider_class_for(:dsc_fixturefile).new
    second_context = recording_context(:dsc_fixturefile)
    recased = manifest.merge(dsc_destinationpath: path.upcase, dsc_attributes: %w[archive hidden])
    expect(drive(second_run, second_context, recased)).to be(false)
    expect(calls.map { |c| c['method'] }).to eq(%w[Get Set Get])
  end

  # The simulated host reports a credential as Windows
  # PowerShell 5.1's Invoke-DscResource returns it, an MSFT_Credential
  # {UserName, Password} (password in the clear). The provider reads it as
  # {user, password}: the second run finds the resource in sync, and no log
  # line shows the password.
  describe 'a credential reported in the 5.1 MSFT_Credential shape' do
    let(:password) { "Pa55'#{SecureRandom.hex(6)}\u2019w\"rd" }
    let(:user_manifest) do
      { name: 'svc', dsc_username: 'svc', dsc_ensure: 'Present', dsc_fullname: 'Service account',
        dsc_password: { 'user' => 'CONTOSO\\svc', 'password' => Puppet::Pops::Types::PSensitiveType::Sensitive.new(password) },
        validation_mode: 'property' }
    end

    def drive_user(run, run_context, manifest)
      canonical = run.canonicalize(run_context, [manifest.dup]).first
      title = { name: canonical[:name], dsc_username: canonical[:dsc_username] }
      current = run.get(run_context, [title]).first
      target = run.canonicalize(run_context, [canonical]).first
      out_of_sync = manifest.keys.select { |k| k.to_s.start_with?('dsc_') }.reject do |property|
        in_sync, = run.insync?(run_context, title, property, current, target)
        in_sync == true
      end
      run.set(run_context, title => { is: current, should: target }) unless out_of_sync.empty?
      [out_of_sync, current]
    end

    it 'is in sync on the second run and never shows the password' do
      first_context = recording_context(:dsc_fixtureuser)
      changed, = drive_user(provider_class_for(:dsc_fixtureuser).new, first_context, user_manifest)
      expect(changed).to include(:dsc_password)
      expect(calls.map { |c| c['method'] }).to eq(%w[Get Set])

      second_context = recording_context(:dsc_fixtureuser)
      changed, current = drive_user(provider_class_for(:dsc_fixtureuser).new, second_context, user_manifest)
      expect(changed).to eq([])
      expect(calls.map { |c| c['method'] }).to eq(%w[Get Set Get])
      expect(current[:dsc_password]['user']).to eq('CONTOSO\\svc')

      # The host does report it in the 5.1 shape, password and all.
      reader = provider_class_for(:dsc_fixtureuser).new
      get = reader.invocable_resource({ name: 'svc', dsc_username: 'svc' }, recording_context(:dsc_fixtureuser), 'get')
      reported = JSON.parse(reader.ps_manager.execute(reader.remove_secret_identifiers(reader.ps_script_content(get)))[:stdout])
      expect(reported['password']).to eq('UserName' => 'CONTOSO\\svc', 'Password' => password,
                                         'cim_instance_type' => 'MSFT_Credential')
      raw = second_context.logged(:debug).grep(/raw data received/).join
      expect(raw).to include('"password" => #<Sensitive [value redacted]>')
      logged = (first_context.messages + second_context.messages).map(&:last).join("\n")
      expect(logged).not_to include(password)
      expect(logged).not_to include(password.gsub("'", "''"))
    end
  end

  # A value New-CimInstance cannot take fails its own
  # resource, naming the attribute path, before anything is sent; the
  # other resource of the same call is set.
  it 'fails a resource with a plain hash inside a CIM instance alone, naming the path' do
    website = provider_class_for(:dsc_fixturewebsite).new
    website_context = recording_context(:dsc_fixturewebsite)
    good = { name: 'good', dsc_name: 'good', dsc_ensure: 'Present',
             dsc_bindinginfo: [{ 'protocol' => 'http', 'port' => 80, 'hostname' => nil, 'certificatesubjects' => [] }] }
    bad = { name: 'bad', dsc_name: 'bad', dsc_ensure: 'Present',
            dsc_bindinginfo: [{ 'protocol' => 'http', 'port' => 81, 'options' => { 'fast' => true } }] }
    changes = [bad, good].to_h do |should|
      [{ name: should[:name], dsc_name: should[:dsc_name] }, { is: should.merge(dsc_ensure: 'Absent'), should: should }]
    end
    File.write(@state_file, JSON.generate(keys: { FixtureWebsite: ['name'] }))
    website.set(website_context, changes)
    expect(calls.map { |c| [c['method'], c['properties']['name']] }).to eq([%w[Set good]])
    # The empty array is typed from the Struct member (Array[String]); nil is left out.
    expect(calls.first['properties']['bindinginfo']).to eq(
      [{ 'protocol' => 'http', 'port' => 80, 'certificatesubjects' => [], 'cim_instance_type' => 'MSFT_FixtureBindingInformation' }]
    )
    errors = website_context.logged(:err)
    expect(errors.grep(/good/)).to eq([])
    expect(errors.first).to start_with('dsc_fixturewebsite[bad]: dsc_bindinginfo.options: ')
    expect(errors.first).to include('plain hashtable')
  end

  # On PowerShell 7 a run-as credential fails its own
  # resource with a message that names it and says why; a resource without
  # one runs.
  it 'names the resource that asks for PsDscRunAsCredential on PowerShell 7' do
    ENV['PWSHLIB_SIM_PSVERSION'] = '7.4.6'
    users = provider_class_for(:dsc_fixtureuser).new
    users_context = recording_context(:dsc_fixtureuser)
    run_as = { 'user' => 'CONTOSO\\admin', 'password' => Puppet::Pops::Types::PSensitiveType::Sensitive.new('runas-pw-77') }
    found = users.get(users_context, [{ name: 'alice', dsc_username: 'alice', dsc_psdscrunascredential: run_as },
                                      { name: 'bob', dsc_username: 'bob' }])
    expect(found.map { |r| r[:name] }).to eq(%w[alice bob])
    expect(found.last).to include(dsc_ensure: 'Absent')
    errors = users_context.logged(:err)
    expect(errors.size).to eq(1)
    expect(errors.first).to include('alice', "The DSC resource 'FixtureUser' cannot run as PsDscRunAsCredential on PowerShell 7.4.6",
                                    'does not support PsDscRunAsCredential')
    expect(users_context.messages.map(&:last).join).not_to include('runas-pw-77')
  end
end
