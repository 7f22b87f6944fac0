# frozen_string_literal: true

# The floor for `rake bench`: a Resource API provider that does no work.
# canonicalize is the identity and get answers from a Ruby hash, so a catalog
# of dsc_benchnoop resources costs what Puppet and the Resource API cost.
class Puppet::Provider::DscBenchnoop::DscBenchnoop
  # name => the resource as the system has it; filled by the bench. The
  # Resource API may load this file more than once: keep what is there.
  STATE = {} unless const_defined?(:STATE) # rubocop:disable Style/MutableConstant

  def canonicalize(_context, resources)
    resources
  end

  def get(_context, names = nil)
    return STATE.values if names.nil?

    names.map { |query| STATE.fetch(query.is_a?(Hash) ? query[:name] : query) }
  end

  # Only called for the type registered with custom_insync (the
  # `noop-insync` floor): nil leaves the comparison to Puppet, as a provider
  # with no opinion does.
  def insync?(_context, _name, _property_name, _is_hash, _should_hash)
    nil
  end

  def set(_context, _changes); end
end
