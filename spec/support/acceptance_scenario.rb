# frozen_string_literal: true

# Example-group macros for the `puppet apply` suites (spec/acceptance, and
# spec/wine through the same harness). Extend a group with it:
#
#   extend AcceptanceScenario
#   apply_scenario 'the host crashes mid-run', machine: 'crash', manifest: ..., env: {...},
#                  exits: 'exits 6 (changes and failures)', exitcode: 6 do
#     it('...') { expect(run...) }
#   end
#
# Runs are expensive, so a scenario makes its machine and its one run once
# (before(:all)) and its examples share them.
module AcceptanceScenario
  # A describe block with a simulated machine of its own (`@machine`,
  # removed afterwards) and one `puppet apply` of `manifest` with the fault
  # switches `env` (`run`). Its first example, named `exits`, checks the exit
  # code; the block adds the scenario's own examples after it.
  def apply_scenario(description, machine:, manifest:, exits:, exitcode:, env: {}, &examples)
    describe description do
      before(:all) do
        @machine = Acceptance::Machine.new(machine)
        @run = @machine.apply(manifest, env: env)
      end

      after(:all) { @machine&.cleanup }

      let(:run) { @run }

      it(exits) { expect(run.exitcode).to eq(exitcode), run.to_s }

      class_exec(&examples)
    end
  end
end

# Checks on several runs of one suite that no secret shows; shared by the
# Linux lifecycle suite and the one under wine (include in an example group).
module AcceptanceSecrets
  # No piece of any secret (its token, or the token reversed) in what a
  # user sees: the output, the logs, the report.
  def expect_no_secret_shown(runs, secrets)
    runs.each_with_index do |run, index|
      secrets.each do |secret|
        token = Acceptance.secret_token(secret)
        expect(run.visible_text).not_to include(token), "run #{index + 1} leaked #{token}"
        expect(run.visible_text).not_to include(token.reverse), "run #{index + 1} leaked #{token.reverse}"
      end
    end
  end

  # No file Puppet keeps (state, reports, caches, logs) holds any of
  # `tokens`.
  def expect_no_file_holding(runs, tokens)
    files = runs.flat_map(&:puppet_files)
    expect(files).not_to be_empty
    leaks = files.select do |path|
      text = File.binread(path)
      tokens.any? { |token| text.include?(token) }
    end
    expect(leaks).to eq([])
  end

  # Every string the simulator was sent, at any depth, by all `runs`.
  def strings_sent(runs)
    runs.flat_map(&:calls).flat_map { |call| Acceptance.strings_in(call) }
  end
end
