# frozen_string_literal: true

require_relative '../pwshlib'

module Pwsh
  # Helpers other modules use to talk to PowerShell (the pwshlib 2.x API).
  module Util
    module_function

    # Quote characters PowerShell accepts as single quotes: ' and
    # U+2018..U+201B, the one set the native code uses (pwshlib_core::literal).
    SINGLE_QUOTES = Pwshlib::SINGLE_QUOTES

    def on_windows?
      # Ruby only sets ALT_SEPARATOR on Windows.
      !File::ALT_SEPARATOR.nil?
    end

    # True if any entry of a PATH-style list exists and is not a directory
    # (a file). A missing entry is fine, as in pwshlib 2.x since 1.2.1:
    # PowerShell skips it, and a PSModulePath often names folders that only
    # some machines have. `exist?` is asked first, so a missing entry is
    # never asked `directory?` (2.x's own specs stub both in that order).
    def invalid_directories?(path_collection)
      return false if path_collection.nil? || path_collection.empty?

      separator = on_windows? ? ';' : ':'
      path_collection.split(separator).any? { |path| !path.empty? && File.exist?(path) && !File.directory?(path) }
    end

    # 'FooBar' / 'fooBar' / 'foo-bar' / 'foo bar' / :FooBar → 'foo_bar' /
    # :foo_bar. As pwshlib 2.x: hyphens and whitespace become underscores,
    # runs of underscores one, and `::` is left as it is.
    def snake_case(object)
      symbol = string_or_symbol!(object, 'snake_case')
      text = object.to_s
                   .gsub(/([A-Z]+)([A-Z][a-z])/, '\1_\2')
                   .gsub(/([a-z\d])([A-Z])/, '\1_\2')
                   .tr('-', '_')
                   .gsub(/\s/, '_')
                   .squeeze('_')
                   .downcase
      symbol ? text.to_sym : text
    end

    # 'foo_bar' / 'fooBar' / 'foo-bar' / :foo_bar → 'FooBar' / :FooBar. The
    # word boundaries are found by snake_case first, as pwshlib 2.x does, so
    # camelCase and kebab-case give the same as snake_case.
    def pascal_case(object)
      symbol = string_or_symbol!(object, 'pascal_case')
      text = snake_case(object.to_s).split('_').map(&:capitalize).join
      symbol ? text.to_sym : text
    end

    def snake_case_hash_keys(object)
      apply_key_mutator(object, method(:snake_case))
    end

    def pascal_case_hash_keys(object)
      apply_key_mutator(object, method(:pascal_case))
    end

    def symbolize_hash_keys(object)
      apply_key_mutator(object, ->(key) { key.respond_to?(:to_sym) ? key.to_sym : key })
    end

    # Applies `mutator` to every hash key, recursively through hashes and arrays.
    def apply_key_mutator(object, mutator)
      case object
      when Array then object.map { |item| apply_key_mutator(item, mutator) }
      when Hash then object.to_h { |key, value| [mutator.call(key), apply_key_mutator(value, mutator)] }
      else object
      end
    end

    # Doubles every single-quote character (including the typographic ones
    # PowerShell also treats as quotes), for use inside '…'.
    def escape_quotes(text)
      Pwshlib.escape_quotes(text.to_s)
    end

    # A Ruby value as a PowerShell literal. Scalars follow the provider's
    # rules (pwshlib_core::literal, through Pwshlib.powershell_literal); as
    # in pwshlib 2.x a Symbol is written bare (:true/:false as booleans) and
    # hash keys are written as values, so quoted.
    def format_powershell_value(object)
      case object
      when :true then '$true' # rubocop:disable Lint/BooleanSymbol
      when :false then '$false' # rubocop:disable Lint/BooleanSymbol
      when Symbol then object.to_s
      when nil, true, false, Numeric, String then Pwshlib.powershell_literal(object)
      when Array then "@(#{object.map { |item| format_powershell_value(item) }.join(', ')})"
      when Hash
        "@{#{object.map { |k, v| "#{format_powershell_value(k)} = #{format_powershell_value(v)}" }.join('; ')}}"
      else
        raise ArgumentError, "unsupported type #{object.class} of value '#{object}'"
      end
    end

    # A calculated property for Select-Object.
    def custom_powershell_property(name, expression)
      "@{Name = '#{escape_quotes(name)}'; Expression = {#{expression}}}"
    end

    def string_or_symbol!(object, caller_name)
      return object.is_a?(Symbol) if object.is_a?(Symbol) || object.is_a?(String)

      raise ArgumentError, "#{caller_name} only handles strings and symbols, passed a #{object.class}: #{object}"
    end
    private_class_method :string_or_symbol!
  end
end
