# frozen_string_literal: true

# The provider's own CPU time per in-sync resource, without Puppet's catalog
# around it: on a warm provider, each resource gets the calls the Resource
# API makes of it in an in-sync run (canonicalize three times: as the
# resource is made, as the target state, as the strict check; one get; one
# insync? per property), answered by an in-process fake manager. Ten rounds
# of 2,000 fresh resources, each round on a new provider; the median round.
#
#   ruby bench/provider_calls_bench.rb
#   PWSHLIB_BENCH_LIB=<another checkout>/lib ruby bench/provider_calls_bench.rb
require 'json'
require 'tmpdir'

root = File.expand_path('..', __dir__)
lib = ENV.fetch('PWSHLIB_BENCH_LIB', File.join(root, 'lib'))
$LOAD_PATH.unshift(lib, File.join(root, 'spec', 'fixtures', 'modules', 'dscfixtures', 'lib'))
require 'puppet'
require 'puppet/resource_api'
scratch = Dir.mktmpdir('pwshlib-bench')
Puppet.initialize_settings(%w[confdir vardir codedir logdir rundir publicdir].flat_map { |s| ["--#{s}", scratch] })
Puppet::Util::Log.level = :warning
require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Answers each Get from a hash of ready JSON, as a host holding the prelude.
class CallsBenchManager
  attr_reader :answers

  def initialize
    @answers = {}
  end

  def execute_with_prelude(_prelude, code, _timeout_ms = nil)
    { exitcode: 0, stdout: @answers.fetch(code[/destinationpath = '([^']*)'/, 1]), stderr: '', errormessage: nil,
      native_stdout: nil }
  end
end

ROUNDS = 10
PER_ROUND = 2_000
Puppet::ResourceApi.load_provider('dsc_fixturefile')
provider_class = Puppet::Provider::DscFixturefile::DscFixturefile
manager = CallsBenchManager.new
provider_class.define_method(:ps_manager) { manager }
context = Puppet::ResourceApi::PuppetContext.new(Puppet::Type.type(:dsc_fixturefile).type_definition)
path_of = ->(i) { "C:\\bench\\file#{i}.txt" }
(1..(ROUNDS * PER_ROUND)).each do |i|
  manager.answers[path_of.call(i)] = JSON.generate('DestinationPath' => path_of.call(i), 'Ensure' => 'Present',
                                                   'Contents' => 'hello', 'Type' => 'File', 'Attributes' => nil,
                                                   'Checksum' => nil)
end
cpu = -> { Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) }
phases = ['first canonicalize (the Get)', 'two more canonicalize', 'get', 'insync? x2']
rounds = (0...ROUNDS).map do |round|
  provider = provider_class.new
  resources = (1..PER_ROUND).map do |i|
    n = (round * PER_ROUND) + i
    { name: "file#{n}", dsc_destinationpath: path_of.call(n), dsc_ensure: 'Present', dsc_contents: 'hello' }
  end
  GC.start
  marks = [cpu.call]
  resources.each { |r| provider.canonicalize(context, [r]) }
  marks << cpu.call
  resources.each { |r| 2.times { provider.canonicalize(context, [r]) } }
  marks << cpu.call
  resources.each { |r| provider.get(context, [{ name: r[:name], dsc_destinationpath: r[:dsc_destinationpath] }]) }
  marks << cpu.call
  resources.each { |r| %i[dsc_ensure dsc_contents].each { |p| provider.insync?(context, r[:name], p, r, r) } }
  marks << cpu.call
  marks.each_cons(2).map { |from, to| (to - from) * 1e6 / PER_ROUND }
end
medians = phases.each_index.map { |i| rounds.map { |r| r[i] }.sort[ROUNDS / 2] }
puts "provider calls bench (#{lib}): µs of process CPU per in-sync resource, median of #{ROUNDS} rounds"
phases.zip(medians).each { |phase, value| puts format('  %-30s %6.1f', phase, value) }
puts format('  %-30s %6.1f', 'in all', medians.sum)
FileUtils.rm_rf(scratch)
