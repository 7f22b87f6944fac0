# frozen_string_literal: true

# Instructions per in-sync resource, pwshlib against the no-op floors, counted
# by valgrind's callgrind: the deterministic companion of catalog_bench.rb.
# On a shared machine the CPU time of a run moves by more than the
# difference being measured (other tenants' load, and the caches they
# share); the instructions executed do not. Each kind runs the catalog of
# bench/support/catalog_run.rb at two sizes; the difference divided by the
# difference in resources is the cost of one resource, with Puppet's start
# and the warm-up out.
#
#   ruby bench/instructions_bench.rb        (valgrind from apt; about a minute)
#
# What it does not show: the time lost to cache misses, which is where a
# native extension's code, cold after Puppet's own work between two calls,
# costs more than its instructions say.
#
# Only the measured part of each run (building and applying the catalog) is
# counted (support/callgrind_window.c marks it; valgrind runs with
# --instr-atstart=no), and it runs without garbage collection, after a full
# one. Whole runs with collections on gave figures that moved by 350,000
# instructions per resource from one machine to the next (2026-11-25), more
# than the provider's whole cost: a collection on this heap costs tens of
# millions of instructions, and how many fall in a run of 100 or of 600,
# or just after it, depends on where the heap stood, not on the kind. The
# Ruby objects each kind allocates per resource, which the collector's work
# follows, are printed beside it; catalog_bench.rb's times and peak RSS are
# with collections on.
require 'fileutils'
require 'json'
require 'rbconfig'
require 'tmpdir'

RUN = File.join(__dir__, 'support', 'catalog_run.rb')
SMALL = 100
LARGE = 600
KINDS = %w[pwshlib noop-insync noop].freeze

unless system('valgrind --version', out: File::NULL, err: File::NULL)
  warn 'instructions bench: valgrind is not installed (apt-get install valgrind)'
  exit 1
end

WINDOW_LIBRARY = File.join(Dir.mktmpdir('pwshlib-instructions'), 'callgrind_window.so')
at_exit { FileUtils.rm_rf(File.dirname(WINDOW_LIBRARY)) }
unless system(RbConfig::CONFIG.fetch('CC', 'cc'), '-shared', '-fPIC', '-O2', '-o', WINDOW_LIBRARY,
              File.join(__dir__, 'support', 'callgrind_window.c'))
  warn 'instructions bench: could not build support/callgrind_window.c (it needs gcc and valgrind\'s headers)'
  exit 1
end

# Instructions of the measured part of a catalog run of `size` resources,
# and the Ruby objects it allocated.
def instructions(kind, size)
  output = IO.popen({ 'PWSHLIB_BENCH_COUNT_WINDOW' => WINDOW_LIBRARY },
                    ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--callgrind-out-file=/dev/null', RbConfig.ruby,
                     RUN, kind, size.to_s], err: %i[child out], &:read)
  raise "#{kind} #{size} failed:\n#{output}" unless $?.success?

  run = JSON.parse(output.lines.grep(/\A\{/).last, symbolize_names: true)
  raise "#{kind} #{size}: #{run[:major_gcs]} major and #{run[:minor_gcs]} minor collections" unless (run[:major_gcs] + run[:minor_gcs]).zero?

  [Integer(output[/Collected : (\d+)/, 1]), run[:allocated_objects]]
end

puts "instructions bench: #{RUBY_DESCRIPTION}; callgrind, catalogs of #{SMALL} and #{LARGE} in-sync resources"
# Two at a time (the machine's two cores); the counts do not depend on it.
jobs = KINDS.product([SMALL, LARGE])
counts = jobs.each_slice(2).flat_map do |pair|
  pair.map { |kind, size| Thread.new { [[kind, size], instructions(kind, size)] } }.map(&:value)
end.to_h
per_resource = lambda do |kind, field|
  (counts[[kind, LARGE]][field] - counts[[kind, SMALL]][field]).fdiv(LARGE - SMALL)
end
floor = per_resource.call('noop-insync', 0)
puts
puts format('%-12s %16s %12s %14s %18s', 'kind', 'per resource', 'ratio', 'over the floor', 'objects/resource')
KINDS.each do |kind|
  instructions = per_resource.call(kind, 0)
  puts format('%-12s %16.0f %12.3f %14.0f %18.1f', kind, instructions, instructions / floor, instructions - floor,
              per_resource.call(kind, 1))
end
puts '(ratio and "over the floor" against no-op+insync, the like-for-like floor)'
