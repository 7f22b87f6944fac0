# frozen_string_literal: true

# Loaded into `puppet apply` by bench/value_size_bench.rb (RUBYOPT=-r): times
# the Resource API's entry points into the base provider (canonicalize, get,
# set, insync?), which is all of pwshlib's work in a run, the simulated
# host's round trips included. At exit it writes the seconds spent in them
# and the run's whole time since this file loaded to PWSHLIB_BENCH_CLOCK, as
# JSON; the difference is Puppet's own share (compiling, the Resource API's
# own work, the report).
require 'json'

# The clock: seconds inside the provider's entry points, and the prepend
# that times them.
module PwshlibProviderClock
  STARTED = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  @seconds = 0.0
  @depth = 0

  class << self
    attr_reader :seconds

    # Times the outermost of nested entry points only (set calls get's
    # steps, canonicalize calls get's).
    def time
      @depth += 1
      return yield if @depth > 1

      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      begin
        yield
      ensure
        @seconds += Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      end
    ensure
      @depth -= 1
    end
  end

  # Prepended to the base provider: the spine's own methods run inside.
  module Timed
    %i[canonicalize get set insync?].each do |name|
      define_method(name) { |*args, &block| PwshlibProviderClock.time { super(*args, &block) } }
    end
  end

  # The base provider's class body ends: prepend once, then stop watching.
  WATCH = TracePoint.new(:end) do |point|
    next unless point.self.is_a?(Class) && point.self.name == 'Puppet::Provider::DscBaseProvider'

    point.self.prepend(Timed)
    WATCH.disable
  end
  WATCH.enable
end

at_exit do
  path = ENV.fetch('PWSHLIB_BENCH_CLOCK', nil)
  if path
    whole = Process.clock_gettime(Process::CLOCK_MONOTONIC) - PwshlibProviderClock::STARTED
    File.write(path, JSON.generate(provider: PwshlibProviderClock.seconds, whole: whole))
  end
end
