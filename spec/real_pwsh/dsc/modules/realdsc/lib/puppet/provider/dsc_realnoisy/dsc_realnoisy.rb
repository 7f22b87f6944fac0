# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realnoisy type using the Resource API.
class Puppet::Provider::DscRealnoisy::DscRealnoisy < Puppet::Provider::DscBaseProvider
end
