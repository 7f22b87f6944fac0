# frozen_string_literal: true

require 'spec_helper'

# The prelude marks each direct call of a Windows
# PowerShell 5.1 host that is not SYSTEM with an identity record; the
# provider warns once per run (whichever type, whichever resource), and
# again in the next run of the same process (an agent daemon).
RSpec.describe 'Puppet::Provider::DscBaseProvider identity warning' do
  let(:provider) { provider_class_for(:dsc_fixturefile).new }
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:manager) { FakePwshManager.new }
  let(:identity) { '{"pwshlib_streams":[{"kind":"identity","text":"CONTOSO\\\\admin"}]}' }
  let(:result) { '{"DestinationPath":"C:\\\\Foo","Ensure":"Present","Contents":"x"}' }

  before(:each) { allow(provider).to receive(:ps_manager).and_return(manager) }

  def in_run(&block)
    Puppet::Util::Log.with_destination(Puppet::Transaction::Report.new(nil, 'production'), &block)
  end

  # canonicalize: an entry call, where the provider notices a new run.
  def get(title)
    manager.queued << FakePwshManager.output("#{identity}\n#{result}")
    provider.canonicalize(context, [{ name: title, dsc_destinationpath: "C:\\#{title}", dsc_ensure: 'Present',
                                      dsc_contents: 'x', validation_mode: 'property' }])
  end

  def identity_warnings
    context.logged(:warning).grep(/DSC resources run as CONTOSO\\admin, not as SYSTEM as the LCM ran them/)
  end

  it 'warns once per run, not per resource, and again in the next run' do
    in_run do
      get('one')
      get('two')
      get('three')
    end
    expect(identity_warnings.size).to eq(1)
    expect(identity_warnings.first).to include('PWSHLIB_DSC_DIRECT=system')
    in_run { get('four') }
    expect(identity_warnings.size).to eq(2)
    expect(manager.methods_called).to eq(%w[Get Get Get Get])
  end

  describe 'PWSHLIB_DSC_DIRECT, read on every call' do
    after(:each) { ENV.delete('PWSHLIB_DSC_DIRECT') }

    {
      nil => '-InvokeParams $InvokeParams -VendoredPath',
      'system' => '-InvokeParams $InvokeParams -LcmUnlessSystem -VendoredPath',
      ' System ' => '-InvokeParams $InvokeParams -LcmUnlessSystem -VendoredPath',
      '0' => '-InvokeParams $InvokeParams -ThroughInvokeDscResource -VendoredPath',
      'yes' => '-InvokeParams $InvokeParams -VendoredPath',
    }.each do |value, call|
      it "#{value.inspect} gives #{call.split(' ')[2]}" do
        ENV['PWSHLIB_DSC_DIRECT'] = value
        manager.queued << FakePwshManager.output(result)
        provider.invoke_get_method(context, { name: 'one', dsc_destinationpath: 'C:\\one' })
        expect(manager.calls.last.script.to_s.lines.last).to start_with("Invoke-PwshlibDscResource #{call} ")
      end
    end
  end
end
