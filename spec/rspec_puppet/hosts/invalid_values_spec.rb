# frozen_string_literal: true

require_relative '../spec_helper_puppet'

# Each invalid value must make the catalogue fail, with an error naming the
# offending attribute. Each case starts from a valid resource, so the only
# reason to fail is the one bad value.
describe 'invalid.example.com', type: :host do
  valid = {
    'dsc_fixturefile' => { 'dsc_destinationpath' => "'C:/t.txt'", 'dsc_ensure' => "'Present'" },
    'dsc_fixtureclassresource' => { 'dsc_name' => "'S'", 'dsc_ensure' => "'Present'" },
    'dsc_fixtureuser' => { 'dsc_username' => "'bob'", 'dsc_ensure' => "'Present'" },
    'dsc_fixturewebsite' => { 'dsc_name' => "'W'", 'dsc_ensure' => "'Present'" },
    'dsc_fixtureschedule' => { 'dsc_name' => "'T'", 'dsc_ensure' => "'Present'" },
    'dsc_fixtureregistry' => { 'dsc_key' => "'HKLM:/S'", 'dsc_valuename' => "'V'", 'dsc_ensure' => "'Present'" },
    'dsc_fixtureservice' => { 'dsc_name' => "'svc'" },
  }

  def self.manifest(type, attributes)
    body = attributes.map { |name, value| "  #{name} => #{value}," }.join("\n")
    "#{type} { 'under-test':\n#{body}\n}"
  end

  valid.each do |type, attributes|
    context "a valid #{type}" do
      let(:pre_condition) { self.class.manifest(type, attributes) }

      it { is_expected.to compile.with_all_deps }
    end
  end

  cases = [
    ['dsc_fixturefile', 'dsc_ensure', "'maybe'", /dsc_ensure/],
    ['dsc_fixturefile', 'dsc_type', "'Symlink'", /dsc_type/],
    ['dsc_fixturefile', 'dsc_force', "'yes please'", /dsc_force/],
    ['dsc_fixturefile', 'dsc_attributes', '[1, 2]', /dsc_attributes/],
    ['dsc_fixturefile', 'dsc_contents', '[]', /dsc_contents/],
    ['dsc_fixturefile', 'validation_mode', "'sometimes'", /validation_mode/],
    ['dsc_fixturefile', 'dsc_timeout', '0', /dsc_timeout/],
    ['dsc_fixturefile', 'dsc_timeout', '1209601', /dsc_timeout/],
    ['dsc_fixturefile', 'dsc_no_such_property', "'x'", /dsc_no_such_property/],
    ['dsc_fixturefile', 'dsc_psdscrunascredential', "{ 'user' => 'u' }", /dsc_psdscrunascredential/],
    ['dsc_fixturefile', 'dsc_psdscrunascredential', "{ 'user' => '', 'password' => Sensitive('p') }", /dsc_psdscrunascredential/],
    ['dsc_fixtureclassresource', 'dsc_value', '42', /dsc_value/],
    ['dsc_fixtureuser', 'dsc_password', "{ 'user' => 'bob' }", /dsc_password/],
    ['dsc_fixtureuser', 'dsc_password', "{ 'user' => 'bob', 'password' => Sensitive('p'), 'domain' => 'x' }", /dsc_password/],
    ['dsc_fixturewebsite', 'dsc_bindinginfo', "[{ 'protocol' => 'ftp' }]", /dsc_bindinginfo/],
    ['dsc_fixturewebsite', 'dsc_bindinginfo', "[{ 'protocol' => 'http', 'port' => 65536 }]", /dsc_bindinginfo/],
    ['dsc_fixturewebsite', 'dsc_bindinginfo', "[{ 'port' => 80 }]", /dsc_bindinginfo/],
    ['dsc_fixturewebsite', 'dsc_bindinginfo', "[{ 'protocol' => 'http', 'authentication' => { 'basic' => 'sure' } }]", /dsc_bindinginfo/],
    ['dsc_fixtureschedule', 'dsc_starttime', "'next tuesday'", /dsc_starttime/],
    ['dsc_fixtureschedule', 'dsc_repeatintervalminutes', '-1', /dsc_repeatintervalminutes/],
    ['dsc_fixtureschedule', 'dsc_repeatintervalminutes', '4294967296', /dsc_repeatintervalminutes/],
    ['dsc_fixtureregistry', 'dsc_valuetype', "'QWord'", /dsc_valuetype/],
    ['dsc_fixtureregistry', 'dsc_valuedata', "'not an array'", /dsc_valuedata/],
    ['dsc_fixturefile', 'dsc_checksum', "'abc123'", /dsc_checksum/],
    ['dsc_fixtureservice', 'dsc_displayname', "'Print Spooler'", /dsc_displayname/],
    ['dsc_fixtureservice', 'dsc_state', "'Paused'", /dsc_state/],
    ['dsc_fixtureservice', 'dsc_ensure', "'Present'", /dsc_ensure/],
  ]

  cases.each do |type, attribute, value, error|
    context "#{type} with #{attribute} => #{value}" do
      let(:pre_condition) { self.class.manifest(type, valid[type].merge(attribute => value)) }

      it { is_expected.to compile.and_raise_error(error) }
    end
  end
end
