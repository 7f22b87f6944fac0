# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realvault type using the Resource API.
class Puppet::Provider::DscRealvault::DscRealvault < Puppet::Provider::DscBaseProvider
end
