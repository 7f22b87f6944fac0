# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# What `puppet apply --debug` shows of pwshlib: each call as one line of
# the data it sends, the prelude by its id and files (never its text), and
# each call's time. Five resources in sync print at most 150 lines of
# pwshlib's own (the provider's and the manager's, not Puppet's).
module AcceptanceDebugOutput
  PATHS = Array.new(5) { |i| "C:\\Temp\\Debug#{i}.txt" }.freeze

  def self.manifest
    PATHS.each_with_index.map do |path, i|
      Acceptance.resource('dsc_fixturefile', "debug-#{i}", {
                            'dsc_destinationpath' => path, 'dsc_ensure' => 'Present', 'dsc_contents' => "n#{i}"
                          })
    end.join("\n")
  end

  # The lines of pwshlib's own messages: those Puppet tags with a DSC
  # type's name, and the lines a message of theirs runs on to.
  def self.own_lines(output)
    own = false
    output.lines.select do |line|
      own = line.match?(/\ADebug: dsc_fixturefile/) if line.match?(/\A(Debug|Info|Notice|Warning|Error):/)
      own
    end
  end

  RSpec.describe 'puppet apply --debug of five resources in sync' do
    before(:all) do
      @machine = Acceptance::Machine.new('debug-output')
      @machine.apply(AcceptanceDebugOutput.manifest)
      @in_sync = @machine.apply(AcceptanceDebugOutput.manifest)
    end

    after(:all) { @machine&.cleanup }

    let(:own) { AcceptanceDebugOutput.own_lines(@in_sync.output) }

    it 'changes nothing' do
      expect(@in_sync.exitcode).to eq(0), @in_sync.to_s
    end

    it 'prints at most 150 lines of its own' do
      expect(own.size).to be_between(10, 150), own.join
    end

    it 'shows each call as one line of its data, and its time' do
      sent = own.grep(/Sending Invoke-DscResource Get FixtureFile from PwshlibFixtureDsc 1\.2\.0, direct/)
      expect(sent.size).to eq(5)
      expect(own.grep(/Invoke-DscResource Get took \d+\.\d{5} s/).size).to eq(5)
    end

    it 'names the prelude by its id and files, never its text' do
      expect(own.grep(%r{Prelude dsc-\h{16} \(lib/templates/dsc_prelude_values\.ps1}).size).to eq(1)
      expect(@in_sync.output).not_to include('function Invoke-PwshlibDscResource')
    end
  end
end
