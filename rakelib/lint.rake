# frozen_string_literal: true

# The lints: cargo fmt and clippy (with -D warnings) over the workspace, and
# Debian's rubocop over the Ruby.

desc 'cargo fmt --check, cargo clippy -D warnings, and rubocop (.rubocop.yml)'
task lint: %w[lint:rust lint:ruby]

namespace :lint do
  desc 'cargo fmt --check and cargo clippy -D warnings'
  task :rust do
    cargo 'fmt', '--all', '--check'
    cargo 'clippy', '--workspace', '--all-targets', '--', '-D', 'warnings'
  end

  # Debian's rubocop (script/setup installs it); `rubocop -a` fixes the safe
  # offenses.
  desc 'rubocop over the Ruby in the repository (.rubocop.yml)'
  task :ruby do
    sh 'rubocop', '--format', 'emacs', chdir: ROOT
  end
end
