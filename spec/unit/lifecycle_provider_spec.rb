# frozen_string_literal: true

require 'spec_helper'

RSpec.describe 'Puppet::Provider::DscBaseProvider lifecycle' do
  let(:type_name) { :dsc_fixturefile }
  let(:provider) { provider_class_for(type_name).new }
  let(:context) { recording_context(type_name) }
  let(:manager) do
    FakePwshManager.new('DestinationPath' => 'C:\\Foo', 'Ensure' => 'Present', 'Contents' => 'hello',
                        'Type' => 'file', 'Force' => true, 'Attributes' => %w[ReadOnly Archive],
                        'Checksum' => 'abc')
  end
  let(:manifest) do
    { name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'present', dsc_contents: 'HELLO',
      dsc_type: 'FILE', dsc_force: true, dsc_attributes: %w[archive readonly], validation_mode: 'property' }
  end

  before(:each) do
    allow(provider).to receive(:ps_manager).and_return(manager)
  end

  describe 'call counts' do
    it 'costs exactly one Get for an in-sync resource', :gc_stress do
      expect(drive(provider, context, manifest)).to be(false)
      expect(manager.methods_called).to eq(['Get'])
    end

    it 'costs one Get and one Set for a changed resource, then forgets its state' do
      expect(drive(provider, context, manifest.merge(dsc_contents: 'changed'))).to be(true)
      expect(manager.methods_called).to eq(%w[Get Set])
      # the state is stale after the Set: a later get asks DSC again
      provider.get(context, [{ name: 'Title', dsc_destinationpath: 'c:\\foo' }])
      expect(manager.methods_called).to eq(%w[Get Set Get])
    end

    it 'adds exactly one Test in resource validation mode, and a Set when Test says false' do
      manager.in_desired_state = false
      expect(drive(provider, context, manifest.merge(validation_mode: 'resource'))).to be(true)
      expect(manager.methods_called).to eq(%w[Get Test Set])
      expect(provider.cached_test_results).to eq([])
    end

    it 'adds exactly one Test in resource validation mode for an in-sync resource' do
      expect(drive(provider, context, manifest.merge(validation_mode: 'resource'))).to be(false)
      expect(manager.methods_called).to eq(%w[Get Test])
      expect(provider.cached_test_results.first).to include(name: 'Title', in_desired_state: true)
    end

    it 'costs 1,000 Gets for 1,000 resources of one type' do
      manager.get_result = { 'Ensure' => 'Present', 'Contents' => 'hello' }
      1000.times do |i|
        drive(provider, context, { name: "R#{i}", dsc_destinationpath: "c:\\r#{i}", dsc_contents: 'hello',
                                   validation_mode: 'property' })
      end
      expect(manager.methods_called.tally).to eq('Get' => 1000)
    end

    it 'costs no Get in canonicalize for a resource declared absent' do
      absent = manifest.merge(dsc_ensure: 'ABSENT')
      expect(provider.canonicalize(context, [absent])).to eq([absent])
      expect(manager.calls).to be_empty
    end
  end

  describe 'what a Get is handed' do
    def property_table(call)
      call.script[/Property = @\{(.*?)\}; ModuleName/, 1]
    end

    it 'is the desired state, as Set and Test get it, in the run\'s one Get' do
      expect(drive(provider, context, manifest.merge(dsc_timeout: 5))).to be(false)
      expect(manager.methods_called).to eq(['Get'])
      expect(property_table(manager.calls.first)).to eq(
        "destinationpath = 'c:\\foo'; ensure = 'present'; contents = 'HELLO'; type = 'FILE'; force = $true; " \
        "attributes = @('archive', 'readonly')"
      )
    end

    it 'is the keys alone for a listing, and the whole desired state for an absent one' do
      provider.get(context, [{ name: 'Listed', dsc_destinationpath: 'C:\\Listed' }])
      absent = manifest.merge(name: 'Gone', dsc_destinationpath: 'c:\\gone', dsc_ensure: 'absent')
      provider.canonicalize(context, [absent])
      provider.get(context, [{ name: 'Gone', dsc_destinationpath: 'c:\\gone' }])
      expect(manager.calls.map { |call| property_table(call) })
        .to eq(["destinationpath = 'C:\\Listed'",
                "destinationpath = 'c:\\gone'; ensure = 'absent'; contents = 'HELLO'; type = 'FILE'; force = $true; " \
                "attributes = @('archive', 'readonly')"])
    end
  end

  describe 'a Get() that returned the instance it was called on' do
    let(:title) { { name: 'Title', dsc_destinationpath: 'c:\\foo' } }

    before(:each) { manager.get_result = manager.get_result.merge('pwshlib_get_returned_this' => true) }

    it 'is judged by one Test: a drift its Get cannot show is corrected' do
      manager.in_desired_state = false
      expect(drive(provider, context, manifest)).to be(true)
      expect(manager.methods_called).to eq(%w[Get Test Set])
      expect(context.logged(:debug).join("\n")).to include(
        'Title: its Get() returned the very instance it was called on (`return $this`)'
      )
    end

    it 'is in sync when its Test says so: one Get, one Test' do
      expect(drive(provider, context, manifest)).to be(false)
      expect(manager.methods_called).to eq(%w[Get Test])
    end

    it 'keeps the message of a property whose values differ, and hands Puppet no flag' do
      manager.get_result = manager.get_result.merge('Contents' => 'other')
      manager.in_desired_state = false
      canonical = provider.canonicalize(context, [manifest]).first
      current = provider.get(context, [title]).first
      expect(current).not_to have_key(:pwshlib_get_returned_this)
      expect(provider.insync?(context, title, :dsc_contents, current, canonical))
        .to eq([false, "dsc_contents changed 'other' to 'HELLO'"])
      expect(provider.insync?(context, title, :dsc_type, current, canonical))
        .to eq([false, "the resource's Test says it is not in the desired state"])
      expect(manager.methods_called).to eq(%w[Get Test])
    end
  end

  describe 'canonicalize' do
    it 'keeps the system casing and order, the manifest enum casing, parameters and metaparameters' do
      result = provider.canonicalize(context, [manifest.merge(loglevel: 'debug', dsc_timeout: 5)]).first
      expect(result).to include(name: 'Title', dsc_destinationpath: 'C:\\Foo', dsc_ensure: 'Present',
                                dsc_contents: 'hello', dsc_type: 'file', dsc_attributes: %w[Archive ReadOnly],
                                validation_mode: 'property', loglevel: 'debug', dsc_timeout: 5)
      expect(result).not_to have_key(:dsc_checksum)
    end

    it 'takes the declared enum value that a system casing the Enum does not allow equals' do
      # 'FILE' is not allowed by Enum['File', 'file', ...]: get maps it to
      # the first declared value that equals it, which canonicalize keeps.
      manager.get_result = manager.get_result.merge('Type' => 'FILE')
      result = provider.canonicalize(context, [manifest.merge(dsc_type: 'file')]).first
      expect(result[:dsc_type]).to eq('File')
    end

    it 'returns later calls unchanged' do
      canonical = provider.canonicalize(context, [manifest]).first
      again = provider.canonicalize(context, [{ name: 'title', dsc_destinationpath: 'C:\\FOO', dsc_contents: 'x' }])
      expect(again.first).to eq(name: 'title', dsc_destinationpath: 'C:\\FOO', dsc_contents: 'x')
      expect(provider.canonicalize(context, [canonical]).first).to eq(canonical)
      expect(manager.calls.size).to eq(1)
    end

    # As a provider that changes nothing: the given array itself when every
    # resource comes back as given, and each resource as given within a new
    # array otherwise.
    it 'answers with the given array and hashes when nothing changes' do
      system_cased = { name: 'Title', dsc_destinationpath: 'C:\\Foo', dsc_ensure: 'Present', dsc_contents: 'hello' }
      [[system_cased], [system_cased.dup]].each do |given|
        # The first call makes the Get; the second finds the resource known.
        expect(provider.canonicalize(context, given)).to equal(given)
      end
      manager.get_result = { 'DestinationPath' => 'C:\\Other', 'Ensure' => 'Present', 'Contents' => 'hello' }
      changed = { name: 'Other', dsc_destinationpath: 'c:\\other', dsc_ensure: 'present', dsc_contents: 'hello' }
      known = system_cased.dup
      given = [known, changed]
      answer = provider.canonicalize(context, given)
      expect(answer).not_to equal(given)
      expect(answer.first).to equal(known)
      expect(answer.last).to eq(changed.merge(dsc_destinationpath: 'C:\\Other', dsc_ensure: 'Present'))
      expect(manager.methods_called).to eq(%w[Get Get])
    end

    it 'reads a resource the run read already from the run, without a second Get' do
      provider.get(context, [{ name: 'Title', dsc_destinationpath: 'c:\\foo' }])
      expect(provider.canonicalize(context, [manifest]).first).to include(dsc_destinationpath: 'C:\\Foo', dsc_ensure: 'Present')
      expect(manager.methods_called).to eq(%w[Get])
    end

    it 'uses the manifest when the resource is absent on the system' do
      manager.get_result = { 'Ensure' => 'Absent' }
      expect(provider.canonicalize(context, [manifest]).first).to eq(manifest)
    end
  end

  describe 'get' do
    it 'munges DSC results into the Puppet hash' do
      manager.get_result = { 'DestinationPath' => nil, 'Ensure' => 'Present', 'Attributes' => nil,
                             'Type' => 'System.Object[]', 'PsDscRunAsCredential' => nil, 'Unknown' => 1 }
      result = provider.get(context, [{ name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_attributes: [] }]).first
      expect(result).to eq(name: 'Title', dsc_destinationpath: 'c:\\foo', dsc_ensure: 'Present',
                           dsc_attributes: [], dsc_type: nil)
    end

    it 'turns DateTime values into Timestamps and reports unparseable ones' do
      schedule = provider_class_for(:dsc_fixtureschedule).new
      allow(schedule).to receive(:ps_manager).and_return(manager)
      ctx = recording_context(:dsc_fixtureschedule)
      manager.get_result = { 'Name' => 'a', 'StartTime' => '2020-01-02T03:04:05.0000000+00:00' }
      result = schedule.get(ctx, [{ name: 'a', dsc_name: 'a' }]).first
      expect(result[:dsc_starttime]).to eq(Puppet::Pops::Time::Timestamp.parse('2020-01-02T03:04:05Z'))
      manager.get_result = { 'Name' => 'b', 'StartTime' => 'not a date' }
      result = schedule.get(ctx, [{ name: 'b', dsc_name: 'b' }]).first
      expect(result[:dsc_starttime]).to be_nil
      expect(ctx.logged(:err).join).to include('not a date')
    end

    it 'answers each name with its title and namevars, in the system casing where the query lacks it' do
      provider.canonicalize(context, [manifest])
      asked = { name: +'Title', dsc_destinationpath: +'C:\\Foo' }
      recased = { name: +'Title', dsc_destinationpath: +'c:\\FOO' }
      first, second = provider.get(context, [asked, recased])
      expect(first).to include(name: 'Title', dsc_destinationpath: 'C:\\Foo')
      expect(second[:name]).to eq('Title')
      expect(second[:dsc_destinationpath]).to eq('C:\\Foo')
      expect(manager.calls.size).to eq(1)
    end

    it 'finds cached results case-insensitively by namevar' do
      provider.canonicalize(context, [manifest])
      provider.get(context, [{ name: 'TITLE', dsc_destinationpath: 'C:\\FOO' }])
      expect(manager.calls.size).to eq(1)
    end
  end

  describe 'insync?' do
    let(:title) { { name: 'Title', dsc_destinationpath: 'C:\\Foo' } }

    it 'ignores case, order, number-vs-string and DateTime text form' do
      is = { dsc_contents: 'Hello', dsc_attributes: %w[b A], dsc_port: '80', dsc_when: '2020-01-02T03:04:05Z' }
      should = { dsc_contents: 'hello', dsc_attributes: %w[a B], dsc_port: 80, validation_mode: 'property' }
      %i[dsc_contents dsc_attributes].each do |property|
        expect(provider.insync?(context, title, property, is, should)).to be(true)
      end
      expect(provider.values_equal?('80', 80)).to be(true)
      expect(provider.values_equal?('2020-01-02 05:04:05 +02:00',
                                    Puppet::Pops::Time::Timestamp.parse('2020-01-02T03:04:05Z'))).to be(true)
    end

    it 'reports a change message, then answers the corrective second call with nil' do
      should = { dsc_contents: 'new', validation_mode: 'property' }
      expect(provider.insync?(context, title, :dsc_contents, { dsc_contents: 'old' }, should))
        .to eq([false, "dsc_contents changed 'old' to 'new'"])
      expect(provider.insync?(context, title, :dsc_contents, { dsc_contents: 'old' }, should)).to be_nil
    end

    it 'answers nil for properties without a desired value and for non-DSC properties' do
      expect(provider.insync?(context, title, :dsc_contents, {}, { validation_mode: 'property' })).to be_nil
      expect(provider.insync?(context, title, :loglevel, {}, { validation_mode: 'property' })).to be_nil
      expect(manager.calls).to be_empty
    end

    # The Resource API adds the hidden trigger to a type with nothing else
    # to compare (every attribute a key, a parameter or read-only): the
    # resource's own Test is the only judge.
    it 'answers the hidden custom insync trigger with the one Test in property mode' do
      should = { name: 'Title', dsc_destinationpath: 'C:\\Foo', validation_mode: 'property',
                 rsapi_custom_insync_trigger: 'do_not_specify_in_manifest' }
      expect(provider.insync?(context, title, :rsapi_custom_insync_trigger, {}, should)).to be(true)
      manager.in_desired_state = false
      other = { name: 'Other', dsc_destinationpath: 'C:\\Bar' }
      expect(provider.insync?(context, other, :rsapi_custom_insync_trigger, {}, should.merge(other)))
        .to eq([false, "the resource's Test says it is not in the desired state"])
      expect(manager.methods_called).to eq(%w[Test Test])
    end

    it 'uses one Test for all properties in resource mode, including the hidden trigger' do
      manager.in_desired_state = false
      should = { name: 'Title', dsc_destinationpath: 'C:\\Foo', dsc_contents: 'new', validation_mode: 'resource' }
      expect(provider.insync?(context, title, :rsapi_custom_insync_trigger, {}, should))
        .to eq([false, 'DSC reports that this resource is not in the desired state; treating all properties as out-of-sync'])
      expect(provider.insync?(context, title, :dsc_contents, { dsc_contents: 'old' }, should))
        .to eq([false, "dsc_contents changed 'old' to 'new'"])
      expect(manager.methods_called).to eq(['Test'])
    end
  end

  describe 'set' do
    let(:title) { { name: 'Title', dsc_destinationpath: 'C:\\Foo' } }

    before(:each) { provider.canonicalize(context, [manifest]) }

    {
      %w[Absent present] => :create,
      %w[present PRESENT] => :update,
      %w[Present absent] => :delete,
      [nil, 'Present'] => :create,
      ['Present', nil] => :update,
    }.each do |(is_ensure, should_ensure), action|
      it "#{action}s when ensure goes from #{is_ensure.inspect} to #{should_ensure.inspect}" do
        is = title.merge(dsc_ensure: is_ensure).compact
        should = title.merge(dsc_ensure: should_ensure, dsc_contents: 'x').compact
        expect(provider).to receive(action).and_call_original
        provider.set(context, title => { is: is, should: should })
        expect(manager.methods_called).to eq(%w[Get Set])
        expect(context.logged(:notice).join).to include("#{action.to_s.capitalize[0..-2]}ing: Finished")
      end
    end

    it 'deletes with Ensure Absent and still passes the run-as credential' do
      cred = { 'user' => 'svc', 'password' => Puppet::Pops::Types::PSensitiveType::Sensitive.new('pw') }
      provider.canonicalize(context, [manifest.merge(name: 'Other', dsc_psdscrunascredential: cred)])
      expect(provider).to receive(:invoke_set_method) do |_ctx, _name, should|
        expect(should).to include(dsc_ensure: 'Absent', dsc_destinationpath: 'C:\\Foo', name: 'Other')
        expect(should[:dsc_psdscrunascredential]['password'].unwrap).to eq('pw')
      end
      provider.delete(context, { name: 'Other', dsc_destinationpath: 'C:\\Foo' })
    end

    it 'warns naming the resource when DSC needs a reboot' do
      manager.reboot_required = true
      provider.set(context, title => { is: title.merge(dsc_ensure: 'Present'), should: title.merge(dsc_contents: 'x') })
      expect(context.logged(:warning).join).to match(/dsc_fixturefile\[Title\]: A reboot is required/)
    end

    it 'marks the resource failed (but does not raise) when the Set fails' do
      manager.queued << FakePwshManager.output('{"errormessage":"boom"}')
      provider.set(context, title => { is: title.merge(dsc_ensure: 'Present'), should: title.merge(dsc_contents: 'x') })
      expect(context.failed?).to be(true)
      expect(context.logged(:err).join("\n")).to include('dsc_fixturefile[Title]: boom')
    end
  end
end
