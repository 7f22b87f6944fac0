# frozen_string_literal: true

require_relative 'spec_helper_real_pwsh'

RSpec.describe Pwsh::Manager, 'on the real pwsh' do
  include_context 'a manager on the real pwsh'

  it 'runs code on PowerShell 7 and reports its version' do
    result = manager.execute('$PSVersionTable.PSVersion.Major')
    expect(result[:exitcode]).to eq(0)
    expect(Integer(result[:stdout])).to be >= 7
  end
end
