# frozen_string_literal: true

require 'json'
require 'puppet'
require 'puppet/provider'
require_relative '../../../pwshlib'
require_relative '../../../pwsh'

# Defines Puppet::Provider::DscBaseProvider natively (Rust). Scaffolded
# providers subclass it with an empty body.
Pwshlib.define_dsc_base_provider

module Puppet
  class Provider
    # The native class (ext/pwshlib/src/dsc_base_provider/) keeps the logic;
    # this reopening holds the pure Ruby choreography around it. The native
    # code reaches these methods through Ruby dispatch, so a subclass, a
    # prepended module or an RSpec stub replaces them everywhere.
    class DscBaseProvider
      # Resource API `get(context, names = nil)`: the optional argument is
      # Ruby's; the native `_get` does the work.
      def get(context, names = nil)
        _get(context, names)
      end

      # The PowerShell host manager: Windows PowerShell on Windows,
      # PowerShell 7 (pwsh) elsewhere, as ruby-pwsh's provider chooses.
      # `Pwsh::Manager` is looked up on every call, never kept: a caller may
      # replace it (RSpec's stub_const, a test double). The PowerShell found
      # is remembered for the run (a PATH search); the native side forgets
      # it when a new run starts. Without a PowerShell nothing is
      # remembered and `instance` raises the error that says what was
      # searched.
      def ps_manager
        manager_class = Pwsh::Manager
        path, args = @powershell_command || powershell_command(manager_class)
        @powershell_command = [path, args] if path && args
        manager_class.instance(path, args, debug: Puppet::Util::Log.level == :debug)
      end

      # Where the vendored DSC resources are sought (`vendored_modules_path`).
      def load_path
        $LOAD_PATH
      end

      # pwshlib 2.x `retry_invoke_dsc_resource(context, max_retry_count,
      # retry_wait_interval_secs, error_matcher) { json }`: notices, waits and
      # yields for a fresh JSON result until it has no error, the error no
      # longer matches, or the retries run out (then the error is reported,
      # scrubbed of every secret the provider knows in this run, as the
      # lifecycle's errors are, and nil returned).
      def retry_invoke_dsc_resource(context, max_retry_count, retry_wait_interval_secs, error_matcher)
        (1..max_retry_count).each do |attempt|
          context.notice("Sleeping for #{retry_wait_interval_secs} seconds.")
          sleep(retry_wait_interval_secs)
          context.notice("Retrying: attempt #{attempt} of #{max_retry_count}.")
          data = parse_retry_output(yield)
          error = retry_error_message(data)
          return data if error.empty?

          context.notice("Attempt #{attempt} of #{max_retry_count} failed.")
          if !error_matcher.match?(error) || attempt == max_retry_count
            context.err(_scrub_known_secrets(context, error))
            return nil
          end
        end
        nil
      end

      private

      def powershell_command(manager_class)
        if Pwsh::Util.on_windows?
          [manager_class.powershell_path, manager_class.powershell_args]
        else
          [manager_class.pwsh_path, manager_class.pwsh_args]
        end
      end

      # The result's error message; '' when there is none (or it is not text).
      def retry_error_message(data)
        message = data['errormessage'] if data.is_a?(Hash)
        message.is_a?(String) ? message : ''
      end

      def parse_retry_output(output)
        JSON.parse(output.to_s)
      rescue JSON::ParserError => e
        raise Puppet::Error, "invalid JSON on retry: #{e.message}"
      end
    end
  end
end
