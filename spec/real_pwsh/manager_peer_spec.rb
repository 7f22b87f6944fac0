# frozen_string_literal: true

require 'json'
require 'socket'
require 'tmpdir'
require_relative 'spec_helper_real_pwsh'

# Host.ps1 serves the manager alone. On Linux the
# socket's peer (SO_PEERCRED) must be its -ParentPid; another process of
# the same user is hung up on, unanswered, and the host waits on for the
# manager. (The named pipe's check, GetNamedPipeClientProcessId, is the same
# loop on Windows: PwshlibHost.PeerCheck.)
RSpec.describe 'host.ps1 on the real pwsh', 'who may connect' do
  def read_frame(socket)
    header = socket.read(4)
    return nil if header.nil? || header.bytesize < 4

    JSON.parse(socket.read(header.unpack1('N')))
  end

  def wait_for(path)
    deadline = Time.now + 60
    sleep 0.05 until File.socket?(path) || Time.now > deadline
    expect(File.socket?(path)).to be(true)
  end

  it 'hangs up on a client that is not the manager, then greets the manager' do
    Dir.mktmpdir('pwshlib-') do |dir|
      File.chmod(0o700, dir)
      path = File.join(dir, 'host.sock')
      errors = File.join(dir, 'stderr')
      host = Process.spawn(REAL_PWSH, *Pwsh::Manager.pwsh_args, '-File', Pwsh::Manager::HOST_SCRIPT,
                           '-PipePath', path, '-ParentPid', Process.pid.to_s, err: errors, out: File::NULL)
      begin
        wait_for(path)
        foreign = fork do
          socket = UNIXSocket.new(path)
          exit!(socket.read(1).nil? ? 0 : 1)
        end
        _, status = Process.wait2(foreign)
        expect(status.exitstatus).to eq(0), 'a foreign client was answered'

        manager = UNIXSocket.new(path)
        expect(read_frame(manager)).to include('type' => 'hello')
        manager.close
        expect(File.read(errors)).to include("(pid #{foreign} is not the manager (pid #{Process.pid}))")
      ensure
        Process.kill('KILL', host)
        Process.wait(host)
      end
    end
  end
end
