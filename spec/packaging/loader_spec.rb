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

  it 'says which Ruby and platform it looked for, and what to run, when no library exists' do
    _out, err, status = run_ruby(@lib, 'require "pwshlib"')
    expect(status).not_to be_success
    expect(err).to include('Pwshlib::NativeLibraryMissing')
    expect(err).to include("Ruby #{RUBY_VERSION}")
    expect(err).to include(RUBY_PLATFORM)
    expect(err).to include('rake compile')
    expect(err).to include(File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
  end

  it 'prefers the prebuilt library for the running Ruby over a source build' do
    FileUtils.mkdir_p(File.join(@lib, 'pwshlib', abi))
    FileUtils.cp(built_library, File.join(@lib, 'pwshlib', abi, 'pwshlib.so'))
    FileUtils.cp(built_library, File.join(@lib, 'pwshlib', 'pwshlib.so'))
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
