# frozen_string_literal: true

# The real-PowerShell tier (script/test-pwsh): these suites run on a real
# PowerShell 7, named by PWSHLIB_REAL_PWSH (script/find-pwsh sets it), not
# on the simulator. Without it they fail at once rather than skip: a tier
# that silently ran nothing would prove nothing.
require 'spec_helper'
require 'pwsh'

REAL_PWSH = ENV.fetch('PWSHLIB_REAL_PWSH', nil)
abort "spec/real_pwsh needs a real pwsh: run script/test-pwsh (PWSHLIB_REAL_PWSH=#{REAL_PWSH.inspect})" unless REAL_PWSH && File.executable?(REAL_PWSH)

RSpec.shared_context 'a manager on the real pwsh' do
  def new_manager(options = {})
    Pwsh::Manager.instance(REAL_PWSH, Pwsh::Manager.pwsh_args, options)
  end

  let(:manager) { new_manager }
end
