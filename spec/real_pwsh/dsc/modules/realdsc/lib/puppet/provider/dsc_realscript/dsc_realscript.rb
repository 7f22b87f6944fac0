# frozen_string_literal: true

require 'puppet/provider/dsc_base_provider/dsc_base_provider'

# Implementation for the dsc_realscript type using the Resource API.
class Puppet::Provider::DscRealscript::DscRealscript < Puppet::Provider::DscBaseProvider
end
