# frozen_string_literal: true

require_relative 'pwsh/version'
require_relative 'pwsh/error'
require_relative 'pwsh/util'
require_relative 'pwsh/windows_powershell'
require_relative 'pwshlib'

# Pwsh: run PowerShell from Ruby through a persistent host process.
module Pwsh
  # The persistent PowerShell host manager. The class itself, `#execute`,
  # `#alive?`, `#exit` and `.spawn` are native (ext/pwshlib/src/manager.rs);
  # this file adds `new` (over `spawn`), the instance cache and the
  # PowerShell lookup.
  class Manager
    HOST_SCRIPT = File.expand_path('templates/host.ps1', __dir__).freeze
    DEFAULT_PIPE_TIMEOUT = 180 # seconds, as pwshlib 2.x
    OVERRIDE_VARIABLE = 'PWSHLIB_POWERSHELL'
    # Each edition's executable, where it is not where pwshlib looks;
    # PWSHLIB_POWERSHELL, when set, is every edition's.
    EDITION_VARIABLES = { 'Core' => 'PWSHLIB_POWERSHELL_CORE', 'Desktop' => 'PWSHLIB_POWERSHELL_DESKTOP' }.freeze

    UNIX_PWSH_DIRS = [
      '/opt/microsoft/powershell/7',
      '/opt/microsoft/powershell/7-preview',
      '/opt/microsoft/powershell/6',
      '/usr/local/microsoft/powershell/7',
      '/usr/bin',
      '/usr/local/bin',
      '/snap/bin',
    ].freeze

    # What the host was started with, as pwshlib 2.x's readers gave it (a
    # caller gets a fresh manager for the same PowerShell with them).
    attr_reader :powershell_command, :powershell_arguments

    @instances = {}
    @instances_lock = Mutex.new

    class << self
      # The manager cache: key ([cmd, args, options]) → manager.
      attr_reader :instances

      # One live manager per (cmd, args, options); a dead one is replaced.
      # Options: debug: (host stderr goes to ours), pipe_timeout: (seconds).
      def instance(cmd, args, options = {})
        raise PowerShellNotFound, not_found_message if cmd.nil? || cmd.to_s.empty?

        key = [cmd.to_s, Array(args).map(&:to_s), options.to_h].freeze
        @instances_lock.synchronize do
          manager = @instances[key]
          return manager if manager&.alive?

          manager&.exit
          @instances[key] = new(cmd, key[1], options)
        end
      end

      # pwshlib 2.x's public constructor: a manager with a host of its own,
      # which `instance` neither caches nor hands out (the caller owns it,
      # and `exit` ends it; at Ruby exit every host is ended anyway). The
      # same options as `instance`. `instance` makes its managers here, so
      # a stub of `new` reaches them too, as in 2.x.
      def new(cmd, args = [], options = {})
        raise PowerShellNotFound, not_found_message if cmd.nil? || cmd.to_s.empty?

        options = options.to_h
        args = Array(args).map(&:to_s)
        manager = spawn(cmd.to_s, args, HOST_SCRIPT, options[:debug] ? true : false,
                        Float(options[:pipe_timeout] || DEFAULT_PIPE_TIMEOUT))
        manager.instance_variable_set(:@powershell_command, cmd.to_s)
        manager.instance_variable_set(:@powershell_arguments, args.freeze)
        manager
      end

      def host_script_path
        HOST_SCRIPT
      end

      # PWSHLIB_POWERSHELL, when set to something non-empty.
      def powershell_override
        value = ENV.fetch(OVERRIDE_VARIABLE, nil)
        value.nil? || value.empty? ? nil : value
      end

      # Windows PowerShell (powershell.exe), or the override.
      def powershell_path
        return powershell_override if powershell_override

        root = ENV.fetch('SYSTEMROOT', 'C:\\Windows')
        %w[sysnative system32].each do |dir|
          path = "#{root}\\#{dir}\\WindowsPowerShell\\v1.0\\powershell.exe"
          return path if File.exist?(path)
        end
        'powershell.exe'
      end

      def powershell_args
        %w[-NoProfile -NonInteractive -NoLogo -ExecutionPolicy Bypass]
      end

      # PowerShell 6+ (pwsh): the override, else the first pwsh on PATH,
      # in `additional_paths`, or in the usual install directories; nil if
      # there is none (`instance(nil, …)` then says what was searched).
      def pwsh_path(additional_paths = [])
        return powershell_override if powershell_override

        pwsh_candidates(additional_paths).find { |path| File.file?(path) && File.executable?(path) }
      end

      def pwsh_args
        %w[-NoProfile -NonInteractive -NoLogo -ExecutionPolicy Bypass]
      end

      def pwsh_candidates(additional_paths = [])
        exe = Pwsh::Util.on_windows? ? 'pwsh.exe' : 'pwsh'
        path_dirs = path_variable.split(File::PATH_SEPARATOR).reject(&:empty?)
        install_dirs = if Pwsh::Util.on_windows?
                         program_files = ENV.fetch('ProgramFiles', 'C:\\Program Files')
                         %w[7 7-preview 6].map { |v| File.join(program_files, 'PowerShell', v) }
                       else
                         UNIX_PWSH_DIRS
                       end
        (path_dirs + Array(additional_paths) + install_dirs).map do |dir|
          dir.to_s.end_with?(exe) ? dir.to_s : File.join(dir.to_s, exe)
        end.uniq
      end

      # The executable and arguments of one PowerShell edition: 'Core'
      # (PowerShell 7, `pwsh_path`) or 'Desktop' (Windows PowerShell 5.1,
      # `powershell_path`, on Windows only). PWSHLIB_POWERSHELL is every
      # edition's; the edition's own variable comes next. Raises
      # PowerShellNotFound saying where it looked.
      def edition_command(edition)
        core = edition.to_s.casecmp('Core').zero?
        own = ENV.fetch(EDITION_VARIABLES.fetch(core ? 'Core' : 'Desktop'), '')
        path = powershell_override || (own.empty? ? nil : own)
        path ||= if core
                   pwsh_path
                 elsif Pwsh::Util.on_windows?
                   powershell_path
                 end
        raise PowerShellNotFound, edition_not_found_message(core) if path.nil?

        [path, core ? pwsh_args : powershell_args]
      end

      def windows_powershell_supported?
        return true if powershell_override

        Pwsh::Util.on_windows? && Pwsh::WindowsPowerShell.compatible_version?
      end

      def pwsh_supported?
        !pwsh_path.nil?
      end

      def not_found_message
        <<~MSG.strip
          No PowerShell executable was found. Searched for pwsh in: #{pwsh_candidates.join(', ')}.
          Set the environment variable #{OVERRIDE_VARIABLE} to the full path of the PowerShell executable to use
          (for example #{OVERRIDE_VARIABLE}=/opt/microsoft/powershell/7/pwsh).
        MSG
      end

      private

      def edition_not_found_message(core)
        variable = EDITION_VARIABLES.fetch(core ? 'Core' : 'Desktop')
        searched = if core
                     "searched for pwsh in: #{pwsh_candidates.join(', ')}"
                   else
                     'Windows PowerShell 5.1 runs only on Windows'
                   end
        "#{searched}; #{variable} and #{OVERRIDE_VARIABLE} are unset (either names the executable to use)"
      end

      def path_variable
        # Windows environment names are case-insensitive; Ruby's ENV keys are not.
        key = ENV.keys.find { |name| name.casecmp('PATH').zero? }
        key ? ENV.fetch(key, '') : ''
      end
    end
  end
end

# Every host is told to exit and is reaped at Ruby exit: no zombies, no
# socket files left behind.
at_exit { Pwsh::Manager.shutdown_all }
