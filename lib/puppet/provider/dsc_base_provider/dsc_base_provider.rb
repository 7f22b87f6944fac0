# frozen_string_literal: true

require 'json'
require 'puppet'
require 'puppet/provider'
require_relative '../../../pwshlib'
require_relative '../../../pwshlib/dsc_call'
require_relative '../../../pwsh'

# Defines Puppet::Provider::DscBaseProvider natively (Rust). Scaffolded
# providers subclass it with an empty body.
Pwshlib.define_dsc_base_provider
require_relative 'reboot_request'

module Puppet
  class Provider
    # The native class (ext/pwshlib/src/dsc_base_provider/) is the
    # provider's session: its state, caches and secrets, and the steps the
    # spine below calls. Every method a pwshlib 2.x provider overrides is
    # plain Ruby here.
    class DscBaseProvider
      # The Resource API's entry points and pwshlib 2.x's overridable
      # methods: the spine. Each is plain Ruby calling the next through
      # Ruby (so a subclass, a prepended module or an RSpec stub replaces it
      # everywhere) and the native session's steps (the private `_` methods,
      # ext/pwshlib/src/dsc_base_provider/lifecycle_methods.rs), which never
      # call back into Ruby's provider methods.
      #
      #   canonicalize, get, set, insync?
      #     -> invoke_get_method, invoke_export_method, invoke_set_method,
      #        invoke_test_method
      #       -> invoke_dsc_resource -> ps_manager.execute_dsc

      # The Resource API's context method each change runs inside.
      CHANGE_CONTEXT = { create: :creating, update: :updating, delete: :deleting }.freeze

      # Resource API `canonicalize(context, resources)`. The Resource API
      # asks three times per resource in a run; after the first, every
      # resource comes back as given, found by its namevars alone. The
      # session reads the resources once (`_canonicalize_plan`: the indexes
      # of those whose system state is still to be read), and canonicalizes
      # them all with what their Gets answered, in that order
      # (`_canonicalize_all`: the given array when nothing changed, as a
      # provider that changes nothing answers).
      def canonicalize(context, resources)
        to_read = _canonicalize_plan(context, resources)
        return resources if to_read.nil?

        systems = to_read.map { |index| invoke_get_method_for_canonicalize(context, resources[index]) }
        _canonicalize_all(context, resources, systems)
      end

      # The run's one Get of a resource being canonicalized, nil when it
      # failed (a failed Get is not made twice in a run).
      def invoke_get_method_for_canonicalize(context, resource)
        result = invoke_get_method(context, resource)
        _note_get_failed(context, resource) if result.nil?
        result
      end

      # Resource API `get(context, names = nil)`: one hash per name, in
      # order; without names (`instances`, which a `simple_get_filter` type
      # asks with `[]`: `puppet resource dsc_x`, `purge`) one per instance
      # the resource lists of itself.
      def get(context, names = nil)
        _get_begins(context)
        return invoke_export_method(context) if names.nil? || names == []

        (names.is_a?(Array) ? names : [names]).map do |name|
          answer = _get_known(context, name)
          next answer unless answer.nil?

          query = _get_query(context, name)

          result = invoke_get_method(context, query)
          next result unless result.nil?

          _note_get_failed(context, query)
          name.is_a?(Hash) ? name : { name: name }
        end
      end

      # Resource API `set(context, changes)`: each change runs inside
      # `context.creating/updating/deleting(name) { create/update/delete }`;
      # a failed Set (reported already) raises there, so that Puppet marks
      # the resource failed and goes on.
      def set(context, changes)
        _set_begins(context)
        changes.each do |name, change|
          is, should = change.is_a?(Hash) ? [change[:is], change[:should]] : [nil, nil]
          is = get(context, [name]).first if is.nil?
          action, should, refusal = _set_plan(context, name, is, should)
          context.send(CHANGE_CONTEXT.fetch(action), name) do
            raise Puppet::Error, refusal if refusal

            result = action == :delete ? delete(context, name) : send(action, context, name, should)
            failure = _set_failure(name, should)
            raise Puppet::Error, failure if failure

            result
          end
        end
        nil
      end

      def create(context, name, should)
        _log_change(context, 'Creating', name, should)
        invoke_set_method(context, name, should)
      end

      def update(context, name, should)
        _log_change(context, 'Updating', name, should)
        invoke_set_method(context, name, should)
      end

      def delete(context, name)
        _log_change(context, 'Deleting', name, nil)
        invoke_set_method(context, name, _delete_should(context, name))
      end

      # Resource API `insync?`: nil (Puppet compares), true, false or
      # `[false, message]`; the resource's one Test when it is judged whole.
      def insync?(context, name, property_name, is_hash, should_hash)
        answer = _insync(context, name, property_name, is_hash, should_hash, nil)
        return answer unless answer.equal?(:test)

        test = invoke_test_method(context, name, should_hash)
        _insync_tested(context, name, property_name, is_hash, should_hash, test)
      end

      # The Puppet hash of the resource's current state, nil when the Get failed.
      def invoke_get_method(context, name_hash)
        data = invoke_dsc_resource(context, name_hash, get_props(context, name_hash), 'get')
        _get_result(context, name_hash, data)
      end

      # The Puppet hashes of every instance the resource exports (its class's
      # static `Export()`, its module's `Export-TargetResource`), each made
      # as a Get result is; [] when it cannot list itself (said once).
      def invoke_export_method(context)
        _export_result(context, invoke_dsc_resource(context, {}, {}, 'export'))
      end

      # The DSC Set's answer (subclasses read `rebootrequired`), nil on
      # failure. A Set that asked for a reboot hands it to `request_reboot`.
      def invoke_set_method(context, name, should)
        name_hash, props = _set_call(context, name, should)
        data = invoke_dsc_resource(context, name_hash, props, 'set')
        request_reboot(context, name) if _set_result(context, name, name_hash, data)
        data
      end

      # The reboot the DSC Set of `name` asked for: the catalog's
      # `reboot { 'dsc_reboot': }` is refreshed, or a warning names the
      # resource when the catalog has none (reboot_request.rb).
      def request_reboot(context, name)
        RebootRequest.request(context, name)
      end

      # true, `[false, message]`, or nil when the Test failed.
      def invoke_test_method(context, name, should)
        name_hash, props = _test_call(context, name, should)
        _test_result(context, name_hash, invoke_dsc_resource(context, name_hash, props, 'test'))
      end

      # One DSC call: the session builds it (a `Pwshlib::DscCall`, its script
      # inside), `ps_manager` runs it and answers the result's data, or nil
      # (the error reported). A collision with another DSC run is waited
      # out and retried.
      def invoke_dsc_resource(context, name_hash, props, method)
        call = _dsc_call(context, name_hash, props, method, load_path)
        return nil if call.nil?

        script = overridden_script(context, props, method)
        attempt = 0
        loop do
          data = script ? send_script_text(context, script, call) : send_dsc_call(context, call)
          return data unless data.nil? && call.collided?

          wait = _collision_wait(context, call, attempt += 1)
          return nil if wait.nil?

          sleep(wait)
          _retrying(context, call, attempt)
        end
      end

      # The PowerShell host manager: of `edition` ('Core': PowerShell 7,
      # 'Desktop': Windows PowerShell 5.1) when a module has one; else
      # Windows PowerShell on Windows, PowerShell 7 (pwsh) elsewhere, as
      # ruby-pwsh's provider chooses. One manager per executable, each
      # started when a call first needs it. `Pwsh::Manager` is looked up on
      # every call, never kept: a caller may replace it (RSpec's stub_const,
      # a test double). The PowerShell found is remembered for the run (a
      # PATH search); the native side forgets it when a new run starts.
      # Without a PowerShell nothing is remembered, and the error says what
      # was searched.
      def ps_manager(edition = nil)
        manager_class = Pwsh::Manager
        found = (@powershell_command ||= {})
        path, args = found[edition] || powershell_command(manager_class, edition)
        found[edition] = [path, args] if path && args
        manager_class.instance(path, args, debug: Puppet::Util::Log.level == :debug)
      end

      # Where the vendored DSC resources are sought (`vendored_modules_path`).
      def load_path
        $LOAD_PATH
      end

      # pwshlib 2.x `vendored_modules_path(module_name)`: the module's
      # vendored `dsc_resources` folder, searched along `load_path`; raises
      # naming the module and the folders searched when it is missing.
      def vendored_modules_path(module_name)
        _vendored_modules_path(module_name, load_path)
      end

      # pwshlib 2.x `invocable_resource(should, context, dsc_method)`: the
      # resource hash `ps_script_content` builds a script from. The session
      # searches `load_path` for the vendored module, unless a provider
      # overrides `vendored_modules_path`, whose answer it then takes.
      def invocable_resource(should, context, dsc_method)
        vendored = if method(:vendored_modules_path).owner.equal?(DscBaseProvider)
                     load_path
                   else
                     module_name = _vendored_module_name(context)
                     module_name && vendored_modules_path(module_name)
                   end
        _invocable_resource(should, context, dsc_method, vendored)
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

      # The data of one DSC call's answer, nil when it failed (reported).
      # This library's manager takes the call whole (`execute_dsc`: the call
      # as data and its secrets, never a Ruby String, and the answer read
      # by the session); a manager with `execute_with_prelude` only gets this
      # call's lines, any other (a pwshlib 2.x manager, a test double) the
      # whole text, and the session reads what it answers.
      def send_dsc_call(context, call)
        manager = call_manager(call)
        return manager.execute_dsc(call) if manager.respond_to?(:execute_dsc)

        _show_script(context, call, host_session(manager)) if call.shows_script?
        output = if call.prelude? && manager.respond_to?(:execute_with_prelude)
                   manager.execute_with_prelude(Pwshlib::PRELUDE_NAME, call.inline_body, call.timeout_ms)
                 else
                   manager.execute(call.script_text, call.timeout_ms)
                 end
        _dsc_outcome(context, call, output)
      rescue StandardError => e
        _dsc_failed(context, call, e.message)
      end

      # The script of a provider (or an RSpec stub) that overrides
      # `ps_script_content`, as pwshlib 2.x ran it: its whole text, secrets
      # as the override writes them (2.x's inline literals); nil without an
      # override, when the session's own script goes as data.
      def overridden_script(context, props, dsc_method)
        return nil if method(:ps_script_content).owner.equal?(DscBaseProvider)

        ps_script_content(invocable_resource(props, context, dsc_method))
      end

      # An overriding provider's script, sent as pwshlib 2.x sent it:
      # `--debug` shows it redacted, the manager gets it through `execute`.
      def send_script_text(context, script, call)
        context.debug("Script:\n#{redact_secrets(script)}") if call.shows_script?
        _dsc_outcome(context, call, call_manager(call).execute(remove_secret_identifiers(script), call.timeout_ms))
      rescue StandardError => e
        _dsc_failed(context, call, e.message)
      end

      # The props a Get sends: the entries of `name_hash` that are set and
      # that a Get passes (the session names them once per provider).
      def get_props(context, name_hash)
        passed = (@get_props_passed ||= _get_passed_attributes(context).flat_map { |name| [[name, true], [name.to_s, true]] }.to_h)
        name_hash.select { |key, value| !value.nil? && passed[key] }
      end

      # The host process the manager sends to (its endpoint, new for each
      # one), so that --debug shows the prelude once per host session; nil
      # for a manager that cannot say (a stand-in).
      def host_session(manager)
        manager.endpoint if manager.respond_to?(:endpoint)
      end

      # The manager of the PowerShell the call's module runs on. A provider
      # that overrides `ps_manager` (a pwshlib 2.x one, an RSpec stub)
      # chooses for every call, as it did. Without that PowerShell, the
      # error names the module and the edition it declares.
      def call_manager(call)
        edition = call.powershell_edition
        return ps_manager if edition.nil? || !method(:ps_manager).owner.equal?(DscBaseProvider)

        begin
          ps_manager(edition)
        rescue Pwsh::PowerShellNotFound => e
          raise Pwsh::PowerShellNotFound, call.edition_unavailable(e.message)
        end
      end

      def powershell_command(manager_class, edition = nil)
        return manager_class.edition_command(edition) if edition

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
