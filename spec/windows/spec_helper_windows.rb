# frozen_string_literal: true

# Set-up for the suites the Windows Ruby runs under wine (script/windows-check):
# our lib/ on the load path, the Windows library loaded from the module tree
# (lib/pwshlib/<abi>/<RUBY_PLATFORM>/), pwshlib-sim.exe over named pipes.
# No Puppet here: these suites need only lib/pwsh.rb.
PWSHLIB_ROOT = File.expand_path('../..', __dir__)
# pwshlib-sim.exe is where cargo built it, which only the Linux side can ask
# (script/cargo_target.rb): script/windows-ruby-check passes it on.
PWSHLIB_SIM = ENV.fetch('PWSHLIB_SIM') do
  raise 'PWSHLIB_SIM is not set: script/windows-ruby-check sets it ' \
        '(ruby script/cargo_target.rb x86_64-pc-windows-gnu/release/pwshlib-sim.exe)'
end

lib = File.join(PWSHLIB_ROOT, 'lib')
$LOAD_PATH.unshift(lib) unless $LOAD_PATH.include?(lib)
require 'pwsh'

require_relative 'closing_line'

RSpec.configure do |config|
  config.expect_with(:rspec) { |c| c.syntax = :expect }
  config.order = :defined
end
