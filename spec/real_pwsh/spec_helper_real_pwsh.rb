# frozen_string_literal: true

# The real-PowerShell tier (script/test-pwsh): these suites run on a real
# PowerShell 7, named by PWSHLIB_REAL_PWSH (script/find-pwsh sets it), not
# on the simulator. Without it they fail at once rather than skip: a tier
# that silently ran nothing would prove nothing.
require 'spec_helper'
require 'pwsh'
require 'tmpdir'

REAL_PWSH = ENV.fetch('PWSHLIB_REAL_PWSH', nil)
abort "spec/real_pwsh needs a real pwsh: run script/test-pwsh (PWSHLIB_REAL_PWSH=#{REAL_PWSH.inspect})" unless REAL_PWSH && File.executable?(REAL_PWSH)

RSpec.shared_context 'a manager on the real pwsh' do
  def new_manager(options = {})
    Pwsh::Manager.instance(REAL_PWSH, Pwsh::Manager.pwsh_args, options)
  end

  let(:manager) { new_manager }
end

# A host cache directory of the example's own (@cache, not made yet: the
# manager makes it), named by PWSHLIB_HOST_CACHE for the hosts the example
# starts, and the variable put back after it.
RSpec.shared_context 'a host cache of its own' do
  around do |example|
    Dir.mktmpdir('pwshlib-host-cache') do |base|
      @cache = File.join(base, 'cache')
      saved = ENV.fetch('PWSHLIB_HOST_CACHE', nil)
      ENV['PWSHLIB_HOST_CACHE'] = @cache
      begin
        example.run
      ensure
        ENV['PWSHLIB_HOST_CACHE'] = saved
      end
    end
  end
end

# The realdsc fixture module's providers in this process, driving the real
# pwsh: its lib on the load path, the stand-in Invoke-DscResource's module
# path, a fresh state directory per example, every host shut down after it.
RSpec.shared_context 'the realdsc providers on the real pwsh' do
  let(:lib) { File.join(__dir__, 'dsc', 'modules', 'realdsc', 'lib') }
  let(:sensitive) { Puppet::Pops::Types::PSensitiveType::Sensitive }

  around do |example|
    Dir.mktmpdir('pwshlib-realdsc') do |state|
      keys = %w[PWSHLIB_POWERSHELL PSModulePath PWSHLIB_REAL_DSC_STATE]
      saved = ENV.to_h.slice(*keys)
      ENV.update('PWSHLIB_POWERSHELL' => REAL_PWSH, 'PSModulePath' => File.join(__dir__, 'dsc', 'standin'),
                 'PWSHLIB_REAL_DSC_STATE' => state)
      $LOAD_PATH.unshift(lib)
      begin
        example.run
      ensure
        $LOAD_PATH.delete(lib)
        Pwsh::Manager.shutdown_all
        keys.each { |k| ENV[k] = saved[k] }
      end
    end
  end
end
