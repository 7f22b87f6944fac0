# frozen_string_literal: true

require_relative 'real_dsc_machine'
require_relative '../../support/puppet_resource'

# `puppet resource dsc_x` on the real pwsh 7: the host calls the resource's
# own Export (PwshlibHost.Export.cs), a class's `static [RealSetting[]]
# Export()` and a script module's Export-TargetResource (RealKeyed), and
# each instance comes back as a Get's result; a resource without one
# (RealPool, RealAccount) says so in one line.
module RealPwshDsc
  module Export
    SECRET = Acceptance.generate_secret('export')

    # Stores an instance as the fixture module does (Write-RealState): one
    # file per instance, named by its key's UTF-8 bytes in hex.
    def self.store(machine, resource, key, properties)
      folder = File.join(machine.state_dir, resource)
      FileUtils.mkdir_p(folder)
      File.write(File.join(folder, "#{key.b.unpack1('H*')}.json"), JSON.generate(properties))
    end

    def self.list(machine, type)
      PuppetResource.run(machine, type, module_path: MODULE_PATH, env: machine.real_env)
    end

    RSpec.describe 'puppet resource dsc_x on the real pwsh: the resource lists itself' do
      let(:machine) { Machine.new('export') }

      after { machine.cleanup }

      it "lists what a class's static Export() returns, each as its Get reads it, the secret never shown" do
        Export.store(machine, 'RealSetting', 'Größe-ü', 'Name' => 'Größe-ü', 'Credential' => { 'user' => 'CONTOSO\\svc-ü', 'password' => SECRET },
                                                        'Tags' => %w[blue grün], 'Count' => 42, 'Enabled' => true, 'Description' => 'Grüße 🔑')
        Export.store(machine, 'RealSetting', 'plain', 'Name' => 'plain', 'Count' => 7)
        listing = Export.list(machine, 'dsc_realsetting')
        expect(listing.exitcode).to eq(0), listing.to_s
        expect(listing.stdout.scan(/^dsc_realsetting \{ '([^']+)':/).flatten).to contain_exactly('Größe-ü', 'plain'), listing.to_s
        expect(listing.stdout).to include('dsc_count => 42', "dsc_description => 'Grüße 🔑'", "dsc_tags => ['blue', 'grün']",
                                          "dsc_ensure => 'Present'", 'dsc_enabled => true'), listing.to_s
        # As its Get reports it on PowerShell 7: a PSCredential reads as its
        # user without a password (ConvertTo-PwshlibCanonicalValue), which
        # the type's schema cannot take, so it is left out, never guessed.
        expect(listing.stdout).not_to include('dsc_credential')
        token = Acceptance.secret_token(SECRET)
        expect(listing.stdout + listing.stderr).not_to include(token)
        expect(listing.stdout + listing.stderr).not_to include(token.reverse)
        expect(machine.calls.map { |call| [call['resource'], call['method']] }).to eq([%w[RealSetting Export]])
      end

      it "lists what a script module's Export-TargetResource returns, a listing that applies with 0 changes" do
        Export.store(machine, 'RealKeyed', 'alpha', 'Name' => 'alpha', 'Value' => 'A')
        Export.store(machine, 'RealKeyed', 'beta', 'Name' => 'beta', 'Value' => 'B')
        listing = Export.list(machine, 'dsc_realkeyed')
        expect(listing.exitcode).to eq(0), listing.to_s
        expect(listing.stdout.scan(/^dsc_realkeyed \{ '([^']+)':/).flatten).to eq(%w[alpha beta]), listing.to_s
        expect(listing.stdout).to include("dsc_value => 'A'", "dsc_value => 'B'")
        run = machine.apply(listing.stdout)
        expect(run.exitcode).to eq(0), run.to_s
        expect(run.calls.map { |call| call['method'] }).not_to include('Set')
      end

      it 'says in one line that a class or a script module without Export cannot list itself' do
        { 'dsc_realpool' => "its class 'RealPool' defines no static Export() method",
          'dsc_realaccount' => 'its module defines no Export-TargetResource function' }.each do |type, why|
          listing = Export.list(machine, type)
          expect(listing.exitcode).to eq(0), listing.to_s
          expect(listing.stdout.strip).to eq('')
          lines = (listing.stdout + listing.stderr).lines.grep(/cannot list/)
          expect(lines.size).to eq(1), listing.to_s
          expect(lines.first).to include("#{type}: cannot list instances", why)
        end
      end
    end
  end
end
