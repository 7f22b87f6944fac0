# frozen_string_literal: true

# Loads pwshlib's native library (Rust, through magnus).
#
# Order of preference:
# 1. a prebuilt library for the running Ruby: lib/pwshlib/<major.minor>/pwshlib.so
#    (what a Puppet module ships through pluginsync);
# 2. a source build: lib/pwshlib/pwshlib.so (`rake compile`, or `gem install`);
# 3. `pwshlib/pwshlib` anywhere on the load path (a gem's extension dir).
module Pwshlib
  # Raised when no native library matches this Ruby.
  class NativeLibraryMissing < ::LoadError; end

  RUBY_ABI = RUBY_VERSION[/\A\d+\.\d+/]
  ROOT = File.expand_path('..', __dir__)

  def self.native_candidates
    base = File.join(__dir__, 'pwshlib')
    [File.join(base, RUBY_ABI, 'pwshlib.so'), File.join(base, 'pwshlib.so')]
  end

  def self.load_native!
    return if @native_loaded

    path = native_candidates.find { |candidate| File.file?(candidate) }
    begin
      path ? require(path) : require('pwshlib/pwshlib')
    rescue ::LoadError => e
      raise NativeLibraryMissing, missing_library_message(e)
    end
    @native_loaded = true
  end

  def self.missing_library_message(cause)
    <<~MSG.strip
      pwshlib: no native library could be loaded for Ruby #{RUBY_VERSION} (ABI #{RUBY_ABI}) on #{RUBY_PLATFORM}.
      Looked for: #{native_candidates.join(', ')}, then 'pwshlib/pwshlib' on the load path (#{cause.message}).
      To build it from source, run `rake compile` in #{ROOT} (needs cargo and ruby-dev),
      or install the gem (`gem install pwshlib`), which builds it for this Ruby.
    MSG
  end
end

Pwshlib.load_native!
