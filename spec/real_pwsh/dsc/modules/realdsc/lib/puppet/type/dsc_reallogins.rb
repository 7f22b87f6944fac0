# frozen_string_literal: true

require 'puppet/resource_api'

Puppet::ResourceApi.register_type(
  name: 'dsc_reallogins',
  dscmeta_resource_friendly_name: 'RealLogins',
  dscmeta_resource_name: 'MSFT_RealLogins',
  dscmeta_resource_implementation: 'MOF',
  dscmeta_module_name: 'PwshlibRealDsc',
  dscmeta_module_version: '1.0.0',
  docs: 'The DSC RealLogins resource type. A PSCredential[] property. Automatically generated from version 1.0.0',
  features: %w[simple_get_filter canonicalize custom_insync],
  attributes: {
    name: {
      type: 'String',
      desc: 'Description of the purpose for this resource declaration.',
      behaviour: :namevar,
    },
    validation_mode: {
      type: 'Enum[property, resource]',
      desc: 'Whether to check if the resource is in the desired state by property (default) or using Invoke-DscResource in Test mode (resource).',
      behaviour: :parameter,
      default: 'property',
    },
    dsc_psdscrunascredential: {
      type: 'Optional[Struct[{ user => String[1], password => Sensitive[String[1]] }]]',
      desc: 'The credential to run the DSC resource as.',
      behaviour: :parameter,
      mandatory_for_get: false,
      mandatory_for_set: false,
      mof_type: 'PSCredential',
      mof_is_embedded: true,
    },
    dsc_timeout: {
      type: 'Optional[Integer[1, 1209600]]',
      desc: 'The maximum time in seconds to wait for the DSC resource to complete.',
      behaviour: :parameter,
      mandatory_for_get: false,
      mandatory_for_set: false,
      mof_type: 'UInt32',
      mof_is_embedded: false,
    },
    dsc_name: {
      type: 'String',
      desc: 'The key.',
      behaviour: :namevar,
      mandatory_for_get: true,
      mandatory_for_set: true,
      mof_type: 'String',
      mof_is_embedded: false,
    },
    dsc_logins: {
      type: 'Optional[Array[Struct[{ user => String[1], password => Sensitive[String[1]] }]]]',
      desc: 'Credentials (PSCredential[]).',
      mandatory_for_get: false,
      mandatory_for_set: false,
      mof_type: 'PSCredential[]',
      mof_is_embedded: true,
    },
  }
)
