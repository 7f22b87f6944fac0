# frozen_string_literal: true

require_relative '../spec_helper_puppet'

# A catalogue with one resource of each scaffolded fixture type, written the
# way a user writes them (Sensitive passwords, a Timestamp, nested CIM
# instances), compiles and turns into a RAL catalogue.
describe 'fixture.example.com', type: :host do
  let(:pre_condition) do
    <<~PUPPET
      $cred = { 'user' => 'CONTOSO\\svc', 'password' => Sensitive("p'a\\"ss") }
      dsc_fixturefile { 'readme':
        dsc_destinationpath      => 'C:\\\\Temp\\\\readme.txt',
        dsc_ensure               => 'present',
        dsc_contents             => 'hello',
        dsc_type                 => 'File',
        dsc_force                => true,
        dsc_attributes           => ['ReadOnly', 'Archive'],
        dsc_psdscrunascredential => $cred,
        dsc_timeout              => 30,
        validation_mode          => 'resource',
      }
      dsc_fixtureclassresource { 'setting':
        dsc_name   => 'Setting1',
        dsc_ensure => 'Present',
        dsc_value  => 'on',
      }
      dsc_fixtureuser { 'alice':
        dsc_username => 'alice',
        dsc_ensure   => 'Present',
        dsc_password => { 'user' => 'alice', 'password' => Sensitive('s3cret') },
        dsc_fullname => 'Alice',
      }
      dsc_fixturewebsite { 'site':
        dsc_name         => 'Site',
        dsc_ensure       => 'Present',
        dsc_physicalpath => 'C:\\\\inetpub\\\\site',
        dsc_bindinginfo  => [
          { 'protocol' => 'http', 'port' => 80, 'hostname' => 'example.com' },
          { 'protocol' => 'https', 'port' => 443, 'certificatesubjects' => ['CN=a', 'CN=b'],
            'authentication' => { 'cim_instance_type' => 'MSFT_FixtureAuthenticationInformation', 'anonymous' => false, 'basic' => true } },
        ],
      }
      dsc_fixtureschedule { 'backup':
        dsc_name                  => 'Backup',
        dsc_ensure                => 'Present',
        dsc_starttime             => Timestamp('2024-05-06T07:08:09Z'),
        dsc_repeatintervalminutes => 4294967295,
      }
      dsc_fixtureregistry { 'run-key':
        dsc_key       => 'HKLM:\\\\Software\\\\Contoso',
        dsc_valuename => 'Run',
        dsc_ensure    => 'Present',
        dsc_valuedata => ['a', 'b'],
        dsc_valuetype => 'MultiString',
      }
      dsc_fixtureservice { 'spooler':
        dsc_name        => 'Spooler',
        dsc_state       => 'Running',
        dsc_startuptype => 'Automatic',
      }
    PUPPET
  end

  it { is_expected.to compile.with_all_deps }

  it 'keeps the declared values in the catalogue' do
    expect(catalogue).to contain_dsc_fixturefile('readme')
      .with_dsc_ensure('present')
      .with_dsc_force(true)
      .with_dsc_attributes(%w[ReadOnly Archive])
      .with_validation_mode('resource')
      .with_dsc_timeout(30)
    expect(catalogue).to contain_dsc_fixtureclassresource('setting').with_dsc_value('on')
    expect(catalogue).to contain_dsc_fixturewebsite('site').with_dsc_bindinginfo(
      [
        { 'protocol' => 'http', 'port' => 80, 'hostname' => 'example.com' },
        { 'protocol' => 'https', 'port' => 443, 'certificatesubjects' => ['CN=a', 'CN=b'],
          'authentication' => { 'cim_instance_type' => 'MSFT_FixtureAuthenticationInformation', 'anonymous' => false, 'basic' => true } },
      ]
    )
    expect(catalogue).to contain_dsc_fixtureschedule('backup').with_dsc_repeatintervalminutes(4_294_967_295)
    expect(catalogue).to contain_dsc_fixtureregistry('run-key').with_dsc_valuename('Run')
    expect(catalogue).to contain_dsc_fixtureservice('spooler').with_dsc_state('Running')
  end

  it 'keeps passwords Sensitive in the catalogue' do
    password = catalogue.resource('Dsc_fixtureuser', 'alice')[:dsc_password]['password']
    expect(password).to be_a(Puppet::Pops::Types::PSensitiveType::Sensitive)
    expect(password.unwrap).to eq('s3cret')
    runas = catalogue.resource('Dsc_fixturefile', 'readme')[:dsc_psdscrunascredential]['password']
    expect(runas).to be_a(Puppet::Pops::Types::PSensitiveType::Sensitive)
  end

  it 'turns into RAL resources of the scaffolded types and providers' do
    ral = catalogue.to_ral
    file = ral.resource('Dsc_fixturefile', 'readme')
    expect(file).to be_a(Puppet::Type.type(:dsc_fixturefile))
    expect(file.my_provider).to be_a(Puppet::Provider::DscFixturefile::DscFixturefile)
    expect(file.my_provider).to be_a(Puppet::Provider::DscBaseProvider)
    expect(ral.resource('Dsc_fixtureservice', 'spooler')).to be_a(Puppet::Type.type(:dsc_fixtureservice))
  end
end
