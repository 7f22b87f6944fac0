# frozen_string_literal: true

require 'puppet/resource_api'

Puppet::ResourceApi.register_type(
  name: 'dsc_realaudited',
  dscmeta_resource_friendly_name: 'RealAudited',
  dscmeta_resource_name: 'RealAudited',
  dscmeta_resource_implementation: 'Class',
  dscmeta_module_name: 'PwshlibRealDsc',
  dscmeta_module_version: '1.0.0',
  docs: 'The DSC RealAudited resource type. ResourceBase style: the real state, Reasons when it differs. Automatically generated from version 1.0.0',
  features: ['simple_get_filter', 'canonicalize', 'custom_insync'],
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
    dsc_value: {
      type: "Optional[String]",
      desc: 'The value.',
      mandatory_for_get: false,
      mandatory_for_set: false,
      mof_type: 'String',
      mof_is_embedded: false,
    },
    dsc_reasons: {
      type: "Optional[Array[Struct[{ code => Optional[String], phrase => Optional[String] }]]]",
      desc: 'Why it is not in the desired state.',
      behaviour: :read_only,
      mandatory_for_get: false,
      mandatory_for_set: false,
      mof_type: 'RealReason[]',
      mof_is_embedded: true,
    },
  },
)
