# frozen_string_literal: true

require 'digest'
require 'fileutils'
require 'open3'
require 'tmpdir'

# How script/find-pwsh, script/setup and script/test-pwsh get a real
# PowerShell 7: PWSHLIB_REAL_PWSH, pwsh on PATH, the archive in
# ../shared/tools, then Microsoft's package feed (script/install-pwsh-feed).
# Everything runs against stand-ins: curl, dpkg, dpkg-query, apt-get, sudo,
# rake and cargo are small scripts first on a PATH that holds only the tools
# the scripts need, apt's sources folder, the os-release file and the apt
# lock are moved into a temporary folder, so nothing here reaches the
# network or the machine's apt. The stand-ins log each call, and keep what
# "dpkg" has installed as one file per package.
RSpec.describe 'getting a real PowerShell 7 (script/find-pwsh, script/setup)' do
  tools = %w[bash env dirname sha256sum cut mkdir mktemp tar xz unzip rm mv tail grep flock timeout id cat sed printf awk chmod touch tr head ls]
  feed_url = 'https://packages.microsoft.com/config/debian/12/packages-microsoft-prod.deb'

  # The stand-ins. FAKE_FEED=unreachable makes curl fail as with no network;
  # FAKE_INSTALL=half leaves powershell half installed, as a killed or
  # failed apt-get does.
  stand_ins = {
    'curl' => <<~SH,
      echo "curl $*" >>"$FAKE_STATE/calls"
      if [ "${FAKE_FEED:-}" = unreachable ]; then echo 'curl: (6) Could not resolve host: packages.microsoft.com' >&2; exit 6; fi
      while [ $# -gt 0 ]; do [ "$1" = -o ] && echo 'a .deb' >"$2"; shift; done
    SH
    'dpkg' => <<~SH,
      echo "dpkg $*" >>"$FAKE_STATE/calls"
      case $1 in
        -i) echo 'install ok installed' >"$FAKE_STATE/packages/packages-microsoft-prod"
            echo 'deb [arch=amd64] https://packages.microsoft.com/debian/12/prod bookworm main' >"$PWSHLIB_APT_SOURCES/microsoft-prod.list" ;;
        --purge) rm -f "$FAKE_STATE/packages/$2"
                 [ "$2" != packages-microsoft-prod ] || rm -f "$PWSHLIB_APT_SOURCES/microsoft-prod.list" ;;
      esac
    SH
    'dpkg-query' => <<~SH,
      package=${*: -1}
      case $package in
        powershell|packages-microsoft-prod)
          [ -f "$FAKE_STATE/packages/$package" ] || { echo "dpkg-query: no packages found matching $package" >&2; exit 1; }
          printf '%s' "$(cat "$FAKE_STATE/packages/$package")" ;;
        *) printf 'install ok installed' ;;
      esac
    SH
    'apt-get' => <<~SH,
      echo "apt-get $*" >>"$FAKE_STATE/calls"
      case " $* " in
        *' install '*powershell*)
          if [ "${FAKE_INSTALL:-}" = half ]; then
            echo 'install reinstreq half-installed' >"$FAKE_STATE/packages/powershell"
            exit 100
          fi
          echo 'install ok installed' >"$FAKE_STATE/packages/powershell"
          printf '#!/bin/sh\\necho 7.6.9\\n' >"$FAKE_STATE/bin/pwsh"
          chmod +x "$FAKE_STATE/bin/pwsh" ;;
      esac
    SH
    'sudo' => 'exec "$@"',
    'rake' => 'echo "rake $*" >>"$FAKE_STATE/calls"',
    'cargo' => 'echo "cargo $*" >>"$FAKE_STATE/calls"',
  }.freeze

  around do |example|
    Dir.mktmpdir('pwshlib-pwsh-install') do |dir|
      @dir = dir
      @state = File.join(dir, 'state')
      @sources = File.join(dir, 'sources.list.d')
      @cache = File.join(dir, 'cache')
      @tools_dir = File.join(dir, 'tools')
      [File.join(@state, 'packages'), File.join(@state, 'bin'), File.join(dir, 'system'), @sources, @tools_dir,
       File.join(dir, 'home')].each { |path| FileUtils.mkdir_p(path) }
      File.write(File.join(@state, 'calls'), '')
      # A tool the machine lacks (the Debian roots have no unzip) stays
      # missing here too, as for script/setup on that machine.
      tools.each do |tool|
        found = `bash -c 'command -v #{tool}'`.strip
        File.symlink(found, File.join(dir, 'system', tool)) unless found.empty?
      end
      stand_ins.each do |name, body|
        File.write(File.join(@state, 'bin', name), "#!/bin/bash\n#{body}")
        FileUtils.chmod(0o755, File.join(@state, 'bin', name))
      end
      File.write(File.join(dir, 'os-release'), %(ID=debian\nVERSION_ID="12"\n))
      example.run
    end
  end

  def env(extra = {})
    { 'PATH' => "#{@state}/bin:#{@dir}/system", 'HOME' => File.join(@dir, 'home'), 'FAKE_STATE' => @state,
      'PWSHLIB_SHARED_TOOLS' => @tools_dir, 'PWSHLIB_CACHE' => @cache, 'PWSHLIB_APT_SOURCES' => @sources,
      'PWSHLIB_OS_RELEASE' => File.join(@dir, 'os-release'), 'PWSHLIB_APT_LOCK' => File.join(@dir, 'apt.lock'),
      'PWSHLIB_REAL_PWSH' => nil, 'PWSHLIB_SKIP_REAL_PWSH' => nil, 'CI' => nil }.merge(extra)
  end

  def run(extra, *command)
    Open3.capture3(env(extra), *command, chdir: File.expand_path('../..', __dir__))
  end

  # Every call but those of script/find-ps51-refs (script/setup runs it
  # too; spec/packaging/ps51_refs_spec.rb is its own).
  def calls
    File.read(File.join(@state, 'calls')).lines.map(&:chomp).grep_v(%r{\Acurl .*www\.nuget\.org/})
  end

  # A pwsh of its own in a folder of its own.
  def executable(folder, name = 'pwsh')
    FileUtils.mkdir_p(folder)
    path = File.join(folder, name)
    File.write(path, "#!/bin/sh\necho 7.6.9\n")
    FileUtils.chmod(0o755, path)
    path
  end

  # An archive laid out as ../shared/tools' (only the executable inside), or
  # one that does not unpack.
  def archive(valid: true)
    path = File.join(@tools_dir, 'pwsh-7.6.9-linux-x64.tar.xz')
    if valid
      staging = File.join(@dir, 'staging')
      executable(File.join(staging, 'pwsh-7.6.9-linux-x64', 'bin'))
      system('tar', '-cJf', path, '-C', staging, 'pwsh-7.6.9-linux-x64', exception: true)
    else
      File.write(path, 'not an xz archive')
    end
    path
  end

  def cached_pwsh(archive_path)
    File.join(@cache, "pwsh-#{Digest::SHA256.file(archive_path).hexdigest}", 'pwsh-7.6.9-linux-x64', 'bin', 'pwsh')
  end

  def feed_calls
    calls.grep(/\A(curl|dpkg|apt-get) /)
  end

  it 'chooses PWSHLIB_REAL_PWSH, then pwsh on PATH, then the archive, then the package feed, in that order' do
    named = executable(File.join(@dir, 'named'))
    on_path = executable(File.join(@dir, 'on-path'))
    archive_path = archive
    path_with_pwsh = "#{File.dirname(on_path)}:#{env['PATH']}"

    out, = run({ 'PWSHLIB_REAL_PWSH' => named, 'PATH' => path_with_pwsh }, 'script/find-pwsh', '--install')
    expect(out.chomp).to eq(named)
    out, = run({ 'PATH' => path_with_pwsh }, 'script/find-pwsh', '--install')
    expect(out.chomp).to eq(on_path)
    expect(Dir.exist?(@cache)).to be(false)
    out, err, = run({}, 'script/find-pwsh', '--install')
    expect(out.chomp).to eq(cached_pwsh(archive_path))
    expect(err).to include("unpacking #{archive_path}")
    expect(feed_calls).to be_empty

    FileUtils.rm_f(archive_path)
    out, err, status = run({}, 'script/find-pwsh', '--install')
    expect(status).to be_success, err
    expect(out.chomp).to eq(File.join(@state, 'bin', 'pwsh'))
    expect(feed_calls.map { |call| call.split.first(2).join(' ') }).to eq(['curl -fsSL', 'dpkg -i', 'apt-get -o', 'apt-get -o'])
    expect(feed_calls[0]).to end_with(feed_url)
    expect(feed_calls[2]).to include(' update ')
    expect(feed_calls[3]).to match(/ install -y .*powershell\z/)
    expect(File.read(File.join(@state, 'packages', 'powershell'))).to eq("install ok installed\n")
  end

  it 'never installs without --install, and says in one line what it tried' do
    out, err, status = run({}, 'script/find-pwsh')
    expect(status.exitstatus).to eq(1)
    expect(out).to eq('')
    expect(err.lines.size).to eq(1)
    expect(err).to include('PWSHLIB_REAL_PWSH is not set', 'no pwsh on PATH', "no #{@tools_dir}/pwsh-7.6.9-linux-x64.tar.xz",
                           'Set PWSHLIB_REAL_PWSH to a pwsh executable')
    expect(feed_calls).to be_empty
  end

  it 'with no network, says in one line what it tried, and leaves no feed configured' do
    _out, err, status = run({ 'FAKE_FEED' => 'unreachable' }, 'script/find-pwsh', '--install')
    expect(status.exitstatus).to eq(1)
    line = err.lines.last
    expect(line).to start_with('find-pwsh: no PowerShell 7:')
    expect(line).to include('no pwsh on PATH', 'tar.xz', "Microsoft's package feed failed (could not download #{feed_url} (curl exit 6))",
                            'Set PWSHLIB_REAL_PWSH')
    expect(feed_calls.map { |call| call.split.first }).to eq(['curl'])
    expect(Dir.children(@sources)).to be_empty
  end

  it 'takes back a failed install: no half-installed powershell, no feed left in the sources folder' do
    _out, err, status = run({ 'FAKE_INSTALL' => 'half' }, 'script/find-pwsh', '--install')
    expect(status.exitstatus).to eq(1)
    expect(err.lines.last).to include("Microsoft's package feed failed (apt-get install powershell failed)")
    expect(feed_calls.last(2)).to eq(['dpkg --purge powershell', 'dpkg --purge packages-microsoft-prod'])
    expect(Dir.children(File.join(@state, 'packages'))).to be_empty
    expect(Dir.children(@sources)).to be_empty
    expect(File.exist?(File.join(@state, 'bin', 'pwsh'))).to be(false)
  end

  it 'keeps a feed that was configured before it ran' do
    File.write(File.join(@state, 'packages', 'packages-microsoft-prod'), 'install ok installed')
    File.write(File.join(@sources, 'microsoft-prod.list'), 'deb ...')
    run({ 'FAKE_INSTALL' => 'half' }, 'script/find-pwsh', '--install')
    expect(feed_calls).to include('dpkg --purge powershell')
    expect(feed_calls).not_to include('dpkg --purge packages-microsoft-prod')
    expect(Dir.children(@sources)).to eq(['microsoft-prod.list'])
  end

  it 'leaves no partial cache folder when the archive does not unpack, and goes on to the feed' do
    archive(valid: false)
    out, err, status = run({}, 'script/find-pwsh', '--install')
    expect(status).to be_success, err
    expect(out.chomp).to eq(File.join(@state, 'bin', 'pwsh'))
    expect(Dir.children(@cache)).to be_empty
    FileUtils.rm_f(File.join(@state, 'bin', 'pwsh'))
    _out, err, status = run({}, 'script/find-pwsh')
    expect(status.exitstatus).to eq(1)
    expect(err.lines.last).to include('pwsh-7.6.9-linux-x64.tar.xz did not unpack into a pwsh')
    expect(Dir.children(@cache)).to be_empty
  end

  it 'refuses to use the Debian feed on another system' do
    File.write(File.join(@dir, 'os-release'), %(ID=ubuntu\nVERSION_ID="24.04"\n))
    _out, err, status = run({}, 'script/find-pwsh', '--install')
    expect(status.exitstatus).to eq(1)
    expect(err.lines.last).to include('not Debian', 'ID=ubuntu')
    expect(feed_calls).to be_empty
  end

  describe 'script/setup' do
    it 'installs PowerShell from the feed where there is no archive, before it builds' do
      out, err, status = run({}, 'script/setup')
      expect(status).to be_success, err
      expect(out).to include("PowerShell 7 for the real-PowerShell tier: #{File.join(@state, 'bin', 'pwsh')}")
      expect(calls.map { |call| call.split.first }).to eq(%w[curl dpkg apt-get apt-get rake])
      expect(calls.last).to eq('rake compile')
    end

    it 'unpacks the archive where there is one, and never asks the feed' do
      archive_path = archive
      out, err, status = run({}, 'script/setup')
      expect(status).to be_success, err
      expect(out).to include(cached_pwsh(archive_path))
      expect(calls).to eq(['rake compile'])
    end

    it 'with no network, still sets up the rest and prints the one line' do
      _out, err, status = run({ 'FAKE_FEED' => 'unreachable' }, 'script/setup')
      expect(status).to be_success, err
      expect(err.lines.grep(/find-pwsh: no PowerShell 7:/).size).to eq(1)
      expect(calls.last).to eq('rake compile')
      expect(Dir.children(@sources)).to be_empty
    end

    it 'looks for no PowerShell with PWSHLIB_SKIP_REAL_PWSH=1 outside CI' do
      out, err, status = run({ 'PWSHLIB_SKIP_REAL_PWSH' => '1' }, 'script/setup')
      expect(status).to be_success, err
      expect(out).to include('not looked for (PWSHLIB_SKIP_REAL_PWSH=1)')
      expect(calls).to eq(['rake compile'])
    end
  end

  describe 'script/test-pwsh' do
    it 'fails with the one line when no PowerShell can be had' do
      _out, err, status = run({ 'FAKE_FEED' => 'unreachable' }, 'script/test-pwsh')
      expect(status.exitstatus).to eq(1)
      expect(err).to match(/^find-pwsh: no PowerShell 7: .*Set PWSHLIB_REAL_PWSH/)
      expect(err.lines.last).to start_with('test-pwsh: FAILED: no real pwsh')
      expect(calls).not_to include('rake compile')
    end

    it 'skips without installing anything with PWSHLIB_SKIP_REAL_PWSH=1, but never under CI=true' do
      out, _err, status = run({ 'PWSHLIB_SKIP_REAL_PWSH' => '1' }, 'script/test-pwsh')
      expect(status).to be_success
      expect(out).to include('test-pwsh: SKIPPED')
      expect(feed_calls).to be_empty
      _out, err, status = run({ 'PWSHLIB_SKIP_REAL_PWSH' => '1', 'CI' => 'true', 'FAKE_FEED' => 'unreachable' }, 'script/test-pwsh')
      expect(status.exitstatus).to eq(1)
      expect(err).to include('test-pwsh: FAILED')
      expect(feed_calls.map { |call| call.split.first }).to eq(['curl'])
    end
  end
end
