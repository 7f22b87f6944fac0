# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realtask type using the Resource API.
class Puppet::Provider::DscRealtask::DscRealtask < Puppet::Provider::DscBaseProvider
end
