# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_reallogins type using the Resource API.
class Puppet::Provider::DscReallogins::DscReallogins < Puppet::Provider::DscBaseProvider
end
