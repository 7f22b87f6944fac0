# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realshape type using the Resource API.
class Puppet::Provider::DscRealshape::DscRealshape < Puppet::Provider::DscBaseProvider
end
