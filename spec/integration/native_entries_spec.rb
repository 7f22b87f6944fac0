# frozen_string_literal: true

require 'spec_helper'
require 'tmpdir'

# How often an in-sync resource's Get enters native code, through the real
# Pwsh::Manager and pwshlib-sim: each spine method hands its work to the
# session in at most one call, and a DSC call is one call of the manager.
# A count of calls, not a time: it is the same on every machine.
RSpec.describe 'Native entries of an in-sync Get' do
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:native_classes) { [Puppet::Provider::DscBaseProvider, Pwsh::Manager, Pwshlib::DscCall, Pwshlib::DscScript] }

  def manifest(index)
    { name: "file#{index}", dsc_destinationpath: "C:\\Temp\\Entries#{index}.txt", dsc_ensure: 'Present',
      dsc_contents: 'kept', validation_mode: 'property' }
  end

  around do |example|
    Dir.mktmpdir('pwshlib-entries') do |dir|
      saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PWSHLIB_SIM_STATE')
      ENV.update('PWSHLIB_POWERSHELL' => PWSHLIB_SIM, 'PWSHLIB_SIM_STATE' => File.join(dir, 'state.json'))
      begin
        example.run
      ensure
        Pwsh::Manager.shutdown_all
        saved.each_key { |k| ENV[k] = saved[k] }
      end
    end
  end

  # The native methods (C functions, defined by the Rust binding) entered
  # while the block runs, by name, in order.
  def native_entries(&block)
    owners = native_classes.to_h { |c| [c, "#{c.name}#"] }.merge(native_classes.to_h { |c| [c.singleton_class, "#{c.name}."] })
    entries = []
    trace = TracePoint.new(:c_call) do |tp|
      owner = owners[tp.defined_class]
      entries << "#{owner}#{tp.method_id}" if owner
    end
    trace.enable(&block)
    entries
  end

  # Two resources created, then read by a new provider as a run reads them:
  # canonicalize (the Get), get (from the run's cache), insync? for each
  # property.
  def in_sync_run
    creator = provider_class_for(:dsc_fixturefile).new
    2.times do |i|
      creator.canonicalize(context, [manifest(i)])
      creator.set(context, { name: "file#{i}" } => { is: nil, should: manifest(i) })
    end
    expect(context.logged(:err)).to be_empty
    provider = provider_class_for(:dsc_fixturefile).new
    [0, 1].map do |i|
      canonicalized = nil
      get_path = native_entries { canonicalized = provider.canonicalize(context, [manifest(i)]) }
      is = nil
      rest = native_entries do
        is = provider.get(context, [{ name: "file#{i}" }]).first
        %i[dsc_ensure dsc_contents].each { |p| provider.insync?(context, { name: "file#{i}" }, p, is, canonicalized.first) }
      end
      expect(is).to include(dsc_ensure: 'Present', dsc_contents: 'kept')
      [get_path, rest]
    end
  end

  it 'enters at most 6 times per Get (7 on the provider\'s first, which learns what a Get passes)' do
    (first, first_rest), (second, second_rest) = in_sync_run
    expect(context.logged(:err)).to be_empty
    expect(second).to eq(%w[
                           Puppet::Provider::DscBaseProvider#_canonicalize_plan
                           Puppet::Provider::DscBaseProvider#_dsc_call
                           Pwsh::Manager#alive?
                           Pwsh::Manager#execute_dsc
                           Puppet::Provider::DscBaseProvider#_get_result
                           Puppet::Provider::DscBaseProvider#_canonicalize_all
                         ])
    expect(second.size).to be <= 6
    expect(first - second).to eq(%w[Puppet::Provider::DscBaseProvider#_get_passed_attributes])
    expect(first.size).to eq(7)
    # get answers from the run's cache, insync? once per property.
    [first_rest, second_rest].each do |rest|
      expect(rest).to eq(%w[
                           Puppet::Provider::DscBaseProvider#_get_begins
                           Puppet::Provider::DscBaseProvider#_get_known
                           Puppet::Provider::DscBaseProvider#_insync
                           Puppet::Provider::DscBaseProvider#_insync
                         ])
    end
  end
end
