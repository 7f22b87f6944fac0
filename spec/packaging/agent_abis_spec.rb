# frozen_string_literal: true

require 'open3'
require 'rbconfig'
require 'tmpdir'
require 'fileutils'
require_relative '../../lib/pwshlib/agent_abis'

# The table of agent ABIs (lib/pwshlib/agent_abis.tsv): what the loader says
# from it, and that the rake tasks, the gemspec and the scripts read it rather
# than writing a Ruby version or platform of their own.
RSpec.describe 'the table of agent ABIs' do
  root = File.expand_path('../..', __dir__)
  abis = Pwshlib::AgentAbis
  abi = RUBY_VERSION[/\A\d+\.\d+/]

  it 'has the rows the issue names, each with a toolchain, a source and a CI job' do
    rows = abis.rows
    expect(rows.map(&:key)).to eq(%w[3.2/x64-mingw32 3.3/x64-mingw-ucrt 3.3/x64-mingw32 4.0/x64-mingw-ucrt])
    expect(rows.map(&:key)).to eq(rows.sort_by { |row| abis.order(row.ruby, row.platform) }.map(&:key))
    # Both Rubies built from Debian's source are tested in CI under wine;
    # the release-tarball rows are a release machine's (docs/windows.md).
    expect(abis.ci('windows').map(&:key)).to eq(%w[3.3/x64-mingw-ucrt 3.3/x64-mingw32])
    expect(rows.select(&:release_tarball?).map(&:key)).to eq(%w[3.2/x64-mingw32 4.0/x64-mingw-ucrt])
    expect(rows.reject(&:built_by_ci?).map(&:key)).to eq(%w[3.2/x64-mingw32 4.0/x64-mingw-ucrt])
    rows.each do |row|
      expect(row.triple).to eq(row.platform == 'x64-mingw-ucrt' ? 'x86_64-w64-mingw32ucrt' : 'x86_64-w64-mingw32')
      expect(row.packages).not_to be_empty
      expect(row.where).to match(/\A(host|root:trixie)\z/)
    end
  end

  context 'when the loader finds no library' do
    around do |example|
      Dir.mktmpdir('pwshlib-abis') do |dir|
        @lib = File.join(dir, 'lib')
        FileUtils.mkdir_p(File.join(@lib, 'pwshlib'))
        FileUtils.cp(File.join(root, 'lib', 'pwshlib.rb'), @lib)
        FileUtils.cp(File.join(root, 'lib', 'pwshlib', 'agent_abis.rb'), File.join(@lib, 'pwshlib'))
        example.run
      end
    end

    def load_error
      _out, err, status = Open3.capture3(RbConfig.ruby, '-I', @lib, '-e', 'require "pwshlib"')
      expect(status).not_to be_success
      expect(err).to include('Pwshlib::NativeLibraryMissing')
      err
    end

    it 'names the missing row (Ruby minor and platform) and where in the table it would go' do
      table = File.read(File.join(root, 'lib', 'pwshlib', 'agent_abis.tsv'))
      # The running Ruby's row taken out, wherever it is (this Linux Ruby has none).
      File.write(File.join(@lib, 'pwshlib', 'agent_abis.tsv'),
                 table.lines.reject { |line| line.start_with?("#{abi}\t#{RUBY_PLATFORM}\t") }.join)
      expected = abis.place_for(abi, RUBY_PLATFORM, File.join(@lib, 'pwshlib', 'agent_abis.tsv'))
      expect(expected).to match(%r{\A(after|before) the row \d+\.\d+/\S+ \(line \d+\)\z})
      err = load_error
      expect(err).to include("has no row #{abi}/#{RUBY_PLATFORM} (Ruby #{abi} on #{RUBY_PLATFORM})")
      expect(err).to include("it would go #{expected}")
    end

    it 'names the row a release machine fills when the row is there but its library is not' do
      File.write(File.join(@lib, 'pwshlib', 'agent_abis.tsv'),
                 "# header\n#{abi}\t#{RUBY_PLATFORM}\tx86_64-w64-mingw32\tgcc-mingw-w64-x86-64@host\t" \
                 "tarball:ruby-#{abi}\tnone\tan agent of this test\n")
      err = load_error
      expect(err).to include("has the row #{abi}/#{RUBY_PLATFORM} (line 2: an agent of this test)")
      expect(err).to include("release tarball (ruby-#{abi}), which CI does not build: a release machine fills it")
    end

    it 'still raises its own error when the table cannot be read' do
      err = load_error
      expect(err).to include('The table of agent ABIs could not be read')
      expect(err).to include("Ruby #{RUBY_VERSION} (ABI #{abi}) on #{RUBY_PLATFORM}")
    end
  end

  it 'is what rake builds for Windows: every platform CI builds, each with its own Ruby variable' do
    code = 'Rake.application.init("rake", []); Rake.application.load_rakefile; ' \
           'puts windows_platforms.map { |p| [p, Pwshlib::AgentAbis.windows_ruby_variable(p)].join(" ") }'
    out, err, status = Open3.capture3({ 'PWSHLIB_WINDOWS_PLATFORMS' => nil }, RbConfig.ruby, '-rrake', '-e', code, chdir: root)
    expect(status).to be_success, err
    # The host's toolchain first (rake compile:windows builds those in front).
    expect(out.lines.map(&:split)).to eq([%w[x64-mingw32 PWSHLIB_WINDOWS_RUBY], %w[x64-mingw-ucrt PWSHLIB_WINDOWS_RUBY_UCRT]])
    expect(out.lines.map { |line| line.split.first }.sort).to eq(abis.ci('windows').map(&:platform).uniq.sort)
    out, err, status = Open3.capture3({ 'PWSHLIB_WINDOWS_PLATFORMS' => 'x64-mingw32 x64-mingw-ucrt' }, RbConfig.ruby, '-rrake', '-e', code, chdir: root)
    expect(status).to be_success, err
    expect(out.lines.map(&:split)).to eq([%w[x64-mingw32 PWSHLIB_WINDOWS_RUBY], %w[x64-mingw-ucrt PWSHLIB_WINDOWS_RUBY_UCRT]])
  end

  it 'is where the build code takes its Ruby versions and platforms from: none is written into it' do
    files = %w[Rakefile pwshlib.gemspec script/windows-check script/windows-ruby-check script/windows-ruby script/test] +
            Dir.chdir(root) { Dir['rakelib/**/*.{rake,rb}'] }
    expect(files).to include('rakelib/windows.rake', 'rakelib/windows_rbconfig_shim/rbconfig.rb')
    files.each do |file|
      code = File.readlines(File.join(root, file)).reject { |line| line.strip.start_with?('#', 'desc ', "'") }
      expect(code.grep(/x64-mingw32|x64-mingw-ucrt|ruby3\.3|\b3\.[23]\b/)).to eq([]), file
    end
  end

  describe 'the gemspec' do
    around do |example|
      Dir.mktmpdir('pwshlib-gemspec') do |dir|
        FileUtils.cp(File.join(root, 'pwshlib.gemspec'), dir)
        FileUtils.cp_r(File.join(root, 'lib'), dir)
        FileUtils.rm_rf(Dir[File.join(dir, 'lib', 'pwshlib', '{*/,*.so}')])
        @dir = dir
        example.run
      end
    end

    def load_spec(ruby, platform)
      FileUtils.mkdir_p(File.join(@dir, 'lib', 'pwshlib', ruby, platform))
      FileUtils.touch(File.join(@dir, 'lib', 'pwshlib', ruby, platform, 'pwshlib.so'))
      code = 'spec = eval(File.read("pwshlib.gemspec"), binding, "pwshlib.gemspec"); ' \
             'puts spec.platform, spec.required_ruby_version, spec.files.grep(/agent_abis|pwshlib\.so/)'
      Open3.capture3({ 'PWSHLIB_GEM_PLATFORM' => platform, 'PWSHLIB_GEM_RUBY_ABI' => ruby }, RbConfig.ruby, '-e', code, chdir: @dir)
    end

    it 'builds a platform gem for a row of the table, carrying the table' do
      out, err, status = load_spec('3.3', 'x64-mingw-ucrt')
      expect(status).to be_success, err
      platform, requirement, *files = out.lines.map(&:strip)
      expect([platform, requirement]).to eq(['x64-mingw-ucrt', '~> 3.3.0'])
      expect(files.sort).to eq(%w[lib/pwshlib/3.3/x64-mingw-ucrt/pwshlib.so lib/pwshlib/agent_abis.rb lib/pwshlib/agent_abis.tsv])
    end

    it 'refuses a platform gem for a Ruby and platform the table has no row for, naming the row' do
      _out, err, status = load_spec('3.4', 'x64-mingw-ucrt')
      expect(status).not_to be_success
      expect(err).to include('has no row 3.4/x64-mingw-ucrt')
    end
  end
end
