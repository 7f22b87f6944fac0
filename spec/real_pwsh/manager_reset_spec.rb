# frozen_string_literal: true

require 'tmpdir'
require_relative 'spec_helper_real_pwsh'

# The host answers first and resets after (the runspace's
# variables and location, the process directory, the environment), before
# it reads the next request. Each check below is a request sent the moment
# the reply before it arrived: a reset still under way would show.
RSpec.describe Pwsh::Manager, 'the reset after each reply, on the real pwsh' do
  include_context 'a manager on the real pwsh'

  it 'leaves nothing of a call for the next one sent at once, round after round' do
    home = manager.execute('(Get-Location).Path')[:stdout]
    path = manager.execute('$env:PATH')[:stdout]
    25.times do |round|
      set = manager.execute(<<~PS)
        $global:pwshlib_left = #{round}
        $VerbosePreference = 'Continue'
        $env:PWSHLIB_LEFT = 'x'
        $env:PATH = '/nowhere'
        Set-Location /tmp
        [Environment]::CurrentDirectory = '/'
        /bin/sh -c 'exit 3'
      PS
      expect(set[:exitcode]).to eq(3)
      check = manager.execute(<<~PS)
        "[$global:pwshlib_left] [$LASTEXITCODE] [$VerbosePreference] [$env:PWSHLIB_LEFT]"
        (Get-Location).Path
        [Environment]::CurrentDirectory
        $env:PATH
      PS
      expect(check).to include(exitcode: 0, stdout: "[] [] [SilentlyContinue] []\n#{home}#{home}#{path}")
    end
  end

  it 'has the environment back even when a call left much of it to undo' do
    set = manager.execute('1..3000 | ForEach-Object { [Environment]::SetEnvironmentVariable("PWSHLIB_MANY_$_", "v") }; "set"')
    expect(set[:stdout]).to eq("set\n")
    left = manager.execute('@(Get-ChildItem env: | Where-Object Name -like "PWSHLIB_MANY_*").Count')
    expect(left[:stdout]).to eq("0\n")
  end

  it "resets the prelude's session after each call too, keeping the prelude's functions" do
    first = manager.execute_with_prelude('dsc', '$global:pwshlib_left = 1; Set-Location /tmp; "set"')
    expect(first[:stdout]).to start_with('set')
    second = manager.execute_with_prelude('dsc', <<~PS)
      "[$global:pwshlib_left] [$((Get-Location).Path)] [$([bool](Get-Command New-PsCredential -ErrorAction SilentlyContinue))]"
    PS
    expect(second[:stdout]).to start_with("[] [#{Dir.pwd}] [True]")
  end

  # Requests with a prelude run in two runspaces in turn (one is reset while
  # the other runs): calls 1, 2 and 3 go A, B, A, each sent the moment the
  # reply before it arrived.
  it 'leaks nothing across the two prelude runspaces, and has the prelude in both' do
    probe = <<~PS
      "[$global:pwshlib_alt] [$((Get-Location).Path)] [$HOME] [$([bool](Get-Command New-PsCredential -ErrorAction SilentlyContinue))] [$([runspace]::DefaultRunspace.InstanceId)]"
    PS
    first = manager.execute_with_prelude('dsc', <<~PS)
      $global:pwshlib_alt = 1
      Set-Location /tmp
      "[$([runspace]::DefaultRunspace.InstanceId)]"
    PS
    # Call 2 changes the process's HOME and directory while the runspace of
    # call 1 is reset, which reads both: neither may reach call 3.
    second = manager.execute_with_prelude('dsc', "Start-Sleep -Milliseconds 300\n#{probe}", nil, '/', ['HOME=/nowhere'])
    third = manager.execute_with_prelude('dsc', probe)
    a = first[:stdout][/\[(.+)\]/, 1]
    b = second[:stdout][/\[([0-9a-f-]{36})\]/, 1]
    expect(second[:stdout]).to start_with("[] [/] [#{Dir.home}] [True] [")
    expect(third[:stdout]).to start_with("[] [#{Dir.pwd}] [#{Dir.home}] [True] [#{a}]")
    expect(b).not_to eq(a)
  end

  it 'keeps functions a successful call defined, as ResetRunspaceState does' do
    manager.execute('function Get-PwshlibKept { "kept" }')
    expect(manager.execute('Get-PwshlibKept')[:stdout]).to eq("kept\n")
  end

  # Each call runs on a pipeline thread of its own (the runspace's default
  # thread options), so a culture a call set on its thread goes with it.
  it "does not carry a call's thread culture over" do
    before = manager.execute('[cultureinfo]::CurrentCulture.Name')[:stdout]
    manager.execute("[cultureinfo]::CurrentCulture = 'de-DE'; [cultureinfo]::CurrentUICulture = 'de-DE'")
    expect(manager.execute('[cultureinfo]::CurrentCulture.Name')[:stdout]).to eq(before)
  end

  it 'answers a call to a home directory with brackets, and comes back there after each call' do
    Dir.mktmpdir('pwshlib-home') do |parent|
      home = File.join(File.realpath(parent), 'h[1]')
      Dir.mkdir(home)
      bracketed = Dir.chdir(home) { new_manager(debug: false, pipe_timeout: 60) }
      begin
        bracketed.execute('Set-Location /tmp')
        expect(bracketed.execute('(Get-Location).Path; [Environment]::CurrentDirectory')[:stdout]).to eq("#{home}\n#{home}\n")
      ensure
        bracketed.exit
      end
    end
  end

  # PowerShell marks the root drive '/' auto-mounted when the
  # first mount .NET lists is not a disk (/proc here), and then reads the
  # whole mount table at each lookup of it, the reset's location set among
  # them. Each session trusts it (Session.TrustRootDrive): the plain one
  # and both prelude ones. A runspace PowerShell builds by itself shows
  # what the host started from.
  it "trusts the root drive '/' in every session, and it still takes the host anywhere" do
    probe = <<~PS
      $flag = [System.Management.Automation.PSDriveInfo].GetProperty('IsAutoMounted', [Reflection.BindingFlags]'Instance,NonPublic')
      $own = [runspacefactory]::CreateRunspace([System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2())
      $own.Open()
      $ownRoot = $own.SessionStateProxy.Drive.Get('/')
      $root = Get-PSDrive -Name / -PSProvider FileSystem
      Set-Location /tmp
      "[$($flag.GetValue($root))] [$($root.Root)] [$((Get-Location).Path)] [$($flag.GetValue($ownRoot))] [$([System.IO.DriveInfo]::GetDrives()[0].DriveType)]"
      $own.Dispose()
    PS
    answers = [manager.execute(probe), manager.execute_with_prelude('dsc', probe), manager.execute_with_prelude('dsc', probe)]
    answers.each do |answer|
      trusted, root, moved, own, first_mount = answer[:stdout].lines.first.scan(/\[([^\]]*)\]/).flatten
      expect([trusted, root, moved]).to eq(%w[False / /tmp])
      # PowerShell's own choice, from the first mount's type (PR #2679).
      expect(own).to eq((first_mount != 'Fixed').to_s.capitalize)
    end
    expect(manager.execute('(Get-Location).Path')[:stdout]).to eq("#{Dir.pwd}\n")
  end
end
