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

# Instructions of a whole catalog run of `size` resources.
def instructions(kind, size)
  output = IO.popen(['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null', RbConfig.ruby, RUN, kind, size.to_s],
                    err: %i[child out], &:read)
  raise "#{kind} #{size} failed:\n#{output}" unless $?.success?

  Integer(output[/Collected : (\d+)/, 1])
end

puts "instructions bench: #{RUBY_DESCRIPTION}; callgrind, catalogs of #{SMALL} and #{LARGE} in-sync resources"
# Two at a time (the machine's two cores); the counts do not depend on it.
jobs = KINDS.product([SMALL, LARGE])
counts = jobs.each_slice(2).flat_map do |pair|
  pair.map { |kind, size| Thread.new { [[kind, size], instructions(kind, size)] } }.map(&:value)
end.to_h
per_resource = KINDS.to_h { |kind| [kind, (counts[[kind, LARGE]] - counts[[kind, SMALL]]).fdiv(LARGE - SMALL)] }
puts
puts format('%-12s %16s %12s %14s', 'kind', 'per resource', 'ratio', 'over the floor')
KINDS.each do |kind|
  ratio = per_resource[kind] / per_resource['noop-insync']
  puts format('%-12s %16.0f %12.3f %14.0f', kind, per_resource[kind], ratio, per_resource[kind] - per_resource['noop-insync'])
end
puts '(ratio and "over the floor" against no-op+insync, the like-for-like floor)'
