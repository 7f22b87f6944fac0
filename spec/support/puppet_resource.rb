# frozen_string_literal: true

require 'open3'
require 'securerandom'

# `puppet resource` against an acceptance machine (spec/acceptance's
# simulated one, or spec/real_pwsh's): its output and the calls the
# simulator logged.
module PuppetResource
  # One `puppet resource` run against a machine: its output and the
  # simulator's calls.
  Listing = Struct.new(:stdout, :stderr, :exitcode, :calls, keyword_init: true) do
    def to_s
      "exit code #{exitcode}\n--- stdout\n#{stdout}\n--- stderr\n#{stderr}"
    end
  end

  # module_path and env: the real-PowerShell tier's modules and
  # environment (spec/real_pwsh/dsc/export_spec.rb).
  def self.run(machine, *arguments, module_path: Acceptance::MODULE_PATH, env: {})
    run_dir = File.join(machine.dir, "resource#{SecureRandom.hex(4)}")
    %w[confdir codedir vardir logdir rundir].each { |d| FileUtils.mkdir_p(File.join(run_dir, d)) }
    log_path = File.join(run_dir, 'sim-calls.jsonl')
    command = [
      'timeout', '--kill-after=10', Acceptance::RUN_DEADLINE_SECONDS.to_s,
      *Acceptance.puppet.command, 'resource', *arguments,
      '--modulepath', module_path, '--color', 'false',
      *%w[confdir codedir vardir logdir rundir].flat_map { |d| ["--#{d}", File.join(run_dir, d)] }
    ]
    run_env = Acceptance.run_env(machine.state_path, log_path).merge(env)
    stdout, stderr, status = Open3.capture3(run_env, *command)
    Listing.new(stdout: stdout, stderr: stderr, exitcode: status.exitstatus, calls: Acceptance.read_call_log(log_path))
  end
end
