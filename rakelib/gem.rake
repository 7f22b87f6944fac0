# frozen_string_literal: true

# The gems: the source gem (builds the extension at `gem install`) and one
# platform gem per Windows platform (the library prebuilt inside).

desc 'Build the gem into pkg/'
task gem: :clean_gem_inputs do
  FileUtils.mkdir_p(File.join(ROOT, 'pkg'))
  sh 'gem', 'build', 'pwshlib.gemspec', '--output', File.join(ROOT, 'pkg', 'pwshlib.gem'), chdir: ROOT
end

# As rake-compiler's cross gems: the Windows library prebuilt inside the gem
# (lib/pwshlib/<abi>/<platform>/pwshlib.so), no extension to build, so
# `gem install` on Windows needs no compiler. One gem per Windows platform.
desc 'Build the Windows platform gems pkg/pwshlib-<version>-<platform>.gem, one per Windows platform ' \
     '(x64-mingw32, x64-mingw-ucrt; prebuilt library, no compiler needed)'
task 'gem:windows' => %w[clean_gem_inputs compile:windows] do
  FileUtils.mkdir_p(File.join(ROOT, 'pkg'))
  windows_platforms.each do |platform|
    abi = windows_rbconfig(platform)['abi']
    install_library(windows_library(platform), prebuilt_path(abi, platform))
    env = { 'PWSHLIB_GEM_PLATFORM' => platform, 'PWSHLIB_GEM_RUBY_ABI' => abi }
    sh env, 'gem', 'build', 'pwshlib.gemspec', '--output',
       File.join(ROOT, 'pkg', "pwshlib-#{Pwsh::VERSION}-#{platform}.gem"), chdir: ROOT
  end
end

task :clean_gem_inputs do
  FileUtils.rm_f(Dir[File.join(ROOT, '*.gem')])
end
