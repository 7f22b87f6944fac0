# frozen_string_literal: true

require 'fileutils'
require 'open3'
require 'rbconfig'
require 'tmpdir'

# One module tree for every agent, as `rake prebuilt` fills it and pluginsync
# sends it: the Linux Ruby (here) and the Windows Ruby (under wine) each load
# their own library from lib/pwshlib/<abi>/<platform>/. Run by
# script/windows-check after `rake prebuilt`; needs PWSHLIB_WINDOWS_RUBY (the
# Windows Ruby's prefix) and the wine set-up that script makes.
RSpec.describe 'the module tree that rake prebuilt fills' do
  root = File.expand_path('../..', __dir__)
  windows_ruby = File.join(ENV.fetch('PWSHLIB_WINDOWS_RUBY'), 'bin', 'ruby.exe')
  report = 'require "pwshlib"; print RUBY_PLATFORM, "|", $LOADED_FEATURES.grep(/pwshlib\.so\z/).join(",")'

  around do |example|
    Dir.mktmpdir('pwshlib-module-tree') do |dir|
      # The module as shipped: lib/ with its prebuilt libraries, without the
      # source build (lib/pwshlib/pwshlib.so), so no fallback can stand in.
      FileUtils.cp_r(File.join(root, 'lib'), dir)
      @lib = File.join(dir, 'lib')
      FileUtils.rm_f(File.join(@lib, 'pwshlib', 'pwshlib.so'))
      example.run
    end
  end

  it 'carries a Linux and a Windows library, and each Ruby loads its own from it' do
    carried = Dir[File.join(@lib, 'pwshlib', '*', '*', 'pwshlib.so')].map { |path| path.delete_prefix("#{@lib}/pwshlib/") }
    linux_abi = RUBY_VERSION[/\A\d+\.\d+/]
    expect(carried).to include("#{linux_abi}/#{RUBY_PLATFORM}/pwshlib.so")
    windows_entries = carried.grep(%r{\A\d+\.\d+/x64-mingw32/pwshlib\.so\z})
    expect(windows_entries.size).to eq(1), carried.inspect

    out, err, status = Open3.capture3(RbConfig.ruby, '-I', @lib, '-e', report)
    expect(status).to be_success, err
    expect(out).to eq("#{RUBY_PLATFORM}|#{File.join(@lib, 'pwshlib', linux_abi, RUBY_PLATFORM, 'pwshlib.so')}")

    out, err, status = Open3.capture3('wine', windows_ruby, '-I', @lib, '-e', report)
    expect(status).to be_success, err
    platform, loaded = out.delete("\r").split('|')
    expect(platform).to eq('x64-mingw32')
    # Wine maps / to drive Z:.
    expect(loaded.downcase).to eq("z:#{File.join(@lib, 'pwshlib', windows_entries.first)}".downcase)
  end
end
