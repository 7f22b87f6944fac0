# frozen_string_literal: true

require 'fileutils'
require 'open3'
require 'timeout'
require 'tmpdir'
require_relative 'spec_helper_real_pwsh'

# What every host start runs holds nothing PowerShell calls suspicious.
# PowerShell checks each script block it compiles against its list of
# suspicious content (ScriptBlock.CheckSuspiciousContent: words such as
# Add-Type, MemoryStream or Cryptography anywhere in the text, comments
# included, and a [type] conversion or a static call on a type held in a
# variable) and writes a flagged one whole to its log (event 4104 on
# Windows, syslog here) as a warning, script block logging on or off. So
# host.ps1 holds none of it, and compiling, which must name Add-Type, is
# host_compile.ps1's, run only by a start that finds no cached assembly.
RSpec.describe 'what a host start runs, by PowerShell\'s suspicious-content check' do
  let(:templates) { File.expand_path('../../lib/templates', __dir__) }

  # What PowerShell's own check says of each file: each word or construct
  # it flags (the check names the first; that one is taken out and the
  # check asked again), empty when the file is not suspicious.
  def flagged(paths)
    script = <<~'PS'
      $Check = [scriptblock].GetMethod('CheckSuspiciousContent', [System.Reflection.BindingFlags]'NonPublic,Static')
      foreach ($Path in $args) {
        $Text = [IO.File]::ReadAllText($Path)
        $Found = @()
        for ($i = 0; $i -lt 50; $i++) {
          $Ast = [System.Management.Automation.Language.Parser]::ParseInput($Text, [ref]$null, [ref]$null)
          $Word = $Check.Invoke($null, @($Ast))
          if (-not $Word) { break }
          if ($Word.Length -gt 40) { $Found += 'a construct'; break }
          $Found += $Word
          $Text = [regex]::Replace($Text, [regex]::Escape($Word), 'x', 'IgnoreCase')
        }
        [IO.Path]::GetFileName($Path) + ':' + ($Found -join ',')
      }
    PS
    out, err, status = Dir.mktmpdir('pwshlib-check') do |dir|
      file = File.join(dir, 'check.ps1')
      File.write(file, script)
      Open3.capture3(REAL_PWSH, '-NoProfile', '-NonInteractive', '-File', file, *paths)
    end
    raise "the check did not run: #{err}" unless status.success?

    out.lines.to_h { |line| line.chomp.split(':', 2) }.transform_values { |words| words.split(',') }
  end

  it 'finds nothing in host.ps1, and flags what host_compile.ps1 needs (so the check is live)' do
    found = flagged([File.join(templates, 'host.ps1'), File.join(templates, 'host_compile.ps1')])
    expect(found['host.ps1']).to eq([])
    expect(found['host_compile.ps1']).to include('Add-Type', 'MemoryStream')
  end

  # A copy of the templates, changed by the block, started as the manager
  # starts the host: its exit status, or :listening once its socket is up.
  def start_copy(cache: nil, key: nil)
    Dir.mktmpdir('pwshlib-templates') do |dir|
      FileUtils.cp(Dir[File.join(templates, '*')], dir)
      yield dir
      socket = File.join(dir, 'host.sock')
      args = ['-File', File.join(dir, 'host.ps1'), '-PipePath', socket, '-ParentPid', Process.pid.to_s]
      args += ['-AssemblyCache', cache, '-HostSourceKey', key] if cache
      pid = Process.spawn(REAL_PWSH, *Pwsh::Manager.pwsh_args, *args, in: File::NULL, out: File::NULL, err: File::NULL)
      begin
        Timeout.timeout(120) do
          loop do
            return :listening if File.socket?(socket)

            done, status = Process.wait2(pid, Process::WNOHANG)
            if done
              pid = nil
              return status.exitstatus
            end
            sleep 0.05
          end
        end
      ensure
        if pid
          Process.kill('KILL', pid)
          Process.wait(pid)
        end
      end
    end
  end

  context 'with a cache of its own' do
    include_context 'a host cache of its own'

    it 'a start that finds the cached assembly needs no host_compile.ps1; one that finds none does' do
      manager = Pwsh::Manager.new(REAL_PWSH, Pwsh::Manager.pwsh_args)
      expect(manager.execute('6 * 7')[:stdout]).to eq("42\n")
      manager.exit
      cached = Dir[File.join(@cache, 'PwshlibHost-*.dll')]
      expect(cached.size).to eq(1)
      key = File.basename(cached.first)[/\APwshlibHost-(\h{32})-/, 1]

      expect(start_copy(cache: @cache, key: key) { |dir| File.delete(File.join(dir, 'host_compile.ps1')) }).to eq(:listening)
      expect(start_copy { |dir| File.delete(File.join(dir, 'host_compile.ps1')) }).not_to eq(:listening)
      expect(start_copy { |_dir| nil }).to eq(:listening)
    end
  end

  # Under WDAC's dynamic-code rule the compiled assembly is refused, and
  # host_compile.ps1 answers 87 when PowerShell's SystemPolicy says the
  # policy is enforced (Linux has none: the answer is stood in for): the
  # host leaves with that code, which the manager turns into a message
  # naming the cause (manager_lifecycle_spec.rb).
  it 'leaves with the exit code host_compile.ps1 chose' do
    status = start_copy { |dir| File.write(File.join(dir, 'host_compile.ps1'), "return 87\n") }
    expect(status).to eq(87)
  end
end
