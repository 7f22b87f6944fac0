# frozen_string_literal: true

require_relative 'spec_helper_acceptance'

# Two DSC modules on two PowerShell editions in one `puppet apply`: the
# fixture modules copied with manifests that declare one edition each
# (PwshlibFixtureDsc Desktop only, PwshlibFixtureClass Core only), the
# simulator as Windows PowerShell 5.1 (its own name) and as PowerShell 7
# (a link named `pwsh`, which it plays as 7), each named by its edition's
# variable, and PWSHLIB_POWERSHELL unset.
module AcceptanceEditions
  MANIFEST = Acceptance.resource('dsc_fixturefile', 'on-desktop', {
                                   'dsc_destinationpath' => 'C:\\Temp\\Pwshlib\\Desktop.txt',
                                   'dsc_ensure' => 'Present',
                                   'dsc_contents' => 'written by 5.1',
                                 }) +
             Acceptance.resource('dsc_fixtureclassresource', 'on-core', {
                                   'dsc_name' => 'CoreFlag',
                                   'dsc_ensure' => 'Present',
                                   'dsc_value' => 'Enabled',
                                 })

  EDITIONS = { 'PwshlibFixtureDsc' => 'Desktop', 'PwshlibFixtureClass' => 'Core' }.freeze

  # The fixture modules under `dir`, each manifest declaring its edition.
  def self.modules_with_editions(dir)
    module_path = File.join(dir, 'modules')
    FileUtils.mkdir_p(module_path)
    FileUtils.cp_r(File.join(Acceptance::MODULE_PATH, 'dscfixtures'), module_path)
    EDITIONS.each do |name, edition|
      manifest = Dir.glob(File.join(module_path, 'dscfixtures', 'lib', 'puppet_x', '*', 'dsc_resources', name, "#{name}.psd1")).first
      text = File.read(manifest).sub("PowerShellVersion = '5.1'", "CompatiblePSEditions = @('#{edition}')")
      File.write(manifest, text)
    end
    module_path
  end

  RSpec.describe 'puppet apply with a Desktop-only and a Core-only DSC module' do
    before(:all) do
      @scratch = Dir.mktmpdir('pwshlib-editions')
      pwsh = File.join(@scratch, 'bin', 'pwsh')
      FileUtils.mkdir_p(File.dirname(pwsh))
      File.symlink(Acceptance::SIM, pwsh)
      @machine = Acceptance::Machine.new('editions', module_path: AcceptanceEditions.modules_with_editions(@scratch))
      env = { 'PWSHLIB_POWERSHELL' => '', 'PWSHLIB_POWERSHELL_DESKTOP' => Acceptance::SIM, 'PWSHLIB_POWERSHELL_CORE' => pwsh }
      @runs = [@machine.apply(MANIFEST, env: env), @machine.apply(MANIFEST, env: env)]
    end

    after(:all) do
      @machine&.cleanup
      FileUtils.rm_rf(@scratch) if @scratch
    end

    it 'applies both resources, then finds both in sync' do
      expect(@runs.map(&:exitcode)).to eq([2, 0]), @runs.map(&:to_s).join("\n")
      %w[Dsc_fixturefile[on-desktop] Dsc_fixtureclassresource[on-core]].each do |ref|
        expect(@runs[0].changed?(ref)).to be(true), @runs[0].to_s
        expect(@runs[1].changed?(ref)).to be(false), @runs[1].to_s
      end
    end

    it "runs each module's calls on the host of its edition, one host per edition" do
      @runs.each do |run|
        editions = run.calls.to_h { |call| [call['resource'], call['edition']] }
        expect(editions).to eq('FixtureFile' => 'Desktop', 'FixtureClassResource' => 'Core'), run.to_s
        pids = run.calls.group_by { |call| call['edition'] }.transform_values { |calls| calls.map { |c| c['pid'] }.uniq.size }
        expect(pids).to eq('Desktop' => 1, 'Core' => 1)
        expect(run.calls.map { |call| call['pid'] }.uniq.size).to eq(2)
      end
    end
  end

  # PWSHLIB_POWERSHELL still sends every module to one executable: a module
  # whose manifest asks for PowerShell 7 then fails there as Windows
  # PowerShell 5.1's Import-Module refuses it, and only that module.
  RSpec.describe 'PWSHLIB_POWERSHELL naming one Windows PowerShell 5.1 for every module' do
    before(:all) do
      @scratch = Dir.mktmpdir('pwshlib-editions-forced')
      module_path = AcceptanceEditions.modules_with_editions(@scratch)
      manifest = Dir.glob(File.join(module_path, 'dscfixtures', 'lib', 'puppet_x', '*', 'dsc_resources',
                                    'PwshlibFixtureClass', 'PwshlibFixtureClass.psd1')).first
      File.write(manifest, File.read(manifest).sub("CompatiblePSEditions = @('Core')", "PowerShellVersion = '7.0'"))
      @machine = Acceptance::Machine.new('editions-forced', module_path: module_path)
      @run = @machine.apply(MANIFEST, env: { 'PWSHLIB_POWERSHELL' => Acceptance::SIM })
    end

    after(:all) do
      @machine&.cleanup
      FileUtils.rm_rf(@scratch) if @scratch
    end

    it "fails the module that asks for PowerShell 7 with 5.1's own refusal, and applies the other" do
      expect(@run.exitcode).to eq(6), @run.to_s
      expect(@run.failed?('Dsc_fixtureclassresource[on-core]')).to be(true), @run.to_s
      expect(@run.output).to include("requires a minimum Windows PowerShell version of '7.0' to run")
      expect(@run.changed?('Dsc_fixturefile[on-desktop]')).to be(true), @run.to_s
      expect(@run.calls.map { |call| call['edition'] }.uniq).to eq(['Desktop'])
    end
  end
end
