# frozen_string_literal: true

require 'tmpdir'
require_relative 'spec_helper_real_pwsh'

# The environment and the working directory of a call on a real
# PowerShell 7.
RSpec.describe Pwsh::Manager, 'environment on the real pwsh' do
  include_context 'a manager on the real pwsh'

  # PWSHLIB_EXECUTION_POLICY=machine: the host puts the machine's policy
  # (every scope but the process's -ExecutionPolicy Bypass) into the process
  # scope PowerShell checks each script file against, before the snapshot
  # every call's environment goes back to. Linux pwsh enforces no policy
  # and calls it Unrestricted; what enforces it on Windows is PowerShell's
  # own check of that scope (docs/proven-where.md).
  describe 'the execution policy of resource modules' do
    def preference_in_two_calls(setting)
      saved = ENV.fetch('PWSHLIB_EXECUTION_POLICY', nil)
      ENV['PWSHLIB_EXECUTION_POLICY'] = setting
      own = Pwsh::Manager.new(REAL_PWSH, Pwsh::Manager.pwsh_args)
      Array.new(2) { own.execute('"[$env:PSExecutionPolicyPreference]"; $env:PSExecutionPolicyPreference = "Bypass"')[:stdout] }
    ensure
      own&.exit
      ENV['PWSHLIB_EXECUTION_POLICY'] = saved
    end

    it 'is the machine\'s for every call when set to machine' do
      expect(preference_in_two_calls('machine')).to eq(["[Unrestricted]\n"] * 2)
    end

    it 'is left to the process otherwise' do
      expect(preference_in_two_calls(nil)).to eq(["[]\n"] * 2)
    end
  end

  describe 'environment variables' do
    # Item 1: a variable a call set must be gone, not left defined as "".
    it 'removes a variable that a call set with $env:' do
      expect(manager.execute("$env:PWSHLIB_REAL_A = 'y'")[:exitcode]).to eq(0)
      expect(manager.execute('Test-Path env:PWSHLIB_REAL_A')[:stdout]).to eq("False\n")
    end

    it 'removes a variable that a call set through .NET' do
      manager.execute("[Environment]::SetEnvironmentVariable('PWSHLIB_REAL_B', 'y')")
      expect(manager.execute("Test-Path env:PWSHLIB_REAL_B; [Environment]::GetEnvironmentVariable('PWSHLIB_REAL_B') -eq $null")[:stdout])
        .to eq("False\nTrue\n")
    end

    it "applies a request's env to that call only, native programs included" do
      result = manager.execute("$env:PWSHLIB_REAL_C; /bin/sh -c 'echo $PWSHLIB_REAL_C'", nil, nil, ['PWSHLIB_REAL_C=a=b c'])
      expect(result[:stdout]).to eq("a=b c\na=b c\n")
      expect(manager.execute('Test-Path env:PWSHLIB_REAL_C')[:stdout]).to eq("False\n")
    end

    it 'puts back a variable that a call changed' do
      home = manager.execute('$env:HOME')[:stdout]
      manager.execute("$env:HOME = '/nowhere'")
      expect(manager.execute('$env:HOME')[:stdout]).to eq(home)
    end

    # Item 2: pwshlib 2.x set each in turn.
    it 'uses the last value of a name given more than once' do
      result = manager.execute('$env:foo', nil, nil, %w[foo=one foo=two foo=three])
      expect(result).to include(exitcode: 0, stdout: "three\n")
    end
  end

  # The manager starts the host with DOTNET_TieredPGO=0
  # (pwshlib_transport's runtime_settings); host.ps1 takes it out of its
  # environment before the snapshot, so no call sees it. The process's
  # environment as it started (/proc/<pid>/environ) shows what the runtime
  # read.
  describe "the runtime's settings" do
    it 'starts the host with dynamic PGO off, and no call or native program sees the setting' do
      result = manager.execute("Test-Path env:DOTNET_TieredPGO; /bin/sh -c 'echo \"[${DOTNET_TieredPGO-unset}]\"'; " \
                               "(Get-Content -Raw \"/proc/$PID/environ\").Split([char]0) -ceq 'DOTNET_TieredPGO=0'")
      expect(result[:stdout]).to eq("False\n[unset]\nDOTNET_TieredPGO=0\n")
    end

    it "keeps the user's own setting, in the host and in every call" do
      saved = ENV.fetch('DOTNET_TieredPGO', nil)
      ENV['DOTNET_TieredPGO'] = '1'
      own = Pwsh::Manager.new(REAL_PWSH, Pwsh::Manager.pwsh_args)
      expect(own.execute('$env:DOTNET_TieredPGO')[:stdout]).to eq("1\n")
    ensure
      own&.exit
      ENV['DOTNET_TieredPGO'] = saved
    end
  end

  describe 'working directory' do
    it "runs in the given directory (PowerShell's and the process's), brackets and all, for that call only" do
      Dir.mktmpdir('pwshlib-wd') do |parent|
        dir = File.join(File.realpath(parent), 'a[1] b')
        Dir.mkdir(dir)
        result = manager.execute('(Get-Location).Path; [Environment]::CurrentDirectory; /bin/pwd', nil, dir)
        expect(result[:stdout]).to eq("#{dir}\n#{dir}\n#{dir}\n")
        expect(manager.execute('(Get-Location).Path')[:stdout]).to eq("#{Dir.pwd}\n")
      end
    end

    it 'refuses a directory that does not exist, and goes on' do
      result = manager.execute("'ran'", nil, '/nonexistent/pwshlib')
      expect(result).to include(exitcode: 1, stdout: nil, errormessage: "Working directory '/nonexistent/pwshlib' does not exist")
      expect(manager.execute("'next'")[:stdout]).to eq("next\n")
    end
  end
end
