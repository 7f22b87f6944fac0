# frozen_string_literal: true

require 'securerandom'
require_relative 'spec_helper_real_pwsh'

# The six examples of ruby-pwsh 2.0.1's own Pwsh::Manager spec that this
# manager failed on the real pwsh, with the
# expectations that spec holds, written here in our words.
RSpec.describe Pwsh::Manager, "ruby-pwsh's expectations on the real pwsh" do
  include_context 'a manager on the real pwsh'

  def pid_of(manager)
    manager.execute('[Diagnostics.Process]::GetCurrentProcess().Id')[:stdout].to_i
  end

  describe 'a Write-Error under $ErrorView NormalView' do
    it "reads in stdout as PowerShell's NormalView record, the command in front" do
      token = SecureRandom.hex(8)
      result = manager.execute("$ErrorView = 'NormalView' ; Write-Error '#{token}'")
      expect(result[:exitcode]).to eq(0)
      expect(result[:stdout]).to match(/Write-Error '#{token}' : #{token}/)
      expect(result[:stdout]).to include('FullyQualifiedErrorId : Microsoft.PowerShell.Commands.WriteErrorException')
    end

    it 'keeps the default view a plain message in a later call' do
      manager.execute("$ErrorView = 'NormalView' ; Write-Error 'first'")
      expect(manager.execute("Write-Error 'second'")[:stdout]).to eq("second\n")
    end

    it 'is in what a timed-out call returns, after what came before it' do
      code = '$DebugPreference = "Continue"; $ErrorView = "NormalView" ; Write-Output "out 1"; ' \
             'Write-Debug "dbg 2"; Write-Error "err 3"; Start-Sleep -Seconds 10'
      result = manager.execute(code, 1500)
      expect(result[:exitcode]).to eq(1)
      expect(result[:stdout]).to match(/out 1\nDEBUG: dbg 2\n/)
      expect(result[:stdout]).to include("#{code} : err 3")
    end
  end

  describe 'a dead host' do
    it 'puts the broken pipe first in stderr of a call after the code killed its host' do
      manager.execute('[Diagnostics.Process]::GetCurrentProcess().Kill()')
      result = manager.execute('Write-Host "hi"')
      expect(result[:exitcode]).to eq(-1)
      expect(result[:stderr].first).to start_with('#<Errno::EPIPE: Broken pipe')
      expect(manager).not_to be_alive
    end

    it 'puts the end of file first in stderr of the call that finds its host killed, and a new instance replaces it' do
      pid = pid_of(manager)
      Process.kill('KILL', pid)
      result = manager.execute('Write-Host "hi"')
      expect(result[:exitcode]).to eq(-1)
      expect(result[:stderr].first).to eq('#<EOFError: end of file reached>')
      replacement = Pwsh::Manager.instance(manager.powershell_command, manager.powershell_arguments)
      expect(replacement).not_to equal(manager)
      expect(pid_of(replacement)).not_to eq(pid)
    end
  end

  it "fails a start that outlasts a tiny pipe_timeout with 2.x's words, the process gone" do
    error = nil
    expect { Pwsh::Manager.new(REAL_PWSH, Pwsh::Manager.pwsh_args, debug: false, pipe_timeout: 0.01) }
      .to raise_error(RuntimeError) { |e| error = e }
    pid = error.message[/\AFailure waiting for PowerShell process (\d+) to start pipe server/, 1]
    expect(pid).not_to be_nil
    expect { Process.kill(0, Integer(pid)) }.to raise_error(Errno::ESRCH)
  end

  it "ignores env entries without a name, without '=' or with an empty value" do
    expect(manager.execute('$env:foo', nil, nil, ['=foo', 'foo', 'foo='])).to include(exitcode: 0, stdout: nil)
    expect(manager.execute('$env:foo', nil, nil, ['foo=one', 'foo='])[:stdout]).to eq("one\n")
  end
end
