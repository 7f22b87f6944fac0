# frozen_string_literal: true

require_relative 'spec_helper_windows'
require_relative '../support/manager_context'
require 'timeout'
require 'tmpdir'

# The real Rust manager in the Windows library, on the Windows Ruby, against
# pwshlib-sim.exe over a real named pipe (all under wine). The Linux suite
# (spec/pwsh/manager_spec.rb) has these and more; left out here, as they
# cannot apply on Windows:
# - fork: Windows has no fork;
# - Ctrl-C: Process.kill('INT') of another process does not exist on Windows;
# - /proc child and zombie checks, socket files, a #!/bin/sh host and a
#   symlinked host: Unix only (here, gone hosts are checked with
#   Process.kill(0), and the endpoint is a pipe name, not a file).
RSpec.describe Pwsh::Manager do
  def process_gone?(pid, within: 3)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + within
    loop do
      Process.kill(0, pid)
      return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  rescue Errno::ESRCH, Errno::EPERM
    true
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  include_context 'a manager on the simulated host'

  it 'serves a named pipe' do
    expect(manager.endpoint).to start_with('\\\\.\\pipe\\')
    expect(manager).to be_alive
  end

  it 'runs many requests in a row on one host, returning stdout, stderr, the exit code and the error message' do
    pid = manager.pid
    results = Array.new(20) { |i| manager.execute("Write-Output 'call #{i}'") }
    expect(results.map { |r| r[:stdout] }).to eq(Array.new(20) { |i| "call #{i}\n" })
    # An error record is shown in stdout too, in order (as pwshlib 2.x).
    expect(manager.execute("Write-Output 'out'\nWrite-Error 'err'\nexit 7"))
      .to eq(exitcode: 7, stdout: "out\nerr\n", stderr: ["err\n"], native_stdout: nil)
    expect(manager.execute("throw 'boom'")).to include(exitcode: 1, errormessage: 'boom')
    expect(manager.pid).to eq(pid)
    expect(new_manager).to equal(manager)
  end

  it 'applies extra environment variables for that call only' do
    result = manager.execute('$env:PWSHLIB_A; $env:PWSHLIB_B', nil, nil, ['PWSHLIB_A=1', 'PWSHLIB_B=x=y', 'ignored'])
    expect(result[:stdout]).to eq("1\nx=y\n")
    expect(manager.execute('$env:PWSHLIB_A; $env:PWSHLIB_B')[:stdout]).to be_nil
  end

  include_examples 'a manager that checks the working directory'

  it "carries code with '@, NUL, quotes and non-ASCII intact, 1 MiB of it both ways, as UTF-8" do
    text = "a'@b\u0000c \"q\" \u2019 \u00e9\u{1F600}"
    result = manager.execute("Write-Output @'\n#{text}\n'@")
    expect(result[:stdout]).to eq("#{text}\n")
    expect(result[:stdout].encoding).to eq(Encoding::UTF_8)
    big = '0123456789abcdef' * 65_536
    expect(manager.execute("Write-Output '#{big}'")[:stdout]).to eq("#{big}\n")
  end

  it 'stops code that runs past its timeout and stays usable' do
    started = monotonic
    result = manager.execute('Start-Sleep -Seconds 10', 500)
    expect(result[:errormessage]).to eq('Catastrophic failure: PowerShell module timeout (500 ms) exceeded while executing')
    expect(monotonic - started).to be < 5
    expect(manager.execute("Write-Output 'after'")[:stdout]).to eq("after\n")
  end

  it 'gives up on a hung host at the timeout plus the grace period, ends it; a fresh host follows' do
    hung_pid = manager.pid
    result = manager.execute("Write-Output 'x'\n#pwshlib-sim:hang", 500)
    expect(result[:errormessage]).to match(/stopped responding/)
    expect(manager).not_to be_alive
    expect(process_gone?(hung_pid)).to be(true)
    expect_fresh_host(hung_pid)
  end

  it 'turns a crash mid-call into an error result; the next instance is a fresh host' do
    crashed_pid = manager.pid
    result = manager.execute('Stop-Process -Id $PID')
    expect(result[:errormessage]).to match(/host died during the call/)
    expect(manager).not_to be_alive
    expect_fresh_host(crashed_pid)
  end

  it 'notices a host killed from outside' do
    Process.kill('KILL', manager.pid)
    deadline = monotonic + 3
    sleep 0.05 while manager.alive? && monotonic < deadline
    expect(manager).not_to be_alive
    expect(new_manager).to be_alive
  end

  it 'explains an executable that does not exist' do
    expect { described_class.instance('C:/nonexistent/pwsh.exe', []) }
      .to raise_error(RuntimeError, %r{Failed to start the PowerShell host "C:/nonexistent/pwsh.exe".*PWSHLIB_POWERSHELL}m)
  end

  it 'releases the global VM lock while waiting on the host, and lets Timeout.timeout end a call' do
    ticks = ticks_while_executing('Start-Sleep -Milliseconds 500')
    expect(ticks).to be > 10
    pid = manager.pid
    expect { Timeout.timeout(0.5) { manager.execute('Start-Sleep -Seconds 20') } }.to raise_error(Timeout::Error)
    expect(manager).not_to be_alive
    expect(process_gone?(pid)).to be(true)
    expect(new_manager.execute("Write-Output 'next'")[:stdout]).to eq("next\n")
  end

  it 'ends the host at exit' do
    pid = manager.pid
    manager.exit
    expect(manager).not_to be_alive
    expect(process_gone?(pid)).to be(true)
    expect(new_manager).not_to equal(manager)
  end

  it 'leaves no host behind after shutdown_all' do
    pids = [new_manager, new_manager(pipe_timeout: 30)].map(&:pid)
    described_class.shutdown_all
    expect(pids.map { |pid| process_gone?(pid) }).to eq([true, true])
  end
end
