# frozen_string_literal: true

require 'open3'
require 'rbconfig'
require 'tmpdir'

# Builds the gem and installs it offline into a scratch GEM_HOME: the
# extension compiles from the shipped sources and Cargo.lock (cargo offline,
# from the local registry cache), and the installed gem loads.
RSpec.describe 'the pwshlib gem' do
  root = File.expand_path('../..', __dir__)

  it 'builds, installs with `gem install --local` offline, carries no target/, and loads' do
    Dir.mktmpdir('pwshlib-gem') do |dir|
      gem_file = File.join(dir, 'pwshlib.gem')
      out, status = Open3.capture2e('gem', 'build', 'pwshlib.gemspec', '--output', gem_file, chdir: root)
      expect(status).to be_success, out

      contents, status = Open3.capture2e('tar', '-xOf', gem_file, 'data.tar.gz', %i[out err] => :out)
      expect(status).to be_success
      listing, = Open3.capture2('tar', '-tz', stdin_data: contents)
      # The host script and the C# it compiles from beside itself, every part.
      host_parts = Dir[File.join(root, 'lib', 'templates', 'PwshlibHost*.cs')].map { |path| "lib/templates/#{File.basename(path)}" }
      expect(host_parts.size).to be > 1
      expect(listing.lines.map(&:strip)).to include('Cargo.lock', 'ext/pwshlib/extconf.rb', 'lib/pwshlib.rb',
                                                    'lib/templates/host.ps1', *host_parts)
      expect(listing).not_to match(%r{(\A|/)target/})
      expect(listing).not_to match(/\.so$/)

      home = File.join(dir, 'home')
      # A private TMPDIR: extconf builds under it, and the check below sees
      # only this install's build folder, not those of concurrent runs.
      build_tmp = File.join(dir, 'tmp')
      Dir.mkdir(build_tmp)
      env = { 'CARGO_NET_OFFLINE' => 'true', 'TMPDIR' => build_tmp }
      out, status = Open3.capture2e(env, 'gem', 'install', '--local', '--no-document', '--install-dir', home, gem_file)
      expect(status).to be_success, out

      installed = Dir[File.join(home, 'gems', 'pwshlib-*')].first
      expect(Dir[File.join(installed, '**', 'target')]).to be_empty
      expect(Dir.glob(File.join(build_tmp, 'pwshlib-gem-build-*'))).to be_empty

      gem_path = ([home] + Gem.path).join(File::PATH_SEPARATOR)
      code = 'gem "pwshlib"; require "puppet/provider/dsc_base_provider/dsc_base_provider"; ' \
             'print Puppet::Provider::DscBaseProvider.new.class, " ", $LOADED_FEATURES.grep(/pwshlib\.so\z/).first'
      out, err, status = Open3.capture3({ 'GEM_PATH' => gem_path, 'RUBYLIB' => nil }, RbConfig.ruby, '-e', code, chdir: dir)
      expect(status).to be_success, err
      expect(out).to start_with('Puppet::Provider::DscBaseProvider ')
      expect(out).to include(installed)
    end
  end
end
