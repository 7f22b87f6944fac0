# frozen_string_literal: true

require 'spec_helper'
require 'pwsh'

# The manager's failures are Pwsh::Error (declared in lib/pwsh/error.rb),
# still RuntimeErrors as in pwshlib 2.x.
RSpec.describe Pwsh::Error do
  it 'is a RuntimeError, with a class per kind of failure' do
    expect(described_class.superclass).to be(RuntimeError)
    [Pwsh::HostError, Pwsh::ProtocolError, Pwsh::InternalError, Pwsh::PowerShellNotFound].each do |failure|
      expect(failure.superclass).to be(described_class)
    end
  end

  it 'is raised when the host cannot be started, and `rescue RuntimeError` still catches it' do
    missing_script = File.join(Dir.tmpdir, 'no-such-pwshlib-host.ps1')
    expect { Pwsh::Manager.spawn(PWSHLIB_SIM, [], missing_script, false, 5.0) }
      .to raise_error(Pwsh::HostError, /host script .*no-such-pwshlib-host\.ps1 does not exist/)
    expect { Pwsh::Manager.spawn('', [], Pwsh::Manager.host_script_path, false, 5.0) }
      .to raise_error(Pwsh::HostError, /No PowerShell executable given/)
    rescued = begin
      Pwsh::Manager.spawn('/nonexistent/pwshlib/pwsh', [], Pwsh::Manager.host_script_path, false, 5.0)
    rescue RuntimeError => e
      e
    end
    expect(rescued).to be_a(Pwsh::HostError)
  end

  it 'is raised by instance when there is no PowerShell' do
    expect { Pwsh::Manager.instance(nil, []) }.to raise_error(described_class, /No PowerShell executable was found/)
  end

  it 'is not what a failed execute gives: its result carries errormessage, as in 2.x' do
    manager = Pwsh::Manager.instance(PWSHLIB_SIM, [])
    result = manager.execute('throw "boom"')
    expect(result[:errormessage]).to include('boom')
  end
end
