# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realscoped type using the Resource API.
class Puppet::Provider::DscRealscoped::DscRealscoped < Puppet::Provider::DscBaseProvider
end
