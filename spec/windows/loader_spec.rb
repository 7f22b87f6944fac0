# frozen_string_literal: true

require_relative 'spec_helper_windows'

RSpec.describe 'lib/pwshlib.rb on a Windows Ruby' do
  it 'is a Windows Ruby' do
    expect(RUBY_PLATFORM).to match(/mingw/)
    expect(File::ALT_SEPARATOR).to eq('\\')
  end

  it 'loads the Windows library from the module tree, lib/pwshlib/<abi>/<RUBY_PLATFORM>/pwshlib.so' do
    loaded = $LOADED_FEATURES.grep(/pwshlib\.so\z/)
    expected = File.join(PWSHLIB_ROOT, 'lib', 'pwshlib', RUBY_VERSION[/\A\d+\.\d+/], RUBY_PLATFORM, 'pwshlib.so')
    expect(loaded.map(&:downcase)).to eq([expected.downcase])
    expect(defined?(Pwsh::Manager.spawn)).to eq('method')
  end
end
