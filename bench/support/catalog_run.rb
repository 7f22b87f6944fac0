# frozen_string_literal: true

# One measurement of bench/catalog_bench.rb, in a process of its own (so that
# its peak RSS is its own): builds and applies an in-sync catalog of N
# resources through real Puppet 7 and the Resource API, after a small warm-up
# catalog (Puppet loads much of itself on first use), and prints one JSON line.
#
#   ruby bench/support/catalog_run.rb <pwshlib|noop|noop-insync> <N>
#
# pwshlib: dsc_fixturefile resources through DscBaseProvider, with an
# in-process fake manager (so the host's cost is out) that answers each Get
# from a hash of ready JSON, as a host holding the prelude would.
# noop: the same attributes as type dsc_benchnoop, whose provider
# (support/lib/…/dsc_benchnoop.rb) does no work, without custom_insync.
# noop-insync: the same, with the fixture's features (custom_insync: the
# provider's insync? answers nil).
require 'json'
require 'tmpdir'

root = File.expand_path('../..', __dir__)
fixture_lib = File.join(root, 'spec', 'fixtures', 'modules', 'dscfixtures', 'lib')
# PWSHLIB_BENCH_LIB: another checkout's lib/ (built), to compare builds.
pwshlib_lib = ENV.fetch('PWSHLIB_BENCH_LIB', File.join(root, 'lib'))
[pwshlib_lib, fixture_lib, File.join(__dir__, 'lib')].each { |dir| $LOAD_PATH.unshift(dir) }

kind = ARGV[0]
count = Integer(ARGV[1])
WARM_UP = 20
scratch = Dir.mktmpdir('pwshlib-bench')
require 'puppet'
require 'puppet/resource_api'
Puppet.initialize_settings(%w[confdir vardir codedir logdir rundir publicdir].flat_map { |s| ["--#{s}", scratch] })
Puppet[:report] = false
Puppet::Util::Log.level = :warning
require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# The manager the provider talks to: no process, no pipe, and no object
# made per call (the fake's own allocations are not the provider's, and
# they count with the collector as much as the provider's do).
class BenchManager
  # Where the script names the resource: its path, whose number picks the
  # answer (path_of below).
  PATH_MARK = "destinationpath = 'C:\\bench\\file"
  attr_reader :calls

  # outputs: resource number => the whole execute result, made before the
  # clock starts.
  def initialize(outputs)
    @outputs = outputs
    @calls = 0
  end

  def execute_with_prelude(_prelude, code, timeout_ms = nil)
    execute(code, timeout_ms)
  end

  # What a build from before the prelude calls (with the whole script).
  # The resource's number is read out of the script byte by byte after one
  # substring search: no regular expression over the whole script, no new
  # String.
  def execute(code, _timeout_ms = nil)
    @calls += 1
    position = code.index(PATH_MARK) + PATH_MARK.bytesize
    number = 0
    while (byte = code.getbyte(position)) && byte.between?(48, 57)
      number = (number * 10) + byte - 48
      position += 1
    end
    @outputs.fetch(number)
  end
end

path_of = ->(i) { "C:\\bench\\file#{i}.txt" }
# The warm-up resources come first, under their own names: the measured
# catalog finds nothing cached.
titles = (1..(WARM_UP + count)).map { |i| "file#{i}" }
fixture = Puppet::Type.type(:dsc_fixturefile)
type_name = if kind.start_with?('noop')
              definition = fixture.type_definition.definition.dup
              definition[:name] = 'dsc_benchnoop'
              # noop: Puppet and the Resource API alone. noop-insync: the same
              # type definition as the fixture (custom_insync kept), so that the
              # Resource API's own custom_insync work is in the floor too.
              definition[:features] = kind == 'noop-insync' ? fixture.type_definition.definition[:features] : %w[simple_get_filter canonicalize]
              Puppet::ResourceApi.register_type(definition)
              # The system state pwshlib's Get reports for the same resource
              # (the fake manager's answer below, munged), attribute for
              # attribute: Puppet's own work on a current state (retrieve's
              # debug line, the strict check's deep copy, Puppet::Resource)
              # grows with its attributes, so both sides must report the same.
              titles.each_with_index do |title, i|
                Puppet::Provider::DscBenchnoop::DscBenchnoop::STATE[title] =
                  { dsc_destinationpath: path_of.call(i + 1), dsc_ensure: 'Present', dsc_contents: 'hello',
                    dsc_type: 'File', dsc_attributes: nil, dsc_checksum: nil, name: title }
              end
              :dsc_benchnoop
            else
              # The host's answer to each Get, made before the clock starts
              # from one template (bench/instructions_bench.rb counts the
              # set-up too: a whole JSON.generate per resource was counted as
              # the provider's).
              answer = JSON.generate('DestinationPath' => 'PATH', 'Ensure' => 'Present', 'Contents' => 'hello',
                                     'Type' => 'File', 'Attributes' => nil, 'Checksum' => nil)
              outputs = (1..(WARM_UP + count)).to_h do |i|
                stdout = answer.sub('"PATH"') { JSON.generate(path_of.call(i)) }
                [i, { exitcode: 0, stdout: stdout, stderr: '', errormessage: nil, native_stdout: nil }.freeze]
              end
              checker = BenchManager.new(outputs)
              # Puppet does not compare the namevar, so the in-sync check
              # below would not see an answer for the wrong path: checked here,
              # through the script the provider builds for the resource.
              [1, 12].each do |i|
                script = Puppet::Provider::DscBaseProvider.new.ps_script_content(
                  { dscmeta_resource_friendly_name: 'File', dscmeta_resource_name: 'MSFT_FileDirectoryConfiguration',
                    dscmeta_module_name: 'PSDesiredStateConfiguration', dscmeta_module_version: '1.1',
                    dsc_invoke_method: 'get', vendored_modules_path: 'C:/x',
                    parameters: { dsc_destinationpath: { value: path_of.call(i), mof_type: 'String', mof_is_embedded: false } } }
                )
                reported = JSON.parse(checker.execute(script)[:stdout])['DestinationPath']
                raise "the answer for #{path_of.call(i)} reports #{reported}" unless reported == path_of.call(i)
              end
              manager = BenchManager.new(outputs)
              Puppet::ResourceApi.load_provider('dsc_fixturefile')
              Puppet::Provider::DscFixturefile::DscFixturefile.define_method(:ps_manager) { manager }
              :dsc_fixturefile
            end

def catalog_of(type_name, titles, path_of, offset)
  catalog = Puppet::Resource::Catalog.new('bench', Puppet::Node::Environment.remote(:production))
  titles.each_with_index do |title, i|
    catalog.add_resource(Puppet::Type.type(type_name).new(title: title, dsc_destinationpath: path_of.call(offset + i + 1),
                                                          dsc_ensure: 'Present', dsc_contents: 'hello'))
  end
  catalog
end

# Wall-clock and CPU seconds of the block. CPU time (this process's, all
# threads) is what the run itself costs; on a shared machine the wall clock
# also counts the time other processes held the cores.
def timed
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  result = yield
  [result, Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall, Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu]
end

def apply_in_sync(catalog, report)
  transaction = catalog.apply(report: report)
  changed = transaction.report.resource_statuses.values.count(&:changed)
  raise "#{changed} resources changed: the catalog must be in sync" unless changed.zero?
end

# A run as Puppet's agent and `puppet apply` make it (Puppet::Configurer#run):
# the run's report is a log destination from before the catalog is turned
# into resources until after it is applied, and the catalog is applied with
# it. What the provider sees of the run (its run detection) is then what it
# sees in an agent run; every kind runs this way.
def in_a_run
  report = Puppet::Transaction::Report.new(nil, Puppet[:environment])
  Puppet::Util::Log.newdestination(report)
  yield report
ensure
  Puppet::Util::Log.close(report)
end

in_a_run { |report| apply_in_sync(catalog_of(type_name, titles.first(WARM_UP), path_of, 0), report) }
GC.start
# PWSHLIB_BENCH_GC_PHASE: that many objects made and dropped before the
# clock starts, which moves every collection of the measured part that many
# allocations earlier. Where the collections fall against the run's phases
# changes the collector's time by a step (at N=1,000, the no-op provider
# making 5 more objects per resource costs 35 ms more than 4 more do), so a
# figure from one phase is partly where that step happens to be; the benches
# give each repetition its own phase, the same for every kind in it.
Integer(ENV.fetch('PWSHLIB_BENCH_GC_PHASE', '0')).times { Object.new }
# build: the catalog's resources made (Puppet::Type.new), which is where the
# Resource API first canonicalizes each resource, and so where pwshlib makes
# its one Get per resource. apply: the transaction (the second canonicalize,
# get, insync?, the strict check). An agent run does both.
#
# PWSHLIB_BENCH_COUNT_WINDOW (bench/instructions_bench.rb, under callgrind):
# the library built from support/callgrind_window.c, whose two calls mark the
# measured part as the only part counted; that part then runs without
# garbage collection, so the count is the run's own work, and its
# allocations are reported beside it, as what the collector would have had.
#
# settle: the collections the run started, finished. Ruby marks and sweeps
# a collection in steps as the program goes on allocating, so the run that
# starts one may leave part of its work to whatever runs next, and a run
# that allocates a little less can leave the last major collection's
# marking and sweeping outside its measured part: at N=1,000 that was 30 ms
# of the no-op floor's collection, against none of pwshlib's, which
# allocates enough to finish it. An agent run goes on after the catalog
# (the report, the next run) and pays for it there. `GC.start` is the one
# way Ruby offers to finish a collection in progress (`gc_rest`, then
# marking and sweeping at once); it then makes one minor collection of its
# own, the same for every kind.
build_wall = build_cpu = apply_wall = apply_cpu = nil
count_window = ENV.fetch('PWSHLIB_BENCH_COUNT_WINDOW', nil)
if count_window
  require 'fiddle'
  window = Fiddle.dlopen(count_window)
  count_from_here, count_to_here = %w[pwshlib_bench_count_from_here pwshlib_bench_count_to_here].map do |name|
    Fiddle::Function.new(window[name], [], Fiddle::TYPE_VOID)
  end
  GC.disable
end
gc_before = GC.stat.slice(:major_gc_count, :minor_gc_count, :total_allocated_objects, :time)
count_from_here&.call
in_a_run do |report|
  catalog, build_wall, build_cpu = timed { catalog_of(type_name, titles.drop(WARM_UP), path_of, WARM_UP) }
  _, apply_wall, apply_cpu = timed { apply_in_sync(catalog, report) }
end
# Under callgrind the measured part runs without collections to finish.
_, settle_wall, settle_cpu = timed { GC.start(full_mark: false, immediate_sweep: true) unless count_window }
count_to_here&.call
gc_after = GC.stat.slice(:major_gc_count, :minor_gc_count, :total_allocated_objects, :time)
GC.enable if count_window
raise "expected one Get per resource, got #{manager.calls} for #{WARM_UP + count}" if kind == 'pwshlib' && manager.calls != WARM_UP + count

peak_kib = File.read('/proc/self/status')[/VmHWM:\s+(\d+)/, 1].to_i
FileUtils.rm_rf(scratch)
puts JSON.generate(kind: kind, n: count, build_wall: build_wall, build_cpu: build_cpu, apply_wall: apply_wall,
                   apply_cpu: apply_cpu, settle_wall: settle_wall, settle_cpu: settle_cpu, peak_rss_kib: peak_kib,
                   major_gcs: gc_after[:major_gc_count] - gc_before[:major_gc_count],
                   minor_gcs: gc_after[:minor_gc_count] - gc_before[:minor_gc_count],
                   allocated_objects: gc_after[:total_allocated_objects] - gc_before[:total_allocated_objects],
                   # The collector's time in the measured part (Ruby counts it
                   # in ms), which build_cpu, apply_cpu and settle_cpu include;
                   # the counts include settle's own minor collection.
                   gc_cpu: (gc_after[:time] - gc_before[:time]) / 1000.0)
