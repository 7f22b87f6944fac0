# frozen_string_literal: true

# Loads pwshlib's native library (Rust, through magnus).
#
# Order of preference:
# 1. a prebuilt library for the running Ruby and platform:
#    lib/pwshlib/<major.minor>/<RUBY_PLATFORM>/pwshlib.so. One module tree
#    carries a library per Ruby and platform (Linux and Windows side by side),
#    because pluginsync sends the same module to every agent;
# 2. a prebuilt library for the running Ruby, of no named platform:
#    lib/pwshlib/<major.minor>/pwshlib.so (the layout before platforms);
# 3. a source build: lib/pwshlib/pwshlib.so (`rake compile`, or `gem install`);
# 4. `pwshlib/pwshlib` anywhere on the load path (a gem's extension dir).
module Pwshlib
  # Raised when no native library matches this Ruby.
  class NativeLibraryMissing < ::LoadError; end

  RUBY_ABI = RUBY_VERSION[/\A\d+\.\d+/]
  ROOT = File.expand_path('..', __dir__)
  NATIVE_DIR = File.join(__dir__, 'pwshlib')

  def self.native_candidates
    [File.join(NATIVE_DIR, RUBY_ABI, RUBY_PLATFORM, 'pwshlib.so'),
     File.join(NATIVE_DIR, RUBY_ABI, 'pwshlib.so'),
     File.join(NATIVE_DIR, 'pwshlib.so')]
  end

  # The prebuilt libraries this module carries, as "<abi>/<platform>" (or
  # "<abi>" for one of no named platform), for the error below.
  def self.carried_libraries
    Dir.glob(File.join(NATIVE_DIR, '*', '{*/,}pwshlib.so')).map do |path|
      File.dirname(path).delete_prefix("#{NATIVE_DIR}/")
    end.sort
  end

  def self.load_native!
    return if @native_loaded

    path = native_candidates.find { |candidate| File.file?(candidate) }
    begin
      require(path || 'pwshlib/pwshlib')
    rescue ::LoadError => e
      raise NativeLibraryMissing, missing_library_message(e)
    end
    @native_loaded = true
  end

  def self.missing_library_message(cause)
    carried = carried_libraries
    <<~MSG.strip
      pwshlib: no native library could be loaded for Ruby #{RUBY_VERSION} (ABI #{RUBY_ABI}) on #{RUBY_PLATFORM}.
      Looked for: #{native_candidates.join(', ')}, then 'pwshlib/pwshlib' on the load path (#{cause.message}).
      This module carries prebuilt libraries for: #{carried.empty? ? 'none' : carried.join(', ')} (Ruby ABI/platform).
      #{agent_abi_row}
      To build it from source, run `rake compile` in #{ROOT} (needs cargo and ruby-dev),
      or install the gem (`gem install pwshlib`), which builds it for this Ruby.
    MSG
  end

  # What the table of agent ABIs says about this Ruby: its row (and why it
  # carries no library), or where the missing row would go. Read only here,
  # on the way to an error; an unreadable table must not hide that error.
  def self.agent_abi_row
    require_relative 'pwshlib/agent_abis'
    AgentAbis.describe(RUBY_ABI, RUBY_PLATFORM)
  rescue StandardError, ::LoadError => e
    "The table of agent ABIs could not be read (#{e.class}: #{e.message})."
  end
end

Pwshlib.load_native!
