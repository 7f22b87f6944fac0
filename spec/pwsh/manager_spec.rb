# frozen_string_literal: true

require 'spec_helper'
require 'pwsh'
require 'timeout'
require 'tmpdir'
require 'rbconfig'

# The real Rust manager against the real simulated host (pwshlib-sim) over a
# real Unix socket. Echo mode (ext/pwshlib_sim/README.md) supplies the code.
RSpec.describe Pwsh::Manager do
  # PIDs of the live (or zombie) children of this Ruby process.
  def child_pids
    Dir.glob('/proc/[0-9]*/stat').filter_map do |stat|
      fields = File.read(stat).sub(/\A.*\) /m, '').split
      File.basename(File.dirname(stat)).to_i if fields[1].to_i == Process.pid
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
  end

  def process_gone?(pid)
    !File.exist?("/proc/#{pid}") || File.read("/proc/#{pid}/stat").split[2] == 'Z'
  rescue Errno::ENOENT
    true
  end

  # Each host's socket lives in a private directory of its own.
  def socket_files
    Dir.glob(File.join(Dir.tmpdir, "pwshlib-#{Process.pid}-*"))
  end

  include_context 'a manager on the simulated host'

  # A script for a Ruby of its own, with our lib/ loaded, running `body`.
  def child_ruby(body)
    "$LOAD_PATH.unshift(#{File.join(PWSHLIB_ROOT, 'lib').inspect})\nrequire 'pwsh'\n#{body}"
  end

  # The same, with `m` a manager on the host PWSHLIB_POWERSHELL names.
  def child_ruby_with_manager(body)
    child_ruby("m = Pwsh::Manager.instance(ENV['PWSHLIB_POWERSHELL'], [])\n#{body}")
  end

  describe 'execute' do
    # Run again under GC.stress (rake gc_stress): converting arguments in and
    # the result hash out must not lose a Ruby object. Kept small: every
    # allocation is a full GC there.
    it 'converts code, env and the result hash safely', :gc_stress do
      result = manager.execute("Write-Output 'a\u00e9'; Write-Error 'e'; $env:PWSHLIB_GC; exit 3", 5000, nil, ['PWSHLIB_GC=v'])
      expect(result).to eq(exitcode: 3, stdout: "a\u00e9\ne\nv\n", stderr: ["e\n"], native_stdout: nil)
    end

    it 'runs many requests in a row on one host' do
      pid = manager.pid
      results = Array.new(50) { |i| manager.execute("Write-Output 'call #{i}'") }
      expect(results.map { |r| r[:stdout] }).to eq(Array.new(50) { |i| "call #{i}\n" })
      expect(manager.pid).to eq(pid)
      expect(new_manager).to equal(manager)
    end

    it 'returns stdout, stderr, the exit code and the error message' do
      result = manager.execute("Write-Output 'out'\nWrite-Error 'err'\nexit 7")
      # An error record is shown in stdout too, in order (as pwshlib 2.x).
      expect(result).to eq(exitcode: 7, stdout: "out\nerr\n", stderr: ["err\n"], native_stdout: nil)
      expect(manager.execute("throw 'boom'")).to include(exitcode: 1, errormessage: 'boom')
      expect(manager.execute("Write-Output 'still here'")[:stdout]).to eq("still here\n")
    end

    it 'refuses code that does not parse as PowerShell, and stays usable' do
      result = manager.execute("Write-Output 'unterminated")
      expect(result[:errormessage]).to match(/does not parse as PowerShell/)
      expect(manager.execute('Write-Output 1')[:stdout]).to eq("1\n")
    end

    it 'applies a working directory for that call only' do
      Dir.mktmpdir('pwshlib spec dir') do |dir|
        here = manager.execute('(Get-Location).Path')[:stdout]
        expect(manager.execute('(Get-Location).Path', nil, dir)[:stdout]).to eq("#{dir}\n")
        expect(manager.execute('(Get-Location).Path')[:stdout]).to eq(here)
      end
    end

    include_examples 'a manager that checks the working directory'

    it 'applies extra environment variables for that call only' do
      result = manager.execute('$env:PWSHLIB_A; $env:PWSHLIB_B', nil, nil, ['PWSHLIB_A=1', 'PWSHLIB_B=x=y', 'ignored'])
      expect(result[:stdout]).to eq("1\nx=y\n")
      expect(manager.execute('$env:PWSHLIB_A; $env:PWSHLIB_B')[:stdout]).to be_nil
    end

    it 'does not carry variables from one call into the next' do
      expect(manager.execute("$leak = 'v'; $leak")[:stdout]).to eq("v\n")
      expect(manager.execute('$leak')[:stdout]).to be_nil
    end

    it "carries code with '@, NUL, quotes and non-ASCII intact" do
      text = "a'@b\u0000c \"q\" \u2019 \u00e9\u{1F600}"
      code = "Write-Output @'\n#{text}\n'@"
      expect(manager.execute(code)[:stdout]).to eq("#{text}\n")
    end

    it 'carries 5 MB of code intact both ways' do
      big = ('0123456789abcdef' * 327_680) # 5 MiB
      result = manager.execute("Write-Output '#{big}'")
      expect(result[:stdout].bytesize).to eq(big.bytesize + 1)
      expect(result[:stdout]).to eq("#{big}\n")
    end

    it 'gives a result hash with UTF-8 strings' do
      result = manager.execute("Write-Output '\u00e9'")
      expect(result[:stdout].encoding).to eq(Encoding::UTF_8)
      expect(result[:stdout]).to eq("\u00e9\n")
    end
  end

  describe 'timeouts' do
    it 'stops code that runs past its timeout and stays usable' do
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      result = manager.execute('Start-Sleep -Seconds 10', 500)
      elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      expect(result[:errormessage]).to eq('Catastrophic failure: PowerShell module timeout (500 ms) exceeded while executing')
      expect(elapsed).to be_between(0.45, 2.5)
      expect(manager).to be_alive
      expect(manager.execute("Write-Output 'after'")[:stdout]).to eq("after\n")
    end

    it 'raises tiny timeouts to the floor and treats 0 as the default' do
      expect(manager.execute('Start-Sleep -Milliseconds 20', 1)[:stdout]).to be_nil
      expect(manager.execute('Start-Sleep -Milliseconds 20', 1)[:errormessage]).to be_nil
      expect(manager.execute("Write-Output 'zero'", 0)[:stdout]).to eq("zero\n")
    end

    it 'gives up on a hung host at the timeout plus the grace period; a fresh host follows' do
      hung_pid = manager.pid
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      result = manager.execute("Write-Output 'x'\n#pwshlib-sim:hang", 500)
      elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      expect(result[:errormessage]).to match(/stopped responding/)
      expect(elapsed).to be < 0.5 + 2
      expect(manager).not_to be_alive
      expect(process_gone?(hung_pid)).to be(true)
      expect_fresh_host(hung_pid)
    end
  end

  describe 'host death' do
    it 'turns a crash mid-call into an error result; the next instance is a fresh host' do
      crashed_pid = manager.pid
      result = manager.execute('Stop-Process -Id $PID')
      # -1, as pwshlib 2.x, for the call and for every later one.
      expect(result[:exitcode]).to eq(-1)
      expect(result[:errormessage]).to match(/host died during the call/)
      expect(manager).not_to be_alive
      expect(manager.execute('Write-Output 1')).to include(exitcode: -1, errormessage: /not running/)
      fresh = expect_fresh_host(crashed_pid)
      expect(fresh).not_to equal(manager)
    end

    it 'takes a second reply to one request as a protocol fault, never as the next result; a fresh host follows' do
      faulty_pid = manager.pid
      # The simulator answers this request twice (ext/pwshlib_sim/README.md).
      first = manager.execute("Write-Output 'first'", nil, nil, ['PWSHLIB_SIM_DOUBLE_REPLY=1'])
      expect(first[:stdout]).to eq("first\n")
      second = manager.execute("Write-Output 'second'")
      expect(second).to include(exitcode: 1, stdout: nil)
      asked, answered = second[:errormessage].match(/broke the protocol: the reply to request (\d+) carried the id of request (\d+)/)&.captures&.map(&:to_i)
      expect(answered).to eq(asked - 1), second[:errormessage]
      expect(manager).not_to be_alive
      expect(process_gone?(faulty_pid)).to be(true)
      fresh = new_manager
      expect(fresh).not_to equal(manager)
      expect(fresh.execute("Write-Output 'third'")[:stdout]).to eq("third\n")
    end

    it 'notices a host killed from outside' do
      Process.kill('KILL', manager.pid)
      # A killed process is reapable only once all its threads are gone.
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
      sleep 0.02 while manager.alive? && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      expect(manager).not_to be_alive
      expect(process_gone?(manager.pid)).to be(true)
      expect(new_manager).to be_alive
    end
  end

  describe 'starting' do
    it 'kills a host that never listens once pipe_timeout runs out, and says so' do
      Dir.mktmpdir('pwshlib never listens') do |dir|
        sleeper = File.join(dir, "sleepy 'host\".sh")
        File.write(sleeper, "#!/bin/sh\necho $$ > \"$(dirname \"$0\")/pid\"\nexec sleep 30\n")
        File.chmod(0o755, sleeper)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        expect { described_class.instance(sleeper, [], pipe_timeout: 1) }
          .to raise_error(RuntimeError, /to open its socket .* within the pipe_timeout of 1\.0 s.*killed/)
        expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be_between(0.9, 3)
        expect(process_gone?(File.read(File.join(dir, 'pid')).to_i)).to be(true)
      end
    end

    it 'starts a command whose path has spaces and quotes, without a shell' do
      Dir.mktmpdir("pwshlib it's \"quoted\" dir") do |dir|
        link = File.join(dir, 'my pwsh; echo hacked')
        File.symlink(PWSHLIB_SIM, link)
        other = described_class.instance(link, ['-NoProfile', 'a b', "c'd"])
        expect(other.execute("Write-Output 'spaced'")[:stdout]).to eq("spaced\n")
        other.exit
      end
    end

    it 'explains an executable that does not exist' do
      expect { described_class.instance('/nonexistent/pwsh', []) }
        .to raise_error(RuntimeError, %r{Failed to start the PowerShell host "/nonexistent/pwsh".*PWSHLIB_POWERSHELL})
    end

    it 'runs two managers with different keys at once' do
      first = new_manager
      second = new_manager(debug: false, pipe_timeout: 30)
      expect(second).not_to equal(first)
      expect(second.pid).not_to eq(first.pid)
      threads = [first, second].map do |m|
        Thread.new { m.execute('Start-Sleep -Milliseconds 400; $PID')[:stdout] }
      end
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      outputs = threads.map(&:value)
      expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be < 0.75
      expect(outputs).to eq(["#{first.pid}\n", "#{second.pid}\n"])
      expect(described_class.instances.values).to include(first, second)
    end
  end

  # pwshlib 2.x's constructor is public: `new` gives a manager of the
  # caller's own, with the options of `instance`, that `instance` does not
  # cache (it raised `TypeError: allocator undefined`).
  describe '.new' do
    it 'starts a host of its own that instance neither caches nor returns' do
      cached = new_manager
      own = described_class.new(PWSHLIB_SIM, described_class.pwsh_args, debug: false, pipe_timeout: 30)
      expect(own).to be_a(described_class).and be_alive
      expect(own.pid).not_to eq(cached.pid)
      expect(own.execute("Write-Output 'own'")[:stdout]).to eq("own\n")
      expect(described_class.instances.values).not_to include(own)
      expect(new_manager).to equal(cached)
      expect(described_class.instance(PWSHLIB_SIM, described_class.pwsh_args, debug: false, pipe_timeout: 30)).not_to equal(own)
      own.exit
      expect(own).not_to be_alive
      expect(process_gone?(own.pid)).to be(true)
      expect(cached).to be_alive
    end

    it 'takes the arguments and options as optional, as 2.x does' do
      bare = described_class.new(PWSHLIB_SIM)
      expect(bare.execute("Write-Output 'bare'")[:stdout]).to eq("bare\n")
      bare.exit
      Dir.mktmpdir('pwshlib never listens') do |dir|
        sleeper = File.join(dir, 'sleepy.sh')
        File.write(sleeper, "#!/bin/sh\nexec sleep 30\n")
        File.chmod(0o755, sleeper)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        expect { described_class.new(sleeper, [], pipe_timeout: 1) }
          .to raise_error(Pwsh::Error, /within the pipe_timeout of 1\.0 s/)
        expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be < 5
      end
    end

    it 'refuses a missing command as instance does' do
      expect { described_class.new(nil, []) }.to raise_error(Pwsh::PowerShellNotFound, /PWSHLIB_POWERSHELL/)
      expect { described_class.new('', []) }.to raise_error(Pwsh::PowerShellNotFound)
    end

    it 'gives an instance of the subclass it is called on' do
      subclass = Class.new(described_class)
      own = subclass.new(PWSHLIB_SIM, [])
      expect(own).to be_a(subclass)
      expect(own.execute("Write-Output 'sub'")[:stdout]).to eq("sub\n")
      own.exit
    end

    it 'is what instance makes its managers with, so a stub of new reaches them' do
      made = []
      allow(described_class).to receive(:new).and_wrap_original do |original, *args|
        made << args
        original.call(*args)
      end
      manager = described_class.instance(PWSHLIB_SIM, ['-Stubbed'], pipe_timeout: 20)
      expect(made).to eq([[PWSHLIB_SIM, ['-Stubbed'], { pipe_timeout: 20 }]])
      expect(described_class.instances.values).to include(manager)
      manager.exit
    end
  end

  describe 'the global VM lock' do
    it 'is released while waiting on the host' do
      ticks = ticks_while_executing('Start-Sleep -Milliseconds 500')
      expect(ticks).to be > 20
    end

    it 'lets an interrupt (Timeout.timeout) end a call, leaving the manager cleanly dead' do
      pid = manager.pid
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      expect { Timeout.timeout(0.3) { manager.execute('Start-Sleep -Seconds 20') } }.to raise_error(Timeout::Error)
      expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be < 1.5
      expect(manager).not_to be_alive
      expect(process_gone?(pid)).to be(true)
      expect(socket_files).not_to include(manager.socket_path)
      expect(new_manager.execute("Write-Output 'next'")[:stdout]).to eq("next\n")
    end
  end

  # Ruby wakes a call waiting without the GVL for every signal it handles,
  # not only for interrupts: such a wake must not cost the call or the host.
  describe 'signals that Ruby handles without raising' do
    it 'let a call go on when a child process exits during it (SIGCHLD)' do
      # In a Ruby of its own: with Puppet loaded (as here) Ruby 3.1 happens
      # not to pass SIGCHLD on to the waiting thread, a bare Ruby does.
      script = child_ruby_with_manager(<<~RUBY)
        pid = m.pid
        child = Process.spawn('sleep', '0.3')
        result = m.execute("Start-Sleep -Seconds 1\\nWrite-Output 'done'")
        Process.wait(child)
        p [result[:exitcode], result[:stdout], result[:errormessage], m.alive?, m.pid == pid]
        p m.execute("Write-Output 'next'")[:stdout]
      RUBY
      output = IO.popen([RbConfig.ruby, '-e', script], &:read)
      expect(output).to eq(%([0, "done\\n", nil, true, true]\n"next\\n"\n))
    end

    it 'let a call go on through a trap handler, which runs during the call' do
      pid = manager.pid
      trapped_at = nil
      previous = trap('USR1') { trapped_at = Process.clock_gettime(Process::CLOCK_MONOTONIC) }
      signaller = Thread.new do
        sleep 0.3
        Process.kill('USR1', Process.pid)
      end
      result = manager.execute("Start-Sleep -Seconds 1\nWrite-Output 'done'")
      finished_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      signaller.join
      expect(result).to include(exitcode: 0, stdout: "done\n")
      expect(result).not_to have_key(:errormessage)
      expect(trapped_at).not_to be_nil
      expect(finished_at - trapped_at).to be > 0.3
      expect(manager).to be_alive
      expect(manager.pid).to eq(pid)
    ensure
      trap('USR1', previous || 'DEFAULT')
    end

    it 'keeps a woken call and a call waiting for the same host apart' do
      pid = manager.pid
      first = Thread.new { manager.execute("Start-Sleep -Milliseconds 800\nWrite-Output 'first'") }
      sleep 0.2
      second = Thread.new { manager.execute("Write-Output 'second'") }
      sleep 0.1
      # Thread#wakeup runs the unblocking function and raises nothing.
      5.times do
        first.wakeup
        sleep 0.05
      end
      expect(first.value).to include(exitcode: 0, stdout: "first\n")
      expect(second.value).to include(exitcode: 0, stdout: "second\n")
      expect([first.value, second.value]).to all(satisfy { |r| !r.key?(:errormessage) })
      expect(manager).to be_alive
      expect(manager.pid).to eq(pid)
    end
  end

  describe 'Ctrl-C' do
    it 'ends a call promptly, with the host reaped' do
      script = child_ruby_with_manager(<<~RUBY)
        puts m.pid
        $stdout.flush
        begin
          m.execute('Start-Sleep -Seconds 30')
        rescue Interrupt
          puts "interrupted alive=\#{m.alive?}"
        end
      RUBY
      IO.popen([RbConfig.ruby, '-e', script]) do |io|
        host_pid = io.gets.to_i
        sleep 0.3
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        Process.kill('INT', io.pid)
        expect(io.gets).to eq("interrupted alive=false\n")
        expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be < 1.5
        io.read
        expect(File.exist?("/proc/#{host_pid}")).to be(false)
      end
    end
  end

  # The pwshlib 2.x result shapes other modules rely on
  # (the powershell module's exec provider calls stderr.each).
  describe 'result shapes' do
    it 'gives stderr as an Array of Strings, empty when there is none' do
      quiet = manager.execute("Write-Output 'x'")
      expect(quiet[:stderr]).to eq([])
      noisy = manager.execute("Write-Error 'one'; [Console]::Error.WriteLine('two')")
      expect(noisy[:stderr]).to eq(%W[one\n two\n])
      expect(noisy[:stderr]).to all(be_a(String))
      expect(noisy[:stderr].map(&:chop)).to eq(%w[one two])
    end

    it 'gives exitcode as an Integer, stdout as a String or nil, native_stdout, and errormessage only on failure' do
      success = manager.execute("Write-Output 'out'")
      expect(success.keys).to contain_exactly(:exitcode, :stdout, :stderr, :native_stdout)
      expect(success).to include(exitcode: 0, stdout: "out\n", native_stdout: nil)
      expect(success[:exitcode]).to be_a(Integer)

      silent = manager.execute('$null')
      expect(silent[:stdout]).to be_nil
      expect(silent).not_to have_key(:errormessage)

      failure = manager.execute("throw 'boom'")
      expect(failure.keys).to contain_exactly(:exitcode, :stdout, :stderr, :native_stdout, :errormessage)
      expect(failure).to include(exitcode: 1, errormessage: 'boom', stderr: [])
    end

    it 'gives the same shapes for failures the manager makes up itself' do
      result = manager.execute("Write-Output 'x'\n#pwshlib-sim:hang", 100)
      expect(result).to include(exitcode: 1, stdout: nil, stderr: [])
      expect(result[:errormessage]).to match(/stopped responding/)
    end
  end

  # Items 2 to 4, as the simulated host plays them (host.ps1's own text is
  # checked in ext/pwshlib_transport/tests/host_script_semantics.rs).
  describe 'exit codes, host output and the environment' do
    it 'gives the code of exit N at the top level' do
      expect(manager.execute("Write-Output 'x'; exit 7")).to include(exitcode: 7, stdout: "x\n")
      expect(manager.execute('exit 1')[:exitcode]).to eq(1)
      expect(manager.execute("Write-Output 'fine'")[:exitcode]).to eq(0)
    end

    it 'puts Write-Host, Write-Information, warnings and the console into stdout, in order' do
      result = manager.execute("Write-Output 'bar'; [Console]::Out.WriteLine('foo'); Write-Warning 'baz'")
      expect(result[:stdout]).to eq("bar\nfoo\nWARNING: baz\n")
      result = manager.execute("Write-Host 'h'; Write-Information 'i'; Write-Output 'o'")
      expect(result[:stdout]).to eq("h\ni\no\n")
    end

    it 'puts the environment back to its start before every call' do
      manager.execute("$env:PWSHLIB_SPEC_LEAK = 'leaked'")
      expect(manager.execute("Write-Output 'x' $env:PWSHLIB_SPEC_LEAK")[:stdout]).to eq("x\n")
      twice = manager.execute('Write-Output $env:PWSHLIB_TWICE', nil, nil, %w[PWSHLIB_TWICE=1 PWSHLIB_TWICE=2 PWSHLIB_TWICE=3])
      expect(twice).to include(exitcode: 0, stdout: "3\n")
      expect(manager).to be_alive
    end
  end

  # Item 7: the manager sends nothing to a process that is not the host it
  # started. The "PowerShell" started here (pwshlib-sim --tell-endpoint)
  # only tells the test its socket path and never listens; a second
  # simulator started by the test, neither the spawned host nor its child,
  # binds that path first, greets as a host and records every message.
  describe 'peer check' do
    it 'refuses a socket bound by another process before the host, which receives no request' do
      Dir.mktmpdir('pwshlib-peer') do |dir|
        told = File.join(dir, 'endpoint')
        record = File.join(dir, 'received')
        impostor = Thread.new do
          sleep 0.01 until File.exist?(told)
          pid = Process.spawn(PWSHLIB_SIM, '--record', record, '-File', 'host.ps1', '-PipePath', File.read(told))
          Timeout.timeout(15) { Process.wait(pid) }
        rescue Timeout::Error
          Process.kill('KILL', pid)
          Process.wait(pid)
        end
        secret = "pwshlib-secret-#{rand(10**12)}"
        outcome = begin
          teller = described_class.instance(PWSHLIB_SIM, ['--tell-endpoint', told], pipe_timeout: 20)
          teller.execute("$password = '#{secret}'")
          teller.exit
          'accepted'
        rescue StandardError => e
          e.message
        end
        impostor.join
        received = File.exist?(record) ? File.read(record) : ''
        expect(received).not_to include(secret)
        expect(received).to eq('')
        expect(outcome).to match(/is not the host that was started.*nothing was sent to it/)
      end
    end
  end

  describe 'exit' do
    it 'ends the host, reaps it and removes its socket' do
      pid = manager.pid
      path = manager.endpoint
      expect(path).to eq(manager.socket_path)
      expect(File.basename(path)).to eq('host.sock')
      expect(File.basename(File.dirname(path))).to match(/\Apwshlib-#{Process.pid}-\h{32}\z/)
      expect(File.stat(File.dirname(path)).mode & 0o777).to eq(0o700)
      expect(File.socket?(path)).to be(true)
      manager.exit
      expect(manager).not_to be_alive
      expect(process_gone?(pid)).to be(true)
      expect(File.exist?(path)).to be(false)
      expect(File.exist?(File.dirname(path))).to be(false)
      expect(new_manager).not_to equal(manager)
    end

    it 'reaps every host at Ruby exit, leaving no process and no socket file' do
      script = child_ruby(<<~RUBY)
        a = Pwsh::Manager.instance(ENV['PWSHLIB_POWERSHELL'], [])
        b = Pwsh::Manager.instance(ENV['PWSHLIB_POWERSHELL'], ['-x'])
        a.execute("Write-Output 1")
        puts [a.pid, b.pid, a.socket_path, b.socket_path].join(' ')
      RUBY
      output = IO.popen([RbConfig.ruby, '-e', script], &:read)
      expect($?.success?).to be(true)
      pid_a, pid_b, *sockets = output.split
      expect([pid_a, pid_b].map { |pid| File.exist?("/proc/#{pid}") }).to eq([false, false])
      expect(sockets.map { |path| File.exist?(path) }).to eq([false, false])
    end
  end

  describe 'fork' do
    it "leaves the parent's host alone; the child gets its own" do
      parent_pid = manager.pid
      reader, writer = IO.pipe
      child = fork do
        reader.close
        inherited = described_class.instance(PWSHLIB_SIM, described_class.pwsh_args)
        own = inherited.execute('$PID')[:stdout]
        writer.puts([manager.alive?, inherited.equal?(manager), own.to_i != parent_pid].inspect)
        writer.close
        # A normal exit: the child's at_exit reaps its own host only.
      end
      writer.close
      Process.wait(child)
      expect(reader.read.strip).to eq('[false, false, true]')
      expect(manager).to be_alive
      expect(manager.execute("Write-Output 'parent'")[:stdout]).to eq("parent\n")
      expect(manager.pid).to eq(parent_pid)
    end
  end

  describe 'after the suite' do
    it 'leaves no child process and no socket file behind' do
      described_class.shutdown_all
      expect(child_pids).to eq([])
      expect(socket_files).to eq([])
    end
  end
end
