# frozen_string_literal: true

# What the benches share: the median (all of them), the 90th percentile
# (fresh_host_bench.rb, host_phases.rb), and about the repetitions of
# support/catalog_run.rb (catalog_bench.rb, ab_bench.rb).

# The median of a list of figures.
def median(values)
  sorted = values.sort
  mid = sorted.size / 2
  sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
end

# The 90th percentile: the smallest figure at or above nine tenths of them.
def p90(values)
  sorted = values.sort
  sorted[[((sorted.size * 0.9).ceil - 1), 0].max]
end

# Each repetition's garbage collection phase (catalog_run.rb's
# PWSHLIB_BENCH_GC_PHASE): spread over more than the allocations between two
# collections, from a fixed seed; a bench gives every kind of a repetition
# the same one.
GC_PHASE_SPAN = 120_000

def gc_phases
  generator = Random.new(15)
  -> { generator.rand(GC_PHASE_SPAN) }
end

# The timed parts of a catalog run, as catalog_run.rb reports them: settle
# finishes the collections the run started.
RUN_PARTS = %w[build apply settle].freeze

# Seconds of `parts` of a run (catalog_run.rb's JSON, Symbol keys), by
# `clock` (:cpu or :wall).
def run_seconds(run, clock, parts = RUN_PARTS)
  parts.sum { |part| run[:"#{part}_#{clock}"] }
end
