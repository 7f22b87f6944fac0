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
#   ruby bench/instructions_bench.rb        (valgrind from apt; about 10 min)
#
# What it does not show: the time lost to cache misses, which is where a
# native extension's code, cold after Puppet's own work between two calls,
# costs more than its instructions say.
#
# Major garbage collections are held off in these runs (both kinds alike):
# one costs some 100 million instructions here, and whether a run of 100 or
# of 600 resources crosses the old-object limit that starts one depends on
# the heap the process began with, not on the kind. Two of them falling
# between the sizes of one kind and none for the other moved that kind's
# figure by 350,000 instructions per resource (2026-11-25), more than the
# provider's whole cost. Minor collections, which follow the allocations,
# stay; each run's count of both is printed, and the peak RSS that
# catalog_bench.rb reports is where retained memory shows.
HELD_OFF_MAJOR_GCS = {
  # Old objects may grow to this factor of the count after the last major
  # collection before the next (Ruby's default is 2), and malloc'd memory of
  # old objects to this limit: neither is reached by a catalog of 600.
  'RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR' => '1000',
  'RUBY_GC_OLDMALLOC_LIMIT' => (8 << 30).to_s,
  'RUBY_GC_OLDMALLOC_LIMIT_MAX' => (8 << 30).to_s
}.freeze
require 'json'
require 'rbconfig'

RUN = File.join(__dir__, 'support', 'catalog_run.rb')
SMALL = 100
LARGE = 600
KINDS = %w[pwshlib noop-insync noop].freeze

unless system('valgrind --version', out: File::NULL, err: File::NULL)
  warn 'instructions bench: valgrind is not installed (apt-get install valgrind)'
  exit 1
end

# Instructions of a whole catalog run of `size` resources, and the garbage
# collections of its measured part ("major/minor").
def instructions(kind, size)
  output = IO.popen(HELD_OFF_MAJOR_GCS, ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null', RbConfig.ruby,
                                         RUN, kind, size.to_s], err: %i[child out], &:read)
  raise "#{kind} #{size} failed:\n#{output}" unless $?.success?

  run = JSON.parse(output.lines.grep(/\A\{/).last, symbolize_names: true)
  [Integer(output[/Collected : (\d+)/, 1]), "#{run[:major_gcs]}/#{run[:minor_gcs]}"]
end

puts "instructions bench: #{RUBY_DESCRIPTION}; callgrind, catalogs of #{SMALL} and #{LARGE} in-sync resources"
# Two at a time (the machine's two cores); the counts do not depend on it.
jobs = KINDS.product([SMALL, LARGE])
counts = jobs.each_slice(2).flat_map do |pair|
  pair.map { |kind, size| Thread.new { [[kind, size], instructions(kind, size)] } }.map(&:value)
end.to_h
per_resource = KINDS.to_h { |kind| [kind, (counts[[kind, LARGE]][0] - counts[[kind, SMALL]][0]).fdiv(LARGE - SMALL)] }
puts
puts format('%-12s %16s %12s %14s   %s', 'kind', 'per resource', 'ratio', 'over the floor', "GCs major/minor (#{SMALL}, #{LARGE})")
KINDS.each do |kind|
  ratio = per_resource[kind] / per_resource['noop-insync']
  puts format('%-12s %16.0f %12.3f %14.0f   %s, %s', kind, per_resource[kind], ratio, per_resource[kind] - per_resource['noop-insync'],
              counts[[kind, SMALL]][1], counts[[kind, LARGE]][1])
end
puts '(ratio and "over the floor" against no-op+insync, the like-for-like floor)'
