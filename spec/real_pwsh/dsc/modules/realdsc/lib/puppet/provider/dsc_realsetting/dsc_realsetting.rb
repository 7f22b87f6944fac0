# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realsetting type using the Resource API.
class Puppet::Provider::DscRealsetting::DscRealsetting < Puppet::Provider::DscBaseProvider
end
