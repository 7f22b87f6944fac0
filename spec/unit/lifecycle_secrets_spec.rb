# frozen_string_literal: true

require 'spec_helper'

# No secret may reach a log line, an error or a change message, whatever
# its text. Every context call is captured and searched for every password.
RSpec.describe 'Puppet::Provider::DscBaseProvider with secrets' do
  let(:provider) { provider_class_for(:dsc_fixtureuser).new }
  let(:context) { recording_context(:dsc_fixtureuser) }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:rng) { Random.new(20_240_229) }
  let(:alphabet) { ["'", '"', "\u2018", "\u2019", "\u201A", "\u201B", "\n", "\r\n", '`', '$', '@', '#<Sensitive [value redacted]>', 'é', '漢', ' ', '\\', 'a', 'Z', '9', '{', '}'] }

  # The random part gives every shape of content; the "pw<index>~" token
  # makes a leak findable by substring search even for one-character
  # contents, which would otherwise match hex in variable names by chance.
  def password(index)
    text = Array.new(rng.rand(1..24)) { alphabet.sample(random: rng) }.join
    "pw#{index}~#{text}"
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
end
