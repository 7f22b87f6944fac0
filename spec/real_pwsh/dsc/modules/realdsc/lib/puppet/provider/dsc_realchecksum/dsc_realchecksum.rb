# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realchecksum type using the Resource API.
class Puppet::Provider::DscRealchecksum::DscRealchecksum < Puppet::Provider::DscBaseProvider
end
