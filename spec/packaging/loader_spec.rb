# frozen_string_literal: true

require 'open3'
require 'rbconfig'
require 'tmpdir'
require 'fileutils'

# The loader runs in a child Ruby so that each example starts with nothing loaded.
RSpec.describe 'lib/pwshlib.rb, the native library loader' do
  root = File.expand_path('../..', __dir__)
  built_library = File.join(root, 'lib', 'pwshlib', 'pwshlib.so')
  abi = RUBY_VERSION[/\A\d+\.\d+/]

  def run_ruby(lib_dir, code)
    Open3.capture3(RbConfig.ruby, '-I', lib_dir, '-e', code)
  end

  around do |example|
    Dir.mktmpdir('pwshlib-loader') do |dir|
      @lib = File.join(dir, 'lib')
      FileUtils.mkdir_p(File.join(@lib, 'pwshlib'))
      FileUtils.cp(File.join(root, 'lib', 'pwshlib.rb'), @lib)
      example.run
    end
  end

  it 'names the Ruby ABI and platform it looked for, the ones the module carries, and what to run, when none matches' do
    other_platform = RUBY_PLATFORM == 'x64-mingw32' ? 'x86_64-linux' : 'x64-mingw32'
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', abi, other_platform))
    FileUtils.touch(File.join(@lib, 'pwshlib', abi, other_platform, 'pwshlib.so'))
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', '2.9'))
    FileUtils.touch(File.join(@lib, 'pwshlib', '2.9', 'pwshlib.so'))
    _out, err, status = run_ruby(@lib, 'require "pwshlib"')
    expect(status).not_to be_success
    expect(err).to include('Pwshlib::NativeLibraryMissing')
    expect(err).to include("Ruby #{RUBY_VERSION} (ABI #{abi}) on #{RUBY_PLATFORM}")
    expect(err).to include(File.join(@lib, 'pwshlib', abi, RUBY_PLATFORM, 'pwshlib.so'))
    expect(err).to include(File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
    expect(err).to include("carries prebuilt libraries for: 2.9, #{abi}/#{other_platform} (Ruby ABI/platform)")
    expect(err).to include('rake compile')
  end

  it 'says the module carries none when it has no prebuilt library' do
    _out, err, status = run_ruby(@lib, 'require "pwshlib"')
    expect(status).not_to be_success
    expect(err).to include('carries prebuilt libraries for: none')
  end

  it 'loads the library for its own Ruby ABI and platform from a tree that also carries another platform\'s' do
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', abi, RUBY_PLATFORM))
    FileUtils.cp(built_library, File.join(@lib, 'pwshlib', abi, RUBY_PLATFORM, 'pwshlib.so'))
    # Not a loadable library: were it tried, the require would fail.
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', abi, 'x64-mingw32-not-this-one'))
    FileUtils.touch(File.join(@lib, 'pwshlib', abi, 'x64-mingw32-not-this-one', 'pwshlib.so'))
    FileUtils.touch(File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
    FileUtils.touch(File.join(@lib, 'pwshlib', 'pwshlib.so'))
    out, err, status = run_ruby(@lib, 'require "pwshlib"; puts $LOADED_FEATURES.grep(/pwshlib\.so\z/)')
    expect(status).to be_success, err
    expect(out.strip).to eq(File.join(@lib, 'pwshlib', abi, RUBY_PLATFORM, 'pwshlib.so'))
  end

  it 'prefers the prebuilt library for the running Ruby (no platform directory) over a source build' do
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', abi))
    FileUtils.cp(built_library, File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
    FileUtils.touch(File.join(@lib, 'pwshlib', 'pwshlib.so'))
    out, err, status = run_ruby(@lib, 'require "pwshlib"; puts $LOADED_FEATURES.grep(/pwshlib\.so\z/)')
    expect(status).to be_success, err
    expect(out.strip).to eq(File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
  end

  it 'falls back to the source build' do
    FileUtils.cp(built_library, File.join(@lib, 'pwshlib', 'pwshlib.so'))
    out, err, status = run_ruby(@lib, 'require "pwshlib"; puts $LOADED_FEATURES.grep(/pwshlib\.so\z/)')
    expect(status).to be_success, err
    expect(out.strip).to eq(File.join(@lib, 'pwshlib', 'pwshlib.so'))
  end
end
