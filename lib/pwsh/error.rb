# frozen_string_literal: true

module Pwsh
  # The failures of Pwsh::Manager, so that callers can rescue them as a
  # group. A RuntimeError, as they were in pwshlib 2.x: `rescue RuntimeError`
  # still catches them. (A failed `execute` is not raised: its result carries
  # `errormessage`, as in 2.x.)
  class Error < RuntimeError; end

  # The PowerShell host could not be started, reached or kept: no such
  # executable, the host script missing, the host exiting or dying, or not
  # answering in time (pipe_timeout).
  class HostError < Error; end

  # Kept for callers that rescue it: a reply that is not the protocol is a
  # failed `execute` (its result's `errormessage`), not raised.
  class ProtocolError < Error; end

  # A bug of pwshlib's own, caught where Rust meets Ruby (a panic): please
  # report it. Not a host failure, so it is not a HostError.
  class InternalError < Error; end

  # No PowerShell executable was found (Pwsh::Manager.instance with no path).
  class PowerShellNotFound < Error; end
end
