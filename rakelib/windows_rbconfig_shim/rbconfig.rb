# frozen_string_literal: true

# RbConfig of a Windows Ruby, read by the Linux Ruby: the shim behind
# `rake compile:windows` (rakelib/windows.rake).
#
# Why it exists: rb-sys, which builds the extension, learns where Ruby's
# headers and libraries are and what they are called by running
# `$RUBY --disable-gems -rrbconfig -e ...`. Cross-compiling from Linux, the
# Ruby it must describe is the Windows one, which cannot run here (wine
# would do, but slowly and not inside a Debian root). So RUBY points at a
# wrapper (target/rbconfig-shim/<platform>/ruby) that runs the Linux Ruby
# with this directory first on the load path and the Windows Ruby's
# rbconfig.rb in PWSHLIB_WINDOWS_RBCONFIG: `require 'rbconfig'` finds this
# file, which loads that one instead of the Linux Ruby's own.
#
# A Ruby's rbconfig.rb refuses to load into a Ruby of another version (it
# raises unless RUBY_VERSION is its own), so RUBY_VERSION is the Windows
# Ruby's for the load, and the Linux Ruby's again after it.
target = ENV.fetch('PWSHLIB_WINDOWS_RBCONFIG')
source = File.read(target)
version = %w[MAJOR MINOR TEENY].map { |key| source[/CONFIG\["#{key}"\] = "(\d+)"/, 1] }.join('.')
host_version = RUBY_VERSION
verbose = $VERBOSE
$VERBOSE = nil
Object.send(:remove_const, :RUBY_VERSION)
Object.const_set(:RUBY_VERSION, version.freeze)
load target
Object.send(:remove_const, :RUBY_VERSION)
Object.const_set(:RUBY_VERSION, host_version)
$VERBOSE = verbose
