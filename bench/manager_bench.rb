# frozen_string_literal: true

# Round trip of a trivial execute through Pwsh::Manager + pwshlib-sim, beside
# a raw Unix-socket ping-pong with a child process measured in the same run
# (the transport's floor). Run with `rake bench` (builds first).
require 'benchmark/ips'
require 'socket'

root = File.expand_path('..', __dir__)
$LOAD_PATH.unshift(File.join(root, 'lib'))
ENV['PWSHLIB_POWERSHELL'] ||= begin
  require_relative '../script/cargo_target'
  CargoTarget.sim
end
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

# The same protocol spoken by plain Ruby to a second pwshlib-sim: the host's
# own cost (JSON, tree-sitter parse, echo) without the manager.
require 'json'
require 'tmpdir'
sock_path = File.join(Dir.tmpdir, "pwshlib-bench-#{Process.pid}.sock")
sim_pid = spawn(ENV.fetch('PWSHLIB_POWERSHELL'), '-PipePath', sock_path, '-ParentPid', Process.pid.to_s)
sim = nil
50.times do
  sim = UNIXSocket.new(sock_path)
  break
rescue Errno::ENOENT, Errno::ECONNREFUSED
  sleep 0.05
end
read_frame = -> { JSON.parse(sim.read(sim.read(4).unpack1('N'))) }
read_frame.call # hello
request = JSON.generate(type: 'execute', code: "Write-Output 'ping'", timeout_ms: 300_000, working_dir: nil, env: [])
request_frame = [request.bytesize].pack('N') + request

Benchmark.ips do |x|
  x.config(time: 5, warmup: 2)
  x.report('manager.execute(Write-Output) via pwshlib-sim') { manager.execute("Write-Output 'ping'") }
  x.report('plain-Ruby protocol client -> pwshlib-sim') do
    sim.write(request_frame)
    read_frame.call
  end
  x.report('raw Unix socket ping-pong (Ruby <-> child)') do
    ours.write(ping)
    ours.readpartial(65_536)
  end
  x.compare!
end

ours.close
Process.wait(echo_pid)
sim.close
Process.wait(sim_pid)
manager.exit
