# frozen_string_literal: true

# What a Windows agent run pays, where every run is a new process
# and so a fresh PowerShell host, measured in one run on the real pwsh
# (script/find-pwsh), each figure beside its floor and the issue's target:
#
# * first call: a puppet apply's first DSC Get (the host's start included)
#   against `pwsh -NoProfile -c 1`'s own start, timed right before each
#   apply (in turns); target at most 2x. With the host's assembly cache
#   warm, and once without a cache (PWSHLIB_HOST_CACHE empty).
# * per call: the in-sync Gets after the first, through the whole provider
#   (the provider's own "Invoke-DscResource Get took" debug line, from
#   handing the call to the manager until its answer), against the
#   resource's own Get in a warm runspace (bench/support/resource_get_floor.ps1,
#   a process of its own right after each apply, in turns);
#   target: median at most Get() + max(Get()/2, 1 ms). Class-based
#   (RealSetting) and script-based (MSFT_RealKeyed) resources.
# * round trip: Pwsh::Manager#execute of `1` and of 20 lines, back to back
#   in a fresh host, against PowerShell's in-process invoke after the same
#   number of calls (bench/support/inprocess_invoke.ps1 -Warmup 0), in
#   turns, PWSHLIB_BENCH_FRESH_RT_ROUNDS (3) rounds; target at most 3x.
# Medians with the p90 beside them; the load average printed (the machine
# is shared). The calls after the first are also timed as script text
# (PWSHLIB_DSC_DATA=0), in turns with the data form. Run by `rake bench`; prints "not run" without a real pwsh.
# PWSHLIB_BENCH_FRESH_TRACE=1 also prints, per kind, the phases of one
# fresh host (PWSHLIB_HOST_TRACE: ms since the host process started).
require 'json'
require 'open3'
require 'tmpdir'
require_relative '../spec/acceptance/spec_helper_acceptance'
require_relative 'support/repetitions'

ROOT_DIR = File.expand_path('..', __dir__)
REAL_DSC = File.join(ROOT_DIR, 'spec', 'real_pwsh', 'dsc')
SIZE = Integer(ENV.fetch('PWSHLIB_BENCH_FRESH_N', '100'))
# Five applies per kind, each a fresh host: with three, the median of the
# calls after the first moved by up to a third from run to run (one slow
# host weighs a third of them).
ROUNDS = Integer(ENV.fetch('PWSHLIB_BENCH_FRESH_ROUNDS', '5'))
CALLS = Integer(ENV.fetch('PWSHLIB_BENCH_FRESH_CALLS', '300'))
RT_ROUNDS = Integer(ENV.fetch('PWSHLIB_BENCH_FRESH_RT_ROUNDS', '3'))
CODES = { '1' => '1', '20 lines' => '1..20 | ForEach-Object { "line $_" }' }.freeze

pwsh = ENV['PWSHLIB_REAL_PWSH'] || IO.popen([File.join(ROOT_DIR, 'script', 'find-pwsh')], &:read).strip
unless File.executable?(pwsh.to_s)
  puts 'fresh host bench: not run, no real pwsh (script/find-pwsh found none)'
  exit 0
end
$LOAD_PATH.unshift(File.join(ROOT_DIR, 'lib'))
require 'pwsh'

def clock
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def timed
  started = clock
  yield
  clock - started
end

def load_average
  File.readable?('/proc/loadavg') ? File.read('/proc/loadavg').split.first(3).join(' ') : 'unknown'
end

def figures(values, unit = 'ms')
  format('median %<m>.2f %<u>s (p90 %<p>.2f)', m: median(values), p: p90(values), u: unit)
end

def verdict(value, limit)
  format('%<r>s (%<v>.2f against %<l>.2f)', r: value <= limit ? 'MET' : 'NOT MET', v: value, l: limit)
end

# The resource kinds: the Puppet type, its properties for resource i.
KINDS = {
  'class-based' => ['dsc_realsetting', 'Class', lambda { |i|
    { 'dsc_name' => "fresh-#{i}", 'dsc_ensure' => 'Present', 'dsc_count' => i, 'dsc_description' => "resource #{i}" }
  }],
  'script-based' => ['dsc_realkeyed', 'Script', lambda { |i|
    { 'dsc_name' => "fresh-#{i}", 'dsc_ensure' => 'Present', 'dsc_value' => "value #{i}" }
  }],
}.freeze

def manifest(type, properties)
  Array.new(SIZE) { |i| Acceptance.resource(type, "r#{i}", properties.call(i)) }.join("\n")
end

# The Gets' times (ms) of one in-sync puppet apply, in call order.
def in_sync_gets(machine, manifest, env, what)
  run = machine.apply(manifest, env: env)
  raise "#{what}: the in-sync run changed something or failed:\n#{run.output}" unless run.exitcode.zero?

  took = run.output.scan(/Invoke-DscResource Get took ([0-9.]+) s/).map { |(s)| Float(s) * 1000.0 }
  raise "#{what}: #{took.size} Gets, not #{SIZE}" unless took.size == SIZE

  took
end

def floor_gets(pwsh, kind, env)
  script = File.join(ROOT_DIR, 'bench', 'support', 'resource_get_floor.ps1')
  out, err, status = Open3.capture3(env, pwsh, '-NoProfile', '-NonInteractive', '-File', script,
                                    '-Kind', kind, '-Count', SIZE.to_s, '-Prefix', 'fresh')
  raise "resource_get_floor.ps1 failed: #{err}#{out}" unless status.success?

  JSON.parse(out.lines.last).fetch('times_ms')
end

def inprocess(pwsh, code)
  script = File.join(ROOT_DIR, 'bench', 'support', 'inprocess_invoke.ps1')
  out, err, status = Open3.capture3(pwsh, '-NoProfile', '-NonInteractive', '-File', script,
                                    '-Code', code, '-Iterations', CALLS.to_s, '-Warmup', '0')
  raise "inprocess_invoke.ps1 failed: #{err}#{out}" unless status.success?

  JSON.parse(out.lines.last)
end

# A fresh host: the first call of `code` and the CALLS - 1 after it, back
# to back (ms).
def manager_calls(pwsh, code)
  manager = Pwsh::Manager.new(pwsh, Pwsh::Manager.pwsh_args)
  times = Array.new(CALLS) do
    result = nil
    took = timed { result = manager.execute(code) }
    raise "the host failed #{code}: #{result}" unless result[:exitcode].zero?

    took * 1000.0
  end
  [times.first, times.drop(1)]
ensure
  manager&.exit
end

Dir.mktmpdir('pwshlib-fresh-bench') do |scratch|
  cache = File.join(scratch, 'host-cache')
  ENV['PWSHLIB_HOST_CACHE'] = cache
  # pwsh's own start, the first call's floor: timed once right before each
  # apply whose first call counts, so that the load, which climbs as the
  # bench runs, reaches both alike (as the round trips' rounds below);
  # three starts first, so that pwsh's files are read from the page cache
  # by every timed one, as by the hosts (printed beside, not counted).
  start_pwsh = -> { timed { system(pwsh, '-NoProfile', '-c', '1', out: File::NULL) } * 1000.0 }
  at_start = Array.new(3) { start_pwsh.call }
  starts = []
  machine = Acceptance::Machine.new('fresh-bench', module_path: File.join(REAL_DSC, 'modules'))
  state = File.join(machine.dir, 'dsc-state')
  FileUtils.mkdir_p(state)
  env = { 'PWSHLIB_POWERSHELL' => pwsh, 'PSModulePath' => File.join(REAL_DSC, 'standin'),
          'PWSHLIB_REAL_DSC_STATE' => state, 'PWSHLIB_HOST_CACHE' => cache }
  begin
    puts "fresh host bench: #{pwsh}, N=#{SIZE} in-sync resources, #{ROUNDS} puppet applies per kind " \
         "(each a fresh host), load #{load_average}"
    firsts = []
    KINDS.each do |name, (type, floor_kind, properties)|
      text = manifest(type, properties)
      created = machine.apply(text, env: env)
      raise "#{name}: the first run failed:\n#{created.output}" unless created.exitcode == 2

      # The data form and the script text (PWSHLIB_DSC_DATA=0) take
      # turns, so that the machine's load drifts alike.
      # The resource's own Get too, right after each apply of the data
      # form: the target sets the two against each other, so both are
      # timed under the load of the same moment.
      runs = []
      as_script = []
      floor = []
      ROUNDS.times do |round|
        trace = File.join(scratch, "trace-#{type}") if ENV['PWSHLIB_BENCH_FRESH_TRACE'] == '1' && round.zero?
        starts << start_pwsh.call
        runs << in_sync_gets(machine, text, trace ? env.merge('PWSHLIB_HOST_TRACE' => trace) : env, name)
        floor.concat(floor_gets(pwsh, floor_kind, env))
        puts(File.read(trace).lines.map { |line| "    #{name} phase: #{line}" }.join) if trace && File.exist?(trace)
        as_script.concat(in_sync_gets(machine, text, env.merge('PWSHLIB_DSC_DATA' => '0'), name).drop(1))
      end
      uncached = in_sync_gets(machine, text, env.merge('PWSHLIB_HOST_CACHE' => ''), name) if firsts.empty?
      firsts.concat(runs.map(&:first))
      later = runs.flat_map { |run| run.drop(1) }
      limit = median(floor) + [median(floor) / 2.0, 1.0].max
      puts "  #{name}, calls after the first: provider Get #{figures(later)} | resource's own Get " \
           "#{figures(floor)} | target median <= #{format('%.2f', limit)} ms: #{verdict(median(later), limit)}"
      puts "  #{name}, calls after the first as script text (PWSHLIB_DSC_DATA=0, in turns): #{figures(as_script)}"
      puts "  #{name}, first call (a fresh host, cached assembly): #{figures(runs.map(&:first))}"
      puts "  #{name}, first call without the assembly cache: #{format('%.0f', uncached.first)} ms" if uncached
    end
    puts '  pwsh -NoProfile -c 1 (its own start, right before each of those applies): ' \
         "#{figures(starts)} (at the bench's start, before any apply: " \
         "#{at_start.map(&:round).join(' ')} ms)"
    start = median(starts)
    puts "  first call against pwsh's start: target median <= #{format('%.0f', 2 * start)} ms: " \
         "#{verdict(median(firsts), 2 * start)} (#{format('%.1f', median(firsts) / start)}x)"
    CODES.each do |name, code|
      # A fresh host and PowerShell's own invoke in turns, RT_ROUNDS times,
      # so that the machine's drift (the floor moves by a third between
      # runs on a shared machine) reaches both alike: the verdict is the
      # median of the rounds' medians against the same of the floor's.
      rounds = Array.new(RT_ROUNDS) { [manager_calls(pwsh, code), inprocess(pwsh, code)] }
      later = rounds.flat_map { |(_, calls), _| calls }
      host = median(rounds.map { |(_, calls), _| median(calls) })
      floor = median(rounds.map { |_, own| own.fetch('median_ms') })
      ratio = host / floor
      puts format("  round trip %<n>-8s fresh host, #{CALLS} calls back to back, #{RT_ROUNDS} rounds: first %<f>.1f ms, " \
                  'then %<l>s, rounds %<h>s | in-process invoke: first %<if>.1f ms, then rounds %<o>s | ' \
                  '%<r>.1fx (median of the rounds), target <= 3x: %<v>s',
                  n: name, f: median(rounds.map { |(first, _), _| first }), l: figures(later),
                  h: rounds.map { |(_, calls), _| format('%.3f', median(calls)) }.join(' '),
                  if: median(rounds.map { |_, own| own.fetch('first_ms') }),
                  o: rounds.map { |_, own| format('%.3f', own.fetch('median_ms')) }.join(' '),
                  r: ratio, v: ratio <= 3 ? 'MET' : 'NOT MET')
    end
    puts "  load average at the end: #{load_average}"
  ensure
    FileUtils.rm_rf(machine.dir)
  end
end
