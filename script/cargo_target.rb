# frozen_string_literal: true

require 'json'
require 'open3'
require 'rbconfig'

# Where cargo builds this checkout: the one place that asks.
# Cargo decides: CARGO_TARGET_DIR, else build.target-dir of a
# .cargo/config.toml (the checkout's, a folder above it, or CARGO_HOME's),
# else <checkout>/target; `cargo metadata` says which. Every rake task,
# script, example, spec helper and benchmark that looks for the library or
# pwshlib-sim finds them through here, never at a path of its own. Cargo is
# asked once per process (it takes some 100 ms); the answer is kept, and
# rake hands the simulated host to the RSpec it starts (PWSHLIB_SIM), so a
# suite run by rake asks nothing.
#
#   require_relative '<checkout>/script/cargo_target'
#     CargoTarget.dir                      the target directory
#     CargoTarget.release('libpwshlib.so') a file of the release profile
#     CargoTarget.sim                      the simulated host, pwshlib-sim
#   ruby script/cargo_target.rb [PATH...]  prints the directory, or each PATH
#                                          inside it (for the shell scripts)
#
# What lives under <checkout>/target that is not cargo's build (CI logs,
# the wine prefix, the Windows toolchain's wrappers and the Debian roots'
# Windows builds: docs/testing.md) stays in the checkout.
module CargoTarget
  ROOT = File.expand_path('..', __dir__)
  EXEEXT = RbConfig::CONFIG['EXEEXT']
  @dirs = {}

  class << self
    # The target directory of the workspace at root (this checkout unless
    # given), as cargo run there would use it.
    def dir(root = ROOT)
      @dirs[root] ||= ask(root)
    end

    def release(*parts)
      File.join(dir, 'release', *parts)
    end

    def sim
      release("pwshlib-sim#{EXEEXT}")
    end

    # cargo from the PATH, else where rustup puts it (the scripts add
    # ~/.cargo/bin to the PATH; a spec run by hand may not have).
    def cargo
      name = "cargo#{EXEEXT}"
      on_path = ENV.fetch('PATH', '').split(File::PATH_SEPARATOR).map { |d| File.join(d, name) }.find { |f| File.executable?(f) }
      on_path || File.join(ENV.fetch('CARGO_HOME') { File.join(Dir.home, '.cargo') }, 'bin', name)
    end

    private

    def ask(root)
      out, err, status = Open3.capture3(cargo, 'metadata', '--format-version', '1', '--no-deps', chdir: root)
      raise "cargo metadata in #{root} failed: #{err.strip}" unless status.success?

      JSON.parse(out).fetch('target_directory')
    rescue Errno::ENOENT
      raise "cargo not found (#{cargo}): install Rust with rustup, or put cargo on the PATH"
    end
  end
end

if File.expand_path($PROGRAM_NAME) == File.expand_path(__FILE__)
  puts CargoTarget.dir if ARGV.empty?
  ARGV.each { |path| puts File.join(CargoTarget.dir, path) }
end
