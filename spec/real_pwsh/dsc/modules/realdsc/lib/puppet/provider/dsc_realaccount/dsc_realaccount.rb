# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realaccount type using the Resource API.
class Puppet::Provider::DscRealaccount::DscRealaccount < Puppet::Provider::DscBaseProvider
end
