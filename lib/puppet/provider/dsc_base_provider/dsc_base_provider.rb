# frozen_string_literal: true

require 'puppet'
require 'puppet/provider'
require_relative '../../../pwshlib'
require_relative '../../../pwsh'

# Defines Puppet::Provider::DscBaseProvider natively (Rust). Scaffolded
# providers subclass it with an empty body.
Pwshlib.define_dsc_base_provider
