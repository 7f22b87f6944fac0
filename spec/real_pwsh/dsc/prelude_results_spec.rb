# frozen_string_literal: true

require 'json'
require_relative '../spec_helper_real_pwsh'

# How the prelude's own functions write a Get's result (the definition that
# the host's compiled DirectResult follows, and what a host other than
# pwshlib's runs), on the real pwsh through Pwsh::Manager: enums by name
# wherever they are, a credential as its user alone, an instance of a
# PowerShell class (a class-based resource's nested object on PowerShell 7)
# like a CIM instance, with its class name.
RSpec.describe "the prelude's result functions, on the real pwsh" do
  include_context 'a manager on the real pwsh'

  def canonical(setup, result)
    body = "#{setup}\n$PwshlibTable = ConvertTo-PwshlibCanonicalResult -Result #{result}\n" \
           "ConvertTo-Json -InputObject $PwshlibTable -Compress -Depth 10\n"
    answer = manager.execute_with_prelude('dsc', body)
    expect(answer[:exitcode]).to eq(0), answer.inspect
    JSON.parse(answer[:stdout])
  end

  it 'writes enums as their names: alone, a [Flags] set, in an array, in a hashtable' do
    table = canonical('', "@{ Day = [System.DayOfWeek]::Monday; Flags = [System.IO.FileAttributes] 'ReadOnly, Hidden'; " \
                          'Days = @([System.DayOfWeek]::Friday, [System.DayOfWeek]::Sunday); Nested = @{ Day = [System.DayOfWeek]::Tuesday } }')
    expect(table).to eq('Day' => 'Monday', 'Flags' => 'ReadOnly, Hidden', 'Days' => %w[Friday Sunday], 'Nested' => { 'Day' => 'Tuesday' })
  end

  it 'writes a credential as its user alone, its password null' do
    table = canonical("$Secure = ([System.Net.NetworkCredential] @{ Password = 'not-shown' }).SecurePassword",
                      "@{ Login = [pscredential]::new('alice', $Secure) }")
    expect(table).to eq('Login' => { 'user' => 'alice', 'password' => nil })
  end

  it 'reads an instance of a PowerShell class like a CIM instance, its class name as cim_instance_type' do
    setup = "class PwshlibInner { [string] $Address; [System.DayOfWeek] $Day; [string[]] $Tags }\n" \
            "$Inner = [PwshlibInner] @{ Address = 'https://e0.example'; Day = 'Monday'; Tags = @('a', 'b') }"
    table = canonical(setup, '@{ Endpoints = @($Inner); One = $Inner; Ensure = $null }')
    inner = { 'Address' => 'https://e0.example', 'Day' => 'Monday', 'Tags' => %w[a b], 'cim_instance_type' => 'PwshlibInner' }
    # A missing Ensure reads Present: the resource was found.
    expect(table).to eq('Endpoints' => [inner], 'One' => inner, 'Ensure' => 'Present')
  end

  it 'makes embedded instances hashtables on PowerShell 7, and their arrays plain arrays' do
    body = "$One = New-PwshlibEmbeddedInstance -ClassName 'PwshlibInner' -Property @{ Address = 'x' }\n" \
           "$Many = New-PwshlibEmbeddedInstanceArray -Instances @($One)\n" \
           "'{0}|{1}|{2}|{3}' -f $One.GetType().Name, $One.Address, $Many.GetType().Name, $Many.Count\n"
    answer = manager.execute_with_prelude('dsc', body)
    expect(answer[:stdout]).to eq("Hashtable|x|Object[]|1\n"), answer.inspect
  end
end
