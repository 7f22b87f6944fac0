# frozen_string_literal: true

module Pwsh
  VERSION = '1.99.0'
end
