# frozen_string_literal: true

require 'spec_helper'
require 'tmpdir'
require 'fileutils'

# Each DSC module on the PowerShell edition its manifest declares: the
# session reads the manifest once a run and sets the edition on the call;
# the spine's ps_manager(edition) finds that edition's executable and asks
# Pwsh::Manager.instance for its manager (one per executable).
RSpec.describe 'Puppet::Provider::DscBaseProvider PowerShell editions' do
  let(:context) { recording_context(:dsc_fixturefile) }
  let(:managers) { Hash.new { |hash, path| hash[path] = FakePwshManager.new({ 'DestinationPath' => 'C:\\one' }) } }
  let(:started) { [] }
  let(:variables) { %w[PWSHLIB_POWERSHELL PWSHLIB_POWERSHELL_CORE PWSHLIB_POWERSHELL_DESKTOP PWSHLIB_EDITIONS] }

  around do |example|
    Dir.mktmpdir('pwshlib-edition') do |root|
      @root = root
      saved = ENV.to_h.slice(*variables)
      variables.each { |name| ENV.delete(name) }
      ENV.update('PWSHLIB_POWERSHELL_CORE' => '/opt/test/pwsh', 'PWSHLIB_POWERSHELL_DESKTOP' => 'C:/test/powershell.exe')
      begin
        example.run
      ensure
        variables.each { |name| saved.key?(name) ? ENV[name] = saved[name] : ENV.delete(name) }
      end
    end
  end

  before(:each) do
    allow(Pwsh::Manager).to receive(:instance) do |path, args, _options|
      started << [path, args]
      managers[path]
    end
  end

  # The fixture module vendored under a load path of its own (a manifest
  # is read once a run: another path is another module folder), with
  # `manifest` as its .psd1.
  def vendored(manifest)
    root = File.join(@root, "lib#{@roots = (@roots || 0) + 1}")
    folder = File.join(root, 'puppet_x', 'pwshlibfixturedsc', 'dsc_resources', 'PwshlibFixtureDsc')
    FileUtils.mkdir_p(folder)
    File.write(File.join(folder, 'PwshlibFixtureDsc.psd1'), manifest)
    @manifest = File.join(folder, 'PwshlibFixtureDsc.psd1')
    Class.new(provider_class_for(:dsc_fixturefile)) { define_method(:load_path) { [root] } }.new
  end

  def in_run(&block)
    Puppet::Util::Log.with_destination(Puppet::Transaction::Report.new(nil, 'production'), &block)
  end

  def get(provider, title = 'one')
    provider.invoke_get_method(context, { name: title, dsc_destinationpath: "C:\\#{title}" })
  end

  it 'runs a Core-only module on PowerShell 7 and a Desktop-only one on Windows PowerShell' do
    get(vendored("@{ ModuleVersion = '1.2.0'; CompatiblePSEditions = @('Core') }"))
    get(vendored("@{ ModuleVersion = '1.2.0'\n CompatiblePSEditions = 'Desktop' }"))
    expect(started).to eq([['/opt/test/pwsh', Pwsh::Manager.pwsh_args],
                           ['C:/test/powershell.exe', Pwsh::Manager.powershell_args]])
    expect(managers.keys).to eq(['/opt/test/pwsh', 'C:/test/powershell.exe'])
    expect(managers.values.map(&:methods_called)).to eq([%w[Get], %w[Get]])
    expect(context.logged(:err)).to be_empty
  end

  it 'reads the manifest once a run, and again in the next' do
    provider = vendored("@{ PowerShellVersion = '7.2' }")
    manifest = @manifest
    in_run do
      provider.canonicalize(context, [{ name: 'one', dsc_destinationpath: 'C:\\one', validation_mode: 'property' }])
      File.write(manifest, "@{ CompatiblePSEditions = 'Desktop' }")
      provider.canonicalize(context, [{ name: 'two', dsc_destinationpath: 'C:\\two', validation_mode: 'property' }])
    end
    in_run do
      provider.canonicalize(context, [{ name: 'three', dsc_destinationpath: 'C:\\three', validation_mode: 'property' }])
    end
    expect(started.map(&:first)).to eq(['/opt/test/pwsh', '/opt/test/pwsh', 'C:/test/powershell.exe'])
  end

  it 'runs a module whose manifest declares nothing where every module ran' do
    allow(Pwsh::Manager).to receive(:pwsh_path).and_return('/usr/bin/default-pwsh')
    allow(Pwsh::Manager).to receive(:powershell_path).and_return('C:/default/powershell.exe')
    get(vendored("@{ ModuleVersion = '1.2.0'; PowerShellVersion = '5.1' }"))
    default = Pwsh::Util.on_windows? ? 'C:/default/powershell.exe' : '/usr/bin/default-pwsh'
    expect(started.map(&:first)).to eq([default])
  end

  it 'takes PWSHLIB_EDITIONS before the manifest, and PWSHLIB_POWERSHELL for every edition' do
    ENV['PWSHLIB_EDITIONS'] = 'pwshlibfixturedsc=Core'
    get(vendored("@{ CompatiblePSEditions = 'Desktop' }"))
    ENV['PWSHLIB_POWERSHELL'] = '/one/for/all'
    get(vendored("@{ CompatiblePSEditions = 'Desktop' }"))
    expect(started.map(&:first)).to eq(['/opt/test/pwsh', '/one/for/all'])
  end

  it 'fails the resources of a module whose PowerShell is missing, naming the module, its declaration and the places searched' do
    ENV.delete('PWSHLIB_POWERSHELL_CORE')
    allow(Pwsh::Manager).to receive(:pwsh_candidates).and_return(['/nowhere/pwsh', '/usr/bin/pwsh'])
    allow(Pwsh::Manager).to receive(:pwsh_path).and_return(nil)
    provider = vendored("@{ CompatiblePSEditions = @('Core') }")
    expect(get(provider, 'one')).to be_nil
    expect(get(provider, 'two')).to be_nil
    errors = context.logged(:err)
    expect(errors.size).to eq(2)
    expect(errors.first).to include(
      "the DSC module 'PwshlibFixtureDsc' runs on PowerShell 7 (its manifest declares CompatiblePSEditions = @('Core')), " \
      'which was not found: searched for pwsh in: /nowhere/pwsh, /usr/bin/pwsh; PWSHLIB_POWERSHELL_CORE and PWSHLIB_POWERSHELL are unset'
    )
    expect(started).to be_empty
  end

  it 'fails the resources of a module whose manifest cannot be read, naming its line' do
    provider = vendored("@{\n  CompatiblePSEditions = 'Core'\n  RootModule = Get-Item x\n}")
    expect(get(provider)).to be_nil
    expect(context.logged(:err).first).to match(
      %r{the DSC module 'PwshlibFixtureDsc': its manifest .*/PwshlibFixtureDsc\.psd1 is not a module manifest pwshlib can read: line 3}
    )
    expect(started).to be_empty
  end

  it 'leaves the choice to a provider that overrides ps_manager' do
    own = FakePwshManager.new({ 'DestinationPath' => 'C:\\one' })
    provider = vendored("@{ CompatiblePSEditions = @('Core') }")
    provider.define_singleton_method(:ps_manager) { own }
    get(provider)
    expect(own.methods_called).to eq(%w[Get])
    expect(started).to be_empty
  end
end
