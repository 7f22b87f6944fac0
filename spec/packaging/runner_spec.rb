# frozen_string_literal: true

require 'open3'
require 'tmpdir'

# script/runner, what script/test and .ci/run use for their lock, their
# background jobs and their failed stages, driven by a small harness run
# instead of the whole suite: a background job that would run for a long
# time (a `sleep` it starts, as the Windows job starts wine), and foreground
# stages that fail, pass, wait or hold the lock. What is asserted is what
# is left behind: the job's processes, the lock, the logs printed.
RSpec.describe 'script/runner: a run stops its background jobs once it has failed' do
  let(:harness) do
    <<~'SH'
      set -euo pipefail
      cd "$ROOT"
      logs=$WORK/logs
      mkdir -p "$logs"
      . script/stage
      . script/runner
      runner_start harness "$logs/run.lock"
      # A long job: its own `sleep` (a process of its group, not the job's
      # shell), whose pid it leaves for the test.
      long_job() {
        echo "long job: started"
        sleep 1000 &
        echo "$!" >"$WORK/grandchild.$1"
        wait
      }
      wait_for() { until [ -s "$1" ]; do sleep 0.1; done; }
      case $MODE in
        stage-fails)
          background long long_job 1
          wait_for "$WORK/grandchild.1"
          check failing false
          check passing true
          echo "the foreground went on"
          background late true
          report_failures ;;
        job-fails)
          background long long_job 1
          background failing sh -c 'echo "failing job: gave up"; exit 3'
          wait_for "$WORK/grandchild.1" ;;
        passes)
          background short sh -c 'until [ -f "$WORK/go" ]; do sleep 0.1; done; echo "short job: done"'
          check passing touch "$WORK/go" ;;
        awaits)
          background long long_job 1
          wait_for "$WORK/grandchild.1"
          touch "$WORK/holding" ;;
        holds)
          background long long_job 1
          wait_for "$WORK/grandchild.1"
          touch "$WORK/holding"
          while :; do sleep 0.1; done ;;
      esac
    SH
  end

  around do |example|
    Dir.mktmpdir('pwshlib-runner') do |dir|
      @work = dir
      example.run
    end
  end

  def env(mode, extra = {})
    { 'ROOT' => File.expand_path('../..', __dir__), 'WORK' => @work, 'MODE' => mode, 'PWSHLIB_STAGE_TIMES' => nil,
      'PWSHLIB_RUN_LOCK_OWNER' => nil, 'PWSHLIB_RUN_FAILED' => nil, 'PWSHLIB_STOP_GRACE' => '5' }.merge(extra)
  end

  def lock_path
    File.join(@work, 'logs', 'run.lock')
  end

  # Running: a process that exists and is not a zombie (which a container's
  # init may never reap).
  def running?(pid)
    stat = File.read("/proc/#{pid}/stat")
    stat.split(') ').last.split.first != 'Z'
  rescue Errno::ENOENT, Errno::ESRCH
    false
  end

  def grandchild
    Integer(File.read(File.join(@work, 'grandchild.1')))
  end

  def lock_free?
    File.open(lock_path, File::RDWR | File::CREAT) { |file| file.flock(File::LOCK_EX | File::LOCK_NB) == 0 }
  end

  def start(mode, extra = {})
    stdin, out, thread = Open3.popen2e(env(mode, extra), 'bash', '-c', harness)
    stdin.close
    sleep 0.1 until File.exist?(File.join(@work, 'holding')) || !thread.alive?
    [out, thread]
  end

  it 'stops the long job at the first failed stage, goes on in front, starts nothing behind, and prints the log' do
    out, status = Open3.capture2e(env('stage-fails', 'PWSHLIB_STAGE_TIMES' => File.join(@work, 'times')), 'bash', '-c', harness)
    expect(status.exitstatus).to eq(1)
    expect(out).to include('==> long: stopping it', 'the foreground went on', '==> late: NOT STARTED, as the run has already failed',
                           '==> long (ran in the background): STOPPED, as the run had failed; its log:', '  | long job: started',
                           'harness: FAILED: failing')
    expect(out).not_to include('late (ran in the background)')
    expect(File.read(File.join(@work, 'times')).lines.map { |line| line.split("\t").values_at(0, 2) })
      .to eq([%w[failing FAILED], %w[passing passed], %w[long STOPPED]])
    expect(running?(grandchild)).to be(false)
    expect(lock_free?).to be(true)
  end

  it 'stops the long job when another background job fails' do
    out, status = Open3.capture2e(env('job-fails'), 'bash', '-c', harness)
    expect(status.exitstatus).to eq(1)
    expect(out).to include('==> failing (ran in the background): FAILED; its log:', '  | failing job: gave up',
                           '==> long (ran in the background): STOPPED, as the run had failed')
    expect(running?(grandchild)).to be(false)
  end

  it 'awaits the background jobs of a run that passes' do
    out, status = Open3.capture2e(env('passes'), 'bash', '-c', harness)
    expect(status).to be_success, out
    expect(out).to include('==> short (ran in the background): passed; its log:', '  | short job: done')
    expect(out).not_to include('stopping')
  end

  it 'refuses a second run in the same checkout, naming the first one; an interrupted first run leaves nothing behind' do
    first_out, first = start('holds')
    expect(File.read(lock_path).chomp).to eq(first.pid.to_s)

    out, status = Open3.capture2e(env('passes'), 'bash', '-c', harness)
    expect(status.exitstatus).to eq(1)
    expect(out).to include("harness: another run is using this checkout: process #{first.pid} (bash -c ")
    expect(File.exist?(File.join(@work, 'go'))).to be(false)

    Process.kill('INT', first.pid)
    log = first_out.read
    expect(first.value.exitstatus).to eq(130)
    expect(log).to include('harness: interrupted (INT)', '==> long (ran in the background): STOPPED, as the run had failed')
    expect(running?(grandchild)).to be(false)
    expect(lock_free?).to be(true)
    _out, status = Open3.capture2e(env('passes'), 'bash', '-c', harness)
    expect(status).to be_success
  end

  it 'stops the background jobs it was awaiting at its end when interrupted then' do
    out, run = start('awaits')
    Process.kill('TERM', run.pid)
    expect(run.value.exitstatus).to eq(143)
    expect(out.read).to include('harness: interrupted (TERM)', '==> long (ran in the background): STOPPED, as the run had failed')
    expect(running?(grandchild)).to be(false)
    expect(lock_free?).to be(true)
  end

  it "lets the run that holds the lock start another (.ci/run's script/test)" do
    _first_out, first = start('holds')
    out, status = Open3.capture2e(env('passes', 'PWSHLIB_RUN_LOCK_OWNER' => first.pid.to_s), 'bash', '-c', harness)
    expect(status).to be_success, out
    Process.kill('TERM', first.pid)
    expect(first.value.exitstatus).to eq(143)
    expect(running?(grandchild)).to be(false)
  end
end
