# frozen_string_literal: true

# Loaded only by `rake gc_stress`. Examples tagged :gc_stress run with
# GC.stress on while one of our native methods is on the stack (and during
# the Ruby callbacks it makes), so that a Ruby value held by native code
# without being marked shows up as a crash or a corrupted value. Puppet's own
# set-up stays outside the stress window: under GC.stress it would take
# minutes per example and test nothing of ours.
module PwshlibGcStress
  def self.native_owners
    classes = [Puppet::Provider::DscBaseProvider, Pwsh::Manager, Pwshlib]
    classes + classes.map(&:singleton_class)
  end

  def self.native_method?(trace_point)
    owner = trace_point.defined_class
    @owners ||= native_owners
    @owners.include?(owner)
  end
end

RSpec.configure do |config|
  config.around(:each, :gc_stress) do |example|
    depth = 0
    stressed_calls = 0
    trace = TracePoint.new(:c_call, :c_return) do |tp|
      next unless PwshlibGcStress.native_method?(tp)

      if tp.event == :c_call
        depth += 1
        stressed_calls += 1
        GC.stress = true if depth == 1
      else
        depth -= 1 if depth.positive?
        GC.stress = false if depth.zero?
      end
    end
    begin
      trace.enable { example.run }
    ensure
      GC.stress = false
    end
    # A tagged example that never reached native code would prove nothing.
    expect(stressed_calls).to be_positive, 'this :gc_stress example made no native call'
  end
end
