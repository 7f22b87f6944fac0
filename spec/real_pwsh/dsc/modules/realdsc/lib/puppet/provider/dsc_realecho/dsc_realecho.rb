# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realecho type using the Resource API.
class Puppet::Provider::DscRealecho::DscRealecho < Puppet::Provider::DscBaseProvider
end
