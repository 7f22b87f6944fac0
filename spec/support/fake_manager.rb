# frozen_string_literal: true

require 'json'

# An in-process stand-in for Pwsh::Manager, for unit tests only: it records
# every `execute` call (with the DSC Method read from the script) and
# answers Get, Set, Test and Export (the Get result as the one instance)
# from configurable results.
class FakePwshManager
  # `method` is the DSC method (Get, Set, Test), as the specs read it; no
  # spec calls Struct#method on a Call.
  Call = Struct.new(:method, :script, :timeout_ms) # rubocop:disable Lint/StructNewOverride

  attr_reader :calls, :queued
  attr_accessor :get_result, :in_desired_state, :reboot_required

  def initialize(get_result = {})
    @calls = []
    @queued = []
    @get_result = get_result
    @in_desired_state = true
    @reboot_required = false
  end

  # Answers queued outputs first (each a full execute result hash), then
  # the defaults for the Method.
  def execute(script, timeout_ms = nil, _working_dir = nil, _env_vars = [])
    method = script[/Method\s*=\s*'(\w+)'/, 1]
    @calls << Call.new(method, script, timeout_ms)
    return @queued.shift unless @queued.empty?

    stdout = case method
             when 'Get' then @get_result.to_json
             when 'Set' then { indesiredstate: true, rebootrequired: @reboot_required, errormessage: '' }.to_json
             when 'Test' then { indesiredstate: @in_desired_state, errormessage: '' }.to_json
             when 'Export' then { instances: [@get_result], errormessage: '' }.to_json
             end
    { exitcode: 0, stdout: stdout, stderr: nil, errormessage: nil, native_stdout: nil }
  end

  def methods_called
    @calls.map(&:method)
  end

  def self.output(stdout, errormessage = nil)
    { exitcode: 0, stdout: stdout, stderr: nil, errormessage: errormessage, native_stdout: nil }
  end
end

# A real Resource API context (PuppetContext) that also records every log
# call, so that tests can assert on messages and look for leaked secrets.
class RecordingContext < Puppet::ResourceApi::PuppetContext
  attr_reader :messages

  def initialize(definition)
    super
    @messages = []
  end

  def send_log(level, message)
    @messages << [level, message]
  end

  def logged(level)
    @messages.select { |l, _| l == level }.map(&:last)
  end
end

module LifecycleHelpers
  def type_definition_for(type_name)
    Puppet::Type.type(type_name).type_definition
  end

  def recording_context(type_name)
    RecordingContext.new(type_definition_for(type_name))
  end

  def provider_class_for(type_name)
    Puppet::Type.type(type_name)
    Puppet::ResourceApi.load_provider(type_name.to_s)
  end

  # Drives one resource the way Resource API 1.8.16 does: canonicalize on
  # the manifest, get, canonicalize on the get result (strict checking),
  # canonicalize on the target state, insync? per property given in the
  # manifest (once more after a change, as Puppet's corrective check does),
  # then set when something is out of sync.
  def drive(provider, context, manifest)
    canonical = provider.canonicalize(context, [manifest.dup]).first
    title = { name: canonical[:name], dsc_destinationpath: canonical[:dsc_destinationpath] }
    current = provider.get(context, [title]).first
    expect(provider.canonicalize(context, [Marshal.load(Marshal.dump(current))]).first).to eq(current)
    target = provider.canonicalize(context, [canonical]).first
    changed = false
    manifest.keys.select { |k| k.to_s.start_with?('dsc_') && k != :dsc_timeout && k != :dsc_psdscrunascredential }.each do |property|
      result, = provider.insync?(context, title, property, current, target)
      next if result == true

      changed = true
      expect(provider.insync?(context, title, property, current, target)).to be_nil
    end
    provider.set(context, title => { is: current, should: target }) if changed
    changed
  end
end

RSpec.configure { |c| c.include LifecycleHelpers }
