# frozen_string_literal: true

# Acceptance harness: real `puppet apply` processes against the simulated
# PowerShell host (`pwshlib-sim`). Nothing here loads Puppet into the RSpec
# process; every run is a child process with private Puppet directories, so a
# run never touches /etc/puppetlabs and runs do not share state except the
# simulator's state file, which each scenario owns.
require 'fileutils'
require 'json'
require 'open3'
require 'securerandom'
require 'tmpdir'
require 'time'
require 'yaml'
require_relative '../../script/cargo_target'

module Acceptance
  ROOT = File.expand_path('../..', __dir__)
  MODULE_PATH = File.join(ROOT, 'spec', 'fixtures', 'modules')
  SIM = ENV['PWSHLIB_SIM'] || CargoTarget.sim
  # A run that takes longer than this is hung: kill it and fail the example.
  RUN_DEADLINE_SECONDS = Integer(ENV.fetch('PWSHLIB_ACCEPTANCE_RUN_DEADLINE', '240'))

  # Puppet 8's defaults, on Puppet 7 too: a manifest or provider that does
  # anything Puppet deprecates or warns about fails the run, and so does a
  # reference to an unknown variable.
  STRICT_ARGUMENTS = ['--strict', 'error', '--strict_variables'].freeze
  # Puppet 8 leaves unchanged resources out of the report by default
  # (exclude_unchanged_resources, false on Puppet 7). The suite asserts that
  # resources stayed unchanged, which needs their statuses: with the setting
  # off, an unchanged resource has a status saying so, a changed one says it
  # changed, and a missing status is an error, as on Puppet 7. Telling
  # "unchanged" from "absent from the report" would otherwise pass a
  # resource that never reached the catalogue.
  REPORT_ARGUMENTS = ['--no-exclude_unchanged_resources'].freeze

  # The friendly DSC resource name of each fixture type, as the simulator logs it.
  FRIENDLY = {
    'dsc_fixturefile' => 'FixtureFile',
    'dsc_fixtureclassresource' => 'FixtureClassResource',
    'dsc_fixtureuser' => 'FixtureUser',
    'dsc_fixturewebsite' => 'FixtureWebsite',
    'dsc_fixtureschedule' => 'FixtureSchedule',
    'dsc_fixtureregistry' => 'FixtureRegistry',
    'dsc_fixtureservice' => 'FixtureService',
  }.freeze

  # Who runs `puppet apply`, and how it spells a path of this machine: this
  # machine's Puppet, by default. The Windows job (spec/wine/acceptance_spec.rb)
  # sets one that starts Puppet with the Windows Ruby under wine, where this
  # machine's files are on drive Z:.
  class LocalPuppet
    def command
      ['puppet']
    end

    def path(path)
      path
    end

    def path_list(paths)
      paths.join(File::PATH_SEPARATOR)
    end

    # Settings this Puppet needs beyond the harness's own, for a run's directory.
    def extra_arguments(_run_dir)
      []
    end
  end

  class << self
    attr_writer :puppet

    def puppet
      @puppet ||= LocalPuppet.new
    end
  end

  # One finished `puppet apply`.
  class Run
    attr_reader :manifest, :exitcode, :stdout, :stderr, :report_text, :calls, :seconds

    def initialize(manifest:, exitcode:, stdout:, stderr:, report_text:, calls:, seconds:)
      @manifest = manifest
      @exitcode = exitcode
      @stdout = stdout
      @stderr = stderr
      @report_text = report_text
      @calls = calls
      @seconds = seconds
    end

    # Everything a user or a log collector could see from this run.
    def visible_text
      [stdout, stderr, report_text].join("\n")
    end

    def output
      "#{stdout}\n#{stderr}"
    end

    # The report as plain data: Ruby/Puppet YAML tags are dropped, so the
    # report reads without loading Puppet's classes into this process.
    def report
      @report ||= begin
        plain = report_text.gsub(%r{!ruby/\S+}, '')
        YAML.safe_load(plain, permitted_classes: [Symbol, Time, Date], aliases: true) || {}
      end
    end

    # resource status hash for e.g. 'Dsc_fixturefile[readme]'
    def status(resource_ref)
      statuses = report['resource_statuses'] || {}
      statuses[resource_ref] or raise "no status for #{resource_ref} in the report; have: #{statuses.keys.sort.join(', ')}"
    end

    def events(resource_ref)
      status(resource_ref)['events'] || []
    end

    def event_messages(resource_ref)
      events(resource_ref).map { |event| event['message'].to_s }
    end

    def changed?(resource_ref)
      status(resource_ref)['changed'] == true
    end

    def failed?(resource_ref)
      status(resource_ref)['failed'] == true
    end

    # The report's log lines (level and message).
    def logs
      (report['logs'] || []).map { |log| [log['level'].to_s.delete(':'), log['message'].to_s] }
    end

    # Calls the simulator logged during this run, filtered by DSC method,
    # friendly resource name and key property values (case-insensitive keys
    # and values, as DSC compares them).
    def calls_for(type, keys = {}, method: nil)
      friendly = FRIENDLY.fetch(type, type)
      calls.select do |call|
        next false unless call['resource'].to_s.casecmp?(friendly)
        next false if method && !call['method'].to_s.casecmp?(method)

        keys.all? do |key, value|
          actual = Acceptance.fetch_ci(call['properties'] || {}, key)
          actual.to_s.casecmp?(value.to_s)
        end
      end
    end

    # {'Get' => n, 'Set' => n, 'Test' => n} for one resource.
    def call_counts(type, keys = {})
      counts = Hash.new(0)
      calls_for(type, keys).each { |call| counts[call['method'].to_s.capitalize] += 1 }
      %w[Get Set Test].to_h { |m| [m, counts[m]] }
    end

    # For failure messages: the exit code and what a user sees without
    # --debug; the whole output stays in the run's directory.
    def to_s
      shown = output.lines.grep(/\A(Notice|Warning|Error):/).reject { |l| l.include?('Facter:') }
      shown = shown.first(40) + ["… #{shown.size - 40} more lines\n"] if shown.size > 40
      "puppet apply exited #{exitcode} after #{seconds.round(1)} s (full output: #{output_path})\n#{shown.join}"
    end

    attr_accessor :output_path, :run_dir

    # Every file Puppet wrote for this run (state, caches, reports, logs):
    # not the inputs, the simulator's own files, or the harness's transcript.
    def puppet_files
      ours = %w[site.pp sim-calls.jsonl output.txt]
      Dir.glob(File.join(run_dir, '**', '*'), File::FNM_DOTMATCH)
         .select { |path| File.file?(path) && !ours.include?(File.basename(path)) }
    end
  end

  # A simulated Windows machine: one state file that persists across runs,
  # and a private scratch directory.
  class Machine
    attr_reader :dir, :state_path, :runs

    # module_path: where `puppet apply` finds the Puppet modules (the
    # real-PowerShell tier brings its own, spec/real_pwsh/dsc/modules).
    def initialize(name, module_path: MODULE_PATH)
      @module_path = module_path
      @dir = Dir.mktmpdir("pwshlib-acceptance-#{name}-")
      @state_path = File.join(@dir, 'sim-state.json')
      @runs = []
      # FixtureService has no Ensure property: tell the simulator, so that its
      # Get results carry none, as the real resource's would not. The key
      # properties of every type: a Get is handed the desired state,
      # so the simulator cannot learn them from the first one.
      File.write(@state_path, JSON.generate('no_ensure' => ['FixtureService'], 'keys' => Acceptance.keys_of_types(module_path)))
    end

    # Applies a manifest. env holds extra environment variables (simulator
    # faults, the collision retry wait). With environmentpath, the run uses
    # that directory's `production` environment (its modules, and its
    # .resource_types when `puppet generate types` made them) instead of
    # --modulepath, and our lib/ is not put on Ruby's load path: the base
    # provider must load from the environment's pwshlib module, as on an
    # agent. arguments: more of `puppet apply`'s (`--noop`).
    def apply(manifest, env: {}, environmentpath: nil, arguments: [])
      index = @runs.size + 1
      run_dir = File.join(@dir, "run#{index}")
      %w[confdir codedir vardir logdir rundir].each { |d| FileUtils.mkdir_p(File.join(run_dir, d)) }
      manifest_path = File.join(run_dir, 'site.pp')
      File.write(manifest_path, manifest)
      log_path = File.join(run_dir, 'sim-calls.jsonl')
      report_path = File.join(run_dir, 'last_run_report.yaml')

      puppet = Acceptance.puppet
      command = [
        'timeout', '--kill-after=10', RUN_DEADLINE_SECONDS.to_s,
        *puppet.command, 'apply', puppet.path(manifest_path),
        *Acceptance.module_arguments(@module_path, environmentpath),
        '--debug', '--detailed-exitcodes', '--color', 'false',
        '--confdir', puppet.path(File.join(run_dir, 'confdir')),
        '--codedir', puppet.path(File.join(run_dir, 'codedir')),
        '--vardir', puppet.path(File.join(run_dir, 'vardir')),
        '--logdir', puppet.path(File.join(run_dir, 'logdir')),
        '--rundir', puppet.path(File.join(run_dir, 'rundir')),
        '--lastrunreport', puppet.path(report_path),
        *puppet.extra_arguments(run_dir),
        '--reports', 'none',
        *STRICT_ARGUMENTS,
        *REPORT_ARGUMENTS,
        *arguments
      ]
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      run_env = Acceptance.run_env(state_path, log_path, with_our_lib: environmentpath.nil?)
      stdout, stderr, status = Open3.capture3(run_env.merge(env), *command)
      seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      run = Run.new(
        manifest: manifest,
        exitcode: status.exitstatus,
        stdout: stdout,
        stderr: stderr,
        report_text: File.exist?(report_path) ? File.read(report_path) : '',
        calls: Acceptance.read_call_log(log_path),
        seconds: seconds
      )
      run.run_dir = run_dir
      run.output_path = File.join(run_dir, 'output.txt')
      File.write(run.output_path, "exit code #{run.exitcode}\n--- manifest\n#{manifest}\n--- stdout\n#{stdout}\n--- stderr\n#{stderr}")
      @runs << run
      Acceptance.all_runs << run
      run
    end

    # The simulator's stored resources, as it wrote them.
    def state
      File.exist?(state_path) ? JSON.parse(File.read(state_path)) : {}
    end

    # Rewrites the stored state between runs, as if the machine had changed
    # by itself (or reported values in another form).
    def edit_state
      state = self.state
      yield state
      File.write(state_path, JSON.pretty_generate(state))
    end

    def cleanup
      FileUtils.rm_rf(@dir) unless ENV['PWSHLIB_ACCEPTANCE_KEEP']
    end
  end

  module_function

  def all_runs
    @all_runs ||= []
  end

  # Where a run finds its modules: a module path, or the `production`
  # environment of an environment directory.
  def module_arguments(module_path, environmentpath)
    puppet = Acceptance.puppet
    return ['--modulepath', puppet.path(module_path)] unless environmentpath

    ['--environmentpath', puppet.path(environmentpath), '--environment', 'production']
  end

  def run_env(state_path, log_path, with_our_lib: true)
    puppet = Acceptance.puppet
    # pluginsync does not happen under `puppet apply`: put our lib/ (the base
    # provider and the native library) on Ruby's load path directly, unless
    # the run must find it as a module of its environment.
    our_lib = puppet.path(File.join(ROOT, 'lib'))
    inherited = ENV.fetch('RUBYLIB', '').split(File::PATH_SEPARATOR).reject { |dir| dir.empty? || dir == our_lib }
    rubylib = [(our_lib if with_our_lib), *inherited].compact
    {
      'PWSHLIB_POWERSHELL' => puppet.path(SIM),
      'PWSHLIB_SIM_STATE' => puppet.path(state_path),
      'PWSHLIB_SIM_LOG' => puppet.path(log_path),
      'RUBYLIB' => puppet.path_list(rubylib),
      'LC_ALL' => 'C.UTF-8',
      'LANG' => 'C.UTF-8',
    }
  end

  def read_call_log(path)
    return [] unless File.exist?(path)

    File.readlines(path, chomp: true).reject(&:empty?).map { |line| JSON.parse(line) }
  end

  def fetch_ci(hash, key)
    hash.each { |k, v| return v if k.to_s.casecmp?(key.to_s) }
    nil
  end

  # Every string anywhere inside a JSON-like value.
  def strings_in(value, found = [])
    case value
    when String then found << value
    when Array then value.each { |v| strings_in(v, found) }
    when Hash then value.each { |k, v| strings_in(k, found) && strings_in(v, found) }
    end
    found
  end

  # A password nobody could guess and everybody can find by substring search:
  # quotes of every kind PowerShell knows, backticks, `$`, `#`, newlines,
  # non-ASCII, the redaction marker itself, and a unique token.
  def generate_secret(label)
    token = "LEAK#{label.upcase}#{SecureRandom.hex(8)}"
    "#{token}'\"\u2018\u2019\u201A\u201B`$env:PATH#x\n" \
      "line2 \r\n\tüñí©ødé 🔑 '@ \"@ \#{1+1} $(whoami) #<Sensitive [value redacted]> \\'\\\\ #{token.reverse}"
  end

  # The token that makes a secret unique: a leak of any piece of it shows up.
  def secret_token(secret)
    secret[/LEAK[A-Z0-9]+[0-9a-f]{16}/]
  end

  # A Puppet single-quoted string literal for any text: only `\` and `'`
  # need escaping; newlines and Unicode go in as they are.
  def puppet_string(text)
    "'#{text.gsub('\\') { '\\\\' }.gsub("'") { "\\'" }}'"
  end

  # Renders a Puppet value (Hash, Array, String, Integer, true/false, nil,
  # Sensitive(..) via Acceptance::Raw).
  def puppet_value(value)
    case value
    when Raw then value.text
    when String then puppet_string(value)
    when Integer, Float, TrueClass, FalseClass then value.to_s
    when nil then 'undef'
    when Array then "[#{value.map { |v| puppet_value(v) }.join(', ')}]"
    when Hash then "{ #{value.map { |k, v| "#{puppet_string(k.to_s)} => #{puppet_value(v)}" }.join(', ')} }"
    else raise ArgumentError, "no Puppet literal for #{value.inspect}"
    end
  end

  # Puppet source that must go into the manifest as it is.
  Raw = Struct.new(:text)

  def sensitive(text)
    Raw.new("Sensitive(#{puppet_string(text)})")
  end

  def credential(user, password)
    { 'user' => user, 'password' => sensitive(password) }
  end

  def resource(type, title, attributes)
    body = attributes.map { |name, value| "  #{name} => #{puppet_value(value)}," }.join("\n")
    "#{type} { #{puppet_string(title)}:\n#{body}\n}\n"
  end

  # The key properties of each DSC type under module_path, by friendly name,
  # as the simulator names them (the attribute without dsc_): those
  # mandatory for get, as the scaffolder marks a resource's keys.
  def keys_of_types(module_path)
    Dir[File.join(module_path, '*', 'lib', 'puppet', 'type', 'dsc_*.rb')].sort.to_h do |file|
      text = File.read(file)
      keys = text.scan(/^    dsc_(\w+): \{\n(?:      .*\n)*?      mandatory_for_get: true,/).flatten
      [text[/dscmeta_resource_friendly_name: '([^']+)'/, 1], keys]
    end
  end

  # The simulator's state file (see ext/pwshlib_sim/README.md):
  #   {"resources": {"<friendly name>": [{<property> => <value>, ...}, ...]},
  #    "keys": {...}, "no_ensure": [...], "faults": {...}, "counters": {...}}
  # Resource and property names compare without case, as DSC does.
  def stored_all(state)
    (state['resources'] || {}).transform_keys(&:downcase)
  end

  def stored_resource(state, friendly, keys)
    items = stored_all(state)[friendly.downcase] || []
    items.find do |item|
      keys.all? { |key, value| fetch_ci(item, key).to_s.casecmp?(value.to_s) }
    end
  end

  # Property names lowercased, at the top level only.
  def normalize_stored(resource)
    resource.transform_keys(&:downcase)
  end

  # Does a stored value hold exactly a declared value? Nested hash keys
  # compare without case; a nested CIM instance's class marker is not a
  # declared value; DateTimes compare as instants.
  def same_stored_value?(actual, expected)
    case expected
    when Time
      actual.is_a?(String) && (Time.iso8601(actual) == expected rescue false) # rubocop:disable Style/RescueModifier
    when Hash
      return false unless actual.is_a?(Hash)

      actual = actual.reject { |k, _| k.to_s.casecmp?('cim_instance_type') }.transform_keys(&:downcase)
      expected = expected.reject { |k, _| k.to_s.casecmp?('cim_instance_type') }.transform_keys(&:downcase)
      actual.keys.sort == expected.keys.sort && expected.all? { |k, v| same_stored_value?(actual[k], v) }
    when Array
      actual.is_a?(Array) && actual.size == expected.size &&
        expected.each_with_index.all? { |v, i| same_stored_value?(actual[i], v) }
    else
      actual == expected
    end
  end

  # [user, password] of a credential as the simulator logs or stores it.
  def credential_parts(value)
    return [nil, nil] unless value.is_a?(Hash)

    user = fetch_ci(value, 'user') || fetch_ci(value, 'username')
    password = fetch_ci(value, 'password')
    [user, password]
  end

  # The resources the Linux lifecycle suite and the suite under wine both
  # declare (title → [type, attributes]): a file and a user with the run-as
  # credential `runas`, the user's PSCredential password `user_secret`, a
  # Class-based resource and a service. Their keys are COMMON_KEYS.
  def common_resources(runas, user_secret)
    {
      'file-a' => ['dsc_fixturefile', {
        'dsc_destinationpath' => 'C:\\Temp\\Pwshlib\\Readme.txt',
        'dsc_ensure' => 'Present',
        'dsc_contents' => 'Hello',
        'dsc_type' => 'File',
        'dsc_attributes' => %w[Archive ReadOnly],
        'dsc_psdscrunascredential' => runas,
      }],
      'class-a' => ['dsc_fixtureclassresource', {
        'dsc_name' => 'FeatureFlag',
        'dsc_ensure' => 'Present',
        'dsc_value' => 'Enabled',
      }],
      'user-a' => ['dsc_fixtureuser', {
        'dsc_username' => 'Alice',
        'dsc_ensure' => 'Present',
        'dsc_password' => credential('Alice', user_secret),
        'dsc_fullname' => 'Alice Liddell',
        'dsc_psdscrunascredential' => runas,
      }],
      'svc-a' => ['dsc_fixtureservice', {
        'dsc_name' => 'Spooler',
        'dsc_state' => 'Running',
        'dsc_startuptype' => 'Automatic',
      }],
    }
  end

  # The simulator's key properties of each of common_resources, to find
  # their calls and their stored state.
  COMMON_KEYS = {
    'file-a' => { 'destinationpath' => 'C:\\Temp\\Pwshlib\\Readme.txt' },
    'class-a' => { 'name' => 'FeatureFlag' },
    'user-a' => { 'username' => 'Alice' },
    'svc-a' => { 'name' => 'Spooler' },
  }.freeze
end

if defined?(RSpec)
  RSpec.configure do |config|
    config.expect_with(:rspec) { |c| c.syntax = :expect }
    config.order = :defined
    # The suite's cost is its `puppet apply` runs: say how many and how long.
    config.after(:suite) do
      runs = Acceptance.all_runs
      next if runs.empty?

      total = runs.sum(&:seconds)
      puts format("\n%<count>d puppet apply runs, %<total>.1f s in all, %<mean>.1f s on average, slowest %<max>.1f s",
                  count: runs.size, total: total, mean: total / runs.size, max: runs.map(&:seconds).max)
    end
  end
end
