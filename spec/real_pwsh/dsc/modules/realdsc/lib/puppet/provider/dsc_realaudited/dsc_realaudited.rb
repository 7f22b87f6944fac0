# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realaudited type using the Resource API.
class Puppet::Provider::DscRealaudited::DscRealaudited < Puppet::Provider::DscBaseProvider
end
