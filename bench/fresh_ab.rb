# frozen_string_literal: true

# A fresh host's first call and the calls after it, for two
# checkouts or two sets of host environment variables, in turns, so that
# the machine's drift falls on both alike. Each variant is
# `CHECKOUT[:VAR=VALUE,...]` (a checkout's root, built with `rake compile`;
# `.` for this one); the realdsc fixture's in-sync `puppet apply` of N
# resources, ROUNDS applies per variant, each apply a fresh host, on the
# real pwsh (script/find-pwsh). Prints, per variant, the first call of
# each apply and the median of the calls after the first (the provider's
# "Invoke-DscResource Get took" lines).
#   ruby bench/fresh_ab.rb class 3 9 /path/to/old/checkout .
#   ruby bench/fresh_ab.rb script 100 4 . .:DOTNET_TieredCompilation=0
require 'fileutils'
require 'tmpdir'
require_relative 'support/repetitions'

KIND = ARGV.fetch(0, 'class')
SIZE = Integer(ARGV.fetch(1, '3'))
ROUNDS = Integer(ARGV.fetch(2, '9'))
VARIANTS = (ARGV.drop(3).empty? ? ['.'] : ARGV.drop(3)).map do |variant|
  root, settings = variant.split(':', 2)
  [variant, File.expand_path(root), (settings || '').split(',').to_h { |pair| pair.split('=', 2) }]
end
PROPERTIES = {
  'class' => ['dsc_realsetting', lambda { |i|
    { 'dsc_name' => "ab-#{i}", 'dsc_ensure' => 'Present', 'dsc_count' => i, 'dsc_description' => "resource #{i}" }
  }],
  'script' => ['dsc_realkeyed', ->(i) { { 'dsc_name' => "ab-#{i}", 'dsc_ensure' => 'Present', 'dsc_value' => "value #{i}" } }],
}.freeze

pwsh = ENV['PWSHLIB_REAL_PWSH'] || IO.popen([File.join(__dir__, '..', 'script', 'find-pwsh')], &:read).strip
abort 'fresh_ab: no real pwsh (script/find-pwsh found none)' unless File.executable?(pwsh.to_s)

# One `puppet apply` of a checkout: its exit code and the Gets' times (ms).
def apply(root, manifest, env)
  Dir.mktmpdir('pwshlib-fresh-ab') do |dir|
    File.write(File.join(dir, 'site.pp'), manifest)
    command = ['puppet', 'apply', File.join(dir, 'site.pp'), '--modulepath',
               File.join(root, 'spec', 'real_pwsh', 'dsc', 'modules'), '--debug', '--detailed-exitcodes',
               *%w[confdir codedir vardir logdir rundir].flat_map { |d| ["--#{d}", File.join(dir, d)] }]
    output = IO.popen(env.merge('RUBYLIB' => File.join(root, 'lib')), command, err: %i[child out], &:read)
    [Process.last_status.exitstatus, output.scan(/Invoke-DscResource Get took ([0-9.]+) s/).map { |(s)| Float(s) * 1000.0 }]
  end
end

type, properties = PROPERTIES.fetch(KIND)
manifest = Array.new(SIZE) do |i|
  attributes = properties.call(i).map { |name, value| "  #{name} => #{value.inspect}," }.join("\n")
  "#{type} { 'r#{i}':\n#{attributes}\n}"
end.join("\n")
Dir.mktmpdir('pwshlib-fresh-ab-state') do |scratch|
  results = VARIANTS.each_with_index.to_h do |(variant, root, settings), index|
    state = File.join(scratch, "state-#{index}")
    FileUtils.mkdir_p(state)
    env = { 'PWSHLIB_POWERSHELL' => pwsh, 'PSModulePath' => File.join(root, 'spec', 'real_pwsh', 'dsc', 'standin'),
            'PWSHLIB_REAL_DSC_STATE' => state, 'PWSHLIB_HOST_CACHE' => File.join(scratch, "cache-#{index}") }
          .merge(settings)
    code, = apply(root, manifest, env)
    abort "fresh_ab: #{variant}: the first apply exited #{code}" unless code == 2
    ["#{index + 1}. #{variant}", { env: env, root: root, firsts: [], later: [] }]
  end
  ROUNDS.times do
    results.each do |variant, result|
      code, took = apply(result[:root], manifest, result[:env])
      abort "fresh_ab: #{variant}: an in-sync apply exited #{code}" unless code.zero? && took.size == SIZE

      result[:firsts] << took.first
      result[:later].concat(took.drop(1))
    end
  end
  results.each do |variant, result|
    later = result[:later].empty? ? 'none' : format('%.2f ms', median(result[:later]))
    puts format('%-50s first call median %.0f ms (%s); later calls median %s', variant, median(result[:firsts]),
                result[:firsts].map(&:round).join(' '), later)
  end
end
