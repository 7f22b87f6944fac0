# frozen_string_literal: true

require 'json'
require_relative '../spec_helper_real_pwsh'
require_relative '../../support/fake_manager'

# One call, two forms: the data pwshlib's host gets (docs/protocol.md, "DSC
# calls as data") and the script text a non-pwshlib manager gets
# (PWSHLIB_DSC_DATA=0 sends it to this host too). Generated calls of three
# realdsc resources (typed scalars and a credential; a free-form hash,
# Sensitive leaves, embedded instances with Sensitive members; embedded
# class instances) are set once in each form on the real pwsh, and the
# resource must store the same thing either way.
RSpec.describe 'the rendered text and the data of a call, on the real pwsh' do
  include_context 'the realdsc providers on the real pwsh'

  let(:pieces) { ["'", '"', "\u2019", '`', '$(whoami)', '$x', '@{', '}', ';', "\n", 'ü', '漢', '#', ' ', 'a', 'Z', '9'] }

  def text(rng)
    Array.new(rng.rand(1..8)) { pieces.sample(random: rng) }.join
  end

  def hidden(value)
    sensitive.new(value)
  end

  def free_hash(rng, depth = 0)
    Array.new(rng.rand(1..3)) do |i|
      value = case rng.rand(depth > 1 ? 4 : 6)
              when 0 then text(rng)
              when 1 then rng.rand(-5..5_000_000_000)
              when 2 then [true, false].sample(random: rng)
              when 3 then hidden(text(rng))
              when 4 then [text(rng), rng.rand(100)]
              else free_hash(rng, depth + 1)
              end
      ["k#{i}#{text(rng).gsub(/[^a-z]/i, '')}", value]
    end.to_h
  end

  def vault(name, rng)
    { dsc_name: name, dsc_ensure: 'Present', dsc_credential: { 'user' => text(rng), 'password' => hidden(text(rng)) },
      dsc_secret: hidden(text(rng)), dsc_settings: free_hash(rng),
      dsc_endpoints: Array.new(rng.rand(1..3)) { { 'address' => text(rng), 'apikey' => hidden(text(rng)) } },
      dsc_phrases: Array.new(rng.rand(0..3)) { hidden(text(rng)) }, dsc_note: text(rng) }
  end

  def setting(name, rng)
    { dsc_name: name, dsc_ensure: 'Present', dsc_tags: Array.new(rng.rand(0..3)) { text(rng) },
      dsc_count: rng.rand(0..4_294_967_295), dsc_enabled: [true, false].sample(random: rng),
      dsc_expires: Time.at(rng.rand(2_000_000_000), in: 'UTC').iso8601, dsc_description: text(rng),
      dsc_credential: { 'user' => text(rng), 'password' => hidden(text(rng)) } }
  end

  def pool(name, rng)
    option = -> { { 'key' => text(rng), 'mode' => %w[Fast slow].sample(random: rng) } }
    { dsc_name: name, dsc_ensure: 'Present', dsc_options: Array.new(rng.rand(1..3)) { option.call },
      dsc_primary: option.call }
  end

  def logins(name, rng)
    { dsc_name: name,
      dsc_logins: Array.new(rng.rand(1..3)) { { 'user' => text(rng), 'password' => hidden(text(rng)) } } }
  end

  # What the resource stored for `name`, but for the name itself.
  def stored(resource, name)
    path = File.join(ENV.fetch('PWSHLIB_REAL_DSC_STATE'), resource, "#{name.b.unpack1('H*')}.json")
    JSON.parse(File.read(path, encoding: 'UTF-8')).except('Name')
  end

  def set(type, name, should, data:)
    ENV['PWSHLIB_DSC_DATA'] = data ? nil : '0'
    provider = provider_class_for(type).new
    context = recording_context(type)
    provider.invoke_dsc_resource(context, { name: name, dsc_name: name }, should, 'set')
    expect(context.logged(:err)).to eq([]), "#{type} #{name}"
  ensure
    ENV.delete('PWSHLIB_DSC_DATA')
  end

  {
    dsc_realvault: ['RealVault', :vault],
    dsc_realsetting: ['RealSetting', :setting],
    dsc_realpool: ['RealPool', :pool],
    dsc_reallogins: ['RealLogins', :logins],
  }.each do |type, (resource, generator)|
    it "stores the same for #{resource}, called either way" do
      rng = Random.new(56)
      4.times do |i|
        seed = rng.rand(1 << 30)
        should = ->(name) { send(generator, name, Random.new(seed)) }
        set(type, "data-#{i}", should.call("data-#{i}"), data: true)
        set(type, "text-#{i}", should.call("text-#{i}"), data: false)
        expect(stored(resource, "data-#{i}")).to eq(stored(resource, "text-#{i}")), "case #{i} (seed #{seed})"
      end
    end
  end

  # A PSCredential[] reaches the resource's [PSCredential[]] parameter as
  # credentials, either way.
  [true, false].each do |data|
    it "gives a resource a credential array as its parameter takes it (#{data ? 'data' : 'text'})" do
      name = "logins-#{data}"
      should = { dsc_name: name, dsc_logins: [{ 'user' => 'svc', 'password' => hidden('pw-1') },
                                              { 'user' => 'ops', 'password' => hidden("p'w-2") }] }
      set(:dsc_reallogins, name, should, data: data)
      expect(stored('RealLogins', name)).to eq(
        'Logins' => [{ 'user' => 'svc', 'password' => 'pw-1' }, { 'user' => 'ops', 'password' => "p'w-2" }]
      )
    end
  end
end
