# frozen_string_literal: true

module Pwsh
  VERSION = '0.1.0'
end
