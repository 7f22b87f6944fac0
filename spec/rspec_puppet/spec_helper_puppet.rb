# frozen_string_literal: true

# rspec-puppet set-up for the fixture module's types. rspec-puppet registers
# global hooks (Puppet's TestHelper resets every Puppet setting around each
# example), so these specs run in their own process: `rake rspec_puppet`.
# They are not named *_spec.rb, so a plain `rspec spec` does not load them
# next to the unit specs.
require 'rspec-puppet'

PWSHLIB_ROOT = File.expand_path('../..', __dir__) unless defined?(PWSHLIB_ROOT)
FIXTURE_MODULE_PATH = File.join(PWSHLIB_ROOT, 'spec', 'fixtures', 'modules') unless defined?(FIXTURE_MODULE_PATH)

# The scaffolded provider files require our base provider; under a real agent
# pluginsync puts the pwshlib module's lib/ on the load path, here we do.
lib = File.join(PWSHLIB_ROOT, 'lib')
$LOAD_PATH.unshift(lib) unless $LOAD_PATH.include?(lib)

RSpec.configure do |config|
  config.module_path = FIXTURE_MODULE_PATH
  # Do not let rspec-puppet symlink the repository into spec/fixtures.
  config.setup_fixtures = false
  config.strict_variables = true
  config.expect_with(:rspec) { |c| c.syntax = :expect }
  config.order = :defined
end

# Turning the catalogue into RAL resources canonicalizes them, which asks the
# provider for the current state: point it at the simulated host with an
# empty machine of its own, so no real PowerShell is looked for.
sim_dir = Dir.mktmpdir('pwshlib-rspec-puppet-')
at_exit { FileUtils.rm_rf(sim_dir) }
ENV['PWSHLIB_POWERSHELL'] ||= ENV['PWSHLIB_SIM'] || begin
  require_relative '../../script/cargo_target'
  CargoTarget.sim
end
ENV['PWSHLIB_SIM_STATE'] ||= File.join(sim_dir, 'state.json')
