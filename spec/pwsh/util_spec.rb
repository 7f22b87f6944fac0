# frozen_string_literal: true

require 'spec_helper'
require 'pwsh'
require 'tmpdir'

RSpec.describe Pwsh::Util do
  it 'knows this is not Windows' do
    expect(described_class.on_windows?).to be(false)
  end

  describe '.invalid_directories?' do
    it 'is false for nil, empty and existing directories (empty entries are fine)' do
      expect(described_class.invalid_directories?(nil)).to be(false)
      expect(described_class.invalid_directories?('')).to be(false)
      expect(described_class.invalid_directories?("#{Dir.tmpdir}::/")).to be(false)
    end

    # pwshlib 2.x since 1.2.1: a missing entry is no reason to refuse a path.
    it 'is false when an entry does not exist' do
      expect(described_class.invalid_directories?('/etc:/nonexistent')).to be(false)
      expect(described_class.invalid_directories?("#{Dir.tmpdir}:/no/such/pwshlib/dir")).to be(false)
      expect(described_class.invalid_directories?('/no/such/pwshlib/dir')).to be(false)
    end

    it 'is true when any entry exists and is not a directory' do
      Dir.mktmpdir do |dir|
        file = File.join(dir, 'file.txt')
        File.write(file, 'x')
        expect(described_class.invalid_directories?(file)).to be(true)
        expect(described_class.invalid_directories?("#{dir}:#{file}")).to be(true)
        expect(described_class.invalid_directories?("/no/such/pwshlib/dir:#{file}:#{dir}")).to be(true)
      end
    end

    it 'splits on ; on Windows and asks whether an entry exists before whether it is a directory' do
      allow(described_class).to receive(:on_windows?).and_return(true)
      allow(File).to receive(:exist?).and_call_original
      allow(File).to receive(:exist?).with('C:/some/folder').and_return(true)
      allow(File).to receive(:exist?).with('C:/missing').and_return(false)
      allow(File).to receive(:exist?).with('C:/some/file.txt').and_return(true)
      allow(File).to receive(:directory?).and_call_original
      allow(File).to receive(:directory?).with('C:/some/folder').and_return(true)
      allow(File).to receive(:directory?).with('C:/some/file.txt').and_return(false)
      expect(described_class.invalid_directories?('C:/some/folder;;C:/missing')).to be(false)
      expect(File).not_to have_received(:directory?).with('C:/missing')
      expect(described_class.invalid_directories?('C:/some/folder;C:/some/file.txt')).to be(true)
    end
  end

  describe 'case conversion' do
    it 'snake_cases strings and symbols' do
      expect(described_class.snake_case('PowerShellVersion')).to eq('power_shell_version')
      expect(described_class.snake_case('DSCResource')).to eq('dsc_resource')
      expect(described_class.snake_case(:IsHTTPSEnabled)).to eq(:is_https_enabled)
      expect(described_class.snake_case('already_snake')).to eq('already_snake')
      expect(described_class.snake_case('Some-Thing')).to eq('some_thing')
    end

    it 'PascalCases strings and symbols' do
      expect(described_class.pascal_case('power_shell_version')).to eq('PowerShellVersion')
      expect(described_class.pascal_case(:dsc_resource)).to eq(:DscResource)
    end

    # pwshlib 2.x: the word boundaries are broken by snake_case first, so
    # every casing of the same words gives the same result.
    it 'snake_cases and PascalCases camelCase, kebab-case, PascalCase and snake_case alike' do
      %w[thisIsAString this-is-a-string ThisIsAString this_is_a_string].each do |text|
        expect(described_class.snake_case(text)).to eq('this_is_a_string')
        expect(described_class.pascal_case(text)).to eq('ThisIsAString')
      end
      expect(described_class.pascal_case(:thisIsAString)).to eq(:ThisIsAString)
      expect(described_class.snake_case('this  is-a__string')).to eq('this_is_a_string')
      expect(described_class.pascal_case('this  is-a__string')).to eq('ThisIsAString')
    end

    it 'refuses other types' do
      expect { described_class.snake_case(1) }.to raise_error(ArgumentError, /only handles strings and symbols/)
      expect { described_class.pascal_case(nil) }.to raise_error(ArgumentError, /only handles strings and symbols/)
    end
  end

  describe 'hash key helpers' do
    let(:nested) { { 'SomeKey' => [{ 'InnerKey' => 1 }, 'Value'], :OtherKey => { 'DeepKey' => 'DeepValue' } } }

    it 'snake_cases keys at every depth, leaving values alone' do
      expect(described_class.snake_case_hash_keys(nested))
        .to eq('some_key' => [{ 'inner_key' => 1 }, 'Value'], :other_key => { 'deep_key' => 'DeepValue' })
    end

    it 'PascalCases keys at every depth' do
      expect(described_class.pascal_case_hash_keys('some_key' => { 'inner_key' => ['a_b'] }))
        .to eq('SomeKey' => { 'InnerKey' => ['a_b'] })
    end

    it 'PascalCases camelCase and kebab-case keys, in hashes inside arrays too' do
      camel = [{ 'setOne' => { 'keyA' => 'valueA', 'keyB' => [{ 'innerKey' => 'x-y' }] } }, { 'setTwo' => 1 }]
      kebab = [{ 'set-one' => { 'key-a' => 'valueA', 'key-b' => [{ 'inner-key' => 'x-y' }] } }, { 'set-two' => 1 }]
      pascal = [{ 'SetOne' => { 'KeyA' => 'valueA', 'KeyB' => [{ 'InnerKey' => 'x-y' }] } }, { 'SetTwo' => 1 }]
      expect(described_class.pascal_case_hash_keys(camel)).to eq(pascal)
      expect(described_class.pascal_case_hash_keys(kebab)).to eq(pascal)
      expect(described_class.snake_case_hash_keys(pascal))
        .to eq([{ 'set_one' => { 'key_a' => 'valueA', 'key_b' => [{ 'inner_key' => 'x-y' }] } }, { 'set_two' => 1 }])
    end

    it 'symbolizes keys at every depth' do
      expect(described_class.symbolize_hash_keys('a' => [{ 'b' => 'c' }], 1 => 2))
        .to eq(a: [{ b: 'c' }], 1 => 2)
    end

    it 'passes non-hashes through' do
      expect(described_class.snake_case_hash_keys('Text')).to eq('Text')
      expect(described_class.symbolize_hash_keys([1, { 'x' => 1 }])).to eq([1, { x: 1 }])
    end
  end

  describe '.escape_quotes' do
    it 'doubles every kind of single quote PowerShell honours' do
      expect(described_class.escape_quotes("it's")).to eq("it''s")
      expect(described_class.escape_quotes("\u2018a\u2019b\u201Ac\u201B")).to eq("\u2018\u2018a\u2019\u2019b\u201A\u201Ac\u201B\u201B")
      expect(described_class.escape_quotes('"double" stays')).to eq('"double" stays')
    end
  end

  describe '.format_powershell_value' do
    it 'formats scalars' do
      expect(described_class.format_powershell_value(true)).to eq('$true')
      expect(described_class.format_powershell_value(:false)).to eq('$false') # rubocop:disable Lint/BooleanSymbol
      expect(described_class.format_powershell_value(nil)).to eq('$null')
      expect(described_class.format_powershell_value(42)).to eq('42')
      expect(described_class.format_powershell_value(1.5)).to eq('1.5')
      expect(described_class.format_powershell_value(:Bare)).to eq('Bare')
      expect(described_class.format_powershell_value("it's")).to eq("'it''s'")
    end

    it 'formats arrays and hashes recursively' do
      expect(described_class.format_powershell_value(['a', 1, [true]])).to eq("@('a', 1, @($true))")
      expect(described_class.format_powershell_value('k' => 'v', 'n' => { 'x' => nil }))
        .to eq("@{'k' = 'v'; 'n' = @{'x' = $null}}")
    end

    it 'refuses other objects' do
      expect { described_class.format_powershell_value(Object.new) }.to raise_error(ArgumentError, /unsupported type Object/)
    end

    # One set of quote characters and one set of scalar rules: the
    # provider's (pwshlib_core::literal, which the provider's `format` uses).
    it 'quotes and writes scalars as the provider does' do
      provider = Puppet::Provider::DscBaseProvider.new
      expect(described_class::SINGLE_QUOTES).to eq("'\u2018\u2019\u201A\u201B")
      expect(described_class::SINGLE_QUOTES).to be_frozen
      ["it's", "\u2018a\u2019 \u201Ab\u201B", '', 'plain', '"double"', 'ünïcödé', 42, -7, 2**70, 1.5, 2.0, nil, true, false]
        .each do |value|
          expect(described_class.format_powershell_value(value)).to eq(provider.format(value)), value.inspect
        end
    end

    # Where pwshlib 2.x wrote something PowerShell would not read back as
    # the value (Float#to_s, a NUL in a string), the provider's rules apply.
    it 'writes floats as PowerShell reads them and refuses values that have no literal' do
      expect(described_class.format_powershell_value(1e-7)).to eq('1e-7')
      expect { described_class.format_powershell_value(Float::NAN) }.to raise_error(ArgumentError, /no PowerShell literal/)
      expect { described_class.format_powershell_value(Float::INFINITY) }.to raise_error(ArgumentError, /no PowerShell literal/)
      expect { described_class.format_powershell_value("a\0b") }.to raise_error(ArgumentError)
      expect { described_class.format_powershell_value(Rational(1, 2)) }.to raise_error(ArgumentError, /Rational/)
    end
  end

  it 'builds a calculated property' do
    expect(described_class.custom_powershell_property('Name', '$_.Name'))
      .to eq("@{Name = 'Name'; Expression = {$_.Name}}")
  end
end

RSpec.describe Pwsh::WindowsPowerShell do
  it 'has no version off Windows' do
    expect(described_class.version).to be_nil
    expect(described_class.compatible_version?).to be(false)
  end

  it 'compares versions against the minimum' do
    expect(described_class.compatible_version?('5.1.17763.1')).to be(true)
    expect(described_class.compatible_version?('3.0')).to be(true)
    expect(described_class.compatible_version?('2.0')).to be(false)
    expect(described_class.compatible_version?('not a version')).to be(false)
  end
end

RSpec.describe 'Pwsh entry points' do
  it 'loads through ruby-pwsh and pwsh, with a version' do
    expect(require('ruby-pwsh')).to be(true).or be(false)
    expect(Pwsh::VERSION).to match(/\A\d+\.\d+\.\d+/)
    expect(Pwsh::Manager).to respond_to(:instance, :instances, :pwsh_path, :pwsh_args, :powershell_path,
                                        :powershell_args, :windows_powershell_supported?, :pwsh_supported?)
  end
end

RSpec.describe Pwsh::Manager, 'PowerShell lookup' do
  around do |example|
    saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PATH')
    example.run
  ensure
    %w[PWSHLIB_POWERSHELL PATH].each { |name| ENV[name] = saved[name] }
  end

  it 'uses PWSHLIB_POWERSHELL for both PowerShells when set' do
    ENV['PWSHLIB_POWERSHELL'] = '/some/where/pwsh'
    expect(described_class.pwsh_path).to eq('/some/where/pwsh')
    expect(described_class.powershell_path).to eq('/some/where/pwsh')
    expect(described_class.pwsh_supported?).to be(true)
    expect(described_class.windows_powershell_supported?).to be(true)
  end

  it 'finds pwsh on PATH, then in additional paths' do
    ENV.delete('PWSHLIB_POWERSHELL')
    Dir.mktmpdir do |dir|
      on_path = File.join(dir, 'onpath')
      extra = File.join(dir, 'extra dir')
      [on_path, extra].each { |d| Dir.mkdir(d) }
      File.write(File.join(extra, 'pwsh'), "#!/bin/sh\n")
      File.chmod(0o755, File.join(extra, 'pwsh'))
      ENV['PATH'] = on_path
      expect(described_class.pwsh_path([extra])).to eq(File.join(extra, 'pwsh'))
      File.write(File.join(on_path, 'pwsh'), "#!/bin/sh\n")
      File.chmod(0o755, File.join(on_path, 'pwsh'))
      expect(described_class.pwsh_path([extra])).to eq(File.join(on_path, 'pwsh'))
    end
  end

  it 'says what it searched and how to choose a PowerShell when there is none' do
    ENV.delete('PWSHLIB_POWERSHELL')
    ENV['PATH'] = '/nonexistent-pwshlib-bin'
    skip 'a real pwsh is installed here' if described_class.pwsh_path
    expect(described_class.pwsh_supported?).to be(false)
    expect { described_class.instance(described_class.pwsh_path, described_class.pwsh_args) }
      .to raise_error(Pwsh::PowerShellNotFound,
                      %r{/nonexistent-pwshlib-bin/pwsh, .*/opt/microsoft/powershell/7/pwsh.*PWSHLIB_POWERSHELL}m)
  end

  it 'exposes the host script' do
    expect(File.file?(described_class.host_script_path)).to be(true)
    expect(described_class.host_script_path).to end_with('lib/templates/host.ps1')
  end
end
