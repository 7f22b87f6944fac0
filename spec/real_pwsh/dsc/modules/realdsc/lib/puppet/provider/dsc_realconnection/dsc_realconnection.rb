# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realconnection type using the Resource API.
class Puppet::Provider::DscRealconnection::DscRealconnection < Puppet::Provider::DscBaseProvider
end
