# frozen_string_literal: true

require 'json'
require 'tmpdir'
require_relative '../spec_helper_real_pwsh'

# A resource called directly by the prelude runs as under the LCM,
# on the real pwsh 7 through Pwsh::Manager and host.ps1, with the fixture
# module spec/real_pwsh/dsc/psmodules/PwshlibLcmDsc. The script is the one
# the provider writes for a call: the header, $InvokeParams, the call.
RSpec.describe 'direct calls behave as under the LCM' do
  include_context 'a manager on the real pwsh'

  let(:module_path) { File.join(__dir__, 'psmodules', 'PwshlibLcmDsc', 'PwshlibLcmDsc.psd1') }

  # The JSON lines the call printed: the result is the last one, and a
  # pwshlib_streams line comes first when the resource wrote records.
  def call(resource, method, name, strict: nil, more: '')
    body = +"$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n"
    body << "$PwshlibDscStrict = $#{strict}\n" unless strict.nil?
    body << "$InvokeParams = @{Name = '#{resource}'; Method = '#{method}'; Property = @{Name = '#{name}'#{more}}; " \
            "ModuleName = @{ModuleName = '#{module_path}'; RequiredVersion = '1.0.0'}}\n" \
            "Invoke-PwshlibDscResource -InvokeParams $InvokeParams\n" \
            "'after the call: ' + $ErrorActionPreference\n"
    result = manager.execute_with_prelude('dsc', body)
    expect(result[:exitcode]).to eq(0), result.inspect
    json, own = result[:stdout].to_s.lines.map(&:chomp).partition { |line| line.start_with?('{') }
    # The header's Stop is back for the script's own lines after the call
    # (pwshlib's host hands the call's JSON lines over after the output).
    expect(own).to eq(['after the call: Stop'])
    json.map { |line| JSON.parse(line) }
  end

  def streams(lines)
    lines.find { |line| line.key?('pwshlib_streams') }&.fetch('pwshlib_streams') || []
  end

  # Windows PowerShell 5.1's ConvertTo-Json writes a string with note
  # properties as an object; the prelude copies strings there first. On
  # pwsh 7 the copy shows it drops them.
  it 'item 4: ConvertTo-PwshlibPlainString drops the note properties Get-Content gives a line' do
    Dir.mktmpdir('pwshlib-ets') do |dir|
      path = File.join(dir, 'content.txt')
      File.write(path, "line one\n")
      body = "$Line = Get-Content -LiteralPath '#{path}' -TotalCount 1\n" \
             "$Copy = ConvertTo-PwshlibPlainString -Text $Line\n" \
             "'{0}|{1}|{2}' -f ($null -ne $Line.PSPath), ($null -ne $Copy.PSPath), ($Copy -ceq $Line)\n"
      result = manager.execute_with_prelude('dsc', body)
      expect(result[:stdout]).to eq("True|False|True\n"), result.inspect
    end
  end

  # PowerShell 7 has no LCM to start a resource as another account: the
  # call fails before the resource runs, naming it and saying why.
  it 'refuses PsDscRunAsCredential on PowerShell 7, naming the resource, before calling it' do
    %w[LcmScript LcmClass].each do |resource|
      lines = call(resource, 'Get', 'run-as', more: "; PsDscRunAsCredential = (New-PsCredential -User 'alice' -Password 'pw')")
      version = manager.execute('$PSVersionTable.PSVersion.ToString()')[:stdout].chomp
      # One line: the failure, with no record of a resource that ran.
      expect(lines.size).to eq(1), lines.inspect
      # A run-as call would have gone through Invoke-DscResource, so the
      # failure carries that route's category and codes beside the message.
      expect(lines.last.except('errorcategory', 'errorcodes')).to eq(
        'indesiredstate' => false, 'rebootrequired' => false,
        'errormessage' => "The DSC resource '#{resource}' cannot run as PsDscRunAsCredential on PowerShell #{version}: " \
                          'Invoke-DscResource in PowerShell 7 (PSDesiredStateConfiguration 2.x) does not support ' \
                          'PsDscRunAsCredential. Remove dsc_psdscrunascredential, or run this resource with Windows PowerShell 5.1.'
      )
    end
  end

  describe 'item 1: the resource runs with ErrorActionPreference Continue' do
    it 'in a class-based Get' do
      expect(call('LcmClass', 'Get', 'plain').last).to include('Name' => 'plain', 'Seen' => 'Continue')
    end

    it 'in a script-based Get-TargetResource, after a native program wrote to stderr (2>$null)' do
      expect(call('LcmScript', 'Get', 'plain').last).to include('Name' => 'plain', 'Seen' => 'Continue')
    end
  end

  describe 'item 2 on PowerShell 7: as lenient as PSDesiredStateConfiguration 2.x' do
    it 'a non-terminating error does not stop the resource nor fail the call; it shows in the streams' do
      lines = call('LcmScript', 'Get', 'error-7')
      expect(lines.last).to eq('Name' => 'error-7', 'Seen' => 'Continue')
      expect(streams(lines)).to include('kind' => 'error', 'text' => 'LcmScript wrote an error for error-7')
    end

    it 'a Test that returns no single boolean is cast, as 2.x does' do
      expect(call('LcmScript', 'Test', 'stray').last).to eq('indesiredstate' => true, 'errormessage' => '')
      expect(call('LcmScript', 'Test', 'text-false').last).to eq('indesiredstate' => true, 'errormessage' => '')
      expect(call('LcmScript', 'Test', 'nothing').last).to eq('indesiredstate' => false, 'errormessage' => '')
    end
  end

  # A localized Windows translates the LCM's messages: the provider tells a
  # collision and a run-as logon failure by what the prelude adds to a
  # failure through Invoke-DscResource (here the real-pwsh tier's stand-in,
  # spec/real_pwsh/dsc/standin), the error's category name and the codes
  # inside it. A direct call's failure has neither.
  describe 'a failure through Invoke-DscResource carries what no display language changes' do
    def through_invoke_dsc_resource(method, name)
      standin = File.join(__dir__, 'standin')
      body = "$env:PSModulePath = '#{standin}' + [IO.Path]::PathSeparator + $env:PSModulePath\n" \
             "$InvokeParams = @{Name = 'LcmScript'; Method = '#{method}'; Property = @{Name = '#{name}'}; " \
             "ModuleName = @{ModuleName = '#{module_path}'; RequiredVersion = '1.0.0'}}\n" \
             "Invoke-PwshlibDscResource -InvokeParams $InvokeParams -ThroughInvokeDscResource\n"
      result = manager.execute_with_prelude('dsc', body)
      expect(result[:exitcode]).to eq(0), result.inspect
      JSON.parse(result[:stdout].to_s.lines.map(&:chomp).grep(/\A\{/).last)
    end

    it 'the category of the record (ResourceBusy, the LCM\'s busy error)' do
      failed = through_invoke_dsc_resource('Get', 'busy')
      expect(failed).to include('errormessage' => 'Die Konsistenzprüfung wird ausgeführt.',
                                'errorcategory' => 'ResourceBusy')
      expect(failed['errorcodes']).to all(be_a(Integer))
    end

    it 'the HRESULT of each exception (a Win32 logon error as HRESULT_FROM_WIN32)' do
      failed = through_invoke_dsc_resource('Get', 'logon')
      expect(failed['errormessage']).to eq('Anmeldung fehlgeschlagen.')
      expect(failed['errorcodes']).to include(-2_147_023_511)
    end

    it 'a Test\'s failure too, beside its indesiredstate' do
      failed = through_invoke_dsc_resource('Test', 'busy')
      expect(failed).to include('indesiredstate' => false, 'errorcategory' => 'ResourceBusy')
      expect(failed).not_to have_key('rebootrequired')
    end

    it 'and a direct call\'s failure has neither' do
      failed = call('LcmScript', 'Get', 'busy').last
      expect(failed['errormessage']).to eq('Die Konsistenzprüfung wird ausgeführt.')
      expect(failed.keys).not_to include('errorcategory', 'errorcodes')
    end
  end

  # $PwshlibDscStrict picks the branch Windows PowerShell 5.1 takes.
  describe 'item 2 on Windows PowerShell 5.1: as strict as its LCM' do
    it 'a non-terminating error fails the call with the LCM\'s message and the error' do
      lines = call('LcmScript', 'Get', 'error-51', strict: true)
      expect(lines.last['errormessage']).to eq(
        "The PowerShell DSC resource 'LcmScript' threw one or more non-terminating errors while running " \
        'the Get-TargetResource functionality: LcmScript wrote an error for error-51'
      )
      expect(streams(lines)).to include('kind' => 'error', 'text' => 'LcmScript wrote an error for error-51')
    end

    it 'a class method\'s Write-Error reaches no stream (PowerShell adds it to $Error only), so it fails nothing' do
      [nil, true].each do |strict|
        lines = call('LcmClass', 'Get', 'error-class', strict: strict)
        expect(lines).to eq([{ 'Name' => 'error-class', 'Seen' => 'Continue' }]), strict.inspect
      end
    end

    it 'a Test must return exactly one boolean' do
      { 'stray' => '1 value(s) from Test-TargetResource (String)',
        'text-false' => '1 value(s) from Test-TargetResource (String)',
        'twice' => '2 value(s) from Test-TargetResource (Boolean, Boolean)',
        'nothing' => '0 value(s) from Test-TargetResource ()' }.each do |name, said|
        result = call('LcmScript', 'Test', name, strict: true).last
        expect(result['indesiredstate']).to be(false), name
        expect(result['errormessage']).to eq("The DSC resource 'LcmScript' returned #{said}, not one boolean: " \
                                             'Windows PowerShell 5.1 takes exactly one $true or $false, as its LCM did.'), name
      end
      expect(call('LcmScript', 'Test', 'true', strict: true).last).to eq('indesiredstate' => true, 'errormessage' => '')
    end

    it 'a call without errors succeeds' do
      expect(call('LcmScript', 'Get', 'plain', strict: true).last).to include('Name' => 'plain', 'Seen' => 'Continue')
      expect(call('LcmClass', 'Get', 'plain', strict: true).last).to include('Name' => 'plain', 'Seen' => 'Continue')
    end
  end
end
