# frozen_string_literal: true

# An in-sync Get through the whole provider (puppet apply,
# the provider, Pwsh::Manager, host.ps1, the prelude) of 100 class-based
# resources on the real pwsh 7 (script/find-pwsh), with the DSC call made
# directly from the warm host against PWSHLIB_DSC_DIRECT=0, where it goes
# through Invoke-DscResource (the real-PowerShell tier's stand-in,
# spec/real_pwsh/dsc/standin, which skips PSDesiredStateConfiguration's
# discovery, so the ratio understates what the real module costs).
#
# Per Get: what the provider's own debug line says the call took
# ("Invoke-DscResource Get took … s": from handing the script to the
# manager until its answer, host round trip included), median over every
# Get of the in-sync runs; the kinds take turns, one run each per round.
require 'json'
require_relative '../spec/acceptance/spec_helper_acceptance'
require_relative 'support/repetitions'

REAL_DSC = File.expand_path('../spec/real_pwsh/dsc', __dir__)
SIZE = Integer(ENV.fetch('PWSHLIB_BENCH_DIRECT_N', '100'))
ROUNDS = Integer(ENV.fetch('PWSHLIB_BENCH_DIRECT_ROUNDS', '3'))

pwsh = ENV['PWSHLIB_REAL_PWSH'] || IO.popen([File.expand_path('../script/find-pwsh', __dir__)], &:read).strip
unless File.executable?(pwsh.to_s)
  puts 'direct DSC bench: not run, no real pwsh (script/find-pwsh found none)'
  exit 0
end

manifest = Array.new(SIZE) do |i|
  Acceptance.resource('dsc_realsetting', "s#{i}",
                      'dsc_name' => "bench-#{i}", 'dsc_ensure' => 'Present', 'dsc_count' => i,
                      'dsc_description' => "resource #{i}")
end.join("\n")

machine = Acceptance::Machine.new('direct-bench', module_path: File.join(REAL_DSC, 'modules'))
state = File.join(machine.dir, 'dsc-state')
FileUtils.mkdir_p(state)
env = {
  'PWSHLIB_POWERSHELL' => pwsh,
  'PSModulePath' => File.join(REAL_DSC, 'standin'),
  'PWSHLIB_REAL_DSC_STATE' => state,
}
begin
  created = machine.apply(manifest, env: env)
  raise "the first run failed:\n#{created.output}" unless created.exitcode == 2

  kinds = { 'direct' => {}, 'Invoke-DscResource' => { 'PWSHLIB_DSC_DIRECT' => '0' } }
  times = Hash.new { |hash, key| hash[key] = [] }
  ROUNDS.times do |round|
    kinds.to_a.rotate(round % kinds.size).each do |kind, extra|
      run = machine.apply(manifest, env: env.merge(extra))
      raise "#{kind}: the in-sync run changed something or failed:\n#{run.output}" unless run.exitcode.zero?

      took = run.output.scan(/Invoke-DscResource Get took ([0-9.]+) s/).map { |(s)| Float(s) * 1000.0 }
      raise "#{kind}: #{took.size} Gets, not #{SIZE}" unless took.size == SIZE

      times[kind].concat(took)
    end
  end
  direct = median(times['direct'])
  through = median(times['Invoke-DscResource'])
  puts "direct DSC bench: N=#{SIZE} in-sync class-based Gets on #{pwsh}, #{ROUNDS} runs each"
  puts format('  direct:             median %.2f ms per Get', direct)
  puts format('  Invoke-DscResource: median %.2f ms per Get (PWSHLIB_DSC_DIRECT=0, the stand-in)', through)
  puts format('  ratio: %.1f× (target ≥ 5×)', through / direct)
ensure
  FileUtils.rm_rf(machine.dir)
end
