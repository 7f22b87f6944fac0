# frozen_string_literal: true

require_relative '../spec_helper_real_pwsh'
require_relative '../../acceptance/spec_helper_acceptance'

# The machine of the tier's `puppet apply` suites (puppet_apply_spec.rb,
# powershell_logging_spec.rb): the acceptance harness with the real pwsh as
# its PowerShell and the realdsc fixture module's resources.
module RealPwshDsc
  ROOT = __dir__
  MODULE_PATH = File.join(ROOT, 'modules')
  STANDIN = File.join(ROOT, 'standin')

  # A machine whose PowerShell is the real pwsh and whose DSC resources are
  # the fixture module's, with their state under state_dir. powershell:
  # the pwsh the provider starts (the logging suite's copy of it);
  # module_path: where the Puppet modules are (module_loading_spec.rb
  # writes its own).
  class Machine < Acceptance::Machine
    attr_reader :state_dir

    def initialize(name, powershell: REAL_PWSH, module_path: MODULE_PATH)
      super(name, module_path: module_path)
      @powershell = powershell
      @state_dir = File.join(dir, 'dsc-state')
      FileUtils.mkdir_p(@state_dir)
    end

    def apply(manifest, env: {}, arguments: [])
      before = calls.size
      run = super(manifest, env: real_env.merge(env), arguments: arguments)
      # The calls the resources logged during this run (the simulator's log,
      # which the harness reads, stays empty).
      run.instance_variable_set(:@calls, calls.drop(before))
      run
    end

    def real_env
      {
        # Pwsh::Manager.pwsh_path: the provider starts this PowerShell.
        'PWSHLIB_POWERSHELL' => @powershell,
        # The stand-in module is found before any other
        # PSDesiredStateConfiguration (pwsh adds its own folders to this).
        'PSModulePath' => STANDIN,
        'PWSHLIB_REAL_DSC_STATE' => state_dir,
      }
    end

    def calls
      Acceptance.read_call_log(File.join(state_dir, 'calls.jsonl'))
    end

    # The calls the stand-in Invoke-DscResource received (all of them, over
    # every run): a direct call never reaches it.
    def standin_calls
      Acceptance.read_call_log(File.join(state_dir, 'standin.jsonl'))
    end

    # The stored properties of one resource, as the resource wrote them.
    # One file per instance, named by its key's UTF-8 bytes in hex
    # (Get-RealStatePath in the fixture module).
    def stored(resource, key)
      path = File.join(state_dir, resource, "#{key.b.unpack1('H*')}.json")
      File.exist?(path) ? JSON.parse(File.read(path, encoding: 'UTF-8')) : nil
    end
  end

  # A group's puppet apply runs (@runs) by number, and the calls one run
  # made to a resource, by method.
  module Runs
    def run(index)
      @runs.fetch(index - 1)
    end

    def counts(run, resource)
      counts = Hash.new(0)
      run.calls.each { |call| counts[call['method']] += 1 if call['resource'] == resource }
      %w[Get Set Test].to_h { |method| [method, counts[method]] }
    end
  end
end
