# frozen_string_literal: true

require 'spec_helper'

# The generated Invoke-DscResource script, through the pwshlib 2.x method
# surface, with real Puppet 7, the real Resource API and the fixture types.
RSpec.describe Puppet::Provider::DscBaseProvider do
  subject(:provider) { described_class.new }

  def context_for(type_name)
    definition = Puppet::Type.type(type_name).type_definition.definition
    Puppet::ResourceApi::PuppetContext.new(definition)
  end

  def sensitive(value)
    Puppet::Pops::Types::PSensitiveType::Sensitive.new(value)
  end

  def script_for(type_name, should, method)
    resource = provider.invocable_resource(should, context_for(type_name), method)
    provider.ps_script_content(resource)
  end

  def line_starting(script, start)
    script.lines.map(&:chomp).find { |l| l.start_with?(start) } or raise "no #{start} line in:\n#{script}"
  end

  def invoke_params_line(script)
    line_starting(provider.remove_secret_identifiers(script), '$InvokeParams = @{')
  end

  let(:dsc_vendored) { File.join(FIXTURE_MODULE_LIB, 'puppet_x', 'pwshlibfixturedsc', 'dsc_resources') }
  let(:class_vendored) { File.join(FIXTURE_MODULE_LIB, 'puppet_x', 'pwshlibfixtureclass', 'dsc_resources') }
  let(:psd1) { "#{dsc_vendored}/PwshlibFixtureDsc/PwshlibFixtureDsc.psd1" }

  describe 'a plain ensurable resource (dsc_fixturefile)' do
    let(:should) do
      {
        name: 'hosts file',
        validation_mode: 'property',
        dsc_destinationpath: "C:\\Windows\\it's here",
        dsc_ensure: 'Present',
        dsc_contents: 'hello',
        dsc_force: true,
        dsc_attributes: %w[Hidden ReadOnly],
        dsc_timeout: 60,
      }
    end

    it 'builds the 2.x invocable resource hash' do
      resource = provider.invocable_resource(should, context_for(:dsc_fixturefile), 'get')
      expect(resource).to include(
        name: 'dsc_fixturefile',
        dscmeta_resource_friendly_name: 'FixtureFile',
        dscmeta_resource_name: 'MSFT_FixtureFile',
        dscmeta_resource_implementation: 'MOF',
        dscmeta_module_name: 'PwshlibFixtureDsc',
        dscmeta_module_version: '1.2.0',
        dsc_invoke_method: 'get',
        vendored_modules_path: dsc_vendored
      )
      expect(resource[:parameters].keys).to eq(%i[dsc_destinationpath dsc_ensure dsc_contents dsc_force dsc_attributes])
      expect(resource[:parameters][:dsc_destinationpath]).to eq(
        value: "C:\\Windows\\it's here", mof_type: 'String', mof_is_embedded: false
      )
    end

    it 'passes the desired state to Get, as to Set and Test' do
      expect(invoke_params_line(script_for(:dsc_fixturefile, should, 'get'))).to eq(
        "$InvokeParams = @{Name = 'FixtureFile'; Method = 'Get'; Property = @{destinationpath = 'C:\\Windows\\it''s here'; " \
        "ensure = 'Present'; contents = 'hello'; force = $true; attributes = @('Hidden', 'ReadOnly')}; " \
        "ModuleName = @{ModuleName = '#{psd1}'; RequiredVersion = '1.2.0'}}"
      )
    end

    it 'passes the whole desired state to the Get of an absent desired state' do
      expect(invoke_params_line(script_for(:dsc_fixturefile, should.merge(dsc_ensure: 'absent'), 'get'))).to eq(
        "$InvokeParams = @{Name = 'FixtureFile'; Method = 'Get'; Property = @{destinationpath = 'C:\\Windows\\it''s here'; " \
        "ensure = 'absent'; contents = 'hello'; force = $true; attributes = @('Hidden', 'ReadOnly')}; " \
        "ModuleName = @{ModuleName = '#{psd1}'; RequiredVersion = '1.2.0'}}"
      )
    end

    it 'passes every dsc_ property to Set and Test, leaving out dsc_timeout and the parameters' do
      %w[Set Test].each do |method|
        line = invoke_params_line(script_for(:dsc_fixturefile, should, method.downcase))
        expect(line).to include(
          "Method = '#{method}'; Property = @{destinationpath = 'C:\\Windows\\it''s here'; ensure = 'Present'; " \
          "contents = 'hello'; force = $true; attributes = @('Hidden', 'ReadOnly')}"
        )
        expect(line).not_to include('timeout')
        expect(line).not_to include('validation_mode')
        expect(line).not_to include('psdscrunascredential')
      end
    end

    it 'has the documented shape: the prelude (helpers), then header, parameters and the call' do
      script = provider.remove_secret_identifiers(script_for(:dsc_fixturefile, should, 'set'))
      prelude = PWSHLIB_PRELUDE
      expect(script).to start_with(prelude)
      body = script.delete_prefix(prelude)
      expect(body).to start_with("$script:ErrorActionPreference = 'Stop'\n")
      expect(body).not_to include('function ')
      positions = ['function New-PsCredential', 'Invoke-DscResource @InvokeParams', "$script:ErrorActionPreference = 'Stop'",
                   '$InvokeParams = @{', 'Invoke-PwshlibDscResource -InvokeParams $InvokeParams'].map { |needle| script.index(needle) }
      expect(positions).to all(be_an(Integer))
      expect(positions).to eq(positions.sort)
      # Every resource puts its vendored folder on PSModulePath:
      # the call carries it, and the prelude restores the
      # machine-level value in its own finally.
      munge = " -VendoredPath '#{dsc_vendored}'"
      expect(provider.munge_psmodulepath(provider.invocable_resource(should, context_for(:dsc_fixturefile), 'set'))).to eq(munge)
      expect(body).to end_with("Invoke-PwshlibDscResource -InvokeParams $InvokeParams#{munge}\n")
      expect(body).not_to include('try {')
    end

    it 'embeds the shipped prelude verbatim' do
      script = provider.remove_secret_identifiers(script_for(:dsc_fixturefile, should, 'get'))
      template = PWSHLIB_PRELUDE
      expect(script).to include(template)
    end
  end

  describe 'a Class-based resource (dsc_fixtureclassresource)' do
    let(:should) { { name: 'setting', dsc_name: 'setting', dsc_ensure: 'Present', dsc_value: 'v' } }
    let(:resource) { provider.invocable_resource(should, context_for(:dsc_fixtureclassresource), 'set') }

    it 'names the module and version without a path' do
      expect(invoke_params_line(provider.ps_script_content(resource))).to end_with(
        "ModuleName = @{ModuleName = 'PwshlibFixtureClass'; RequiredVersion = '0.3.1'}}"
      )
    end

    it 'hands the vendored path to the call, which adds it to PSModulePath and restores it' do
      script = provider.remove_secret_identifiers(provider.ps_script_content(resource))
      munge = " -VendoredPath '#{class_vendored}'"
      expect(provider.munge_psmodulepath(resource)).to eq(munge)
      expect(script).to end_with("}}\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams#{munge}\n")
      expect(script).not_to include('-PSModulePathRestore')
    end
  end

  describe 'a PSCredential (dsc_fixtureuser)' do
    let(:should) do
      {
        name: 'bob',
        dsc_username: 'bob',
        dsc_ensure: 'Present',
        dsc_password: { 'user' => 'bob', 'password' => sensitive("s3cr'et‘pw") },
        dsc_psdscrunascredential: { 'user' => 'DOMAIN\\admin', 'password' => sensitive('runas-secret') },
      }
    end

    it 'builds each credential into a variable that the parameters reference' do
      real = provider.remove_secret_identifiers(script_for(:dsc_fixtureuser, should, 'set'))
      creds = real.lines.map(&:chomp).grep(/\A\$cred_/)
      expect(creds.size).to eq(2)
      expect(creds[0]).to match(/\A\$(cred_\h{32}) = New-PsCredential -User 'DOMAIN\\admin' -Password 'runas-secret'\z/)
      expect(creds[1]).to match(/\A\$(cred_\h{32}) = New-PsCredential -User 'bob' -Password 's3cr''et‘‘pw'\z/)
      runas = creds[0][/\A\$(cred_\h{32})/, 1]
      password = creds[1][/\A\$(cred_\h{32})/, 1]
      expect(invoke_params_line(real)).to include(
        "Property = @{psdscrunascredential = $#{runas}; username = 'bob'; ensure = 'Present'; password = $#{password}}"
      )
    end

    it 'passes the run-as credential to Get as well, but not a nil one' do
      line = invoke_params_line(script_for(:dsc_fixtureuser, should, 'get'))
      expect(line).to match(/Property = @\{psdscrunascredential = \$cred_\h{32}; username = 'bob'; ensure = 'Present'; password = \$cred_\h{32}\}/)
      absent = should.merge(dsc_ensure: 'Absent')
      line = invoke_params_line(script_for(:dsc_fixtureuser, absent, 'get'))
      expect(line).to match(/Property = @\{psdscrunascredential = \$cred_\h{32}; username = 'bob'; ensure = 'Absent'; password = \$cred_\h{32}\}/)
      line = invoke_params_line(script_for(:dsc_fixtureuser, absent.merge(dsc_psdscrunascredential: nil), 'get'))
      expect(line).to match(/Property = @\{username = 'bob'; ensure = 'Absent'; password = \$cred_\h{32}\}/)
    end

    it 'hands Get the password as Set gets it, never shown' do
      redacted = provider.redact_secrets(script_for(:dsc_fixtureuser, should, 'get'))
      expect(redacted).not_to include('s3cr')
      expect(redacted).not_to include('runas-secret')
      expect(redacted.scan("-Password '#<Sensitive [value redacted]>'").size).to eq(2)
      real = provider.remove_secret_identifiers(script_for(:dsc_fixtureuser, should, 'get'))
      expect(real).to include("-User 'bob' -Password 's3cr''et‘‘pw'")
    end

    it 'never shows the passwords in the redacted rendering' do
      redacted = provider.redact_secrets(script_for(:dsc_fixtureuser, should, 'set'))
      expect(redacted).not_to include('s3cr')
      expect(redacted).not_to include('runas-secret')
      expect(redacted.scan("-Password '#<Sensitive [value redacted]>'").size).to eq(2)
      expect(redacted).to include("-User 'DOMAIN\\admin'")
    end

    it 'keeps the section methods consistent with the whole script' do
      resource = provider.invocable_resource(should, context_for(:dsc_fixtureuser), 'set')
      credentials = provider.prepare_credentials(resource)
      expect(provider.redact_secrets(credentials)).not_to include('runas-secret')
      expect(provider.remove_secret_identifiers(credentials)).to include("-Password 'runas-secret'")
      expect(provider.prepare_cim_instances(resource)).to eq('')
    end
  end

  # The script builder reads secrecy from the attribute's type, so a plain
  # String given for a Sensitive-typed attribute comes back from the 2.x
  # helper wrapped, and is redacted like a wrapped one (the wire keeps it).
  describe 'a plain value of a Sensitive-typed attribute (dsc_fixturevault)' do
    let(:should) { { name: 'v', dsc_vaultname: 'v', dsc_secret: 'plain-vault-secret' } }

    it 'is a Sensitive parameter of the invocable resource, hidden by redact_secrets' do
      resource = provider.invocable_resource(should, context_for(:dsc_fixturevault), 'set')
      value = resource[:parameters][:dsc_secret][:value]
      expect(value).to be_a(Puppet::Pops::Types::PSensitiveType::Sensitive)
      expect(value.unwrap).to eq('plain-vault-secret')
      script = provider.ps_script_content(resource)
      expect(provider.redact_secrets(script)).not_to include('plain-vault-secret')
      real = provider.remove_secret_identifiers(script)
      variable = real[/\bsecret = \$(secret_\h{32})/, 1]
      expect(real).to include("\n$#{variable} = 'plain-vault-secret'\n")
    end
  end

  describe 'nested CIM instance arrays (dsc_fixturewebsite)' do
    let(:should) do
      {
        name: 'site',
        dsc_name: 'site',
        dsc_ensure: 'Present',
        dsc_bindinginfo: [
          {
            'protocol' => 'https',
            'port' => 443,
            'certificatesubjects' => ['CN=a', 'CN=b'],
            'authentication' => { 'cim_instance_type' => 'MSFT_FixtureAuthentication', 'anonymous' => false, 'basic' => true },
          },
          { 'protocol' => 'http', 'port' => 80, 'hostname' => sensitive('hidden.example') },
        ],
      }
    end

    it 'builds nested instances first and passes the array as [CimInstance[]]' do
      real = provider.remove_secret_identifiers(script_for(:dsc_fixturewebsite, should, 'set'))
      cims = real.lines.map(&:chomp).grep(/\A\$cim_/)
      expect(cims.size).to eq(3)
      auth, first, second = cims.map { |l| l[/\A\$(cim_\d+)/, 1] }
      expect(cims[0]).to eq(
        "$#{auth} = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureAuthentication' -Property @{anonymous = $false; basic = $true}"
      )
      expect(cims[1]).to eq(
        "$#{first} = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureBindingInformation' " \
        "-Property @{protocol = 'https'; port = 443; certificatesubjects = @('CN=a', 'CN=b'); authentication = $#{auth}}"
      )
      # A Sensitive member is a variable the host binds.
      hidden = cims[2][/hostname = \$(secret_\h{32})/, 1]
      expect(cims[2]).to eq(
        "$#{second} = New-CimInstance -ClientOnly -ClassName 'MSFT_FixtureBindingInformation' " \
        "-Property @{protocol = 'http'; port = 80; hostname = $#{hidden}}"
      )
      expect(real).to include("\n$#{hidden} = 'hidden.example'\n")
      expect(invoke_params_line(real)).to include("bindinginfo = [CimInstance[]]@($#{first}, $#{second})")
    end

    it 'redacts a Sensitive value inside an instance' do
      redacted = provider.redact_secrets(script_for(:dsc_fixturewebsite, should, 'set'))
      expect(redacted).not_to include('hidden.example')
      hidden = redacted[/hostname = \$(secret_\h{32})/, 1]
      expect(redacted).to include("\n$#{hidden} = '#<Sensitive [value redacted]>'\n")
    end

    # What New-CimInstance -Property cannot take never
    # reaches it.
    it 'leaves nil members out, builds a nested credential as MSFT_Credential, refuses a plain hash' do
      nested = { 'protocol' => 'http', 'port' => 80, 'hostname' => nil,
                 'login' => { 'user' => 'svc', 'password' => sensitive('pw-secret-1') } }
      script = script_for(:dsc_fixturewebsite, should.merge(dsc_bindinginfo: [nested]), 'set')
      cims = provider.remove_secret_identifiers(script).lines.map(&:chomp).grep(/\A\$cim_/)
      expect(cims.size).to eq(2)
      login = cims[0][/\A\$(cim_\d+)/, 1]
      # Made from the PSCredential the host binds: no command is
      # handed the password as a string.
      credential = cims[0][/-Credential \$(cred_\h{32})\z/, 1]
      expect(cims[0]).to end_with("= New-PwshlibCredentialInstance -Credential $#{credential}")
      expect(provider.remove_secret_identifiers(script))
        .to include("\n$#{credential} = New-PsCredential -User 'svc' -Password 'pw-secret-1'\n")
      expect(cims[1]).to end_with("-Property @{protocol = 'http'; port = 80; login = $#{login}}")
      expect(provider.redact_secrets(script)).not_to include('pw-secret-1')

      plain = { 'protocol' => 'http', 'settings' => { 'mode' => 'fast' } }
      resource = provider.invocable_resource(should.merge(dsc_bindinginfo: [plain]), context_for(:dsc_fixturewebsite), 'set')
      expect { provider.ps_script_content(resource) }.to raise_error(/dsc_bindinginfo\.settings: .*plain hashtable/)
    end

    it 'passes an empty instance array typed' do
      line = invoke_params_line(script_for(:dsc_fixturewebsite, should.merge(dsc_bindinginfo: []), 'set'))
      expect(line).to include('bindinginfo = [CimInstance[]]@()')
    end
  end

  describe 'a DateTime (dsc_fixtureschedule)' do
    it 'casts the Timestamp as ISO-8601 text' do
      should = {
        name: 'nightly', dsc_name: 'nightly', dsc_ensure: 'Present', dsc_repeatintervalminutes: 4_294_967_295,
        dsc_starttime: Puppet::Pops::Time::Timestamp.parse('2024-02-29T13:45:00.5+02:00')
      }
      line = invoke_params_line(script_for(:dsc_fixtureschedule, should, 'set'))
      expect(line).to include("starttime = [DateTime]'2024-02-29T11:45:00.500Z'; repeatintervalminutes = 4294967295")
    end
  end

  describe 'an empty array (dsc_fixtureregistry)' do
    it 'is typed with its mof_type' do
      should = { name: 'k', dsc_key: 'HKLM:\\Software\\X', dsc_valuename: 'v', dsc_valuedata: [], dsc_timeout: 5 }
      line = invoke_params_line(script_for(:dsc_fixtureregistry, should, 'set'))
      expect(line).to include("Property = @{key = 'HKLM:\\Software\\X'; valuename = 'v'; valuedata = [string[]]@()}")
    end

    it 'passes a key that is mandatory for get but not a namevar to a keys-only Get' do
      should = { name: 'k', dsc_key: 'HKLM:\\Software\\X', dsc_valuename: 'v' }
      line = invoke_params_line(script_for(:dsc_fixtureregistry, should, 'get'))
      expect(line).to include("Property = @{key = 'HKLM:\\Software\\X'; valuename = 'v'}")
    end
  end

  describe 'dsc_timeout (dsc_fixtureservice)' do
    it 'is left out of Property for every method' do
      should = { name: 'svc', dsc_name: 'svc', dsc_state: 'Running', dsc_timeout: 600 }
      %w[get set test].each do |method|
        line = invoke_params_line(script_for(:dsc_fixtureservice, should, method))
        expect(line).not_to include('timeout')
        expect(line).not_to include('600')
      end
    end
  end

  describe 'the vendored module path' do
    it 'is found through the load path' do
      expect(provider.vendored_modules_path('PwshlibFixtureDsc')).to eq(dsc_vendored)
    end

    it 'raises a clear error naming the module and the folders searched' do
      allow(provider).to receive(:load_path).and_return(['/nonexistent/lib'])
      expect { provider.vendored_modules_path('PwshlibFixtureDsc') }.to raise_error(
        Puppet::Error, %r{'PwshlibFixtureDsc'.*/nonexistent/lib/puppet_x/pwshlibfixturedsc/dsc_resources}
      )
      expect { provider.invocable_resource({ dsc_destinationpath: 'x' }, context_for(:dsc_fixturefile), 'get') }
        .to raise_error(Puppet::Error, /PwshlibFixtureDsc/)
    end

    it 'uses an overridden vendored_modules_path' do
      allow(provider).to receive(:vendored_modules_path).with('PwshlibFixtureDsc').and_return('C:/custom')
      resource = provider.invocable_resource({ dsc_destinationpath: 'x' }, context_for(:dsc_fixturefile), 'get')
      expect(invoke_params_line(provider.ps_script_content(resource)))
        .to include("ModuleName = 'C:/custom/PwshlibFixtureDsc/PwshlibFixtureDsc.psd1'")
    end

    it 'load_path is $LOAD_PATH' do
      expect(provider.load_path).to equal($LOAD_PATH)
    end
  end

  describe 'literal helpers' do
    it 'escapes every PowerShell quote character' do
      expect(provider.escape_quotes("it's ‘a’ ‚b‛")).to eq("it''s ‘‘a’’ ‚‚b‛‛")
    end

    it 'formats every value kind' do
      value = {
        'text' => "it's", 'int' => -3, 'big' => 2**80, 'float' => 1.5, 'yes' => true, 'no' => false, 'nil' => nil,
        'list' => [1, 'a'], 'empty' => [], 'needs quoting' => { 'x' => 1 },
        'when' => Puppet::Pops::Time::Timestamp.parse('2024-01-02T03:04:05Z')
      }
      expect(provider.format(value)).to eq(
        "@{text = 'it''s'; int = -3; big = 1208925819614629174706176; float = 1.5; yes = $true; no = $false; nil = $null; " \
        "list = @(1, 'a'); empty = @(); 'needs quoting' = @{x = 1}; when = [DateTime]'2024-01-02T03:04:05Z'}"
      )
    end

    it 'formats Sensitive values as marked text that both renderings understand' do
      formatted = provider.format(['public', sensitive("pa'ss")])
      expect(formatted).not_to eq("@('public', 'pa''ss')")
      expect(provider.remove_secret_identifiers(formatted)).to eq("@('public', 'pa''ss')")
      expect(provider.redact_secrets(formatted)).to eq("@('public', '#<Sensitive [value redacted]>')")
    end

    it 'leaves text without markers alone' do
      expect(provider.redact_secrets("$x = 'y'")).to eq("$x = 'y'")
      expect(provider.remove_secret_identifiers("$x = 'y'")).to eq("$x = 'y'")
    end

    it 'unwraps Sensitive values at any depth' do
      expect(provider.unwrap({ 'a' => [sensitive('x'), { 'b' => sensitive(sensitive('y')) }] }))
        .to eq({ 'a' => ['x', { 'b' => 'y' }] })
    end

    # ASCII text is copied as it is (Ruby knows it is ASCII); the rest is
    # read as text in its own encoding, and bytes that are not are replaced.
    it 'reads Strings and Symbols in any encoding as the same text' do
      cafe = "caf\u00e9"
      {
        'abc'.encode('US-ASCII') => "'abc'", 'abc'.b => "'abc'", 'abc'.encode('UTF-16LE') => "'abc'",
        cafe.encode('ISO-8859-1') => "'caf\u00e9'", cafe => "'caf\u00e9'", cafe.b => "'caf\u00e9'",
        'abc'.encode('UTF-16LE').to_sym => "'abc'", cafe.to_sym => "'caf\u00e9'", :sym => "'sym'",
        "a\xffb".b.force_encoding('UTF-8') => "'a\uFFFDb'"
      }.each do |value, literal|
        expect([value, provider.format(value)]).to eq([value, literal])
      end
    end

    it 'refuses a value that cannot be passed, naming it' do
      expect { provider.format({ 'bad' => "nul\0" }) }.to raise_error(Puppet::Error, /value\.bad/)
      expect { provider.format(Object.new) }.to raise_error(Puppet::Error, /Object/)
    end
  end

  describe 'names and attributes' do
    let(:context) { context_for(:dsc_fixtureregistry) }

    it 'puppetizes module names' do
      expect(provider.puppetize_name('PowerShellGet')).to eq('powershellget')
      expect(provider.puppetize_name('xWeb-Admin')).to eq('xweb_admin')
      expect(provider.puppetize_name('7Zip')).to eq('a7zip')
    end

    it 'makes fresh variable names PowerShell accepts' do
      names = Array.new(3) { provider.random_variable_name }
      expect(names).to all(match(/\A[a-z_][a-z0-9_]*\z/))
      expect(names.uniq.size).to eq(3)
    end

    it 'lists attributes by role' do
      expect(provider.mandatory_get_attributes(context)).to eq(%i[dsc_key dsc_valuename])
      expect(provider.mandatory_set_attributes(context)).to eq(%i[dsc_key dsc_valuename])
      expect(provider.namevar_attributes(context)).to eq(%i[name dsc_key])
      expect(provider.parameter_attributes(context)).to eq(%i[validation_mode dsc_psdscrunascredential dsc_timeout])
      expect(provider.enum_attributes(context)).to eq(%i[validation_mode dsc_ensure dsc_valuetype])
    end

    it 'lists enum values' do
      expect(provider.enum_values(context, :dsc_ensure)).to eq(%w[Present present Absent absent])
      expect(provider.enum_values(context, :dsc_key)).to eq([])
      expect(provider.enum_values(context, :no_such_attribute)).to eq([])
    end
  end

  # Run again under GC.stress (`--tag gc_stress`): each example crosses the
  # native conversions both ways with nested Sensitive values, CIM instances
  # and Timestamps. Inputs and expected results are made in before(:all),
  # outside the stress window, because Puppet itself is slow under GC.stress.
  describe 'native conversions', :gc_stress do
    before(:all) do
      secret = Puppet::Pops::Types::PSensitiveType::Sensitive
      @provider = described_class.new
      @website = Puppet::ResourceApi::PuppetContext.new(Puppet::Type.type(:dsc_fixturewebsite).type_definition.definition)
      @should = {
        name: 'site', dsc_name: 'site', dsc_ensure: 'Present',
        dsc_psdscrunascredential: { 'user' => 'admin', 'password' => secret.new("gc'secret") },
        dsc_bindinginfo: [
          { 'protocol' => 'https', 'hostname' => secret.new('gc-host'),
            'authentication' => { 'cim_instance_type' => 'MSFT_FixtureAuthentication', 'basic' => true } },
        ]
      }
      @resource = @provider.invocable_resource(@should, @website, 'set')
      @value = { 'list' => ['a', secret.new(['x', { 'k' => secret.new('gc-deep') }])],
                 'when' => Puppet::Pops::Time::Timestamp.parse('2024-01-02T03:04:05Z'), 'big' => 2**70 }
      @unwrapped = { 'list' => ['a', ['x', { 'k' => 'gc-deep' }]], 'when' => @value['when'], 'big' => 2**70 }
      @formatted = "@{list = @('a', @('x', @{'k' = 'gc-deep'})); when = [DateTime]'2024-01-02T03:04:05Z'; big = 1180591620717411303424}"
    end

    it 'builds the same invocable resource' do
      expect(@provider.invocable_resource(@should, @website, 'set')).to eq(@resource)
    end

    it 'builds the script from it, with the secrets in the real text only' do
      script = @provider.ps_script_content(@resource)
      real = @provider.remove_secret_identifiers(script)
      redacted = @provider.redact_secrets(script)
      expect([real.include?("-Password 'gc''secret'"), real.include?(" = 'gc-host'\n")]).to eq([true, true])
      expect([redacted.include?('gc'), redacted.include?('gc-host')]).to eq([false, false])
    end

    it 'formats and unwraps nested Sensitive values and Timestamps' do
      formatted = @provider.format(@value)
      expect(@provider.remove_secret_identifiers(formatted)).to eq(@formatted)
      expect(@provider.redact_secrets(formatted).include?('gc-deep')).to be(false)
      expect(@provider.unwrap(@value)).to eq(@unwrapped)
    end

    it 'reads the type definition out of the context' do
      expect(@provider.enum_values(@website, :dsc_ensure)).to eq(%w[Present present Absent absent])
    end
  end

  describe 'a scaffolded provider subclass' do
    it 'inherits the methods unchanged' do
      require 'puppet/provider/dsc_fixturefile/dsc_fixturefile'
      subclass = Puppet::Provider::DscFixturefile::DscFixturefile
      expect(subclass.new.puppetize_name('A-B')).to eq('a_b')
    end
  end
end
