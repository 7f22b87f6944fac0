# frozen_string_literal: true

require 'digest'
require 'fileutils'
require 'open3'
require 'tmpdir'

# The real reboot module (puppetlabs-reboot) for the specs of reboots a DSC
# Set asks for, installed under a modulepath as `reboot`, and a stand-in
# `shutdown` first on PATH that records its arguments, so nothing reboots.
#
# The module is found as script/find-pwsh finds PowerShell: the archive in
# ../shared/tools (PWSHLIB_SHARED_TOOLS moves it), unpacked once into
# /var/cache/pwshlib/reboot-<its SHA-256> (PWSHLIB_CACHE moves the cache),
# so a new archive gets a new cache; PWSHLIB_REBOOT_MODULE names an
# unpacked module folder instead (a CI without ../shared: `puppet module
# install puppetlabs-reboot --version 5.1.0` puts one under its target
# directory). Without either, `modulepath_with` raises one line saying what
# it tried and how to go on.
module RebootModule
  VERSION = '5.1.0'
  ROOT = File.expand_path('../..', __dir__)
  STANDIN_DIR = File.join(ROOT, 'spec', 'fixtures', 'reboot_standin')

  module_function

  # A modulepath folder (made under `dir`) holding every module of
  # `module_dirs`' folders and the reboot module as `reboot`, each linked.
  def modulepath_with(dir, *module_dirs)
    modulepath = File.join(dir, 'modules')
    FileUtils.mkdir_p(modulepath)
    module_dirs.flat_map { |parent| Dir[File.join(parent, '*')] }.each do |mod|
      File.symlink(File.expand_path(mod), File.join(modulepath, File.basename(mod)))
    end
    File.symlink(module_folder, File.join(modulepath, 'reboot'))
    modulepath
  end

  # The environment a run needs for the stand-in: PATH with it first, and
  # the file it records its calls in.
  def standin_env(log_path)
    { 'PATH' => [STANDIN_DIR, ENV.fetch('PATH', '')].join(File::PATH_SEPARATOR), 'PWSHLIB_SHUTDOWN_LOG' => log_path }
  end

  # The stand-in's calls, one array of arguments' text per call. The reboot
  # module runs it in the background from Ruby's at_exit handler, so it may
  # still be starting when `puppet apply` has returned: a run whose output
  # says it scheduled the reboot waits for the record (`expected` true).
  def shutdown_calls(log_path, expected:)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    sleep(0.1) while expected && !File.exist?(log_path) && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    File.exist?(log_path) ? File.readlines(log_path, chomp: true) : []
  end

  # The unpacked module's folder (its lib/puppet/type/reboot.rb inside).
  def module_folder
    given = ENV.fetch('PWSHLIB_REBOOT_MODULE', '')
    return checked(given, "PWSHLIB_REBOOT_MODULE names #{given}") unless given.empty?

    tools = ENV.fetch('PWSHLIB_SHARED_TOOLS', File.join(ROOT, '..', 'shared', 'tools'))
    archive = File.join(tools, "puppetlabs-reboot-#{VERSION}.tar.xz")
    unless File.file?(archive)
      raise "reboot module: PWSHLIB_REBOOT_MODULE is not set and there is no #{archive}. Set PWSHLIB_REBOOT_MODULE " \
            "to an unpacked puppetlabs-reboot #{VERSION} (puppet module install puppetlabs-reboot --version #{VERSION} " \
            '--target-dir DIR, then DIR/reboot), or PWSHLIB_SHARED_TOOLS to the folder holding the archive'
    end

    checked(unpacked(archive), "#{archive} unpacked")
  end

  # Unpacks the archive into its cache folder, whole or not at all (a
  # temporary folder beside it, renamed into place), once per archive.
  def unpacked(archive)
    cache = File.join(ENV.fetch('PWSHLIB_CACHE', '/var/cache/pwshlib'), "reboot-#{Digest::SHA256.file(archive).hexdigest}")
    folder = File.join(cache, 'puppetlabs-reboot')
    return folder if File.file?(type_file(folder))

    FileUtils.mkdir_p(File.dirname(cache))
    partial = Dir.mktmpdir('reboot-unpacking.', File.dirname(cache))
    begin
      _out, err, status = Open3.capture3('tar', '-xJf', archive, '-C', partial)
      raise "reboot module: #{archive} did not unpack: #{err.strip}" unless status.success?

      begin
        File.rename(partial, cache)
      rescue SystemCallError
        raise unless File.file?(type_file(folder)) # another run unpacked it first
      end
    ensure
      FileUtils.rm_rf(partial)
    end
    folder
  end

  def checked(folder, what)
    raise "reboot module: #{what}, which has no lib/puppet/type/reboot.rb" unless File.file?(type_file(folder))

    folder
  end

  def type_file(folder)
    File.join(folder, 'lib', 'puppet', 'type', 'reboot.rb')
  end
end
