# frozen_string_literal: true

require 'tmpdir'
require_relative 'spec_helper_real_pwsh'

# Host.ps1 compiles its C# once per pwshlib and
# PowerShell, keeps the assembly in the directory the manager passes
# (PWSHLIB_HOST_CACHE here), and a later host loads it instead of
# compiling; the hello says which it did (wire_stats[:host_assembly]).
RSpec.describe 'the host assembly cache, on the real pwsh' do
  include_context 'a host cache of its own'

  # A new host (not the cached instance): how it got its assembly, how
  # long it took to answer its first call, that the call worked, and
  # whether the JIT may optimize the host's code (its assembly not marked
  # [Debuggable(DisableOptimizations)], which pwsh 7's Add-Type gives by
  # default: "True" then).
  def fresh_start
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    manager = Pwsh::Manager.new(REAL_PWSH, Pwsh::Manager.pwsh_args)
    result = manager.execute('6 * 7')
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    unoptimized = manager.execute(<<~PS)[:stdout]
      [PwshlibHost.Server].Assembly.GetCustomAttributes([System.Diagnostics.DebuggableAttribute], $false).IsJITOptimizerDisabled -contains $true
    PS
    [manager.wire_stats[:host_assembly], took, result[:stdout], unoptimized]
  ensure
    manager&.exit
  end

  def cached_files
    Dir[File.join(@cache, 'PwshlibHost-*.dll')]
  end

  it 'compiles at the first start, and a second fresh host loads that assembly instead' do
    assembly, compiled_took, out, unoptimized = fresh_start
    expect([assembly, out, unoptimized]).to eq(%W[compiled 42\n False\n])
    expect(cached_files.size).to eq(1)
    # Its name says it was compiled optimized: one cached by an earlier
    # host without -optimize+ is not taken.
    expect(File.basename(cached_files.first)).to match(/\APwshlibHost-\h{32}-Core-[^-]+-[^-]+-optimized-\h{64}\.dll\z/)
    expect(File.stat(@cache).mode & 0o777).to eq(0o700)
    expect(Dir.children(@cache).grep(/^tmp-/)).to be_empty

    assembly, cached_took, out, unoptimized = fresh_start
    expect([assembly, out, unoptimized]).to eq(%W[cached 42\n False\n])
    # Compiling takes seconds, loading a tenth of one.
    expect(cached_took).to be < compiled_took
  end

  # Host.ps1 records a multicore JIT profile of its
  # own beside pwsh's (its cache directory: XDG_CACHE_HOME/powershell on
  # Linux), so that another pwsh rewriting pwsh's shared profile leaves
  # the host's alone; the trace (PWSHLIB_HOST_TRACE) names its phases and
  # stays out of the output.
  it "writes the host's own JIT profile, and its trace only to the trace file" do
    Dir.mktmpdir('pwshlib-xdg') do |xdg|
      trace = File.join(xdg, 'trace')
      saved = %w[XDG_CACHE_HOME PWSHLIB_HOST_TRACE].to_h { |name| [name, ENV.fetch(name, nil)] }
      begin
        ENV['XDG_CACHE_HOME'] = xdg
        ENV['PWSHLIB_HOST_TRACE'] = trace
        _assembly, _took, out = fresh_start
        expect(out).to eq("42\n")
      ensure
        saved.each { |name, value| ENV[name] = value }
      end
      expect(File.size(File.join(xdg, 'powershell', 'StartupProfileData-PwshlibHost'))).to be > 0
      phases = File.read(trace).lines.map { |line| line.split(' ', 3).last.strip }
      # The start's phases, then the request's steps (kept in memory and
      # written when the loop ends).
      expect(phases).to include('first line', 'hello sent', 'request arrived', 'request read', 'slot ready',
                                'pipeline starting', 'pipeline ended', 'request invoked', 'reply written')
      expect(phases.index('request arrived')).to be < phases.index('reply written')
    end
  end

  it 'loads no file whose bytes do not hash to its name: it compiles again and replaces it' do
    fresh_start
    file = cached_files.first
    bytes = File.binread(file)
    File.binwrite(file, bytes[0, bytes.size / 2])

    assembly, _took, out = fresh_start
    expect([assembly, out]).to eq(%W[compiled 42\n])
    # The compiler's output differs from build to build (a new module id),
    # so the new file has a new name; the truncated one is gone.
    expect(cached_files.size).to eq(1)
    expect(File.exist?(file)).to be(false)
    expect(fresh_start.first).to eq('cached')
  end

  it 'passes no directory that others can write: the host compiles in memory' do
    FileUtils.mkdir_p(@cache)
    File.chmod(0o777, @cache)
    expect(fresh_start.first).to eq('compiled')
    expect(cached_files).to be_empty
  end

  it 'keeps no cache when PWSHLIB_HOST_CACHE is empty, and compiles optimized in memory too' do
    ENV['PWSHLIB_HOST_CACHE'] = ''
    assembly, _took, _out, unoptimized = fresh_start
    expect([assembly, unoptimized]).to eq(%W[compiled False\n])
    expect(File.exist?(@cache)).to be(false)
  end

  it 'does not load an assembly an earlier host cached under the name without "optimized"' do
    assembly, = fresh_start
    expect(assembly).to eq('compiled')
    file = cached_files.first
    File.rename(file, file.sub('-optimized-', '-'))
    expect(fresh_start.values_at(0, 3)).to eq(%W[compiled False\n])
  end
end
