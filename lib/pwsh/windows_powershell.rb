# frozen_string_literal: true

module Pwsh
  # Windows PowerShell (5.1 and earlier) detection.
  module WindowsPowerShell
    # The oldest Windows PowerShell the host script supports.
    MINIMUM_VERSION = '3.0'
    ENGINE_KEYS = ['SOFTWARE\Microsoft\PowerShell\3\PowerShellEngine',
                   'SOFTWARE\Microsoft\PowerShell\1\PowerShellEngine'].freeze

    module_function

    # The installed Windows PowerShell version ('5.1.17763.1'), or nil
    # (not Windows, or not installed).
    def version
      return nil unless Pwsh::Util.on_windows?

      require 'win32/registry'
      ENGINE_KEYS.each do |key|
        Win32::Registry::HKEY_LOCAL_MACHINE.open(key, Win32::Registry::KEY_READ | 0x100) do |reg|
          return reg['PowerShellVersion']
        end
      rescue StandardError
        next
      end
      nil
    end

    def compatible_version?(value = version)
      return false if value.nil? || value.to_s.empty?

      Gem::Version.new(value.to_s) >= Gem::Version.new(MINIMUM_VERSION)
    rescue ArgumentError
      false
    end
  end
end
