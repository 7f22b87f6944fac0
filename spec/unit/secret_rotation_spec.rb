# frozen_string_literal: true

require 'spec_helper'

# A rotated secret: run 1 stores secret A, run 2 declares secret
# B where the manifest marks it Sensitive inside a free-form hash (a member,
# an array item), an embedded CIM instance and a plain String attribute,
# while the system still holds A. Neither may show in any form, through the
# whole lifecycle at --debug, nor in the error that retry_invoke_dsc_resource
# reports.
RSpec.describe 'Puppet::Provider::DscBaseProvider with a rotated secret' do
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }
  let(:rng) { Random.new(20_261_126) }
  let(:alphabet) do
    ["'", '"', "\u2018", "\u2019", "\u201A", "\u201B", "\n", "\r\n", '`', '$', '@', '#<Sensitive [value redacted]>', 'é', '漢', ' ', '\\', 'a', 'Z', '9',
     '{', '}']
  end

  # As in lifecycle_secrets_spec.rb: every shape, with a findable token.
  def secret(label, index)
    text = Array.new(rng.rand(1..24)) { alphabet.sample(random: rng) }.join
    "#{label}#{index}~#{text}"
  end

  def escape_quotes(text)
    text.gsub(/['\u2018\u2019\u201A\u201B]/) { |q| q * 2 }
  end

  # What the system holds after run 1 stored `held` (the fixture vault).
  def system_state(index, held)
    { 'VaultName' => "vault#{index}", 'Ensure' => 'Present', 'Secret' => held, 'Note' => held,
      'Options' => { 'hk' => held, 'pub' => 'visible-text', 'list' => ['item-text', held], 'nested' => { 'deep' => held } },
      'Endpoints' => [{ 'cim_instance_type' => 'MSFT_FixtureEndpoint', 'Address' => 'addr', 'ApiKey' => held }] }
  end

  # The manifest of a run that declares `declared`, Sensitive in each place.
  def manifest(index, declared)
    hidden = -> { sensitive.new(declared) }
    { name: "vault#{index}", dsc_vaultname: "vault#{index}", dsc_ensure: 'Present',
      dsc_secret: hidden.call, dsc_note: hidden.call,
      dsc_options: { 'hk' => hidden.call, 'pub' => 'visible-text', 'list' => ['item-text', hidden.call],
                     'nested' => { 'deep' => hidden.call } },
      dsc_endpoints: [{ 'address' => 'addr', 'apikey' => hidden.call }] }
  end

  # One Puppet run of one vault resource over `manager`, as the Resource
  # API drives it, with a fresh provider (a new run): everything it showed,
  # the change messages included.
  def puppet_run(manager, manifest)
    provider = provider_class_for(:dsc_fixturevault).new
    context = recording_context(:dsc_fixturevault)
    allow(provider).to receive(:ps_manager).and_return(manager)
    canonical = provider.canonicalize(context, [manifest]).first
    title = { name: manifest[:name], dsc_vaultname: manifest[:dsc_vaultname] }
    current = provider.get(context, [title]).first
    changes = %i[dsc_secret dsc_note dsc_options dsc_endpoints].filter_map do |property|
      result = provider.insync?(context, title, property, current, canonical)
      result.last if result.is_a?(Array)
    end
    raised = begin
      provider.set(context, title => { is: current, should: canonical })
      []
    rescue Puppet::Error => e # a failed Set fails its resource
      [e.message]
    end
    [(context.messages.map(&:last) + changes + raised).join("\n"), current, context]
  end

  # Run 1 stores A; run 2 finds A, declares B, and its Set fails with an
  # error that quotes both in the forms PowerShell and JSON give them.
  def rotate(index, old, new)
    manager = FakePwshManager.new('VaultName' => "vault#{index}", 'Ensure' => 'Absent')
    shown1, = puppet_run(manager, manifest(index, old))
    manager.get_result = system_state(index, old)
    quoting = "Cannot change '#{escape_quotes(old)}' to '#{escape_quotes(new)}': #{old.inspect} #{new.to_json} #{old} #{new}"
    failing = Class.new(SimpleDelegator) do
      define_method(:execute) do |script, *rest|
        result = __getobj__.execute(script, *rest)
        next result unless __getobj__.calls.last.method == 'Set'

        FakePwshManager.output({ indesiredstate: false, rebootrequired: false, errormessage: quoting }.to_json)
      end
    end.new(manager)
    shown2, current, context = puppet_run(failing, manifest(index, new))
    ["#{shown1}\n#{shown2}", current, context]
  end

  # Each form a secret takes (as lifecycle_secrets_spec.rb#forms): as is,
  # quote-doubled, each line; long enough to be told apart. A form that
  # holds the marker text cannot be told from what redaction shows (a line
  # of a secret that is the marker); the secret's other forms still count.
  def forms(secret)
    escaped = escape_quotes(secret)
    [secret, escaped, *secret.split(/\r\n|\r|\n/), *escaped.split(/\r\n|\r|\n/)]
      .select { |f| f.length >= 4 && !f.include?('#<Sensitive [value redacted]>') }
  end

  it 'shows no form of the old or the new secret, for 150 rotations of generated secrets' do
    raw_checked = 0
    leaked = Array.new(150) do |i|
      old = secret('old', i)
      new = secret('new', i)
      shown, current, context = rotate(i, old, new)
      expect(current[:dsc_options]['hk']).to be_a(sensitive)
      expect(current[:dsc_options]['hk'].unwrap).to eq(old)
      expect(current[:dsc_options]['nested']['deep']).to be_a(sensitive)
      expect(current[:dsc_options]['pub']).to eq('visible-text')
      expect(current[:dsc_note]).to be_a(sensitive)
      expect(current[:dsc_endpoints].first['apikey']).to be_a(sensitive)
      raw = context.logged(:debug).grep(/raw data received/).first
      # A secret that holds the marker text gets another marker there.
      unless [old, new].any? { |text| text.include?('#<Sensitive [value redacted]>') }
        raw_checked += 1
        expect(raw).to include('"hk" => #<Sensitive [value redacted]>', '"Note" => #<Sensitive [value redacted]>',
                               '"deep" => #<Sensitive [value redacted]>', '"pub" => "visible-text"')
      end
      expect(context.logged(:err).grep(/Cannot change/).size).to eq(1)
      (forms(old) + forms(new)).select { |form| shown.include?(form) }
    end
    expect(leaked.flatten).to be_empty
    expect(raw_checked).to be >= 50
  end

  # One- and two-character secrets are ordinary text (`\` is in every
  # Windows path): they must not show as a whole value, in any quoting or
  # escaping, any more often than long placeholders in their places do.
  it 'shows no rendering of short old or new secrets, backslashes and quotes too' do
    renderings = lambda do |text|
      ["'#{escape_quotes(text)}'", "\"#{text}\"", text.inspect, text.to_json]
    end
    comparable = ->(text) { text.gsub(/took [0-9.]+ s/, 'took N s').gsub(/\$(cred|cim)_\h{32}/, '$\1_NAME') }
    baseline, = rotate(0, 'placeholder-of-the-old-secret', 'placeholder-of-the-new-secret')
    baseline = comparable.call(baseline)
    shapes = ['\\', '\\\\', "'", '"', "\u2019", 'a', "\n", '$']
    extra = shapes.product(shapes).flat_map do |old, new|
      shown, current, = rotate(0, old, new)
      expect(current[:dsc_options]['hk'].unwrap).to eq(old)
      shown = comparable.call(shown)
      (renderings.call(old) + renderings.call(new)).uniq.filter_map do |form|
        count = shown.scan(form).size
        expected = baseline.scan(form).size
        "#{form.inspect} of #{old.inspect} → #{new.inspect}: #{count} > #{expected}" if count > expected
      end
    end
    expect(extra).to eq([])
  end

  describe '#retry_invoke_dsc_resource' do
    it 'scrubs the error it reports of every secret known in the run: desired, reported, and their forms' do
      leaked = Array.new(100) do |i|
        old = secret('old', i)
        new = secret('new', i)
        provider = provider_class_for(:dsc_fixturevault).new
        context = recording_context(:dsc_fixturevault)
        allow(provider).to receive(:ps_manager).and_return(FakePwshManager.new(system_state(i, old)))
        provider.canonicalize(context, [manifest(i, new)])
        provider.get(context, [{ name: "vault#{i}", dsc_vaultname: "vault#{i}" }])
        error = "busy: '#{escape_quotes(old)}' / '#{escape_quotes(new)}' / #{old.to_json} / #{new.inspect} / #{old} / #{new}"
        before = context.messages.size
        result = provider.retry_invoke_dsc_resource(context, 2, 0, /busy/) { { errormessage: error }.to_json }
        expect(result).to be_nil
        errors = context.messages.drop(before).select { |level, _| level == :err }.map(&:last)
        expect(errors.size).to eq(1)
        expect(errors.first).to include('busy: ').and(satisfy { |e| !e.include?(error) })
        (forms(old) + forms(new)).select { |form| errors.first.include?(form) }
      end
      expect(leaked.flatten).to be_empty
    end
  end
end
