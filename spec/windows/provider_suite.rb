# frozen_string_literal: true

# Loaded first (rspec -r) when the Windows Ruby runs the provider suites
# (spec/unit and spec/integration, the same files the Linux job runs) under
# wine, with Debian trixie's Puppet 8 and Resource API (script/windows-puppet)
# and pwshlib-sim.exe over named pipes (PWSHLIB_SIM). spec/spec_helper.rb
# does the rest, as on Linux.
#
# Examples that cannot apply on Windows carry `unix_only: '<why>'` and are
# left out here; the reason is printed with the closing line, so that nothing
# is left out silently.
require_relative 'closing_line'

RSpec.configure do |config|
  config.filter_run_excluding(:unix_only)
  config.after(:suite) do
    excluded = RSpec.world.all_examples.select { |example| example.metadata[:unix_only] }
                    .map { |example| "#{example.full_description}: #{example.metadata[:unix_only]}" }
    puts "\nleft out on Windows (#{excluded.size}):", *excluded.map { |line| "  #{line}" } unless excluded.empty?
  end
end
