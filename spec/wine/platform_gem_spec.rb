# frozen_string_literal: true

require 'open3'
require 'rbconfig'
require 'rubygems/package'
require 'tmpdir'
require_relative '../../lib/pwsh/version'
require_relative '../../lib/pwshlib/agent_abis'

# `rake gem:windows`: one platform gem per Windows platform CI builds (the
# table of agent ABIs), each holding its prebuilt library, as rake-compiler's
# cross gems, installed and loaded by that platform's Windows Ruby under wine
# with no compiler anywhere. Run by script/windows-ruby-check after
# `rake compile:windows`; needs each platform's Windows Ruby prefix and its
# wine set-up.
RSpec.describe 'the Windows platform gems' do
  root = File.expand_path('../..', __dir__)
  ci_rows = Pwshlib::AgentAbis.ci('windows')

  before(:all) do
    @build_output, status = Open3.capture2e('rake', 'gem:windows', chdir: root)
    expect(status).to be_success, @build_output
  end

  ci_rows.each do |row|
    it "holds the #{row.key} library, builds nothing at install, and its Windows Ruby installs and loads it" do
      gem_file = File.join(root, 'pkg', "pwshlib-#{Pwsh::VERSION}-#{row.platform}.gem")
      expect(File.file?(gem_file)).to be(true), @build_output

      spec = Gem::Package.new(gem_file).spec
      expect(spec.platform.to_s).to eq(row.platform)
      expect(spec.extensions).to be_empty
      libraries = spec.files.grep(/pwshlib\.so\z/)
      expect(libraries).to eq(["lib/pwshlib/#{row.ruby}/#{row.platform}/pwshlib.so"])
      expect(spec.files.grep(%r{\Aext/})).to be_empty
      expect(spec.files).to include('lib/pwshlib/agent_abis.tsv')

      Dir.mktmpdir('pwshlib-platform-gem') do |dir|
        home = File.join(dir, 'home')
        ruby = File.join(ENV.fetch(Pwshlib::AgentAbis.windows_ruby_variable(row.platform)), 'bin', 'ruby.exe')
        out, status = Open3.capture2e('wine', ruby, '-rrubygems/gem_runner', '-e', 'Gem::GemRunner.new.run(ARGV)', 'install', '--local',
                                      '--no-document', '--install-dir', home, gem_file, chdir: dir)
        expect(status).to be_success, out
        code = 'gem "pwshlib"; require "pwsh"; print RUBY_PLATFORM, "|", $LOADED_FEATURES.grep(/pwshlib\.so\z/).first, "|", ' \
               'Pwsh::Manager.respond_to?(:spawn)'
        out, err, status = Open3.capture3({ 'GEM_HOME' => home, 'GEM_PATH' => home }, 'wine', ruby, '-e', code, chdir: dir)
        expect(status).to be_success, err
        platform, loaded, native = out.delete("\r").split('|')
        expect(platform).to eq(row.platform)
        expect(loaded.downcase).to end_with("/gems/pwshlib-#{Pwsh::VERSION}-#{row.platform}/#{libraries.first}".downcase)
        expect(native).to eq('true')
      end
    end
  end
end
