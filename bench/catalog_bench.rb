# frozen_string_literal: true

# pwshlib against Puppet's own floor, side by side in one run:
# per-resource time of an in-sync catalog at N = 100, 1,000 and 5,000 through
# DscBaseProvider (with an in-process fake manager, so the host's cost is
# out) and through a provider that does no work (bench/support/lib), on the
# same catalog; the ratio; peak RSS; and the bytes per call on the wire.
# Every measurement runs in a child process of its own (separate RSS, no
# shared caches); the providers take turns, so load drifts hit all of them.
# The machine may be shared: the load average is printed before and after,
# the tables give the median and the best of the repetitions, and process
# CPU time beside the wall clock (CPU time does not count the time other
# processes held the cores).
require 'json'
require 'rbconfig'
require_relative 'support/repetitions'

RUN = File.join(__dir__, 'support', 'catalog_run.rb')
WIRE = File.join(__dir__, 'support', 'wire_bytes.rb')
SIZES = { 100 => 7, 1_000 => 11, 5_000 => 7 }.freeze

def load_average
  File.read('/proc/loadavg').split.first(3).join(' ')
rescue Errno::ENOENT
  'unknown'
end

def child(*args, gc_phase: 0)
  output = IO.popen({ 'PWSHLIB_BENCH_GC_PHASE' => gc_phase.to_s }, [RbConfig.ruby, *args], err: %i[child out], &:read)
  raise "#{args.join(' ')} failed:\n#{output}" unless $?.success?

  JSON.parse(output.lines.last, symbolize_names: true)
end

KINDS = %w[pwshlib noop noop-insync].freeze

cores = begin
  File.read('/proc/cpuinfo').scan(/^processor/).size
rescue StandardError
  0
end
puts "catalog bench: #{RUBY_DESCRIPTION}; #{cores} CPUs; load average before: #{load_average}"
puts "each repetition at its own garbage collection phase (0 to #{GC_PHASE_SPAN} objects made before the clock starts)"
results = Hash.new { |h, k| h[k] = [] }
next_phase = gc_phases
SIZES.each do |n, reps|
  reps.times do |rep|
    phase = next_phase.call
    KINDS.rotate(rep % KINDS.size).each { |kind| results[[kind, n]] << child(RUN, kind, n.to_s, gc_phase: phase) }
  end
end

# ms per resource of one figure (:run = build + apply + settle), median and best.
per_resource = lambda do |kind, n, clock, phase|
  values = results[[kind, n]].map do |r|
    run_seconds(r, clock, phase == :run ? RUN_PARTS : [phase]) * 1000.0 / n
  end
  [median(values), values.min]
end

table = lambda do |title, clock, phase|
  puts
  puts title
  puts format('%-6s %4s | %-15s | %-15s | %-15s | %-13s | %-13s', 'N', 'reps', 'pwshlib ms/res', 'no-op ms/res',
              'no-op+insync', 'ratio/no-op', 'ratio/+insync')
  puts format('%-6s %4s | %7s %7s | %7s %7s | %7s %7s | %6s %6s | %6s %6s', '', '', 'median', 'best', 'median', 'best',
              'median', 'best', 'median', 'best', 'median', 'best')
  SIZES.each do |n, reps|
    ours, floor, insync_floor = KINDS.map { |kind| per_resource.call(kind, n, clock, phase) }
    puts format('%-6d %4d | %7.3f %7.3f | %7.3f %7.3f | %7.3f %7.3f | %6.2f %6.2f | %6.2f %6.2f', n, reps, *ours, *floor,
                *insync_floor, ours[0] / floor[0], ours[1] / floor[1], ours[0] / insync_floor[0], ours[1] / insync_floor[1])
  end
end

puts
puts 'no-op: a provider that does no work, the type without custom_insync (Puppet and the Resource API alone); its get'
puts 'answers from a Ruby hash the same system state (the same 7 attributes) as pwshlib\'s Get reports.'
puts 'no-op+insync: the same provider on the fixture\'s own features (custom_insync; its insync? answers nil), so the'
puts 'Resource API\'s own custom_insync work (a singleton insync? per property and resource) is in the floor too.'
puts
puts 'settle: the collections the run started, finished (GC.start: the rest of a collection in progress, then a'
puts 'minor one of its own, the same for every kind). Ruby marks and sweeps in steps as allocation goes on, so a'
puts 'run that stops the clock mid-collection leaves that work to what runs next (support/catalog_run.rb).'
table.call('run = build (Type.new: canonicalize, the one Get) + apply + settle, process CPU time', :cpu, :run)

# The machine is shared: its speed drifts between repetitions by more than
# the difference measured. Each repetition runs the three kinds back to
# back, so a ratio taken within one repetition has the drift mostly out;
# the median of those is the steadier figure.
puts
puts 'ratio pair by pair (run = build + apply + settle, process CPU time; each repetition\'s runs back to back);'
puts 'the last column without settle, the clock stopped as the catalog is applied (the figure of earlier sessions)'
puts format('%-6s %4s | %-22s | %-22s | %-22s', 'N', 'reps', 'pwshlib / no-op', 'pwshlib / no-op+insync',
            '/ no-op+insync, unsettled')
puts format('%-6s %4s | %6s %15s | %6s %15s | %6s %15s', '', '', 'median', 'min - max', 'median', 'min - max', 'median',
            'min - max')
SIZES.each do |n, reps|
  run_cpu = ->(kind, parts = RUN_PARTS) { results[[kind, n]].map { |r| run_seconds(r, :cpu, parts) } }
  ours = run_cpu.call('pwshlib')
  ratios = %w[noop noop-insync].map { |kind| ours.zip(run_cpu.call(kind)).map { |a, b| a / b } }
  unsettled_parts = RUN_PARTS - ['settle']
  unsettled = run_cpu.call('pwshlib', unsettled_parts).zip(run_cpu.call('noop-insync', unsettled_parts)).map { |a, b| a / b }
  puts format('%-6d %4d | %6.2f %6.2f - %6.2f | %6.2f %6.2f - %6.2f | %6.2f %6.2f - %6.2f', n, reps,
              *(ratios + [unsettled]).flat_map { |r| [median(r), r.min, r.max] })
end
# The collector's time is where the kinds' ratio moved most between runs
# and sizes: how much of it falls inside a run changes by a step with where
# the collections fall (hence the spread phases, and settle, which counts
# the rest of a collection a run started). The ratio without it shows the
# work of the run alone (the instructions bench counts that); the
# allocations per resource say what the collector is given.
puts
puts 'garbage collection in the measured part, settle included (medians), and the ratio pair by pair without it'
puts format('%-6s %4s | %-27s | %-27s | %-22s', 'N', 'reps', 'GC ms/res: pwshlib +insync', 'objects/res: pwshlib +insync',
            'ratio/+insync w/o GC')
SIZES.each do |n, reps|
  ours, floor = %w[pwshlib noop-insync].map { |kind| results[[kind, n]] }
  gc = ->(runs) { median(runs.map { |r| r[:gc_cpu] * 1000.0 / n }) }
  objects = ->(runs) { median(runs.map { |r| r[:allocated_objects].fdiv(n) }) }
  without_gc = ours.zip(floor).map do |a, b|
    (run_seconds(a, :cpu) - a[:gc_cpu]) / (run_seconds(b, :cpu) - b[:gc_cpu])
  end
  puts format('%-6d %4d | %12.3f %12.3f | %12.1f %12.1f | %6.2f %6.2f - %6.2f', n, reps, gc.call(ours), gc.call(floor),
              objects.call(ours), objects.call(floor), median(without_gc), without_gc.min, without_gc.max)
end
table.call('apply only, process CPU time', :cpu, :apply)
table.call('apply only, wall clock (the figure of earlier sessions)', :wall, :apply)

rss = ->(kind) { median(results[[kind, SIZES.keys.max]].map { |r| r[:peak_rss_kib] }) / 1024.0 }
ours_rss = rss.call('pwshlib')
puts
puts format('peak RSS at N=%d (median): pwshlib %.1f MiB; no-op %.1f MiB (%+.1f%%); no-op+insync %.1f MiB (%+.1f%%)',
            SIZES.keys.max, ours_rss, rss.call('noop'), (ours_rss / rss.call('noop') - 1) * 100, rss.call('noop-insync'),
            (ours_rss / rss.call('noop-insync') - 1) * 100)

wire = child(WIRE)
puts
puts 'bytes per call (request frame, dsc_fixturefile; the vendored module path of this checkout included):'
puts format('  %-28s first Get %6d   Set %6d   in-sync Get %6d', 'host holding the prelude:',
            *wire[:with_prelude].values_at(:first_get, :set, :in_sync_get))
puts format('  %-28s first Get %6d   Set %6d   in-sync Get %6d', 'host without preludes:',
            *wire[:whole_script].values_at(:first_get, :set, :in_sync_get))
puts
puts "load average after: #{load_average}"
