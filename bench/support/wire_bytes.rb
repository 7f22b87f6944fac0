# frozen_string_literal: true

# Bytes per call for bench/catalog_bench.rb: the request frames (length
# prefix included) that the real Pwsh::Manager writes to pwshlib-sim for one
# fixture resource (dsc_fixturefile): the first Get of a host session (which
# carries the prelude), a Set, then an in-sync Get, which carries the desired
# state as a run's does, and a keys-only Get (a listing, or an
# absent desired state). Once with a host that
# offers the prelude, once with one that does not (what every call cost
# before the prelude). Prints one JSON line.
require 'json'
require 'tmpdir'

root = File.expand_path('../..', __dir__)
fixture_lib = File.join(root, 'spec', 'fixtures', 'modules', 'dscfixtures', 'lib')
[File.join(root, 'lib'), fixture_lib].each { |dir| $LOAD_PATH.unshift(dir) }
scratch = Dir.mktmpdir('pwshlib-bench-wire')
require 'puppet'
require 'puppet/resource_api'
Puppet.initialize_settings(%w[confdir vardir codedir logdir rundir publicdir].flat_map { |s| ["--#{s}", scratch] })
require 'puppet/provider/dsc_base_provider/dsc_base_provider'
ENV['PWSHLIB_POWERSHELL'] ||= begin
  require_relative '../../script/cargo_target'
  CargoTarget.sim
end

type = Puppet::Type.type(:dsc_fixturefile)
provider_class = Puppet::ResourceApi.load_provider('dsc_fixturefile')
name = { name: 'wire', dsc_destinationpath: 'C:\\Temp\\Wire.txt' }
should = name.merge(dsc_ensure: 'Present', dsc_contents: "it's here")

measure = lambda do |label|
  ENV['PWSHLIB_SIM_STATE'] = File.join(scratch, "#{label}.json")
  provider = provider_class.new
  context = Puppet::ResourceApi::PuppetContext.new(type.type_definition)
  manager = provider.ps_manager
  sizes = {}
  provider.invoke_get_method(context, name)
  sizes[:first_get] = manager.wire_stats[:last_sent]
  provider.invoke_set_method(context, name, should)
  sizes[:set] = manager.wire_stats[:last_sent]
  provider.invoke_get_method(context, should)
  sizes[:in_sync_get] = manager.wire_stats[:last_sent]
  provider.invoke_get_method(context, name)
  sizes[:keys_only_get] = manager.wire_stats[:last_sent]
  Pwsh::Manager.shutdown_all
  sizes
end

with_prelude = measure.call('prelude')
ENV['PWSHLIB_SIM_NO_PRELUDE'] = '1'
whole_script = measure.call('whole')
FileUtils.rm_rf(scratch)
puts JSON.generate(with_prelude: with_prelude, whole_script: whole_script)
