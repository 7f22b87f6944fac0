# frozen_string_literal: true

require 'digest'
require 'fileutils'
require 'open3'
require 'tmpdir'
require 'zlib'

# script/find-ps51-refs: the Windows PowerShell 5.1 reference assemblies the
# real-PowerShell tier compiles the host's C# against, from the archive in
# ../shared/tools, else from their NuGet packages, checked by digest. The
# packages come from a stand-in curl that copies them from a folder; nothing
# here reaches the network.
RSpec.describe 'script/find-ps51-refs' do
  root = File.expand_path('../..', __dir__)
  archive = File.join(ENV.fetch('PWSHLIB_SHARED_TOOLS', File.expand_path('../shared/tools', root)), 'windows-powershell-5.1-refs.tar.xz')
  framework = 'Microsoft.NETFramework.ReferenceAssemblies.net472'
  standard = 'PowerShellStandard.Library'
  names = %w[mscorlib.dll System.dll System.Core.dll System.Management.Automation.dll]

  around do |example|
    Dir.mktmpdir('pwshlib-ps51-refs') do |dir|
      @dir = dir
      %w[bin packages tools cache].each { |name| FileUtils.mkdir_p(File.join(dir, name)) }
      File.write(File.join(dir, 'bin', 'curl'), <<~SH)
        #!/bin/bash
        echo "curl ${*: -1}" >>"#{dir}/calls"
        [ -z "${FAKE_UNREACHABLE:-}" ] || { echo 'curl: (6) Could not resolve host: www.nuget.org' >&2; exit 6; }
        while [ $# -gt 1 ]; do [ "$1" = -o ] && out=$2; shift; done
        package=${1%/*}
        cp "#{dir}/packages/${package##*/}.nupkg" "$out"
      SH
      FileUtils.chmod(0o755, File.join(dir, 'bin', 'curl'))
      example.run
    end
  end

  def run(extra = {})
    env = { 'PATH' => "#{@dir}/bin:#{ENV.fetch('PATH')}", 'PWSHLIB_CACHE' => File.join(@dir, 'cache'),
            'PWSHLIB_SHARED_TOOLS' => File.join(@dir, 'tools') }.merge(extra)
    Open3.capture3(env, File.join(File.expand_path('../..', __dir__), 'script', 'find-ps51-refs'))
  end

  def calls
    File.exist?(File.join(@dir, 'calls')) ? File.read(File.join(@dir, 'calls')).lines.map(&:chomp) : []
  end

  # A .nupkg is a zip: written here with stored (uncompressed) entries.
  def nupkg(package, entries)
    body = +''
    central = +''
    entries.each do |name, data|
      header = [0, 0, 0, 0, Zlib.crc32(data), data.bytesize, data.bytesize, name.bytesize, 0].pack('vvvvVVVvv')
      central << [0x02014b50, 20, 20].pack('Vvv') << header << [0, 0, 0, 0, body.bytesize].pack('vvvVV') << name
      body << [0x04034b50, 20].pack('Vv') << header << name << data
    end
    tail = [0x06054b50, 0, 0, entries.size, entries.size, central.bytesize, body.bytesize, 0].pack('VvvvvVVv')
    File.binwrite(File.join(@dir, 'packages', "#{package}.nupkg"), body + central + tail)
  end

  # The two packages, holding `files` (name => bytes) where the real ones do.
  def packages(files, framework, standard)
    nupkg(framework, %w[mscorlib.dll System.dll System.Core.dll].to_h { |name| ["build/.NETFramework/v4.7.2/#{name}", files.fetch(name)] })
    nupkg(standard, { 'lib/net452/System.Management.Automation.dll' => files.fetch('System.Management.Automation.dll') })
  end

  # Nothing in the cache but complete caches: no temporary folder left.
  def leftovers
    Dir.children(File.join(@dir, 'cache')).grep(/unpacking|fetching/)
  end

  it 'unpacks the archive in ../shared/tools where there is one, and never asks NuGet' do
    skip "no #{archive} to copy" unless File.file?(archive)
    FileUtils.cp(archive, File.join(@dir, 'tools'))
    out, err, status = run
    expect(status).to be_success, err
    expect(Dir.children(out.chomp)).to include(*names)
    expect(out.chomp).to start_with(File.join(@dir, 'cache', "ps51-refs-#{Digest::SHA256.file(archive).hexdigest}"))
    expect(calls).to be_empty
  end

  it 'takes the four files from their NuGet packages where there is no archive, checked by digest' do
    skip "no #{archive} to take the packages' files from" unless File.file?(archive)
    files = Dir.mktmpdir do |unpacked|
      system('tar', '-xJf', archive, '-C', unpacked, exception: true)
      names.to_h { |name| [name, File.binread(File.join(unpacked, 'windows-powershell-5.1-refs', name))] }
    end
    packages(files, framework, standard)
    out, err, status = run
    expect(status).to be_success, err
    names.each { |name| expect(File.binread(File.join(out.chomp, name))).to eq(files[name]) }
    expect(calls).to eq(["curl https://www.nuget.org/api/v2/package/#{framework}/1.0.3", "curl https://www.nuget.org/api/v2/package/#{standard}/5.1.1"])
    expect(leftovers).to be_empty
  end

  it 'refuses a package whose file is not the expected one, and leaves no partial cache' do
    # The script reads a package with unzip, which script/setup installs on
    # the machine it sets up; the Debian roots that also run this suite
    # have none.
    skip 'no unzip to read a package with' if `bash -c 'command -v unzip'`.strip.empty?
    packages(names.to_h { |name| [name, "not #{name}"] }, framework, standard)
    out, err, status = run
    expect(status.exitstatus).to eq(1)
    expect(out).to eq('')
    expect(err.lines.last).to include('no Windows PowerShell 5.1 reference assemblies', 'windows-powershell-5.1-refs.tar.xz',
                                      'build/.NETFramework/v4.7.2/mscorlib.dll', 'its SHA-256 differs')
    expect(Dir.children(File.join(@dir, 'cache'))).to be_empty
  end

  it 'says in one line what it tried when there is no network' do
    _out, err, status = run('FAKE_UNREACHABLE' => '1')
    expect(status.exitstatus).to eq(1)
    expect(err.lines.last).to include('no Windows PowerShell 5.1 reference assemblies', '(curl exit 6)')
    expect(Dir.children(File.join(@dir, 'cache'))).to be_empty
  end
end
