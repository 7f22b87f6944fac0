# frozen_string_literal: true

require_relative 'spec_helper_acceptance'
require_relative '../support/reboot_module'

# Reboots a DSC Set asks for (the simulator's PWSHLIB_SIM_REBOOT_REQUIRED
# fault), through the real reboot module under the modulepath and a
# stand-in `shutdown` first on PATH that records its calls: one reboot when
# a Set asked, none when no Set asked, none in noop.
module AcceptanceReboots
  REBOOT_FINISHED = "reboot { 'dsc_reboot': apply => finished }"

  RSpec.describe 'puppet apply with a reboot resource for DSC' do
    def self.file(title, contents)
      Acceptance.resource('dsc_fixturefile', title, {
                            'dsc_destinationpath' => "C:\\Reboots\\#{title}.txt",
                            'dsc_ensure' => 'Present',
                            'dsc_contents' => contents,
                          })
    end

    def self.asking(*titles)
      { 'PWSHLIB_SIM_REBOOT_REQUIRED' => titles.map { |t| "Set/FixtureFile:C:\\Reboots\\#{t}.txt" }.join(';') }
    end

    # One machine and one run of `manifest`: `@run`, and `@shutdowns`, the
    # stand-in's calls (waited for when the output says a reboot was
    # scheduled, so that a late one is not missed).
    def self.reboot_scenario(description, manifest:, env: {}, arguments: [], exitcode: 2, &examples)
      describe description do
        before(:all) do
          @modules = Dir.mktmpdir('pwshlib-reboot-modules-')
          modulepath = RebootModule.modulepath_with(@modules, Acceptance::MODULE_PATH)
          @machine = Acceptance::Machine.new('reboot', module_path: modulepath)
          log = File.join(@machine.dir, 'shutdown-calls.txt')
          @run = @machine.apply(manifest, env: RebootModule.standin_env(log).merge(env), arguments: arguments)
          @shutdowns = RebootModule.shutdown_calls(log, expected: @run.output.include?('Scheduling system reboot'))
        end

        after(:all) do
          @machine&.cleanup
          FileUtils.rm_rf(@modules) unless ENV['PWSHLIB_ACCEPTANCE_KEEP']
        end

        let(:run) { @run }
        let(:notices) { run.logs.select { |level, _| level == 'notice' }.map(&:last) }
        let(:warnings) { run.logs.select { |level, _| level == 'warning' }.map(&:last) }

        it("exits #{exitcode}") { expect(run.exitcode).to eq(exitcode), run.to_s }

        class_exec(&examples)
      end
    end

    reboot_scenario 'two Sets ask, one resource changes without asking, the reboot declared last',
                    manifest: [file('asks', 'one'), file('plain', 'two'), file('asks-too', 'three'),
                               REBOOT_FINISHED].join("\n"),
                    env: asking('asks', 'asks-too') do
      it 'calls shutdown once, to restart the node a minute after the run' do
        expect(@shutdowns).to eq(['-r +1 Puppet is rebooting the computer']), run.to_s
      end

      it 'refreshes the reboot resource once, from the two requests' do
        expect(run.output).to include("Reboot[dsc_reboot]: Triggered 'refresh' from 2 events"), run.to_s
        expect(run.status('Reboot[dsc_reboot]')).to include('changed' => true)
      end

      it 'names each resource whose Set asked, and no other' do
        asked = notices.grep(/asked for a reboot/)
        expect(asked.size).to eq(2), run.to_s
        expect(run.output).to match(/Dsc_fixturefile\[asks\]: The DSC Set asked for a reboot: Reboot\[dsc_reboot\] will restart the node after this run/)
        expect(run.output).to match(/Dsc_fixturefile\[asks-too\]: The DSC Set asked for a reboot/)
        expect(run.output).not_to match(/Dsc_fixturefile\[plain\]: .*reboot/i)
      end

      it 'says the node will restart, and warns of nothing' do
        expect(notices.join("\n")).to include('Scheduling system reboot with message: "Puppet is rebooting the computer"')
        expect(warnings.grep(/reboot/i)).to eq([])
      end

      it 'applies every resource' do
        %w[asks plain asks-too].each { |t| expect(run.changed?("Dsc_fixturefile[#{t}]")).to be(true), t }
      end
    end

    reboot_scenario 'a Set asks, the reboot declared before the DSC resources',
                    manifest: [REBOOT_FINISHED, file('first', 'one'), file('asks', 'two')].join("\n"),
                    env: asking('asks') do
      it 'calls shutdown once, though Puppet evaluated the reboot resource first' do
        expect(@shutdowns).to eq(['-r +1 Puppet is rebooting the computer']), run.to_s
        expect(run.output).to include("Reboot[dsc_reboot]: Triggered 'refresh' from 1 event")
      end
    end

    reboot_scenario 'resources change and no Set asks',
                    manifest: [file('plain', 'one'), file('plain-too', 'two'), REBOOT_FINISHED].join("\n") do
      it 'never calls shutdown nor refreshes the reboot resource' do
        expect(@shutdowns).to eq([])
        expect(run.output).not_to include('Scheduling system reboot')
        expect(run.output).not_to match(/Triggered 'refresh'/)
        expect(run.changed?('Dsc_fixturefile[plain]')).to be(true)
      end
    end

    reboot_scenario 'a notify edge to the reboot resource from a resource whose Set does not ask',
                    manifest: [file('plain', 'one').sub(/\}\s*\z/, "  notify => Reboot['after'],\n}"),
                               REBOOT_FINISHED, "reboot { 'after': apply => finished }"].join("\n") do
      it 'leaves Reboot[dsc_reboot] alone: only the edge the user wrote refreshes its target' do
        expect(run.output).not_to include('Reboot[dsc_reboot]: Triggered')
        expect(run.output).to match(/Reboot\[after\]: Triggered 'refresh' from \d+ events?/), run.to_s
        expect(@shutdowns.size).to eq(1)
      end
    end

    reboot_scenario 'a Set would ask, in --noop',
                    manifest: [file('asks', 'one'), REBOOT_FINISHED].join("\n"),
                    env: asking('asks'), arguments: ['--noop'], exitcode: 0 do
      it 'never calls shutdown, and runs no Set' do
        expect(@shutdowns).to eq([])
        expect(run.calls.map { |call| call['method'] }).not_to include('Set')
        expect(run.output).not_to include('Scheduling system reboot')
      end

      it 'says a reboot would follow if the Set asked, naming the resource' do
        preview = 'Would be changed: if its DSC Set asks for a reboot, Reboot[dsc_reboot] would restart the node (noop)'
        expect(run.output).to include("Dsc_fixturefile[asks]: #{preview}"), run.to_s
        expect(run.output).to include("Reboot[dsc_reboot]: Would have triggered 'refresh' from 1 event")
      end
    end

    reboot_scenario 'a Set asks and the catalog has no reboot resource',
                    manifest: [file('asks', 'one'), file('plain', 'two')].join("\n"),
                    env: asking('asks') do
      it 'warns naming the resource and how to let Puppet reboot, and reboots nothing' do
        expect(warnings.grep(/reboot/i).join).to match(/asks.*A reboot is required.*reboot \{ 'dsc_reboot': apply => finished \}/m)
        expect(warnings.grep(/reboot/i).join).not_to match(/plain/)
        expect(@shutdowns).to eq([])
      end
    end
  end
end
