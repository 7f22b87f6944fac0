# frozen_string_literal: true

require 'tmpdir'
require_relative '../spec_helper_real_pwsh'
require_relative '../../support/fake_manager'

# Through a real host: the module index's first reading of a
# module's root file (PwshlibHost.DscClasses.InFile) is kept in the host's
# cache directory (PWSHLIB_HOST_CACHE here), and the next fresh host's
# first call reads it there instead of parsing the file again.
RSpec.describe 'the module index kept between hosts, on the real pwsh' do
  include_context 'the realdsc providers on the real pwsh'
  include_context 'a host cache of its own'

  let(:root_module) do
    File.join(lib, 'puppet_x', 'pwshlibrealdsc', 'dsc_resources', 'PwshlibRealDsc', 'PwshlibRealDsc.psm1')
  end

  # A fresh host's Get of one RealSetting.
  def fresh_get(name)
    Pwsh::Manager.shutdown_all
    setting = provider_class_for(:dsc_realsetting).new
    context = recording_context(:dsc_realsetting)
    should = { dsc_name: name, dsc_ensure: 'Present', dsc_count: 1, dsc_description: 'kept' }
    setting.invoke_dsc_resource(context, { name: name }, should, 'set')
    read = setting.invoke_dsc_resource(context, { name: name }, should, 'get')
    expect(context.logged(:err)).to be_empty
    read
  end

  it "keeps the root module's classes at a host's first call, and the next host reads them" do
    expect(fresh_get('kept-1')).to include('Name' => 'kept-1', 'Count' => 1)
    kept = Dir[File.join(@cache, 'DscClasses-*.txt')]
    expect(kept.size).to eq(1)
    lines = File.readlines(kept.first, chomp: true)
    expect(lines.first(2)).to eq(['pwshlib dsc classes 1', File.realpath(root_module)]).or eq(['pwshlib dsc classes 1', root_module])
    expect(lines.drop(4)).to include('RealSetting')
    written = File.stat(kept.first).mtime

    expect(fresh_get('kept-2')).to include('Name' => 'kept-2', 'Count' => 1)
    # Read, not written again: the same file, untouched.
    expect(Dir[File.join(@cache, 'DscClasses-*.txt')]).to eq(kept)
    expect(File.stat(kept.first).mtime).to eq(written)
  end
end
