# frozen_string_literal: true

# Two builds of the extension (or more) against each other and the
# like-for-like floor, on one catalog size, the kinds taking turns in each
# repetition: the A/B behind a change's before-and-after figures, where a
# whole `rake bench` would take the machine's drift between its runs along.
#
#   ruby bench/ab_bench.rb N REPS LIB [LIB …]
#
# Each LIB is a lib/ folder holding a built pwshlib (`this` for this
# checkout's); the floor (no-op+insync) runs beside them. Prints, per kind,
# the median process CPU time per resource of build, apply and settle (the
# collections the run started, finished: support/catalog_run.rb), and each
# build's ratio to the floor pair by pair (within one repetition).
require 'json'
require 'rbconfig'
require_relative 'support/repetitions'

RUN = File.join(__dir__, 'support', 'catalog_run.rb')
THIS_LIB = File.expand_path('../lib', __dir__)

size = Integer(ARGV.shift || raise('usage: ruby bench/ab_bench.rb N REPS LIB [LIB …]'))
reps = Integer(ARGV.shift || 7)
libs = ARGV.map { |lib| lib == 'this' ? THIS_LIB : File.expand_path(lib) }
libs = [THIS_LIB] if libs.empty?
kinds = libs.map { |lib| ['pwshlib', lib] } + [['noop-insync', THIS_LIB]]

# ms per resource of one catalog run (build, apply, settle; process CPU time), at
# the garbage collection phase `gc_phase` (support/repetitions.rb).
def run_once(kind, lib, size, gc_phase)
  output = IO.popen({ 'PWSHLIB_BENCH_LIB' => lib, 'PWSHLIB_BENCH_GC_PHASE' => gc_phase.to_s },
                    [RbConfig.ruby, RUN, kind, size.to_s], err: %i[child out], &:read)
  raise "#{kind} #{lib} failed:\n#{output}" unless $?.success?

  result = JSON.parse(output.lines.last, symbolize_names: true)
  RUN_PARTS.map { |part| run_seconds(result, :cpu, [part]) * 1000.0 / size }
end

puts "A/B bench: N=#{size}, #{reps} repetitions; load average #{File.read('/proc/loadavg').split.first(3).join(' ')}"
times = Hash.new { |hash, key| hash[key] = [] }
next_phase = gc_phases
reps.times do |rep|
  phase = next_phase.call
  kinds.rotate(rep % kinds.size).each { |kind, lib| times[[kind, lib]] << run_once(kind, lib, size, phase) }
end
floor = times[kinds.last].map(&:sum)
kinds.each do |kind, lib|
  runs = times[[kind, lib]]
  label = kind == 'pwshlib' ? lib : kind
  line = format('%-50s build %.3f  apply %.3f  settle %.3f  run %.3f ms/resource', label,
                *RUN_PARTS.each_index.map { |part| median(runs.map { |run| run[part] }) }, median(runs.map(&:sum)))
  line += format('  / floor, pair by pair: %.3f', median(runs.map(&:sum).zip(floor).map { |a, b| a / b })) if kind == 'pwshlib'
  puts line
end
puts "load average after: #{File.read('/proc/loadavg').split.first(3).join(' ')}"
