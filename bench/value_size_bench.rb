# frozen_string_literal: true

# Cost in a value's size: one resource whose property is an n-item array
# (dsc_fixturefile's `Array[String]` dsc_attributes) and one whose property
# is an n-key hash (dsc_fixturevault's free-form `Hash` dsc_options), each
# applied by a real `puppet apply` on the simulated host, created and then in
# sync, at n = 10,000 and 100,000. The values are made in the manifest
# (`n.map`), so Puppet parses a short manifest, not a literal of n items.
#
# pwshlib's own share is the time spent inside the base provider's Resource
# API entry points (canonicalize, get, set, insync?, the simulator's round
# trips included), timed in the run by support/provider_clock.rb; Puppet's
# share is the rest of the run. Comparing and munging must stay linear (or
# n log n): the 100,000 case within 12x the 10,000 one.
#
#   ruby bench/value_size_bench.rb [N ...]
require 'json'
require 'rbconfig'
require 'tmpdir'
require_relative '../spec/acceptance/spec_helper_acceptance'

SIZES = ARGV.empty? ? [10_000, 100_000] : ARGV.map { |a| Integer(a) }
CLOCK = File.join(__dir__, 'support', 'provider_clock.rb')

MANIFESTS = {
  'array' => lambda do |n|
    <<~PP
      $items = #{n}.map |$i| { "Item-${i}" }
      dsc_fixturefile { 'big array':
        dsc_destinationpath => 'C:\\\\bench\\\\big',
        dsc_ensure          => 'Present',
        dsc_attributes      => $items,
      }
    PP
  end,
  'hash' => lambda do |n|
    <<~PP
      $options = Hash(#{n}.map |$i| { ["Key${i}", "Value-${i}"] })
      dsc_fixturevault { 'big hash':
        dsc_vaultname => 'bench',
        dsc_ensure    => 'Present',
        dsc_options   => $options,
      }
    PP
  end,
}.freeze

# One `puppet apply` of `manifest` on the machine in `dir`: its exit code,
# its whole time and pwshlib's share, in seconds.
def apply(dir, index, manifest)
  run_dir = File.join(dir, "run#{index}")
  %w[confdir codedir vardir logdir rundir].each { |d| FileUtils.mkdir_p(File.join(run_dir, d)) }
  manifest_path = File.join(run_dir, 'site.pp')
  File.write(manifest_path, manifest)
  clock_path = File.join(run_dir, 'clock.json')
  env = Acceptance.run_env(File.join(dir, 'sim-state.json'), File.join(run_dir, 'sim-calls.jsonl'))
                  .merge('PWSHLIB_BENCH_CLOCK' => clock_path, 'RUBYOPT' => "-r#{CLOCK}")
  command = ['puppet', 'apply', manifest_path, '--modulepath', Acceptance::MODULE_PATH, '--detailed-exitcodes',
             '--color', 'false', '--reports', 'none', *Acceptance::STRICT_ARGUMENTS,
             *%w[confdir codedir vardir logdir rundir].flat_map { |d| ["--#{d}", File.join(run_dir, d)] }]
  output = IO.popen(env, command, err: %i[child out], &:read)
  status = $?.exitstatus
  clock = File.exist?(clock_path) ? JSON.parse(File.read(clock_path)) : {}
  raise "puppet apply gave no timing (exit #{status}):\n#{output.lines.last(20).join}" if clock.empty?

  [status, clock['whole'], clock['provider'], output]
end

def machine
  dir = Dir.mktmpdir('pwshlib-size-bench-')
  File.write(File.join(dir, 'sim-state.json'),
             JSON.generate('keys' => Acceptance.keys_of_types(Acceptance::MODULE_PATH)))
  yield dir
ensure
  FileUtils.rm_rf(dir) if dir
end

puts "value size bench: #{RUBY_DESCRIPTION}; load average #{File.read('/proc/loadavg').split.first(3).join(' ')}"
puts format('%-6s %8s %-8s %4s | %9s %11s %11s', 'value', 'n', 'run', 'exit', 'whole s', 'pwshlib s', 'Puppet s')
shares = {}
MANIFESTS.each do |kind, manifest|
  SIZES.each do |n|
    machine do |dir|
      [['create', 2], ['in sync', 0]].each_with_index do |(run, expected), index|
        status, whole, ours, output = apply(dir, index + 1, manifest.call(n))
        failure = "#{kind} n=#{n} #{run}: puppet apply exited #{status}, not #{expected}"
        raise "#{failure}:\n#{output.lines.last(20).join}" unless status == expected

        shares[[kind, n, run]] = ours
        puts format('%-6s %8d %-8s %4d | %9.2f %11.2f %11.2f', kind, n, run, status, whole, ours, whole - ours)
      end
    end
  end
end

small, large = SIZES.minmax
next_line = true
MANIFESTS.each_key do |kind|
  ['create', 'in sync'].each do |run|
    ratio = shares[[kind, large, run]] / shares[[kind, small, run]]
    puts if next_line
    next_line = false
    puts format('pwshlib share, %-6s %-8s n=%d / n=%d: %.1fx (linear: %.0fx)', kind, run, large, small, ratio,
                large.to_f / small)
  end
end
