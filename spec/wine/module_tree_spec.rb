# frozen_string_literal: true

require 'fileutils'
require 'open3'
require 'rbconfig'
require 'tmpdir'
require_relative '../../lib/pwshlib/agent_abis'

# One module tree for every agent, as `rake prebuilt` fills it and pluginsync
# sends it: the Linux Ruby (here) and each Windows Ruby (under wine) load
# their own library from lib/pwshlib/<abi>/<platform>/, and the tree has
# every row the table of agent ABIs says CI builds. Run by
# script/windows-ruby-check after `rake prebuilt`; needs each platform's
# Windows Ruby prefix (PWSHLIB_WINDOWS_RUBY, PWSHLIB_WINDOWS_RUBY_UCRT) and the
# wine set-up that script makes.
RSpec.describe 'the module tree that rake prebuilt fills' do
  root = File.expand_path('../..', __dir__)
  report = 'require "pwshlib"; print RUBY_PLATFORM, "|", $LOADED_FEATURES.grep(/pwshlib\.so\z/).join(",")'
  ci_rows = Pwshlib::AgentAbis.ci('windows')

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

  def carried
    Dir[File.join(@lib, 'pwshlib', '*', '*', 'pwshlib.so')].map { |path| path.delete_prefix("#{@lib}/pwshlib/") }
  end

  it 'has a library for every row the table says CI builds, and for the Linux Ruby' do
    expect(ci_rows).not_to be_empty
    expected = ci_rows.map { |row| "#{row.ruby}/#{row.platform}/pwshlib.so" } + ["#{RUBY_VERSION[/\A\d+\.\d+/]}/#{RUBY_PLATFORM}/pwshlib.so"]
    expect(carried).to include(*expected)
  end

  it 'is loaded by the Linux Ruby from its own directory' do
    linux_abi = RUBY_VERSION[/\A\d+\.\d+/]
    out, err, status = Open3.capture3(RbConfig.ruby, '-I', @lib, '-e', report)
    expect(status).to be_success, err
    expect(out).to eq("#{RUBY_PLATFORM}|#{File.join(@lib, 'pwshlib', linux_abi, RUBY_PLATFORM, 'pwshlib.so')}")
  end

  # A library linked against another C runtime than its Ruby's would run with
  # two heaps and two sets of file descriptors: each must import only its
  # platform's (msvcrt.dll, or UCRT's ucrtbase.dll / api-ms-win-crt-*).
  ci_rows.each do |row|
    it "links #{row.key}'s library against that platform's C runtime only" do
      out, status = Open3.capture2e('x86_64-w64-mingw32-objdump', '-p', File.join(@lib, 'pwshlib', row.ruby, row.platform, 'pwshlib.so'))
      expect(status).to be_success, out
      dlls = out.scan(/DLL Name: (\S+)/).flatten.map(&:downcase)
      ucrt = dlls.grep(/\A(ucrtbase|api-ms-win-crt-.*)\.dll\z/)
      msvcrt = dlls.grep(/\Amsvcrt\.dll\z/)
      if row.platform.end_with?('ucrt')
        expect([ucrt.empty?, msvcrt]).to eq([false, []]), dlls.inspect
      else
        expect([ucrt, msvcrt]).to eq([[], ['msvcrt.dll']]), dlls.inspect
      end
    end

    it "is loaded by the Windows Ruby for #{row.key} from #{row.key}/" do
      prefix = ENV.fetch(Pwshlib::AgentAbis.windows_ruby_variable(row.platform))
      out, err, status = Open3.capture3('wine', File.join(prefix, 'bin', 'ruby.exe'), '-I', @lib, '-e', report)
      expect(status).to be_success, err
      platform, loaded = out.delete("\r").split('|')
      expect(platform).to eq(row.platform)
      # Wine maps / to drive Z:.
      expect(loaded.downcase).to eq("z:#{File.join(@lib, 'pwshlib', row.ruby, row.platform, 'pwshlib.so')}".downcase)
    end
  end
end
