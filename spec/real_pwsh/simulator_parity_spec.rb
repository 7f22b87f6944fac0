# frozen_string_literal: true

require_relative 'spec_helper_real_pwsh'

# Keeps the simulator honest: the same plain
# requests, sent to pwshlib-sim and to the real pwsh running host.ps1, give
# the same results. The only differences allowed are the ones
# ext/pwshlib_sim/README.md lists under "Where it differs from host.ps1 on
# a real pwsh"; each is named where it is allowed below.
RSpec.describe 'pwshlib-sim against the real pwsh' do
  include_context 'a manager on the real pwsh'

  let(:simulator) { Pwsh::Manager.instance(PWSHLIB_SIM, [], { spec: 'parity' }) }

  # [code, env, timeout_ms]: a corpus of what the simulator's echo mode
  # supports (ext/pwshlib_sim/README.md), every stream, the environment,
  # exit codes, errors and timeouts.
  let(:corpus) do
    [
      ["Write-Output 'it''s' 42 \"plain\"\n'bare'\n7"],
      ["Write-Host 'a' -NoNewline\nWrite-Host 'b'"],
      ["Write-Information 'x'; Write-Host 'x'"],
      ["Write-Information -MessageData 'i'; 'i'"],
      ["Write-Warning 'w'; Write-Warning -Message 'v'; Write-Verbose 'hidden'; Write-Debug 'hidden'"],
      ["[Console]::Out.WriteLine('c'); 'o'; [Console]::Error.WriteLine('e')"],
      ["Write-Error 'bad'; 'after'"],
      ["Write-Error -Message 'one'; [Console]::Error.WriteLine('two')"],
      ['exit 7'],
      ["'x'; exit 3; 'never'"],
      ['exit'],
      ["throw 'boom'"],
      ["'before'; throw 'late'"],
      ['$env:PWSHLIB_PARITY', ['PWSHLIB_PARITY=v a=l']],
      ['$env:PWSHLIB_PARITY', %w[PWSHLIB_PARITY=one PWSHLIB_PARITY=two]],
      ['$env:PWSHLIB_PARITY'],
      ["$env:PWSHLIB_PARITY_SET = 'x'; $env:PWSHLIB_PARITY_SET"],
      ['$env:PWSHLIB_PARITY_SET'],
      ['$missing = $null; $missing; Write-Output $env:PWSHLIB_UNSET'],
      ["$name = 'var'; $name"],
      ["Start-Sleep -Milliseconds 100; 'slept'"],
      ["Start-Sleep -Seconds 30; 'never'", [], 1000],
      ["'before'; Write-Error 'e'; Start-Sleep -Seconds 30; 'never'", [], 2000],
      ["'after the timeout'"],
    ]
  end

  # The parts of a result compared. errormessage: its first line, since the
  # simulator gives no "At line:…" position (README, difference 1).
  def comparable(result)
    {
      exitcode: result[:exitcode],
      stdout: result[:stdout],
      stderr: result[:stderr],
      native_stdout: result[:native_stdout],
      errormessage: result[:errormessage]&.lines&.first&.chomp,
    }
  end

  it 'gives the same results as the real pwsh for every request of the corpus, in sequence' do
    differences = corpus.filter_map do |code, env, timeout|
      real = comparable(manager.execute(code, timeout, nil, env || []))
      simulated = comparable(simulator.execute(code, timeout, nil, env || []))
      [code, { real: real, simulated: simulated }] unless real == simulated
    end
    expect(differences).to eq([])
  end

  it 'runs the prelude on both, defined once and kept from plain requests' do
    [manager, simulator].each do |each|
      expect(each.execute_with_prelude('dsc', "Test-Path 'function:Invoke-PwshlibDscResource'\n")[:stdout]).to eq("True\n")
      expect(each.execute("Test-Path 'function:Invoke-PwshlibDscResource'")[:stdout]).to eq("False\n")
      expect(each.wire_stats[:prelude]).to be_a(String)
    end
  end
end
