# frozen_string_literal: true

require 'fileutils'
require 'open3'
require 'rbconfig'
require 'tmpdir'
require_relative '../../script/cargo_target'

# script/cargo_target.rb, the one place that asks cargo where it builds:
# it must honour what cargo honours (CARGO_TARGET_DIR,
# build.target-dir in a .cargo/config.toml), and nothing else may look for
# the build at a path of its own. Each lookup runs in a child Ruby (the
# answer is kept per process), in this checkout or in a one-file package.
RSpec.describe 'script/cargo_target.rb, where cargo builds' do
  root = File.expand_path('../..', __dir__)
  script = File.join(root, 'script', 'cargo_target.rb')

  # The lookup's answer in a child Ruby: the script's output with `args`, or
  # CargoTarget.dir of `package` (this checkout without one).
  def lookup(script, env, *args, package: nil)
    command = if package
                [RbConfig.ruby, '-r', script, '-e', 'puts CargoTarget.dir(ARGV[0])', package]
              else
                [RbConfig.ruby, script, *args]
              end
    out, err, status = Open3.capture3(env, *command)
    raise "lookup failed: #{err}" unless status.success?

    out.lines.map(&:chomp)
  end

  # A package of its own (not in this workspace) in a folder that may hold a
  # .cargo/config.toml above it, as a developer's ~/src/.cargo does.
  around do |example|
    Dir.mktmpdir('pwshlib-cargo-target') do |dir|
      @dir = dir
      @package = File.join(dir, 'src', 'probe')
      FileUtils.mkdir_p(File.join(@package, 'src'))
      File.write(File.join(@package, 'Cargo.toml'), <<~TOML)
        [package]
        name = "probe"
        version = "0.1.0"
        edition = "2021"

        [workspace]
      TOML
      File.write(File.join(@package, 'src', 'lib.rs'), '')
      example.run
    end
  end

  # Nothing from the machine running the suite: no CARGO_TARGET_DIR, and an
  # empty CARGO_HOME (whose config.toml could name a target-dir), with cargo
  # found where the suite finds it and rustup's toolchains where they are.
  let(:bare) do
    {
      'CARGO_TARGET_DIR' => nil,
      'CARGO_BUILD_TARGET_DIR' => nil,
      'CARGO_HOME' => File.join(@dir, 'cargo-home'),
      'RUSTUP_HOME' => ENV.fetch('RUSTUP_HOME') { File.join(Dir.home, '.rustup') },
      'PATH' => [File.dirname(CargoTarget.cargo), ENV.fetch('PATH', nil)].compact.join(File::PATH_SEPARATOR),
    }
  end

  def config(dir, target_dir)
    FileUtils.mkdir_p(File.join(dir, '.cargo'))
    File.write(File.join(dir, '.cargo', 'config.toml'), "[build]\ntarget-dir = #{target_dir.dump}\n")
  end

  it 'prints CARGO_TARGET_DIR for this checkout, and the paths asked for inside it' do
    elsewhere = File.join(@dir, 'shared-target')
    expect(lookup(script, bare.merge('CARGO_TARGET_DIR' => elsewhere), 'release/pwshlib-sim', 'x86_64-pc-windows-gnu/release'))
      .to eq([File.join(elsewhere, 'release', 'pwshlib-sim'), File.join(elsewhere, 'x86_64-pc-windows-gnu', 'release')])
    expect(lookup(script, bare.merge('CARGO_TARGET_DIR' => elsewhere))).to eq([elsewhere])
  end

  it "names the simulated host in the release profile of cargo's target directory" do
    elsewhere = File.join(@dir, 'shared-target')
    out, err, status = Open3.capture3(bare.merge('CARGO_TARGET_DIR' => elsewhere), RbConfig.ruby, '-r', script, '-e',
                                      'puts CargoTarget.sim, CargoTarget.release("libpwshlib.so")')
    expect([out.lines.map(&:chomp), err, status.success?])
      .to eq([[File.join(elsewhere, 'release', 'pwshlib-sim'), File.join(elsewhere, 'release', 'libpwshlib.so')], '', true])
  end

  it 'honours build.target-dir set by environment (CARGO_BUILD_TARGET_DIR) for this checkout' do
    elsewhere = File.join(@dir, 'by-config-variable')
    expect(lookup(script, bare.merge('CARGO_BUILD_TARGET_DIR' => elsewhere))).to eq([elsewhere])
  end

  it "is the package's target/ when nothing says otherwise" do
    expect(lookup(script, bare, package: @package)).to eq([File.join(@package, 'target')])
  end

  it "honours the checkout's .cargo/config.toml, relative to the folder holding .cargo" do
    config(@package, 'build-here')
    expect(lookup(script, bare, package: @package)).to eq([File.join(@package, 'build-here')])
  end

  it 'honours a .cargo/config.toml in a folder above the checkout' do
    shared = File.join(@dir, 'shared-target')
    config(@dir, shared)
    expect(lookup(script, bare, package: @package)).to eq([shared])
  end

  it 'lets CARGO_TARGET_DIR win over .cargo/config.toml, as cargo does' do
    config(@package, 'build-here')
    elsewhere = File.join(@dir, 'from-environment')
    expect(lookup(script, bare.merge('CARGO_TARGET_DIR' => elsewhere), package: @package)).to eq([elsewhere])
  end

  # In this process, whatever CARGO_TARGET_DIR the suite runs with.
  it 'asks cargo once per process and workspace' do
    expect(Open3).to receive(:capture3).once.and_call_original
    first = CargoTarget.dir(@package)
    expect(first).to start_with('/')
    expect(CargoTarget.dir(@package)).to eq(first)
  end

  # Every task, script, example, spec helper and bench finds the library and
  # pwshlib-sim through the lookup: none names a profile folder under the
  # checkout's target/ (script/cargo_target.rb's header says what may stay
  # under target/).
  it "is the only way the tree finds cargo's build" do
    sources = Dir.glob(%w[Rakefile rakelib/**/* script/**/* .ci/* spec/**/*.rb bench/**/* examples/* ext/**/*.{rb,rs}], base: root)
                 .reject { |path| path == 'spec/packaging/cargo_target_spec.rb' || path.start_with?('spec/fixtures/') }
                 .select { |path| File.file?(File.join(root, path)) }
    expect(sources).to include('Rakefile', 'rakelib/compile.rake', 'examples/demo.rb', 'spec/spec_helper.rb', 'script/test-root', '.ci/run')
    # target/release, $root/target/$target/release, 'target', 'release', …
    # (not a variable that holds a target triple: "$target/release").
    profile_path = %r{(?<![\w$])target/(\$\{?\w+\}?/|x86_64[\w-]*/)?(release|debug)\b|'target',\s*('[\w-]+',\s*)?'(release|debug)'}
    found = sources.flat_map do |path|
      text = File.binread(File.join(root, path))
      next [] if text.include?("\0")

      text.force_encoding(Encoding::UTF_8).scrub.lines.each_with_index.filter_map do |line, index|
        "#{path}:#{index + 1}: #{line.strip}" if line.match?(profile_path)
      end
    end
    expect(found).to eq([])
  end
end
