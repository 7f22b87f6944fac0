# frozen_string_literal: true

require 'fileutils'
require 'json'
require 'open3'
require 'tmpdir'
require_relative '../spec_helper_real_pwsh'

# The prelude's module index finds a module's [DscResource()]
# classes with the host's compiled predicate (PwshlibHost.DscClasses), some
# 80 ms less of a fresh host's first call than its script block predicate,
# which stays as the fallback without the host. Both must find the same
# classes, in the same order, on the real pwsh.
RSpec.describe 'the module index finds DSC classes in compiled code as the prelude does' do
  templates = File.expand_path('../../../lib/templates', __dir__)
  crafted = <<~PS
    [DscResource()] class Plain { [DscProperty(Key)] [string] $Name; [Plain] Get() { return $this } }
    [dscresource()] class LowerCase { [DscProperty(Key)] [string] $Name }
    [DSCRESOURCE(RunAsCredential = 'Optional')] class WithArgument { [DscProperty(Key)] [string] $Name }
    class NoAttribute { [string] $Name }
    [Other()] class OtherAttribute { [string] $Name }
    [DscResourceAttribute()] class LongName { [string] $Name }
    [Other()] [DscResource()] class Second { [DscProperty(Key)] [string] $Name }
    function Make { [DscResource()] class InScriptBlock { [DscProperty(Key)] [string] $Name } }
    enum NotAClass { One }
  PS

  # Runs one of this directory's scripts on the real pwsh with the
  # templates and `arguments`; each line it printed, parsed as JSON.
  define_method(:run_script) do |script, *arguments|
    out, err, status = Open3.capture3(REAL_PWSH, '-NoProfile', '-NonInteractive', '-File', File.join(__dir__, script),
                                      '-Templates', templates, *arguments)
    expect(status).to be_success, err + out
    out.lines.map { |line| JSON.parse(line) }
  end

  it 'finds the same classes both ways in the test modules and in a crafted one' do
    Dir.mktmpdir('pwshlib-index') do |dir|
      file = File.join(dir, 'Crafted.psm1')
      File.write(file, crafted)
      files = [file] + Dir[File.join(__dir__, '{modules,psmodules,standin}', '**', '*.psm1')]
      found = run_script('module_index.ps1', '-Files', files.join("\n"))
      expect(found.size).to eq(files.size)
      found.each { |entry| expect(entry['compiled']).to eq(entry['fallback']), entry['file'] }
      expect(found.first['compiled']).to eq(%w[Plain LowerCase WithArgument Second InScriptBlock])
      expect(found.sum { |entry| entry['compiled'].size }).to be > 5
    end
  end

  # The whole index in compiled code
  # (PwshlibHost.DscModuleIndex), against the prelude's reading without the
  # host: the same classes, script-based, binary and composite resources,
  # in tables that ignore case as PowerShell's @{} does, for every test
  # module and a crafted one with each kind.
  it 'reads the same index both ways in the test modules and in a crafted one' do
    Dir.mktmpdir('pwshlib-index-tables') do |dir|
      base = File.join(dir, 'Crafted')
      FileUtils.mkdir_p(base)
      File.write(File.join(base, 'Crafted.psm1'), crafted)
      File.write(File.join(base, 'Crafted.psd1'), "@{ RootModule = 'Crafted.psm1'; ModuleVersion = '1.0' }\n")
      resources = File.join(base, 'DSCResources')
      {
        'MSFT_Named' => ['[ClassVersion("1.0"), FriendlyName("Named")] class MSFT_Named : OMI_BaseResource {};', true],
        'MSFT_Unnamed' => ['[ClassVersion("1.0")] class MSFT_Unnamed : OMI_BaseResource {};', true],
        'MSFT_Spaced' => ['[ClassVersion("1.0"), friendlyname ( "Spaced Name" )] class MSFT_Spaced {};', true],
        'MSFT_Compiled' => ['[ClassVersion("1.0"), FriendlyName("Compiled")] class MSFT_Compiled {};', false],
      }.each do |name, (mof, script)|
        FileUtils.mkdir_p(File.join(resources, name))
        File.write(File.join(resources, name, "#{name}.schema.mof"), mof)
        File.write(File.join(resources, name, "#{name}.psm1"), "function Get-TargetResource { @{} }\n") if script
      end
      FileUtils.mkdir_p(File.join(resources, 'Together'))
      File.write(File.join(resources, 'Together', 'Together.schema.psm1'), "Configuration Together { }\n")
      manifests = [File.join(base, 'Crafted.psd1')] + Dir[File.join(__dir__, '{modules,psmodules,standin}', '**', '*.psd1')]
      read = run_script('module_index_tables.ps1', '-Manifests', manifests.join("\n"))
      expect(read.size).to eq(manifests.size)
      read.each { |entry| expect(entry['compiled']).to eq(entry['fallback']), entry['manifest'] }
      crafted_index = read.first['compiled']
      expect(crafted_index['Classes'].map(&:first)).to eq(%w[InScriptBlock LowerCase Plain Second WithArgument])
      expect(crafted_index['Scripts'].map(&:first)).to eq(%w[MSFT_Named MSFT_Spaced MSFT_Unnamed Named] + ['Spaced Name'])
      expect(crafted_index['Binary'].map(&:first)).to eq(%w[Compiled MSFT_Compiled])
      expect(crafted_index['Composite'].map(&:first)).to eq(%w[Together])
      expect(crafted_index.select { |key, _| key.end_with?('-upper-found') }.values.flatten).to all(be(true))
      expect(read.sum { |entry| entry['compiled']['Scripts'].size + entry['compiled']['Classes'].size }).to be > 10
    end
  end

  # A folder under DSCResources too deep to read (GetFiles with
  # AllDirectories throws PathTooLongException for it: on Windows
  # PowerShell 5.1 past 260 characters, here past Linux's PATH_MAX) fails
  # only the lookup of a resource the index then misses, naming it; the
  # module's other resources are found, both ways.
  it 'names a folder too deep to read, and still finds the module\'s other resources' do
    Dir.mktmpdir('pwshlib-index-deep') do |dir|
      base = File.join(dir, 'Deep')
      resources = File.join(base, 'DSCResources')
      FileUtils.mkdir_p(File.join(resources, 'MSFT_Shallow'))
      File.write(File.join(base, 'Deep.psd1'), "@{ ModuleVersion = '1.0' }\n")
      File.write(File.join(resources, 'MSFT_Shallow', 'MSFT_Shallow.schema.mof'), '[ClassVersion("1.0"), FriendlyName("Shallow")] class MSFT_Shallow {};')
      File.write(File.join(resources, 'MSFT_Shallow', 'MSFT_Shallow.psm1'), "function Get-TargetResource { @{} }\n")
      # Made folder by folder from inside (no call takes the whole path),
      # by a Ruby of its own: this process keeps its directory.
      deep = File.join(resources, 'MSFT_Deep')
      Dir.mkdir(deep)
      begin
        made = system(RbConfig.ruby, '-e', <<~RUBY, deep, 'd' * 250)
          Dir.chdir(ARGV[0])
          20.times { Dir.mkdir(ARGV[1]); Dir.chdir(ARGV[1]) }
          File.write('MSFT_Deep.schema.mof', '[ClassVersion("1.0"), FriendlyName("Deep")] class MSFT_Deep {};')
        RUBY
        expect(made).to be(true)
        read = run_script('module_index_tables.ps1', '-Manifests', File.join(base, 'Deep.psd1'), '-Missing', 'Deep').first
        expect(read['compiled']).to eq(read['fallback'])
        expect(read['compiled']['Scripts'].map(&:first)).to eq(%w[MSFT_Shallow Shallow])
        unreadable = read['compiled']['Unreadable']
        expect(unreadable.size).to eq(1)
        expect(unreadable.first).to start_with(File.join(deep, 'd' * 250))
        expect(read['missing']).to include("The DSC resource 'Deep' was not found in module 'Deep'", 'could not be read',
                                           'PathTooLongException', unreadable.first)
      ensure
        system('rm', '-rf', deep)
      end
    end
  end

  # What InFile found is kept in the host's cache directory, so
  # that the next host's first call does not parse the module's root file
  # before its Import-Module parses it again; believed only while the
  # file keeps its length and last write time, and for that file alone.
  it 'keeps the classes it found for the next host, believed while the file is unchanged' do
    Dir.mktmpdir('pwshlib-index-cache') do |dir|
      file = File.join(dir, 'Crafted.psm1')
      File.write(file, crafted)
      cache = File.join(dir, 'cache')
      Dir.mkdir(cache)
      steps = run_script('module_index_cache.ps1', '-File', file, '-Cache', cache).last
      classes = %w[Plain LowerCase WithArgument Second InScriptBlock]
      expect(steps['first']).to eq(classes)
      expect(steps.values_at('kept_files', 'temporary_files', 'kept_files_at_end')).to eq([1, 0, 1])
      expect(steps['kept_lines'].first(3)).to eq(['pwshlib dsc classes 1', file, crafted.bytesize.to_s])
      expect(steps['kept_lines'].drop(4)).to eq(classes)
      expect(steps['forged']).to eq(['Forged'])
      expect(steps['touched']).to eq(classes)
      expect(steps['touched_again']).to eq(classes)
      expect(steps['grown']).to eq(classes + ['Added'])
      expect(steps['other_path']).to eq(classes + ['Added'])
      expect(steps['missing_directory']).to eq(classes + ['Added'])
      expect(steps['no_directory']).to eq(classes + ['Added'])
    end
  end
end
