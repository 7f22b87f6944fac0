# frozen_string_literal: true

require 'spec_helper'

# No secret may reach a log line, an error or a change message, whatever
# its text. Every context call is captured and searched for every password.
RSpec.describe 'Puppet::Provider::DscBaseProvider with secrets' do
  let(:provider) { provider_class_for(:dsc_fixtureuser).new }
  let(:context) { recording_context(:dsc_fixtureuser) }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:rng) { Random.new(20_240_229) }
  let(:alphabet) do
    ["'", '"', "\u2018", "\u2019", "\u201A", "\u201B", "\n", "\r\n", '`', '$', '@', '#<Sensitive [value redacted]>', 'é', '漢', ' ', '\\', 'a', 'Z', '9',
     '{', '}']
  end

  # The random part gives every shape of content; the "pw<index>~" token
  # makes a leak findable by substring search even for one-character
  # contents, which would otherwise match hex in variable names by chance.
  def password(index)
    text = Array.new(rng.rand(1..24)) { alphabet.sample(random: rng) }.join
    "pw#{index}~#{text}"
  end

  # A secret as a single-quoted PowerShell literal.
  def quoted(secret)
    "'#{secret.gsub(/['\u2018\u2019\u201A\u201B]/) { |q| q * 2 }}'"
  end

  # In a script's inline form, the line that sets the variable
  # a property names (`secret = $secret_…` in the call's lines) to `value`,
  # in front of the call's lines.
  def inline_assignment(property, value)
    lambda do |script|
      variable = script[/\b#{property} = \$(secret_\h{32})/, 1]
      !variable.nil? && script.include?("\n$#{variable} = #{quoted(value)}\n")
    end
  end

  it 'never shows any of 1,000 generated passwords across a whole lifecycle' do
    passwords = Array.new(1000) { |i| password(i) }
    change_messages = []
    manager = FakePwshManager.new
    allow(provider).to receive(:ps_manager).and_return(manager)
    passwords.each_slice(2).with_index do |(runas, user_password), i|
      # DSC echoes the old password back in Get and a failing Set mentions both.
      manager.get_result = { 'UserName' => "user#{i}", 'Ensure' => 'Present', 'FullName' => 'Old',
                             'Password' => { 'User' => "user#{i}", 'Password' => "#{user_password}-old" } }
      manager.queued << FakePwshManager.output({ errormessage: "bad #{runas} / #{user_password}" }.to_json) if i.even?
      manifest = {
        name: "u#{i}", dsc_username: "user#{i}", dsc_ensure: 'Present', dsc_fullname: 'New',
        dsc_password: { 'user' => "user#{i}", 'password' => sensitive.new(user_password) },
        dsc_psdscrunascredential: { 'user' => 'svc', 'password' => sensitive.new(runas) },
        validation_mode: 'property'
      }
      canonical = provider.canonicalize(context, [manifest]).first
      title = { name: "u#{i}", dsc_username: "user#{i}" }
      current = provider.get(context, [title]).first || {}
      %i[dsc_password dsc_fullname].each do |property|
        result = provider.insync?(context, title, property, current, canonical)
        change_messages << result.last if result.is_a?(Array)
      end
      provider.set(context, title => { is: current, should: canonical })
      provider.invoke_test_method(context, title, canonical)
    end
    expect(change_messages.size).to be >= 1000
    expect(change_messages.grep(/dsc_password changed/).first).to include('#<Sensitive [value redacted]>')
    expect(context.logged(:err).size).to be >= 250
    shown = (context.messages.map(&:last) + change_messages).join("\n")
    leaked = passwords.select { |secret| shown.include?(secret) }
    expect(leaked).to be_empty
  end

  it 'keeps Sensitive values Sensitive at several depths through canonicalize and get', :gc_stress do
    manager = FakePwshManager.new('UserName' => 'bob', 'Ensure' => 'Present',
                                  'Password' => { 'User' => 'bob', 'Password' => 'echoed' })
    allow(provider).to receive(:ps_manager).and_return(manager)
    manifest = { name: 'bob', dsc_username: 'bob',
                 dsc_password: { 'user' => 'bob', 'password' => sensitive.new('deep') },
                 dsc_psdscrunascredential: { 'user' => 'svc', 'password' => sensitive.new('R7nAs-secret') } }
    canonical = provider.canonicalize(context, [manifest]).first
    expect(canonical[:dsc_password]['password']).to be_a(sensitive)
    expect(canonical[:dsc_password]['password'].unwrap).to eq('deep')
    current = provider.get(context, [{ name: 'bob', dsc_username: 'bob' }]).first
    expect(current[:dsc_password]['password']).to be_a(sensitive)
    shown = context.messages.map(&:last).join("\n")
    %w[deep R7nAs-secret echoed].each { |secret| expect(shown).not_to include(secret) }
  end

  describe 'a type with secrets at every depth (dsc_fixturevault)' do
    let(:provider) { provider_class_for(:dsc_fixturevault).new }
    let(:context) { recording_context(:dsc_fixturevault) }

    # A Set fails with an error that quotes the script lines holding the
    # secret, as PowerShell's errors do: quote-doubled, and split where the
    # secret spans lines.
    let(:quoting_manager) do
      Class.new(FakePwshManager) do
        attr_accessor :secret

        def execute(script, timeout_ms = nil, working_dir = nil, env_vars = [])
          result = super
          return result unless calls.last.method == 'Set'

          literal = "'#{secret.gsub(/['\u2018\u2019\u201A\u201B]/) { |q| q * 2 }}'"
          at = script.index(literal) or raise 'the script holds the quoted secret'
          from = (script.rindex("\n", at) || -1) + 1
          to = script.index("\n", at + literal.size) || script.size
          excerpt = script[from...to].lines.map { |line| "+ #{line.chomp}" }.join("\n")
          FakePwshManager.output({ indesiredstate: false, rebootrequired: false,
                                   errormessage: "At line:40 char:1\n#{excerpt}\n+ ~~~~\nUnexpected token." }.to_json)
        end
      end.new
    end

    # Each form a secret takes in a script: as is, quote-doubled, and each
    # line of it (long enough to be told apart from ordinary text).
    def forms(secret)
      escaped = secret.gsub(/['\u2018\u2019\u201A\u201B]/) { |q| q * 2 }
      [secret, escaped, *secret.split(/\r\n|\r|\n/), *escaped.split(/\r\n|\r|\n/)].select { |f| f.length >= 4 }
    end

    it 'never logs what the system reports for Sensitive-typed attributes, and returns it as Sensitive' do
      secrets = Array.new(300) { |i| password(i) }
      manager = FakePwshManager.new
      allow(provider).to receive(:ps_manager).and_return(manager)
      secrets.each_with_index do |secret, i|
        manager.get_result = {
          'VaultName' => "vault#{i}", 'Ensure' => 'Present', 'Secret' => secret, 'Note' => 'old',
          'Settings' => { 'Label' => 'label', 'Token' => secret },
          'Endpoints' => [{ 'cim_instance_type' => 'MSFT_FixtureEndpoint', 'Address' => 'addr', 'ApiKey' => secret }],
          'Credential' => { 'user' => 'u', 'password' => secret }
        }
        title = { name: "vault#{i}", dsc_vaultname: "vault#{i}" }
        canonical = provider.canonicalize(context, [title.merge(dsc_note: 'new')]).first
        current = provider.get(context, [title]).first
        expect([current[:dsc_secret], current[:dsc_settings]['token'], current[:dsc_endpoints].first['apikey'],
                current[:dsc_credential]['password']]).to all(be_a(sensitive))
        expect(current[:dsc_secret].unwrap).to eq(secret)
        expect(provider.insync?(context, title, :dsc_note, current, canonical)).to eq([false, "dsc_note changed 'old' to 'new'"])
      end
      raw = context.logged(:debug).grep(/raw data received/)
      expect(raw.size).to eq(300)
      expect(raw.first).to include('"Secret" => #<Sensitive [value redacted]>', '"Token" => #<Sensitive [value redacted]>',
                                   '"ApiKey" => #<Sensitive [value redacted]>', '"password" => #<Sensitive [value redacted]>')
      shown = context.messages.map(&:last).join("\n")
      expect(secrets.select { |secret| shown.include?(secret) }).to be_empty
    end

    it 'shows no form of a secret in an error that quotes the script' do
      secrets = Array.new(300) { |i| password(i) }
      manager = quoting_manager
      allow(provider).to receive(:ps_manager).and_return(manager)
      leaked = secrets.each_with_index.flat_map do |secret, i|
        manager.secret = secret
        manager.get_result = { 'VaultName' => "vault#{i}", 'Ensure' => 'Present' }
        title = { name: "vault#{i}", dsc_vaultname: "vault#{i}" }
        should = title.merge(dsc_secret: sensitive.new(secret), dsc_settings: { 'label' => 'l', 'token' => sensitive.new(secret) })
        before = context.messages.size
        provider.invoke_set_method(context, title, should)
        # A line of one secret may be the marker text that other messages
        # rightly show: each secret is looked for in its own messages.
        shown = context.messages.drop(before).map(&:last).join("\n")
        forms(secret).select { |form| shown.include?(form) }
      end
      errors = context.logged(:err)
      expect(errors.size).to eq(300)
      expect(errors).to all(start_with('dsc_fixturevault[vault').and(include("At line:40 char:1\n+ ")))
      expect(leaked).to be_empty
    end

    # A caller of invoke_dsc_resource (a subclass, a task) may pass a
    # Sensitive-typed attribute's value as a plain String: the --debug dump
    # of the script hides it as it hides a wrapped one, and the wire holds it.
    it 'hides unwrapped values of Sensitive-typed attributes in the --debug script' do
      secrets = Array.new(200) { |i| password(i) }
      manager = FakePwshManager.new
      allow(provider).to receive(:ps_manager).and_return(manager)
      leaked = secrets.each_with_index.flat_map do |secret, i|
        title = { name: "vault#{i}", dsc_vaultname: "vault#{i}" }
        props = { dsc_vaultname: "vault#{i}", dsc_secret: secret,
                  dsc_settings: { 'label' => 'label', 'token' => secret },
                  dsc_endpoints: [{ 'address' => 'addr', 'apikey' => secret }],
                  dsc_credential: { 'user' => 'u', 'password' => secret } }
        before = context.messages.size
        provider.invoke_dsc_resource(context, title, props, 'set')
        shown = context.messages.drop(before).map(&:last).join("\n")
        expect(shown).to include('Sending Invoke-DscResource Set ')
        forms(secret).select { |form| shown.include?(form) }
      end
      expect(leaked).to be_empty
      sent = manager.calls.map(&:script)
      expect(sent.size).to eq(200)
      expect(sent.last).to satisfy(&inline_assignment('secret', secrets.last))
    end

    # The pwshlib 2.x script helpers that an override of invoke_dsc_resource
    # calls: invocable_resource marks the Sensitive-typed values it is given
    # in the clear by their type, so that ps_script_content's marked text
    # redacts them (redact_secrets) and still sends them (remove_secret_identifiers).
    it 'hides unwrapped values of Sensitive-typed attributes in the 2.x script helpers' do
      secrets = Array.new(200) { |i| password(i) }
      leaked = secrets.each_with_index.flat_map do |secret, i|
        should = { name: "vault#{i}", dsc_vaultname: "vault#{i}", dsc_secret: secret,
                   dsc_settings: { 'label' => 'label', 'token' => secret },
                   dsc_endpoints: [{ 'address' => 'addr', 'apikey' => secret }],
                   dsc_credential: { 'user' => 'u', 'password' => secret } }
        script = provider.ps_script_content(provider.invocable_resource(should, context, 'set'))
        sent = provider.remove_secret_identifiers(script)
        expect(sent).to satisfy(&inline_assignment('secret', secret))
        shown = provider.redact_secrets(script)
        expect(shown).not_to eq(sent)
        forms(secret).select { |form| shown.include?(form) }
      end
      expect(leaked).to be_empty
    end

    # A 2.x override may build or edit the resource hash itself, putting a
    # Sensitive-typed value in the clear: ps_script_content marks it by its
    # attribute's type all the same, once the provider knows its type (any
    # lifecycle call of the run tells it).
    it 'hides unwrapped values of Sensitive-typed attributes in a resource hash edited by hand' do
      provider.canonicalize(context, [])
      secrets = Array.new(200) { |i| password(i) }
      leaked = secrets.each_with_index.flat_map do |secret, i|
        should = { name: "vault#{i}", dsc_vaultname: "vault#{i}", dsc_secret: 'placeholder' }
        resource = provider.invocable_resource(should, context, 'set')
        resource[:parameters][:dsc_secret][:value] = secret
        resource[:parameters][:dsc_settings] = { value: { 'label' => 'l', 'token' => secret }, mof_type: 'Hashtable',
                                                 mof_is_embedded: false }
        script = provider.ps_script_content(resource)
        sent = provider.remove_secret_identifiers(script)
        expect(sent).to satisfy(&inline_assignment('secret', secret))
        shown = provider.redact_secrets(script)
        expect(shown).not_to eq(sent)
        forms(secret).select { |form| shown.include?(form) }
      end
      expect(leaked).to be_empty
    end
  end
end
