# frozen_string_literal: true

# The closing line each Windows suite prints (script/windows-ruby-check shows
# them): the suite, the Windows platform it ran on, its counts. The suites the
# Windows Ruby runs name their own RUBY_PLATFORM; the acceptance suite, run
# by this machine's Ruby, sets the platform its Puppet runs on.
class WindowsClosingLine
  RSpec::Core::Formatters.register self, :dump_summary

  class << self
    attr_writer :platform

    def platform
      @platform || "#{RUBY_PLATFORM} (Ruby #{RUBY_VERSION}, under wine)"
    end
  end

  def initialize(output)
    @output = output
  end

  def dump_summary(summary)
    suite = ENV.fetch('PWSHLIB_WINDOWS_SUITE', 'windows')
    @output.puts "#{suite} on #{self.class.platform}: " \
                 "#{summary.example_count} examples, #{summary.failure_count} failed, #{summary.pending_count} pending"
  end
end

RSpec.configure do |config|
  config.add_formatter('progress') if config.formatters.empty?
  config.add_formatter(WindowsClosingLine)
end
