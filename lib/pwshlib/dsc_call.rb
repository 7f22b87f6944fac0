# frozen_string_literal: true

module Pwshlib
  # One DSC call the provider's session prepared (native:
  # ext/pwshlib/src/dsc_call.rs). The edition is read here, in Ruby: the
  # session sets it as the call is made, so choosing the call's host costs
  # no native entry.
  class DscCall
    # 'Core' (PowerShell 7) or 'Desktop' (Windows PowerShell 5.1), as the
    # module's manifest or PWSHLIB_EDITIONS chose; nil when the module
    # declares neither, and its call runs where every call ran before.
    # rubocop:disable Style/TrivialAccessors -- an attr_reader is a C
    # method, which the count of native entries per call would take for one
    def powershell_edition
      @powershell_edition
    end
    # rubocop:enable Style/TrivialAccessors
  end
end
