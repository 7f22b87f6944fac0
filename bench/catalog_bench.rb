# frozen_string_literal: true

# pwshlib against Puppet's own floor (issue 15), side by side in one run:
# per-resource time of an in-sync catalog at N = 100, 1,000 and 5,000 through
# DscBaseProvider (with an in-process fake manager, so the host's cost is
# out) and through a provider that does no work (bench/support/lib), on the
# same catalog; the ratio; peak RSS; and the bytes per call on the wire.
# Every measurement runs in a child process of its own (separate RSS, no
# shared caches); the two providers alternate, so load drifts hit both.
# The machine may be shared: the load average is printed before and after,
# and the table gives the median and the best of the repetitions.
require 'json'
require 'rbconfig'

RUN = File.join(__dir__, 'support', 'catalog_run.rb')
WIRE = File.join(__dir__, 'support', 'wire_bytes.rb')
SIZES = { 100 => 7, 1_000 => 5, 5_000 => 3 }.freeze

def load_average
  File.read('/proc/loadavg').split.first(3).join(' ')
rescue Errno::ENOENT
  'unknown'
end

def child(*args)
  output = IO.popen([RbConfig.ruby, *args], err: %i[child out], &:read)
  raise "#{args.join(' ')} failed:\n#{output}" unless $?.success?

  JSON.parse(output.lines.last, symbolize_names: true)
end

def median(values)
  sorted = values.sort
  mid = sorted.size / 2
  sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
end

cores = File.read('/proc/cpuinfo').scan(/^processor/).size rescue 0
puts "catalog bench: #{RUBY_DESCRIPTION}; #{cores} CPUs; load average before: #{load_average}"
results = Hash.new { |h, k| h[k] = [] }
SIZES.each do |n, reps|
  reps.times do |rep|
    order = rep.even? ? %w[pwshlib noop] : %w[noop pwshlib]
    order.each { |kind| results[[kind, n]] << child(RUN, kind, n.to_s) }
  end
end

puts
puts format('%-7s %5s | %-22s | %-22s | %-13s', 'N', 'reps', 'pwshlib ms/resource', 'no-op ms/resource', 'ratio')
puts format('%-7s %5s | %10s %11s | %10s %11s | %6s %6s', '', '', 'median', 'best', 'median', 'best', 'median', 'best')
SIZES.each do |n, reps|
  ours = results[['pwshlib', n]].map { |r| r[:seconds] * 1000.0 / n }
  floor = results[['noop', n]].map { |r| r[:seconds] * 1000.0 / n }
  puts format('%-7d %5d | %10.3f %11.3f | %10.3f %11.3f | %6.2f %6.2f', n, reps, median(ours), ours.min,
              median(floor), floor.min, median(ours) / median(floor), ours.min / floor.min)
end

rss = ->(kind) { median(results[[kind, SIZES.keys.max]].map { |r| r[:peak_rss_kib] }) / 1024.0 }
puts
puts format('peak RSS at N=%d (median): pwshlib %.1f MiB, no-op %.1f MiB, %+.1f%%', SIZES.keys.max, rss.call('pwshlib'),
            rss.call('noop'), (rss.call('pwshlib') / rss.call('noop') - 1) * 100)

wire = child(WIRE)
puts
puts 'bytes per call (request frame, dsc_fixturefile; the vendored module path of this checkout included):'
puts format('  %-28s first Get %6d   Set %6d   in-sync Get %6d', 'host holding the prelude:', *wire[:with_prelude].values_at(:first_get, :set, :in_sync_get))
puts format('  %-28s first Get %6d   Set %6d   in-sync Get %6d', 'host without preludes:', *wire[:whole_script].values_at(:first_get, :set, :in_sync_get))
puts
puts "load average after: #{load_average}"
