# pwshlib demo: four scaffolded DSC resources, applied by `script/demo`
# against the simulated PowerShell host. The resource types come from the
# fixture module spec/fixtures/modules/dscfixtures; their providers are the
# empty scaffolded subclasses of Puppet::Provider::DscBaseProvider.

# A run-as account whose password is Sensitive: it goes to PowerShell intact
# and appears nowhere in the logs, the report or the debug output.
$runas = {
  'user'     => 'CONTOSO\deploy',
  'password' => Sensitive("It's a \"secret\" ‘with’ every `quote` and a\nnewline"),
}

dsc_fixturefile { 'motd':
  dsc_destinationpath      => 'C:\ProgramData\Contoso\motd.txt',
  dsc_ensure               => 'Present',
  dsc_contents             => 'Welcome to Contoso',
  dsc_type                 => 'File',
  dsc_attributes           => ['Archive', 'ReadOnly'],
  dsc_psdscrunascredential => $runas,
}

dsc_fixturewebsite { 'intranet':
  dsc_name         => 'Intranet',
  dsc_ensure       => 'Present',
  dsc_physicalpath => 'C:\inetpub\intranet',
  dsc_bindinginfo  => [
    { 'protocol' => 'http', 'port' => 80, 'hostname' => 'intranet.contoso.com' },
    {
      'protocol'            => 'https',
      'port'                => 443,
      'hostname'            => 'intranet.contoso.com',
      'certificatesubjects' => ['CN=intranet.contoso.com'],
      'authentication'      => {
        'cim_instance_type' => 'MSFT_FixtureAuthenticationInformation',
        'anonymous'         => false,
        'basic'             => true,
      },
    },
  ],
}

dsc_fixtureschedule { 'nightly-backup':
  dsc_name                  => 'NightlyBackup',
  dsc_ensure                => 'Present',
  dsc_starttime             => Timestamp('2024-05-06T02:00:00Z'),
  dsc_repeatintervalminutes => 1440,
}

dsc_fixtureservice { 'spooler':
  dsc_name        => 'Spooler',
  dsc_state       => 'Running',
  dsc_startuptype => 'Automatic',
}
