# frozen_string_literal: true

require 'open3'
require 'rbconfig'
require 'rubygems/package'
require 'tmpdir'
require_relative '../../lib/pwsh/version'

# `rake gem:windows`: the platform gem holding the prebuilt Windows library,
# as rake-compiler's cross gems, installed and loaded by the Windows Ruby
# under wine with no compiler anywhere. Run by script/windows-check after
# `rake compile:windows`; needs PWSHLIB_WINDOWS_RUBY and its wine set-up.
RSpec.describe 'the Windows platform gem' do
  root = File.expand_path('../..', __dir__)
  windows_prefix = ENV.fetch('PWSHLIB_WINDOWS_RUBY')

  it 'holds the prebuilt library, builds nothing at install, and the Windows Ruby installs and loads it' do
    out, status = Open3.capture2e('rake', 'gem:windows', chdir: root)
    expect(status).to be_success, out
    gem_file = File.join(root, 'pkg', "pwshlib-#{Pwsh::VERSION}-x64-mingw32.gem")
    expect(File.file?(gem_file)).to be(true), out

    package = Gem::Package.new(gem_file)
    spec = package.spec
    expect(spec.platform.to_s).to eq('x64-mingw32')
    expect(spec.extensions).to be_empty
    libraries = spec.files.grep(/pwshlib\.so\z/)
    expect(libraries.size).to eq(1)
    expect(libraries.first).to match(%r{\Alib/pwshlib/\d+\.\d+/x64-mingw32/pwshlib\.so\z})
    expect(spec.files.grep(%r{\Aext/})).to be_empty

    Dir.mktmpdir('pwshlib-platform-gem') do |dir|
      home = File.join(dir, 'home')
      ruby = File.join(windows_prefix, 'bin', 'ruby.exe')
      out, status = Open3.capture2e('wine', ruby, '-rrubygems/gem_runner', '-e', 'Gem::GemRunner.new.run(ARGV)', 'install', '--local', '--no-document',
                                    '--install-dir', home, gem_file, chdir: dir)
      expect(status).to be_success, out
      code = 'gem "pwshlib"; require "pwsh"; print RUBY_PLATFORM, "|", $LOADED_FEATURES.grep(/pwshlib\.so\z/).first, "|", ' \
             'Pwsh::Manager.respond_to?(:spawn)'
      out, err, status = Open3.capture3({ 'GEM_HOME' => home, 'GEM_PATH' => home }, 'wine', ruby, '-e', code, chdir: dir)
      expect(status).to be_success, err
      platform, loaded, native = out.delete("\r").split('|')
      expect(platform).to eq('x64-mingw32')
      expect(loaded.downcase).to end_with("/gems/pwshlib-#{Pwsh::VERSION}-x64-mingw32/#{libraries.first}".downcase)
      expect(native).to eq('true')
    end
  end
end
