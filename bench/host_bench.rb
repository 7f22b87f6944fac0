# frozen_string_literal: true

# The host's own cost: a Pwsh::Manager round trip through the real
# pwsh (script/find-pwsh) against PowerShell's own in-process invoke of the
# same code in a warm runspace (bench/support/inprocess_invoke.ps1), both
# measured in this run, per-call medians and their ratio. Target: at most 3x.
#
# Two manager figures per code:
# * "idle host": each call is timed from a host that has finished the
#   previous call's cleanup (a pause of PAUSE_S before it, outside the timed
#   part): the latency a caller sees when it does work of its own between
#   calls, as the provider does (Puppet's own code between resources).
# * "back to back": the calls follow each other at once, so each also waits
#   for the cleanup the previous one left to do after its reply (the
#   runspace reset, the environment restore).
# * "prelude, back to back": the same through execute_with_prelude('dsc'),
#   the path of every DSC call, whose runspaces the host uses in turn (one
#   is reset while the other runs the next call).
# Run with `rake bench` (builds first); prints "not run" without a real pwsh.
require 'json'
require 'open3'
require_relative 'support/repetitions'

root = File.expand_path('..', __dir__)
pwsh, status = Open3.capture2(File.join(root, 'script', 'find-pwsh'), err: File::NULL)
pwsh = pwsh.strip
unless status.success? && File.executable?(pwsh)
  puts 'host bench: not run, no real pwsh (script/find-pwsh)'
  exit 0
end

# PWSHLIB_BENCH_LIB: another build's lib/ (its host.ps1 with it), as for
# bench/catalog_bench.rb: the before of a change.
$LOAD_PATH.unshift(ENV.fetch('PWSHLIB_BENCH_LIB', File.join(root, 'lib')))
require 'pwsh'

ITERATIONS = Integer(ENV.fetch('PWSHLIB_HOST_BENCH_ITERATIONS', '1000'))
# Untimed calls first, on both sides: .NET's tiered JIT recompiles the hot
# path only after some thousands of calls (in-process, `1` takes 0.6 ms after
# 200 calls and 0.3 ms after 3,000).
WARMUP = 3000
PAUSE_S = 0.004
CODES = {
  '1' => '1',
  '20 lines' => '1..20 | ForEach-Object { "line $_" }',
}.freeze

def clock
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def manager_median_ms(manager, code, pause, prelude: false)
  call = prelude ? -> { manager.execute_with_prelude('dsc', code) } : -> { manager.execute(code) }
  expected = call.call
  raise "the host failed #{code}: #{expected}" unless expected[:exitcode].zero? && expected[:stdout]

  WARMUP.times { call.call }
  times = Array.new(ITERATIONS) do
    sleep(pause) if pause
    started = clock
    result = call.call
    elapsed = clock - started
    raise "the host answered #{result} to #{code}" unless result[:stdout] == expected[:stdout]

    elapsed * 1000.0
  end
  median(times)
end

def inprocess_median_ms(pwsh, root, code, session_state)
  script = File.join(root, 'bench', 'support', 'inprocess_invoke.ps1')
  out, err, status = Open3.capture3(pwsh, '-NoProfile', '-NonInteractive', '-File', script,
                                    '-Code', code, '-Iterations', (ITERATIONS * 2).to_s, '-Warmup', WARMUP.to_s,
                                    '-SessionState', session_state)
  raise "inprocess_invoke.ps1 failed: #{err}#{out}" unless status.success?

  JSON.parse(out.lines.last).fetch('median_ms')
end

manager = Pwsh::Manager.instance(pwsh, Pwsh::Manager.pwsh_args)
version = manager.execute('$PSVersionTable.PSVersion.ToString()')[:stdout].to_s.strip
load = File.read('/proc/loadavg').split.first(3).join(' ') if File.readable?('/proc/loadavg')
puts "host bench: pwsh #{version}, #{Pwsh::Manager.host_script_path}, #{ITERATIONS} calls per figure, " \
     "per-call medians, load #{load}"
CODES.each do |name, code|
  # The ratio is taken against the faster floor: a runspace like the host's
  # (CreateDefault2); the other kind is printed beside it.
  inprocess = inprocess_median_ms(pwsh, root, code, 'Default2')
  inprocess_default = inprocess_median_ms(pwsh, root, code, 'Default')
  idle = manager_median_ms(manager, code, PAUSE_S)
  back_to_back = manager_median_ms(manager, code, nil)
  prelude = manager_median_ms(manager, code, nil, prelude: true)
  printf('  %-9s in-process invoke %.3f ms (CreateRunspace(): %.3f ms) | manager, idle host %.3f ms (%.1fx) | ' \
         "manager, back to back %.3f ms (%.1fx) | prelude, back to back %.3f ms (%.1fx)\n",
         name, inprocess, inprocess_default, idle, idle / inprocess, back_to_back, back_to_back / inprocess,
         prelude, prelude / inprocess)
end
manager.exit
