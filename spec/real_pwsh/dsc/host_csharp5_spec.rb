# frozen_string_literal: true

require 'json'
require 'open3'
require 'tmpdir'
require_relative '../spec_helper_real_pwsh'

# The host's C# (lib/templates/PwshlibHost*.cs, which
# host_compile.ps1 joins and hands whole to Add-Type) compiles as Windows PowerShell 5.1's
# Add-Type would compile it (C# 5, warnings as errors, against the 5.1
# reference assemblies), checked with the Roslyn inside the real pwsh by
# compile_csharp5.ps1, and with Debian's mono-mcs.
#
# Two compilers, because neither is the one 5.1 uses: its Add-Type compiles
# through CodeDom with the .NET Framework's own csc.exe, the C# 5 compiler
# that came before Roslyn. Roslyn's C# 5 mode and Mono's mcs each hold the
# language version by their own reading of the specification; a construct
# both refuse is one the old csc refuses too.
module HostCSharp5
  ROOT = File.expand_path('../../..', __dir__)
  COMPILER = File.join(__dir__, 'compile_csharp5.ps1')
  COMPILE_SCRIPT = File.join(ROOT, 'lib', 'templates', 'host_compile.ps1')
  # The host's C# files, in the order host_compile.ps1 joins them (Get-PwshlibHostSource).
  HOST_SOURCE_NAMES = File.read(COMPILE_SCRIPT)[/foreach \(\$Name in @\((.*)\)\) \{$/, 1].to_s.scan(/'([^']+)'/).flatten
  HOST_SOURCES = HOST_SOURCE_NAMES.map { |name| File.join(ROOT, 'lib', 'templates', name) }

  module_function

  # The folder with the 5.1 reference assemblies, from script/find-ps51-refs:
  # the archive in ../shared/tools unpacked once into the cache, else the
  # same files from their NuGet packages, checked by digest.
  def reference_directory
    @reference_directory ||= begin
      out, err, status = Open3.capture3(File.join(ROOT, 'script', 'find-ps51-refs'))
      raise "the 5.1 reference assemblies are missing: #{err}" unless status.success?

      out.chomp
    end
  end

  # {'success' => bool, 'diagnostics' => [...]} for the host's C# with
  # `append` after it.
  def compile(append = '')
    out, err, status = Open3.capture3(REAL_PWSH, '-NoProfile', '-NonInteractive', '-File', COMPILER,
                                      '-Source', HOST_SOURCES.join(File::PATH_SEPARATOR), '-ReferenceDirectory', reference_directory,
                                      '-Append', append)
    raise "compile_csharp5.ps1 failed (#{status.exitstatus}): #{err}#{out}" unless status.success?

    JSON.parse(out.lines.last)
  end

  # [success, output] of Debian's mono-mcs on the host's C# files and `extra`
  # files: C# 5 (-langversion:5), warnings (level 4, as csc's default) as
  # errors, against the same 5.1 reference assemblies and nothing else
  # (-nostdlib, -noconfig: not Mono's own class library), so no stub of the
  # PowerShell types is needed.
  def compile_with_mcs(*extra)
    mcs = ENV.fetch('PATH', '').split(File::PATH_SEPARATOR).map { |dir| File.join(dir, 'mcs') }.find { |path| File.executable?(path) }
    raise "Debian's mono-mcs is not installed (script/setup installs it: apt-get install mono-mcs)" unless mcs

    references = %w[mscorlib System System.Core System.Management.Automation].map { |name| "-r:#{File.join(reference_directory, name)}.dll" }
    Dir.mktmpdir('pwshlib-mcs') do |dir|
      out, status = Open3.capture2e(mcs, '-langversion:5', '-warnaserror+', '-warn:4', '-target:library', '-nostdlib', '-noconfig',
                                    *references, "-out:#{File.join(dir, 'PwshlibHost.dll')}", *HOST_SOURCES, *extra)
      [status.success? && File.file?(File.join(dir, 'PwshlibHost.dll')), out]
    end
  end

  # [success, output] of mcs on the host's C# with a probe class (member
  # `body`) in a file of its own.
  def compile_probe_with_mcs(body)
    Dir.mktmpdir('pwshlib-mcs-probe') do |dir|
      path = File.join(dir, 'probe.cs')
      File.write(path, probe(body))
      compile_with_mcs(path)
    end
  end

  # A class added to the host's namespace, with one member `body`.
  def probe(body)
    "namespace PwshlibHost { internal static class Csharp5Probe { #{body} } }"
  end

  RSpec.describe "the host's C# as Windows PowerShell 5.1's Add-Type compiles it" do
    it 'compiles as C# 5 against the 5.1 reference assemblies with warnings as errors' do
      result = HostCSharp5.compile
      expect(result['diagnostics']).to eq([])
      expect(result['success']).to be(true)
      # The host's whole source, not a stub.
      expect(result['bytes']).to be > 5000
    end

    # Two calls: compiled into the assembly cache, or in memory
    # without one; both through Add-PwshlibHostType, which hands the file
    # whole to Add-Type with -CompilerOptions on pwsh 7 only: Windows
    # PowerShell 5.1's Add-Type has no such parameter (it optimizes C# by
    # itself).
    it 'is the files host_compile.ps1 joins and hands whole to each Add-Type' do
      script = File.read(HostCSharp5::COMPILE_SCRIPT)
      expect(script.scan(/^ *Add-Type -TypeDefinition .*$/).map(&:strip)).to eq(
        ['Add-Type -TypeDefinition (Get-PwshlibHostSource) -Language CSharp @Output']
      )
      expect(script.scan(/^ *Add-PwshlibHostType\b.*$/).map(&:strip)).to eq(
        ["Add-PwshlibHostType @{ OutputAssembly = $Temporary; OutputType = 'Library' }", 'Add-PwshlibHostType']
      )
      expect(script.scan(/^.*\.CompilerOptions.*$/).map(&:strip)).to eq(
        ["if ($PSVersionTable.PSEdition -eq 'Core') { $Output.CompilerOptions = '-optimize+' }"]
      )
      expect(script).to include('[string]::Join("`n", @(foreach ($Name in @(')
      # Every PwshlibHost*.cs file shipped, each once (the cache key,
      # host_source_key, hashes every PwshlibHost*.cs, so it covers them all).
      shipped = Dir[File.join(HostCSharp5::ROOT, 'lib', 'templates', 'PwshlibHost*.cs')].map { |path| File.basename(path) }
      expect(HostCSharp5::HOST_SOURCE_NAMES.first).to eq('PwshlibHost.cs')
      expect(HostCSharp5::HOST_SOURCE_NAMES.sort).to eq(shipped.sort)
      expect(HostCSharp5::HOST_SOURCE_NAMES.uniq.size).to eq(shipped.size)
    end

    it 'fails a C# 6 construct: the null-propagating operator' do
      result = HostCSharp5.compile(HostCSharp5.probe('internal static string F(object o) { return o?.ToString(); }'))
      expect(result['success']).to be(false)
      expect(result['diagnostics'].join("\n")).to include('CS8026')
    end

    it 'fails a C# 6 construct: string interpolation' do
      result = HostCSharp5.compile(HostCSharp5.probe('internal static string F(int n) { return $"n={n}"; }'))
      expect(result['success']).to be(false)
      expect(result['diagnostics'].join("\n")).to include('CS8026')
    end

    it 'fails on a warning, as 5.1 Add-Type does without -IgnoreWarnings' do
      result = HostCSharp5.compile(HostCSharp5.probe('internal static void F() { int unused; }'))
      expect(result['success']).to be(false)
      expect(result['diagnostics'].join("\n")).to include('error CS0168')
    end

    it 'fails an API that .NET Framework 4.7.2 lacks: the references are the 5.1 ones' do
      # System.HashCode is .NET Core 2.1 and later.
      result = HostCSharp5.compile(HostCSharp5.probe('internal static int F() { return System.HashCode.Combine(1, 2); }'))
      expect(result['success']).to be(false)
      expect(result['diagnostics'].join("\n")).to match(/CS0234|CS0103/)
    end
  end

  RSpec.describe "the host's C# as Debian's mono-mcs compiles C# 5" do
    it 'compiles with no diagnostic at all' do
      success, output = HostCSharp5.compile_with_mcs
      expect(output).to eq('')
      expect(success).to be(true)
    end

    it 'fails a C# 6 construct: the null-propagating operator' do
      success, output = HostCSharp5.compile_probe_with_mcs('internal static string F(object o) { return o?.ToString(); }')
      expect(success).to be(false)
      expect(output).to include('error CS1644')
    end

    it 'fails on a warning' do
      success, output = HostCSharp5.compile_probe_with_mcs('internal static void F() { int unused; }')
      expect(success).to be(false)
      expect(output).to include('error CS0168')
    end

    it 'fails an API that .NET Framework 4.7.2 lacks: the references are the 5.1 ones' do
      success, output = HostCSharp5.compile_probe_with_mcs('internal static int F() { return System.HashCode.Combine(1, 2); }')
      expect(success).to be(false)
      expect(output).to match(/error CS0234|error CS0117/)
    end
  end
end
