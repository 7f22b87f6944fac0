# frozen_string_literal: true

# Round trip of a trivial execute through Pwsh::Manager + pwshlib-sim, beside
# a raw Unix-socket ping-pong with a child process measured in the same run
# (the transport's floor). Run with `rake bench` (builds first).
require 'benchmark/ips'
require 'socket'

root = File.expand_path('..', __dir__)
$LOAD_PATH.unshift(File.join(root, 'lib'))
ENV['PWSHLIB_POWERSHELL'] ||= File.join(root, 'target', 'release', 'pwshlib-sim')
require 'pwsh'

manager = Pwsh::Manager.instance(Pwsh::Manager.pwsh_path, Pwsh::Manager.pwsh_args)
raise 'manager is broken' unless manager.execute("Write-Output 'ping'")[:stdout] == "ping\n"

# The raw floor: a forked child echoes every message back over a socket pair.
ours, theirs = UNIXSocket.pair
echo_pid = fork do
  ours.close
  loop do
    data = theirs.readpartial(65_536)
    theirs.write(data)
  rescue EOFError
    exit!(0)
  end
end
theirs.close
ping = "\x00\x00\x00\x22{\"type\":\"execute\",\"code\":\"ping\"}".b

Benchmark.ips do |x|
  x.config(time: 5, warmup: 2)
  x.report('manager.execute(Write-Output) via pwshlib-sim') { manager.execute("Write-Output 'ping'") }
  x.report('raw Unix socket ping-pong (Ruby <-> child)') do
    ours.write(ping)
    ours.readpartial(65_536)
  end
  x.compare!
end

ours.close
Process.wait(echo_pid)
manager.exit
