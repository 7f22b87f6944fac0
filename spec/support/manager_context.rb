# frozen_string_literal: true

# The set-up every Pwsh::Manager suite shares, on Linux (spec/pwsh, Unix
# socket) and on the Windows Ruby under wine (spec/windows, named pipe):
# PWSHLIB_POWERSHELL and the managers point at the simulated host
# (PWSHLIB_SIM, defined by the suite's spec helper). Pure RSpec: the Windows
# suites load it without Puppet.
RSpec.shared_context 'a manager on the simulated host' do
  def new_manager(options = {})
    described_class.instance(PWSHLIB_SIM, described_class.pwsh_args, options)
  end

  around do |example|
    saved = ENV.fetch('PWSHLIB_POWERSHELL', nil)
    ENV['PWSHLIB_POWERSHELL'] = PWSHLIB_SIM
    example.run
  ensure
    ENV['PWSHLIB_POWERSHELL'] = saved
  end

  let(:manager) { new_manager }

  # After the host `gone_pid` has died: the next instance is another host,
  # and it works. Returns it.
  def expect_fresh_host(gone_pid)
    fresh = new_manager
    expect(fresh.pid).not_to eq(gone_pid)
    expect(fresh.execute("Write-Output 'fresh'")[:stdout]).to eq("fresh\n")
    fresh
  end

  # How often a Ruby thread ticked (every 10 ms) while `code` ran on the
  # host: many ticks mean the call released the global VM lock.
  def ticks_while_executing(code)
    ticks = 0
    ticker = Thread.new do
      loop do
        ticks += 1
        sleep 0.01
      end
    end
    manager.execute(code)
    ticker.kill
    ticks
  end
end

RSpec.shared_examples 'a manager that checks the working directory' do
  it 'reports a missing working directory' do
    missing = File.join(Dir.tmpdir, 'pwshlib-no-such-dir-xyz')
    result = manager.execute('Get-Location', nil, missing)
    expect(result[:errormessage]).to eq("Working directory '#{missing}' does not exist")
    expect(manager).to be_alive
  end
end
