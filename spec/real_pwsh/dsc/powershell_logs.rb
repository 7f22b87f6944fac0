# frozen_string_literal: true

require 'fileutils'
require 'json'
require 'open3'
require 'securerandom'
require 'socket'
require 'tmpdir'

# PowerShell's own logs, as a hardened machine keeps them: a
# copy of the real pwsh with script block logging, module logging for
# every module and transcription switched on in its
# $PSHOME/powershell.config.json, and what it writes to syslog.
module PowerShellLogs
  # A copy of the real pwsh whose powershell.config.json switches on what
  # the DISA STIG and CIS baselines require, and module logging for every
  # module. PowerShell reads the file from $PSHOME (the folder of
  # System.Management.Automation.dll), so the copy is of $PSHOME: hard
  # links where the file system allows (nothing of the original is ever
  # written: the config is a new file), else a plain copy.
  class LoggingPwsh
    attr_reader :dir, :command, :transcripts, :identity

    def initialize(real_pwsh)
      @dir = Dir.mktmpdir('pwshlib-logging-pwsh-')
      home, environment = probe(real_pwsh)
      @transcripts = File.join(@dir, 'transcripts')
      FileUtils.mkdir_p(@transcripts)
      # The syslog identity of the copy's lines: ours alone, whatever else
      # writes to syslog on this machine.
      @identity = "pwshlib-logs-#{SecureRandom.hex(4)}"
      copy_home(home)
      write_config
      @command = write_launcher(environment)
    end

    def pshome
      File.join(@dir, 'pshome')
    end

    # Every transcript file the copy wrote, whole.
    def transcript_files
      Dir.glob(File.join(@transcripts, '**', '*')).select { |path| File.file?(path) }.sort
    end

    def cleanup
      FileUtils.rm_rf(@dir) unless ENV['PWSHLIB_ACCEPTANCE_KEEP']
    end

    private

    # $PSHOME, and the .NET environment the real pwsh runs with (the archive
    # in ../shared/tools starts a framework-dependent pwsh with DOTNET_ROOT
    # pointing at the .NET beside it): the copy needs the same.
    def probe(real_pwsh)
      script = '$PSHOME; foreach ($n in "DOTNET_ROOT", "DOTNET_ROLL_FORWARD_TO_PRERELEASE", "DOTNET_MULTILEVEL_LOOKUP") ' \
               '{ $v = [Environment]::GetEnvironmentVariable($n); if ($v) { "$n=$v" } }'
      out, err, status = Open3.capture3(real_pwsh, '-NoProfile', '-NonInteractive', '-Command', script)
      raise "#{real_pwsh} did not say where its $PSHOME is: #{err}" unless status.success?

      home, *environment = out.lines.map(&:chomp).reject(&:empty?)
      [home, environment.to_h { |pair| pair.split('=', 2) }]
    end

    def copy_home(home)
      _, status = Open3.capture2e('cp', '-al', home, pshome)
      return if status.success?

      FileUtils.rm_rf(pshome)
      FileUtils.cp_r(home, pshome)
    end

    def write_config
      path = File.join(pshome, 'powershell.config.json')
      config = File.exist?(path) ? JSON.parse(File.read(path)) : {}
      # A hard link to the original's file: replace it, never write it.
      FileUtils.rm_f(path)
      config.merge!(
        # Script block logging logs at level Verbose (PowerShell's
        # ScriptBlock_Compile_Detail event), below the default Informational.
        'LogLevel' => 'Verbose',
        'LogIdentity' => @identity,
        'PowerShellPolicies' => {
          'ScriptBlockLogging' => { 'EnableScriptBlockLogging' => true },
          'ModuleLogging' => { 'EnableModuleLogging' => true, 'ModuleNames' => ['*'] },
          'Transcription' => { 'EnableTranscripting' => true, 'EnableInvocationHeader' => true,
                               'OutputDirectory' => @transcripts },
        }
      )
      File.write(path, JSON.pretty_generate(config))
    end

    def write_launcher(environment)
      launcher = File.join(@dir, 'pwsh')
      executable = File.join(pshome, 'pwsh')
      exports = environment.map { |name, value| "#{name}='#{value.gsub("'") { "'\\''" }}' " }.join
      File.write(launcher, "#!/bin/sh\n#{exports}exec '#{executable}' \"$@\"\n")
      File.chmod(0o755, launcher)
      launcher
    end
  end

  # What PowerShell writes to syslog. On Linux it calls syslog(3), which
  # sends each line as a datagram to /dev/log. A machine without a syslog
  # daemon (a container, this project's CI) has no /dev/log, and the lines
  # are lost: then the listener binds /dev/log itself and keeps every
  # datagram. Where a daemon owns /dev/log, the listener reads what the
  # daemon keeps instead: the journal (journalctl), else /var/log/syslog or
  # /var/log/messages, from where they ended when it started.
  class SyslogListener
    PATH = '/dev/log'
    # Runs of this suite on one machine (worktrees side by side) take turns
    # on /dev/log.
    LOCK = File.join(Dir.tmpdir, 'pwshlib-dev-log.lock')
    LOCK_WAIT_SECONDS = 600
    FILES = %w[/var/log/syslog /var/log/messages].freeze

    # Why the listener could not listen (nil when it listens), and how.
    attr_reader :problem, :how

    def initialize(identity)
      @identity = identity
      @messages = []
      @mutex = Mutex.new
    end

    def start
      take_lock or return self
      if live_socket?
        read_daemon
      else
        bind
      end
      self
    rescue SystemCallError => e
      @problem = "could not listen on #{PATH} (#{e.message}): run as root on a machine without a syslog daemon, " \
                 'or with one whose journal or /var/log/syslog this user can read'
      release
      self
    end

    # Every message received so far (the whole datagram: priority, time,
    # identity and PowerShell's text), in order.
    def messages
      @mutex.synchronize { @messages.dup } + daemon_messages
    end

    def stop
      if @socket
        @reader&.kill
        @socket.close
        # Remove only the socket this listener made.
        File.unlink(PATH) if File.socket?(PATH) && File.stat(PATH).ino == @inode
      end
      release
    end

    private

    def take_lock
      @lock = File.open(LOCK, File::RDWR | File::CREAT, 0o666)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + LOCK_WAIT_SECONDS
      until @lock.flock(File::LOCK_EX | File::LOCK_NB)
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          @problem = "another run held #{LOCK} for #{LOCK_WAIT_SECONDS} s"
          return false
        end
        sleep 0.5
      end
      true
    end

    def release
      @lock&.flock(File::LOCK_UN)
      @lock&.close
      @lock = nil
    end

    # A socket at /dev/log that accepts a datagram belongs to a running
    # daemon; one that refuses it was left by a listener that died.
    def live_socket?
      return false unless File.exist?(PATH) || File.symlink?(PATH)
      raise Errno::EEXIST, "#{PATH} is not a socket" unless File.socket?(PATH)

      probe = Socket.new(:UNIX, :DGRAM)
      probe.connect(Socket.sockaddr_un(PATH))
      true
    rescue Errno::ECONNREFUSED, Errno::ENOENT
      File.unlink(PATH) if File.socket?(PATH)
      false
    ensure
      probe&.close
    end

    def bind
      @socket = Socket.new(:UNIX, :DGRAM)
      @socket.bind(Socket.sockaddr_un(PATH))
      File.chmod(0o666, PATH)
      @inode = File.stat(PATH).ino
      @how = "listening on #{PATH} itself (no syslog daemon here)"
      @reader = Thread.new do
        loop do
          message = @socket.recv(1 << 20)
          @mutex.synchronize { @messages << message.force_encoding(Encoding::UTF_8) }
        end
      rescue IOError, SystemCallError
        nil
      end
    end

    # A daemon owns /dev/log: read what it keeps.
    def read_daemon
      @since = Time.now - 1
      if system('journalctl', '--quiet', '-n', '0', out: File::NULL, err: File::NULL)
        @journal = true
        @how = "reading the journal (journalctl -t #{@identity})"
        return
      end
      file = FILES.find { |path| File.readable?(path) }
      raise Errno::EACCES, "a daemon owns #{PATH}, and there is no journal nor readable #{FILES.join(' or ')}" unless file

      @file = file
      @offset = File.size(file)
      @how = "reading #{file} (a syslog daemon owns #{PATH})"
    end

    def daemon_messages
      if @journal
        out, = Open3.capture2('journalctl', '--quiet', '--no-pager', '-o', 'cat', '-t', @identity,
                              '--since', "@#{@since.to_i}")
        return out.force_encoding(Encoding::UTF_8).lines
      end
      return [] unless @file

      File.open(@file, 'rb') do |f|
        f.seek(@offset)
        f.read.force_encoding(Encoding::UTF_8).lines
      end
    end
  end

  module_function

  # Which of PowerShell's logs a syslog line is from.
  def kind(message)
    case message
    when /\[ScriptBlock_Compile_Detail:/ then 'script block log'
    when /\[Pipeline_Detail:/ then 'module log'
    else 'other'
    end
  end
end
