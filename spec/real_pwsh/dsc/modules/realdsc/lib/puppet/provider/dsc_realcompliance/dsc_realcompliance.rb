# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realcompliance type using the Resource API.
class Puppet::Provider::DscRealcompliance::DscRealcompliance < Puppet::Provider::DscBaseProvider
end
