# frozen_string_literal: true

# The test suites: cargo test, the RSpec suites (each in a process of its
# own where it must be), the real-PowerShell tier, and `rake test`, all of
# them; the Windows ones are in windows.rake.

desc 'cargo test for the whole workspace'
task :cargo_test do
  cargo 'test', '--workspace', '--release'
end

def rspec(*args)
  env = { 'PWSHLIB_SIM' => CargoTarget.sim }
  sh env, 'rspec', *args, chdir: ROOT
end

# rspec-puppet installs global hooks (Puppet's TestHelper resets every setting
# around each example), so its specs run in a process of their own. The
# Windows suites (spec/windows: run by the Windows Ruby; spec/wine: needs it)
# run in script/windows-check.
SEPARATE_SUITES = 'spec/{acceptance,rspec_puppet,real_pwsh,windows,wine}/**/*_spec.rb'

desc 'RSpec unit and integration suites (not rspec-puppet, not the acceptance runs)'
task spec: :compile do
  rspec '--exclude-pattern', SEPARATE_SUITES, 'spec'
end

desc 'RSpec again under GC.stress, for the native paths'
task gc_stress: :compile do
  rspec '--tag', 'gc_stress', '--require', './spec/support/gc_stress', '--exclude-pattern', SEPARATE_SUITES, 'spec'
end

desc 'rspec-puppet: the fixture module\'s types compile into catalogues and reject invalid values'
task rspec_puppet: :compile do
  rspec 'spec/rspec_puppet'
end

desc 'puppet apply acceptance suite against the simulated host'
task acceptance: :compile do
  rspec '--pattern', 'spec/acceptance/**/*_spec.rb'
end

desc 'The real-PowerShell tier: spec/real_pwsh on a real PowerShell 7 (script/test-pwsh finds or unpacks one)'
task :real_pwsh do
  sh 'bash', File.join(ROOT, 'script', 'test-pwsh')
end

desc 'Every test: lints, cargo test, RSpec, RSpec under GC.stress, rspec-puppet, acceptance, the Windows job'
task test: %i[lint cargo_test spec gc_stress rspec_puppet acceptance real_pwsh windows]
