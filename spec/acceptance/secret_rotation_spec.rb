# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/acceptance_scenario'

# A rotated secret, through two `puppet apply --debug` runs on
# one simulated machine: run 1 stores secret A, run 2 declares secret B in
# the same places. In `rotated-vault`: a member of a free-form hash, an item
# of an array in it, a member of a hash in it, the Sensitive-typed members
# of a hash and of an embedded CIM instance, and a Sensitive-typed
# attribute. In `rotated-hash`, with a pair of its own: the free-form hash
# alone, where no type says Sensitive (the case the issue found: nothing
# else told the text scrub what A was). Run 2's Get finds A in all of them,
# which the desired state marks Sensitive. Neither A nor B may show in the
# output, the report or any file Puppet keeps.
module AcceptanceSecretRotation
  OLD_SECRET = Acceptance.generate_secret('rotatedold')
  NEW_SECRET = Acceptance.generate_secret('rotatednew')
  OLD_HASH_SECRET = Acceptance.generate_secret('hashold')
  NEW_HASH_SECRET = Acceptance.generate_secret('hashnew')
  SECRETS = [OLD_SECRET, NEW_SECRET, OLD_HASH_SECRET, NEW_HASH_SECRET].freeze
  TITLE = 'rotated-vault'
  HASH_TITLE = 'rotated-hash'

  def self.free_hash(hidden)
    { 'hk' => hidden, 'pub' => 'visible-text', 'list' => ['item-text', hidden], 'nested' => { 'deep' => hidden } }
  end

  def self.manifest(declared, declared_in_hash)
    hidden = Acceptance.sensitive(declared)
    [
      Acceptance.resource('dsc_fixturevault', TITLE, {
                            'dsc_vaultname' => TITLE,
                            'dsc_ensure' => 'Present',
                            'dsc_secret' => hidden,
                            'dsc_options' => free_hash(hidden),
                            'dsc_settings' => { 'label' => 'label-text', 'token' => hidden },
                            'dsc_endpoints' => [{ 'address' => 'addr', 'apikey' => hidden }],
                          }),
      Acceptance.resource('dsc_fixturevault', HASH_TITLE, {
                            'dsc_vaultname' => HASH_TITLE,
                            'dsc_ensure' => 'Present',
                            'dsc_options' => free_hash(Acceptance.sensitive(declared_in_hash)),
                          }),
    ].join("\n")
  end

  RSpec.describe 'puppet apply of a secret rotated between two runs' do
    include AcceptanceSecrets

    before(:all) do
      @machine = Acceptance::Machine.new('rotation')
      @first = @machine.apply(AcceptanceSecretRotation.manifest(OLD_SECRET, OLD_HASH_SECRET))
      @second = @machine.apply(AcceptanceSecretRotation.manifest(NEW_SECRET, NEW_HASH_SECRET))
    end

    after(:all) { @machine&.cleanup }

    let(:runs) { [@first, @second] }

    it 'creates the resource in run 1 and changes it in run 2 (exit 2 both times)' do
      expect(runs.map(&:exitcode)).to eq([2, 2]), runs.map(&:to_s).join("\n")
    end

    it 'stores B in the simulator in the end, in every place' do
      [[TITLE, NEW_SECRET], [HASH_TITLE, NEW_HASH_SECRET]].each do |title, secret|
        stored = Acceptance.stored_resource(@machine.state, 'FixtureVault', 'vaultname' => title)
        options = Acceptance.fetch_ci(stored, 'options')
        expect(Acceptance.fetch_ci(options, 'hk')).to eq(secret), title
        expect(Acceptance.fetch_ci(Acceptance.fetch_ci(options, 'nested'), 'deep')).to eq(secret), title
      end
      stored = Acceptance.stored_resource(@machine.state, 'FixtureVault', 'vaultname' => TITLE)
      expect(Acceptance.fetch_ci(stored, 'secret')).to eq(NEW_SECRET)
    end

    it "shows run 2's Get results with the marker wherever the manifest holds a Sensitive value" do
      [TITLE, HASH_TITLE].each do |title|
        raw = @second.output.lines.grep(/raw data received: .*"vaultname" => "#{title}"/i)
        expect(raw.size).to eq(1), "#{title}: #{@second}"
        expect(raw.first).to include('"hk" => #<Sensitive [value redacted]>', '"deep" => #<Sensitive [value redacted]>',
                                     '"pub" => "visible-text"')
      end
    end

    it 'never shows A or B, or any piece of either, in the debug output, stdout, stderr or the report' do
      expect_no_secret_shown(runs, SECRETS)
    end

    it 'never writes A or B into any file Puppet keeps (state, reports, caches, logs)' do
      tokens = SECRETS.flat_map do |secret|
        [Acceptance.secret_token(secret), Acceptance.secret_token(secret).reverse]
      end
      expect_no_file_holding(runs, tokens)
    end

    it 'hands A and then B to the simulator intact' do
      sent = runs.map { |run| strings_sent([run]) }
      expect(sent[0]).to include(OLD_SECRET, OLD_HASH_SECRET)
      expect(sent[1]).to include(NEW_SECRET, NEW_HASH_SECRET)
    end

    it 'logs no errors' do
      runs.each_with_index do |run, index|
        expect(run.logs.select { |level, _| %w[err crit alert emerg].include?(level) }).to eq([]), "run #{index + 1}"
      end
    end
  end
end
