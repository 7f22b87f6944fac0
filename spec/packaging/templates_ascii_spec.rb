# frozen_string_literal: true

# What lib/templates ships is ASCII, every byte of it.
#
# Windows PowerShell 5.1 reads a script file without a byte order mark in
# the ANSI code page (host.ps1 runs as `powershell.exe -File`), so a UTF-8
# character there would be read as two or three other characters. The
# prelude goes to the host inside a frame, where ASCII means a character
# is a byte: bench/support/catalog_run.rb's fake manager reads a script by
# byte offsets, and one "…" in a prelude comment made `rake bench` fail.
RSpec.describe 'the shipped PowerShell and C# templates' do
  root = File.expand_path('../..', __dir__)
  templates = Dir[File.join(root, 'lib', 'templates', '*')].sort

  it 'are all here' do
    prelude = %w[values cmdlet results modules direct call].map { |part| "dsc_prelude_#{part}.ps1" }
    expect(templates.map { |path| File.basename(path) }).to include('host.ps1', 'PwshlibHost.cs', *prelude)
  end

  templates.each do |path|
    it "has only ASCII in #{File.basename(path)}" do
      lines = File.binread(path).lines.each_with_index.reject { |line, _| line.ascii_only? }
      expect(lines.map { |line, index| "#{index + 1}: #{line.strip}" }).to eq([])
    end
  end
end
