# frozen_string_literal: true

require_relative 'pwsh/version'
require_relative 'pwshlib'
