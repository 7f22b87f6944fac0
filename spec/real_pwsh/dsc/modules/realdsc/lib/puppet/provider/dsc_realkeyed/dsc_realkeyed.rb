# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realkeyed type using the Resource API.
class Puppet::Provider::DscRealkeyed::DscRealkeyed < Puppet::Provider::DscBaseProvider
end
