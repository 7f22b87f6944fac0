# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realreport type using the Resource API.
class Puppet::Provider::DscRealreport::DscRealreport < Puppet::Provider::DscBaseProvider
end
