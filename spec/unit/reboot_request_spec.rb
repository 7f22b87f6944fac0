# frozen_string_literal: true

require 'spec_helper'

# The spine hands a Set's reboot request to `request_reboot`, a plain Ruby
# method (overridable like the rest of the spine); without a transaction
# (`puppet resource`, this tier) or a reboot resource it warns naming the
# resource. The refresh itself is proven under `puppet apply` with the real
# reboot module (spec/acceptance/reboot_spec.rb).
RSpec.describe 'Puppet::Provider::DscBaseProvider#request_reboot' do
  let(:type_name) { :dsc_fixturefile }
  let(:context) { recording_context(type_name) }
  let(:manager) { FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'old') }
  let(:title) { { name: 'Title', dsc_destinationpath: 'C:\\Foo' } }
  let(:change) { { title => { is: title.merge(dsc_ensure: 'Present'), should: title.merge(dsc_contents: 'new') } } }

  def provider_with(klass = provider_class_for(type_name))
    provider = klass.new
    allow(provider).to receive(:ps_manager).and_return(manager)
    provider
  end

  it 'is called once, with the name, when the Set asks for a reboot' do
    manager.reboot_required = true
    provider = provider_with
    expect(provider).to receive(:request_reboot).once.with(context, title)
    provider.set(context, change)
  end

  it 'is not called when the Set does not ask' do
    provider = provider_with
    expect(provider).not_to receive(:request_reboot)
    provider.set(context, change)
    expect(manager.methods_called).to eq(%w[Set])
  end

  it 'is not called when the Set fails' do
    manager.queued << FakePwshManager.output('{"errormessage":"boom","rebootrequired":true}')
    provider = provider_with
    expect(provider).not_to receive(:request_reboot)
    provider.set(context, change)
  end

  it 'without a transaction, warns naming the resource and what to declare' do
    manager.reboot_required = true
    provider_with.set(context, change)
    expect(context.logged(:warning).join).to include(
      'dsc_fixturefile[Title]: A reboot is required to complete the DSC Set of this resource; Puppet does not ' \
      "reboot the node (declare reboot { 'dsc_reboot': apply => finished }"
    )
  end

  it 'a subclass override takes the request instead of the warning' do
    manager.reboot_required = true
    requests = []
    subclass = Class.new(provider_class_for(type_name)) do
      define_method(:request_reboot) { |_context, name| requests << name }
    end
    provider_with(subclass).set(context, change)
    expect(requests).to eq([title])
    expect(context.logged(:warning)).to eq([])
  end
end
