# frozen_string_literal: true

# The pwshlib demo: applies examples/demo.pp twice with `puppet apply`, with
# the scaffolded fixture providers talking to the simulated PowerShell host
# (pwshlib-sim, where cargo built it) on a fresh, empty simulated machine. It shows
#   1. the first run's changes,
#   2. the second run's "no changes",
#   3. what PowerShell was asked to do (the simulator's call log),
#   4. a debug excerpt of what each Set sends, password redacted.
# It exits non-zero if any of that does not hold.
require 'fileutils'
require 'json'
require 'open3'
require 'tmpdir'
require_relative '../script/cargo_target'

ROOT = File.expand_path('..', __dir__)
MANIFEST = File.join(ROOT, 'examples', 'demo.pp')
MODULE_PATH = File.join(ROOT, 'spec', 'fixtures', 'modules')
SIM = ENV['PWSHLIB_SIM'] || CargoTarget.sim
# A piece of the demo's Sensitive password (see demo.pp): it must never show.
SECRET_PIECE = 'every `quote`'

def heading(text)
  puts "\n\e[1m== #{text}\e[0m"
end

def fail!(message)
  warn "\ndemo FAILED: #{message}"
  exit 1
end

def apply(machine, index)
  run_dir = File.join(machine, "run#{index}")
  %w[confdir codedir vardir logdir rundir].each { |d| FileUtils.mkdir_p(File.join(run_dir, d)) }
  log = File.join(run_dir, 'sim-calls.jsonl')
  env = {
    'PWSHLIB_POWERSHELL' => SIM,
    'PWSHLIB_SIM_STATE' => File.join(machine, 'sim-state.json'),
    'PWSHLIB_SIM_LOG' => log,
    # Under `puppet apply` there is no pluginsync: put pwshlib's lib/ on the load path.
    'RUBYLIB' => [File.join(ROOT, 'lib'), ENV['RUBYLIB']].compact.join(File::PATH_SEPARATOR),
  }
  command = ['puppet', 'apply', MANIFEST, '--modulepath', MODULE_PATH, '--detailed-exitcodes', '--debug',
             '--color', 'false'] +
            %w[confdir codedir vardir logdir rundir].flat_map { |d| ["--#{d}", File.join(run_dir, d)] }
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  out, err, status = Open3.capture3(env, *command)
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  calls = File.exist?(log) ? File.readlines(log).map { |line| JSON.parse(line) } : []
  { output: out + err, exitcode: status.exitstatus, calls: calls, seconds: seconds }
end

# The lines a user sees without --debug.
def user_lines(output)
  output.lines.grep(/\A(Notice|Warning|Error):/).reject { |l| l.include?('Compiled catalog') || l.include?('Facter:') }
end

def call_summary(calls)
  per_resource = calls.group_by { |c| c['resource'] }
  per_resource.map do |resource, list|
    counts = list.group_by { |c| c['method'] }.map { |m, l| "#{l.size} #{m}" }.join(', ')
    "  #{resource.ljust(16)} #{counts}"
  end
end

# From the debug output of one resource's Set call: the call, then the one
# line that says what is sent to PowerShell (the call's data: resource,
# method, route and properties, each secret as the redaction marker; the
# prelude is named once per host session, never printed).
#
# The resource is found as a user would look for it: the debug line that
# names its Set call ("Invoke-DscResource Set for "motd" (FixtureFile …)")
# among the lines of its type, and the next "Sending Invoke-DscResource Set"
# line of that type. The prefix Puppet and the Resource API put before them
# (the title, or the namevar hash the Resource API passes to `set`) is not
# relied on.
def sent_excerpt(output, type, title)
  lines = output.lines
  of_type = ->(line) { line.include?(type) }
  start = lines.index { |l| of_type.call(l) && l.include?("Invoke-DscResource Set for #{title.inspect}") }
  return nil unless start

  sent = ((start + 1)...lines.size).find { |i| of_type.call(lines[i]) && lines[i].include?('Sending Invoke-DscResource Set ') }
  return nil unless sent

  [lines[start], lines[sent]].map { |l| l.length > 700 ? "#{l[0, 700]}…\n" : l }
end

fail!("the simulated host is not built: #{SIM} (run rake compile)") unless File.executable?(SIM)

Dir.mktmpdir('pwshlib-demo-') do |machine|
  puts "pwshlib demo: puppet apply #{File.basename(MANIFEST)} twice on a fresh simulated machine (#{machine})"

  first = apply(machine, 1)
  heading "Run 1: exit code #{first[:exitcode]} (2 = changes applied), #{first[:seconds].round(1)} s"
  puts user_lines(first[:output])
  puts 'PowerShell calls (Invoke-DscResource):', call_summary(first[:calls])

  second = apply(machine, 2)
  heading "Run 2: exit code #{second[:exitcode]} (0 = no changes), #{second[:seconds].round(1)} s"
  changes = user_lines(second[:output]).reject { |l| l.start_with?('Notice: Applied catalog') }
  puts changes.empty? ? 'No changes: every resource is in the desired state.' : changes
  puts 'PowerShell calls (Invoke-DscResource):', call_summary(second[:calls])

  heading 'Debug excerpt (run 1, --debug): what the Set calls of the motd file and the website send'
  # What each excerpt must show: the run-as password as the redaction
  # marker, and the website's bindings as nested CIM instances by class.
  expected = {
    %w[dsc_fixturefile motd] => ->(line) { line.include?('#<Sensitive [value redacted]>') },
    %w[dsc_fixturewebsite intranet] => ->(line) { line.include?('MSFT_FixtureAuthenticationInformation') },
  }
  excerpts = expected.keys.to_h { |type, title| [[type, title], sent_excerpt(first[:output], type, title)] }
  excerpts.each do |(type, title), lines|
    puts(lines ? [lines, ''] : "(no Set call's data found for #{type}[#{title}] in the debug output)")
  end

  heading 'Checks'
  leaked = [first, second].any? { |run| run[:output].include?(SECRET_PIECE) }
  sent = [first, second].any? { |run| run[:calls].to_json.include?(JSON.generate(SECRET_PIECE)[1..-2]) }
  checks = {
    'run 1 applied changes (exit code 2)' => first[:exitcode] == 2,
    'run 2 changed nothing (exit code 0)' => second[:exitcode].zero?,
    'run 2 made no Set call' => second[:calls].none? { |c| c['method'] == 'Set' },
    'run 2 made one Get per resource' => second[:calls].count { |c| c['method'] == 'Get' } == 4,
    'the password never appeared in the output' => !leaked,
    'the password reached PowerShell intact' => sent,
    'the debug output shows what each Set sends, redacted' =>
      expected.all? { |key, shows| excerpts[key]&.any?(&shows) },
  }
  checks.each { |text, ok| puts "  #{ok ? 'ok  ' : 'FAIL'} #{text}" }
  failed = checks.reject { |_, ok| ok }.keys
  # The closing line CI reads, as a test runner's.
  puts "demo: #{checks.size - failed.size} passed, #{failed.size} failed"
  fail!(failed.join('; ')) unless failed.empty?
  puts "\nDemo finished: the first run converged the machine, the second found nothing to do."
end
