# frozen_string_literal: true

require 'json'
require 'semantic_puppet'
require_relative '../../lib/pwsh/version'

# The module's version must satisfy the dependency ranges that published DSC
# modules declare on puppetlabs/pwshlib (README, "Version").
RSpec.describe 'the pwshlib version' do
  root = File.expand_path('../..', __dir__)
  metadata_version = JSON.parse(File.read(File.join(root, 'metadata.json')))['version']

  [
    '>= 0.4.0 < 2.0.0', # older generated modules
    '>= 1.1.0 < 2.0.0',
    '>= 0.4.0 < 3.0.0', # newer ones allow 2.x
    '>= 1.0.0 < 3.0.0',
  ].each do |range|
    it "satisfies #{range}" do
      expect(SemanticPuppet::VersionRange.parse(range)).to include(SemanticPuppet::Version.parse(metadata_version))
    end
  end

  # CI runs Puppet 7 and 8 and OpenVox 9 (script/test, script/test-root):
  # whichever runs this suite must be inside what metadata.json declares
  # (a pre-release, such as OpenVox 9.0.0-rc1, as its release).
  it 'declares puppet and openvox requirements that hold the Puppet running this suite' do
    require 'puppet/version'
    requirements = JSON.parse(File.read(File.join(root, 'metadata.json')))['requirements']
    expect(requirements.map { |r| r['name'] }).to contain_exactly('puppet', 'openvox')
    running = SemanticPuppet::Version.parse(Puppet.version[/\A\d+\.\d+\.\d+/])
    ranges = requirements.map { |r| SemanticPuppet::VersionRange.parse(r['version_requirement']) }
    expect(ranges.any? { |range| range.include?(running) }).to be(true), "Puppet #{Puppet.version} is outside #{requirements}"
  end

  it 'is one version everywhere: metadata.json, Pwsh::VERSION (the gem) and the Cargo workspace' do
    cargo = File.read(File.join(root, 'Cargo.toml'))[/^\[workspace\.package\].*?^version = "([^"]+)"/m, 1]
    expect([Pwsh::VERSION, cargo]).to eq([metadata_version, metadata_version])
  end
end
