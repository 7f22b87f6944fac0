# frozen_string_literal: true

require 'fileutils'
require_relative '../spec_helper_real_pwsh'
require_relative '../../support/fake_manager'

# Each DSC module on its PowerShell edition, on the real pwsh: the realdsc
# module copied with a manifest that declares one edition. Declaring Core,
# its resources run on the real PowerShell 7, which imports the module with
# that manifest; declaring Desktop, they fail on Linux (no Windows
# PowerShell 5.1 exists there) with the message that names the module, its
# declaration and where pwshlib looked, and no host is started for them.
RSpec.describe 'PowerShell editions per DSC module, on the real pwsh' do
  include_context 'the realdsc providers on the real pwsh'

  let(:context) { recording_context(:dsc_realsetting) }

  around do |example|
    Dir.mktmpdir('pwshlib-realdsc-edition') do |copy|
      @copy = copy
      saved = ENV.to_h.slice('PWSHLIB_POWERSHELL', 'PWSHLIB_POWERSHELL_CORE', 'PWSHLIB_POWERSHELL_DESKTOP')
      ENV.delete('PWSHLIB_POWERSHELL')
      ENV.delete('PWSHLIB_POWERSHELL_DESKTOP')
      ENV['PWSHLIB_POWERSHELL_CORE'] = REAL_PWSH
      # Only this example's hosts are counted: an earlier file's may live on.
      Pwsh::Manager.shutdown_all
      begin
        example.run
      ensure
        %w[PWSHLIB_POWERSHELL PWSHLIB_POWERSHELL_CORE PWSHLIB_POWERSHELL_DESKTOP].each { |k| ENV[k] = saved[k] }
      end
    end
  end

  # A RealSetting provider whose vendored module (a copy of realdsc's) has
  # a manifest with `declaration` in place of its PowerShellVersion.
  def provider_declaring(declaration)
    root = File.join(@copy, declaration.gsub(/\W+/, '_'))
    FileUtils.mkdir_p(root)
    FileUtils.cp_r(File.join(lib, 'puppet_x'), root)
    manifest = File.join(root, 'puppet_x', 'pwshlibrealdsc', 'dsc_resources', 'PwshlibRealDsc', 'PwshlibRealDsc.psd1')
    File.write(manifest, File.read(manifest).sub(/PowerShellVersion\s*=\s*'5\.1'/, declaration))
    Class.new(provider_class_for(:dsc_realsetting)) { define_method(:load_path) { [root] } }.new
  end

  def set_and_get(provider, name)
    should = { dsc_name: name, dsc_ensure: 'Present', dsc_tags: %w[core] }
    provider.invoke_dsc_resource(context, { name: name, dsc_name: name }, should, 'set')
    provider.invoke_dsc_resource(context, { name: name, dsc_name: name }, should, 'get')
  end

  ["CompatiblePSEditions = @('Core')", "PowerShellVersion = '7.0'"].each do |declaration|
    it "runs a module whose manifest declares #{declaration} on PowerShell 7" do
      read = set_and_get(provider_declaring(declaration), 'core-only')
      expect(context.logged(:err)).to be_empty
      expect(read).to include('Name' => 'core-only', 'Ensure' => 'Present', 'Tags' => %w[core])
      managers = Pwsh::Manager.instances.values.select(&:alive?)
      expect(managers.map(&:powershell_command)).to eq([REAL_PWSH])
    end
  end

  it 'fails a Desktop-only module on Linux, naming it, its declaration and where it looked' do
    expect(set_and_get(provider_declaring("CompatiblePSEditions = @('Desktop')"), 'desktop-only')).to be_nil
    errors = context.logged(:err)
    expect(errors.size).to eq(2)
    expect(errors).to all(include(
                            "the DSC module 'PwshlibRealDsc' runs on Windows PowerShell 5.1 (its manifest declares " \
                            "CompatiblePSEditions = @('Desktop')), which was not found: Windows PowerShell 5.1 runs only on Windows; " \
                            'PWSHLIB_POWERSHELL_DESKTOP and PWSHLIB_POWERSHELL are unset'
                          ))
    expect(Pwsh::Manager.instances.values.select(&:alive?)).to be_empty
  end
end
