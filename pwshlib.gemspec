# frozen_string_literal: true

require_relative 'lib/pwsh/version'
require_relative 'lib/pwshlib/agent_abis'

Gem::Specification.new do |spec|
  spec.name = 'pwshlib'
  spec.version = Pwsh::VERSION
  spec.summary = 'Native (Rust) DSC base provider and PowerShell host manager for Puppet'
  spec.description = 'A drop-in replacement for the internals of the pwshlib Puppet module: ' \
                     'Puppet::Provider::DscBaseProvider and Pwsh::Manager, written in Rust.'
  spec.authors = ['pwshlib developers']
  spec.license = 'MIT'
  spec.homepage = 'https://example.invalid/pwshlib'
  spec.required_ruby_version = '>= 3.1'

  # Only sources: no target/, no built libraries; the extension builds at install time.
  spec.files = Dir.chdir(__dir__) do
    Dir['lib/**/*.rb', 'lib/templates/*.ps1', 'lib/templates/*.cs', 'lib/pwshlib/agent_abis.tsv', 'ext/**/*.{rs,rb,toml}', 'Cargo.toml', 'Cargo.lock',
        'README.md', 'CHANGELOG.md', 'metadata.json', 'docs/*.md'].reject { |f| f.start_with?('target/') || f.include?('/target/') }
  end
  spec.require_paths = ['lib']

  # A platform gem (`rake gem:windows`), as rake-compiler's cross gems: it
  # carries the library prebuilt for one Ruby ABI and platform where
  # lib/pwshlib.rb looks first, and builds nothing at install time, so Windows
  # needs no compiler.
  platform = ENV.fetch('PWSHLIB_GEM_PLATFORM', nil)
  if platform
    abi = ENV.fetch('PWSHLIB_GEM_RUBY_ABI')
    library = "lib/pwshlib/#{abi}/#{platform}/pwshlib.so"
    raise "#{library} is missing: run `rake gem:windows`" unless File.file?(File.join(__dir__, library))
    # Only the table's rows become platform gems (lib/pwshlib/agent_abis.tsv).
    raise Pwshlib::AgentAbis.describe(abi, platform) unless Pwshlib::AgentAbis.find(abi, platform)

    spec.platform = Gem::Platform.new(platform)
    # Narrows what the source gem says: one Ruby minor version, its files
    # without the sources it would build.
    # rubocop:disable Gemspec/DuplicatedAssignment
    spec.required_ruby_version = "~> #{abi}.0"
    spec.files = spec.files.grep_v(%r{\Aext/}) + [library]
    # rubocop:enable Gemspec/DuplicatedAssignment
  else
    spec.extensions = ['ext/pwshlib/extconf.rb']
  end
end
