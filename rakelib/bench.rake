# frozen_string_literal: true

# `rake bench`: every benchmark in bench/ (docs/performance.md reads them).

# The instruction counts need valgrind (about a minute): `rake bench` runs
# them where it is installed, and says so where it is not.
INSTRUCTIONS_BENCH = File.join(ROOT, 'bench', 'instructions_bench.rb')
# Compares given builds: run by hand with its arguments, not by `rake bench`.
AB_BENCH = File.join(ROOT, 'bench', 'ab_bench.rb')

desc 'Benchmarks: the catalog against the no-op floors (time, RSS, bytes, instructions), the provider calls, the manager'
task bench: :compile do
  (Dir[File.join(ROOT, 'bench', '*.rb')].sort - [INSTRUCTIONS_BENCH, AB_BENCH]).each { |file| ruby file }
  if system('valgrind --version', out: File::NULL, err: File::NULL)
    ruby INSTRUCTIONS_BENCH
  else
    puts 'instructions bench: not run, valgrind is not installed (apt-get install valgrind)'
  end
end

namespace :bench do
  desc 'Instructions per in-sync resource against the no-op floors (callgrind; needs valgrind)'
  task instructions: :compile do
    ruby INSTRUCTIONS_BENCH
  end
end
