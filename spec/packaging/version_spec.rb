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

  it 'is one version everywhere: metadata.json, Pwsh::VERSION (the gem) and the Cargo workspace' do
    cargo = File.read(File.join(root, 'Cargo.toml'))[/^\[workspace\.package\].*?^version = "([^"]+)"/m, 1]
    expect([Pwsh::VERSION, cargo]).to eq([metadata_version, metadata_version])
  end
end
