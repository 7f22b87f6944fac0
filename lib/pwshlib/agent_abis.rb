# frozen_string_literal: true

module Pwshlib
  # The table of agent ABIs (agent_abis.tsv beside this file): the Ruby minor
  # versions and RUBY_PLATFORMs the Windows library is built for, how, and by
  # which CI job. The rake tasks, the gemspec and the scripts (script/agent-abis)
  # read it; the loader reads it only to name a missing row in its error.
  module AgentAbis
    TABLE = File.join(__dir__, 'agent_abis.tsv')
    COLUMNS = %i[ruby platform triple toolchain source ci agents].freeze

    # One row; `packages` and `where` split the toolchain column
    # (PACKAGES@WHERE).
    Row = Struct.new(*COLUMNS, :line) do
      def key
        "#{ruby}/#{platform}"
      end

      def packages
        toolchain.split('@').first.split(',')
      end

      def where
        toolchain.split('@').last
      end

      def built_by_ci?
        ci != 'none'
      end

      def release_tarball?
        source.start_with?('tarball:')
      end
    end

    # The variable naming a Windows Ruby's install prefix for a platform, as
    # the scripts and the rake tasks take it: PWSHLIB_WINDOWS_RUBY for
    # x64-mingw32 (the first, kept as it was), PWSHLIB_WINDOWS_RUBY_UCRT for
    # x64-mingw-ucrt.
    def self.windows_ruby_variable(platform)
      suffix = platform.delete_prefix('x64-mingw').delete_prefix('-')
      suffix == '32' ? 'PWSHLIB_WINDOWS_RUBY' : "PWSHLIB_WINDOWS_RUBY_#{suffix.upcase.tr('-', '_')}"
    end

    def self.rows(table = TABLE)
      File.readlines(table, chomp: true).each_with_index.filter_map do |text, index|
        next if text.start_with?('#') || text.strip.empty?

        fields = text.split("\t")
        raise "#{table}:#{index + 1}: #{COLUMNS.size} tab-separated fields expected" unless fields.size == COLUMNS.size

        Row.new(*fields, index + 1)
      end
    end

    def self.find(ruby, platform, table = TABLE)
      rows(table).find { |row| row.ruby == ruby && row.platform == platform }
    end

    # The rows CI job `job` builds and tests.
    def self.ci(job, table = TABLE)
      rows(table).select { |row| row.ci == job }
    end

    # Ruby minor versions compare as versions ("3.10" after "3.9").
    def self.order(ruby, platform)
      [Gem::Version.new(ruby), platform]
    end

    # Where a row for (ruby, platform) goes in the sorted table: "after the
    # row 3.3/x64-mingw32 (line 23)", or before the first.
    def self.place_for(ruby, platform, table = TABLE)
      all = rows(table)
      before = all.select { |row| (order(row.ruby, row.platform) <=> order(ruby, platform)).negative? }.last
      return "after the row #{before.key} (line #{before.line})" if before
      return "before the row #{all.first.key} (line #{all.first.line})" if all.first

      'as its first row'
    end

    # What the loader says about (ruby, platform) when it finds no library:
    # the row, and either where it would go or how it is filled.
    def self.describe(ruby, platform, table = TABLE)
      name = File.join('lib', 'pwshlib', File.basename(table))
      row = find(ruby, platform, table)
      unless row
        return "The table of agent ABIs (#{name}) has no row #{ruby}/#{platform} (Ruby #{ruby} on #{platform}): " \
               "it would go #{place_for(ruby, platform, table)}, and a release then builds its library " \
               '(docs/windows.md, "The table of agent ABIs").'
      end

      how = if row.release_tarball?
              "its source is a release tarball (#{row.source.delete_prefix('tarball:')}), which CI does not build: " \
                'a release machine fills it (docs/windows.md, "Filling the release-tarball rows")'
            else
              "CI job #{row.ci} builds it (`rake prebuilt`)"
            end
      "The table of agent ABIs (#{name}) has the row #{row.key} (line #{row.line}: #{row.agents}), " \
        "but this module carries no library for it: #{how}."
    end
  end
end
