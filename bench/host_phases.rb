# frozen_string_literal: true

# Where a host's time goes, request by request. The host's trace
# (PWSHLIB_HOST_TRACE: milliseconds since the process started, the thread,
# the phase) names the steps of each request; this prints, for the
# requests after the first two, the median and p90 of the time between
# each two points a request passed in turn (a step is named by its ends;
# "the manager" is the time from a reply written to the next request's
# first byte, off the host), and how often each step came.
#   ruby bench/host_phases.rb plain [N] [CODE]   N round trips of CODE back to
#                                               back in a fresh host on the
#                                               real pwsh (1000 of `1`)
#   ruby bench/host_phases.rb trace FILE          a trace written elsewhere, as
#                                               by `ruby bench/fresh_ab.rb class 100 1
#                                               .:PWSHLIB_HOST_TRACE=FILE`
# A point is not free (a clock read and a line kept in memory, some
# microseconds): read steps of a few hundredths of a millisecond as such.
require 'tmpdir'
require_relative 'support/repetitions'

# The requests of a trace: each its points in order, [ms, phase], from its
# first byte ("request arrived") to the next request's, with the gap
# between its reply and that next request as the step "the manager".
def requests(lines)
  points = lines.filter_map do |line|
    ms, _thread, phase = line.chomp.split(' ', 3)
    [Float(ms), phase] if phase
  end
  starts = points.each_index.select { |i| points[i][1] == 'request arrived' }
  starts.each_cons(2).map { |from, to| points[from...to] } + (starts.empty? ? [] : [points[starts.last..]])
end

def steps(requests)
  table = Hash.new { |hash, key| hash[key] = [] }
  requests.drop(2).each_cons(2) do |request, following|
    request.each_cons(2) { |(at, from), (to_at, to)| table["#{from} -> #{to}"] << to_at - at }
    written = request.reverse.find { |_, phase| phase == 'reply written' }
    table['reply written -> request arrived (the manager)'] << following.first[0] - written[0] if written
    table['the request, first byte to reply written'] << written[0] - request.first[0] if written
  end
  table
end

def report(trace)
  found = requests(File.readlines(trace))
  abort "host_phases: #{trace} holds no request (was the host traced?)" if found.size < 4
  puts "#{found.size} requests traced; the steps of those after the first two (ms):"
  steps(found).sort_by { |_, times| -times.size }.each do |step, times|
    puts format('  %<s>-62s median %<m>7.3f  p90 %<p>7.3f  (%<n>d)', s: step, m: median(times), p: p90(times), n: times.size)
  end
end

mode = ARGV.fetch(0, 'plain')
case mode
when 'trace'
  report(ARGV.fetch(1) { abort 'host_phases: trace FILE' })
when 'plain'
  count = Integer(ARGV.fetch(1, '1000'))
  code = ARGV.fetch(2, '1')
  pwsh = ENV['PWSHLIB_REAL_PWSH'] || IO.popen([File.join(__dir__, '..', 'script', 'find-pwsh')], &:read).strip
  unless File.executable?(pwsh.to_s)
    puts 'host phases bench: not run, no real pwsh (script/find-pwsh found none)'
    exit 0
  end
  $LOAD_PATH.unshift(File.join(__dir__, '..', 'lib'))
  require 'pwsh'
  Dir.mktmpdir('pwshlib-host-phases') do |dir|
    trace = File.join(dir, 'trace')
    ENV['PWSHLIB_HOST_TRACE'] = trace
    manager = Pwsh::Manager.new(pwsh, Pwsh::Manager.pwsh_args)
    begin
      count.times do
        result = manager.execute(code)
        abort "host_phases: the host failed #{code}: #{result}" unless result[:exitcode].zero?
      end
    ensure
      manager.exit
      ENV.delete('PWSHLIB_HOST_TRACE')
    end
    puts "#{count} round trips of #{code.inspect}, back to back, in a fresh host (#{pwsh})"
    report(trace)
  end
else
  abort 'usage: ruby bench/host_phases.rb plain [N] [CODE] | trace FILE'
end
