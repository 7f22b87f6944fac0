# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/puppet_resource'

# `puppet resource dsc_x` and `resources { purge => true }` on the
# simulated host: `get` without names lists what the resource exports (the
# simulator's stored instances), each as its Get reports it; a resource
# that cannot list itself (the state file's `no_export`) says so in one
# line. The real pwsh's Export is spec/real_pwsh/dsc/export_spec.rb.
module AcceptanceExport
  def self.seed(machine, users:, no_export: [])
    machine.edit_state do |state|
      state['resources'] = { 'FixtureUser' => users }
      state['no_export'] = no_export
    end
  end

  RSpec.describe 'puppet resource dsc_x: the resource lists itself through its Export' do
    let(:machine) { Acceptance::Machine.new('export') }
    let(:secret) { Acceptance.generate_secret('export') }

    after { machine.cleanup }

    it 'prints each exported instance as a manifest, titled by its key, its secret never shown' do
      AcceptanceExport.seed(machine, users: [
                              { 'UserName' => 'alice', 'FullName' => 'Alice A', 'Password' => { 'user' => 'alice', 'password' => secret } },
                              { 'UserName' => 'bob', 'FullName' => 'Bob B', 'Ensure' => 'Present' },
                              { 'UserName' => 'carol', 'Ensure' => 'Absent' },
                            ])
      listing = PuppetResource.run(machine, 'dsc_fixtureuser')
      expect(listing.exitcode).to eq(0), listing.to_s
      expect(listing.stdout.scan(/^dsc_fixtureuser \{ '(\w+)':/).flatten).to eq(%w[alice bob]), listing.to_s
      expect(listing.stdout).to include("dsc_fullname => 'Alice A'", "dsc_fullname => 'Bob B'", "dsc_ensure => 'Present'")
      expect(listing.stdout).to include("'password' => #<Sensitive [value redacted]>")
      token = Acceptance.secret_token(secret)
      expect(listing.stdout + listing.stderr).not_to include(token)
      expect(listing.stdout + listing.stderr).not_to include(token.reverse)
      expect(listing.calls.map { |call| call['method'] }).to eq(['Export'])
    end

    it 'prints a listing that applies again with no changes' do
      AcceptanceExport.seed(machine, users: [
                              { 'UserName' => 'dave', 'FullName' => 'Dave D' },
                              { 'UserName' => 'erin', 'FullName' => 'Erin E', 'Ensure' => 'Present' },
                            ])
      listing = PuppetResource.run(machine, 'dsc_fixtureuser')
      expect(listing.exitcode).to eq(0), listing.to_s
      run = machine.apply(listing.stdout)
      expect(run.exitcode).to eq(0), run.to_s
      expect(run.calls.map { |call| call['method'] }.uniq).to eq(['Get']), run.to_s
      expect(run.calls.size).to eq(2)
    end

    it 'says in one line that a resource without Export cannot list itself, and lists nothing' do
      AcceptanceExport.seed(machine, users: [{ 'UserName' => 'frank' }], no_export: ['FixtureUser'])
      listing = PuppetResource.run(machine, 'dsc_fixtureuser')
      expect(listing.exitcode).to eq(0), listing.to_s
      expect(listing.stdout.strip).to eq('')
      lines = (listing.stdout + listing.stderr).lines.grep(/cannot list/)
      expect(lines.size).to eq(1), listing.to_s
      expect(lines.first).to include("dsc_fixtureuser: cannot list instances: the DSC resource 'FixtureUser'", 'Export-TargetResource')
    end

    it 'reads one instance by its keys with the one Get it makes for a catalog' do
      AcceptanceExport.seed(machine, users: [{ 'UserName' => 'grace', 'FullName' => 'Grace G' }])
      listing = PuppetResource.run(machine, 'dsc_fixtureuser', 'grace', 'dsc_username=grace')
      expect(listing.exitcode).to eq(0), listing.to_s
      expect(listing.stdout).to include("dsc_fixtureuser { 'grace':", "dsc_fullname => 'Grace G'")
      expect(listing.calls.map { |call| call['method'] }).to eq(['Get'])
    end
  end

  # Puppet's `resources` type purges only types with an `ensure` attribute
  # (Puppet::Type::Resources#validate): a scaffolded DSC type has
  # `dsc_ensure` instead, so Puppet refuses the purge itself, before any
  # provider runs, and nothing on the machine changes.
  RSpec.describe 'resources { dsc_x: purge => true } on a scaffolded type' do
    let(:machine) { Acceptance::Machine.new('purge') }

    after { machine.cleanup }

    it 'is refused by Puppet, which purges only types with ensure, and changes nothing' do
      users = [{ 'UserName' => 'kept', 'FullName' => 'Kept K' }, { 'UserName' => 'stray', 'FullName' => 'Stray S' }]
      AcceptanceExport.seed(machine, users: users)
      kept = Acceptance.resource('dsc_fixtureuser', 'kept', 'dsc_username' => 'kept', 'dsc_fullname' => 'Kept K')
      manifest = "resources { 'dsc_fixtureuser': purge => true }\n#{kept}"
      run = machine.apply(manifest)
      expect(run.exitcode).to eq(1), run.to_s
      expect(run.output).to include("Purging is only supported on types that accept 'ensure'")
      expect(run.calls).to eq([])
      expect(Acceptance.stored_all(machine.state)['fixtureuser']).to eq(users)
    end
  end
end
