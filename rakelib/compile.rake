# frozen_string_literal: true

# The native library for the Ruby running rake, and the simulated host.

# What cargo names the cdylib on this platform (Ruby loads it as pwshlib.so
# on Linux and Windows alike).
CARGO_LIBRARY = case RbConfig::CONFIG['host_os']
                when /mingw|mswin|cygwin/ then 'pwshlib.dll'
                when /darwin/ then 'libpwshlib.dylib'
                else 'libpwshlib.so'
                end

desc 'Build the native library (release, where cargo builds) and copy it to lib/pwshlib/pwshlib.so'
task :compile do
  cargo 'build', '--release', '-p', 'pwshlib', '-p', 'pwshlib-sim'
  built = CargoTarget.release(CARGO_LIBRARY)
  install_library(built, NATIVE_LIB)
  # The loader takes a prebuilt library for this Ruby first: one left by an
  # earlier `rake prebuilt` would otherwise shadow what was just built.
  prebuilt = prebuilt_path(RUBY_ABI, RUBY_PLATFORM)
  puts "compile: refreshed #{prebuilt}" if File.file?(prebuilt) && install_library(built, prebuilt)
end

desc 'Remove build output'
task :clean do
  cargo 'clean'
  # The built libraries only: the table of agent ABIs lives there too.
  FileUtils.rm_rf(Dir[File.join(ROOT, 'lib', 'pwshlib', '{*/,*.so}')])
  FileUtils.rm_rf(File.join(ROOT, 'pkg'))
end
