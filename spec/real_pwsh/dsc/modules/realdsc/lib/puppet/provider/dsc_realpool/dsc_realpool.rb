# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realpool type using the Resource API.
class Puppet::Provider::DscRealpool::DscRealpool < Puppet::Provider::DscBaseProvider
end
