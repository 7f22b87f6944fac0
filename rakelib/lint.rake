# frozen_string_literal: true

# The lints: cargo fmt, clippy and rustdoc (with -D warnings) over the workspace, and
# Debian's rubocop over the Ruby.

# CONTRIBUTING.md: a subject says what changed in at most this many
# characters. The commits before LAST_LONG_SUBJECT kept their long subjects:
# history is not rewritten.
LAST_LONG_SUBJECT = 'ea8fbeb'
SUBJECT_LIMIT = 72

# CONTRIBUTING.md: one job per file. A production Rust file longer than this
# (its lines before its `#[cfg(test)]` module) does more than one. The same
# cap holds for the shipped templates (lib/templates/*.cs and *.ps1, every
# line): the host's C# is several PwshlibHost*.cs files that host.ps1 joins,
# the prelude several dsc_prelude_*.ps1 files that the core joins.
RUST_FILE_LINE_LIMIT = 600

desc 'cargo fmt --check, cargo clippy and rustdoc -D warnings, rubocop (.rubocop.yml), commit subjects'
task lint: %w[lint:rust lint:rust_file_lines lint:template_file_lines lint:ruby lint:commits]

namespace :lint do
  desc 'cargo fmt --check, cargo clippy -D warnings, and rustdoc -D warnings'
  task :rust do
    cargo 'fmt', '--all', '--check'
    cargo 'clippy', '--workspace', '--all-targets', '--', '-D', 'warnings'
    # The crates' own documentation (not their dependencies'): a link from
    # a public item to a private one is a broken link in the built docs.
    sh({ 'RUSTDOCFLAGS' => '-D warnings' }, 'cargo', 'doc', '--workspace', '--no-deps', '--quiet', chdir: ROOT)
  end

  # Debian's rubocop (script/setup installs it); `rubocop -a` fixes the safe
  # offenses.
  desc 'rubocop over the Ruby in the repository (.rubocop.yml)'
  task :ruby do
    sh 'rubocop', '--format', 'emacs', chdir: ROOT
  end
  desc "Commit subjects of at most #{SUBJECT_LIMIT} characters (every commit after #{LAST_LONG_SUBJECT})"
  task :commits do
    # A shallow clone may lack that commit: then every commit it has is checked.
    known = system('git', 'cat-file', '-e', "#{LAST_LONG_SUBJECT}^{commit}", chdir: ROOT, err: File::NULL)
    range = known ? "#{LAST_LONG_SUBJECT}..HEAD" : 'HEAD'
    subjects = IO.popen(['git', 'log', '--format=%h %s', range], chdir: ROOT, &:readlines)
    raise 'git log failed' unless $?.success?

    long = subjects.map(&:chomp).select { |line| line.split(' ', 2).last.length > SUBJECT_LIMIT }
    abort "Commit subjects over #{SUBJECT_LIMIT} characters (the detail goes in the body):\n#{long.join("\n")}" unless long.empty?
    puts "commit subjects: #{subjects.size} checked, none over #{SUBJECT_LIMIT} characters"
  end
  # Files compiled only for tests (the lifecycle's *tests.rs, test_support/)
  # are not production code.
  desc "No production Rust file over #{RUST_FILE_LINE_LIMIT} lines (before its #[cfg(test)] module)"
  task :rust_file_lines do
    files = Dir[File.join(ROOT, 'ext', '*', 'src', '**', '*.rs')].reject do |path|
      path.end_with?('tests.rs') || path.include?('/test_support/')
    end
    long = files.filter_map do |path|
      lines = File.readlines(path)
      production = lines.index { |line| line.start_with?('#[cfg(test)]') } || lines.size
      "#{path.delete_prefix("#{ROOT}/")}: #{production}" if production > RUST_FILE_LINE_LIMIT
    end
    abort "Production Rust files over #{RUST_FILE_LINE_LIMIT} lines (split them by job):\n#{long.join("\n")}" unless long.empty?
    puts "rust file lines: #{files.size} production files, none over #{RUST_FILE_LINE_LIMIT} lines"
  end

  desc "No shipped template (lib/templates/*.cs, *.ps1) over #{RUST_FILE_LINE_LIMIT} lines"
  task :template_file_lines do
    files = Dir[File.join(ROOT, 'lib', 'templates', '*.{cs,ps1}')]
    abort 'no templates found under lib/templates' if files.empty?

    long = files.filter_map do |path|
      count = File.readlines(path).size
      "#{path.delete_prefix("#{ROOT}/")}: #{count}" if count > RUST_FILE_LINE_LIMIT
    end
    abort "Templates over #{RUST_FILE_LINE_LIMIT} lines (split them by job):\n#{long.join("\n")}" unless long.empty?
    puts "template file lines: #{files.size} files, none over #{RUST_FILE_LINE_LIMIT} lines"
  end
end
