# frozen_string_literal: true

# Shared RSpec set-up: real Puppet 7 and the real Resource API from Debian,
# our lib/ and the fixture module on the load path.
require 'puppet'
require 'puppet/resource_api'

PWSHLIB_ROOT = File.expand_path('..', __dir__)
FIXTURE_MODULE_PATH = File.join(PWSHLIB_ROOT, 'spec', 'fixtures', 'modules')
# The DSC prelude as the core embeds it: its files in
# ext/pwshlib_core/src/templates.rs's order (PRELUDE_FILES), joined by a newline.
PWSHLIB_PRELUDE = %w[values cmdlet results modules direct call].map do |part|
  File.read(File.join(PWSHLIB_ROOT, 'lib', 'templates', "dsc_prelude_#{part}.ps1"))
end.join("\n").freeze
FIXTURE_MODULE_LIB = File.join(FIXTURE_MODULE_PATH, 'dscfixtures', 'lib')
# Where cargo built it (rake passes it on; script/cargo_target.rb asks cargo otherwise).
PWSHLIB_SIM = ENV['PWSHLIB_SIM'] || begin
  require_relative '../script/cargo_target'
  CargoTarget.sim
end

[File.join(PWSHLIB_ROOT, 'lib'), FIXTURE_MODULE_LIB].each do |dir|
  $LOAD_PATH.unshift(dir) unless $LOAD_PATH.include?(dir)
end

Puppet.initialize_settings unless Puppet.settings.global_defaults_initialized?

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

Dir[File.join(__dir__, 'support', '**', '*.rb')].sort.each do |file|
  require file unless file.end_with?('gc_stress.rb')
end

RSpec.configure do |config|
  config.expect_with(:rspec) { |c| c.syntax = :expect }
  config.mock_with(:rspec) { |m| m.verify_partial_doubles = true }
  config.order = :defined
  # The logon failure memo lasts a run: one example here.
  config.before(:each) { Puppet::Provider::DscBaseProvider.forget_logon_failures }
end
