# frozen_string_literal: true

require 'json'
require 'open3'
require 'tmpdir'
require_relative '../spec_helper_real_pwsh'

# Once the prelude has resolved a resource in a runspace, the
# host makes its later calls in compiled code (PwshlibHost.Direct.cs,
# DirectDsc). The prelude's Invoke-PwshlibDscResource stays the definition
# of what a call answers: direct_compiled.ps1 makes every call below both
# ways in one runspace of the host's own code on the real pwsh, resetting
# it between calls as the host does, and the two answers must be the same
# (the streams line and the outcome, as JSON), whatever the resource does:
# class-based and script-based, Get, Test and Set, streams of every kind,
# a reboot asked for, a resource that throws, a non-terminating error, a
# Test that returns no boolean, strict (Windows PowerShell 5.1's LCM) and
# lenient (PSDesiredStateConfiguration 2.x), values the schema reshapes.
# A resource's first call in a runspace is compiled around the prelude's
# Invoke-PwshlibDscCall (DirectDsc's first-call form): made once more in a
# runspace that has resolved nothing, it answers the same too, and so does
# a call whose module is nowhere (the prelude resolves nothing and calls
# Invoke-DscResource, which fails).
RSpec.describe 'a DSC call made in compiled code answers as the prelude does' do
  real = File.join(__dir__, 'modules', 'realdsc', 'lib', 'puppet_x', 'pwshlibrealdsc', 'dsc_resources',
                   'PwshlibRealDsc', 'PwshlibRealDsc.psd1')
  lcm = File.join(__dir__, 'psmodules', 'PwshlibLcmDsc', 'PwshlibLcmDsc.psd1')
  real_module = { 'ModuleName' => real, 'RequiredVersion' => '1.0.0' }
  missing_module = { 'ModuleName' => File.join(__dir__, 'nowhere', 'PwshlibMissing.psd1'), 'RequiredVersion' => '1.0.0' }
  lcm_module = { 'ModuleName' => lcm, 'RequiredVersion' => '1.0.0' }
  secret = { 'credential' => ['svc', "p'ss \"w0rd\" \u00fc"] }

  def self.calls(resource, module_name, methods, properties, strict: nil)
    methods.map do |method|
      { 'resource' => resource, 'method' => method, 'module' => module_name, 'property' => properties, 'strict' => strict }
    end
  end

  cases = [
    *calls('RealSetting', real_module, %w[Set Get Test],
           { 'Name' => 'one', 'Ensure' => 'Present', 'Tags' => %w[a b], 'Count' => 7, 'Enabled' => true,
             'Expires' => '2030-01-02T03:04:05Z', 'Description' => "it's \u00fc" }),
    *calls('RealSetting', real_module, %w[Get Test], { 'Name' => 'absent' }),
    *calls('RealNoisy', real_module, %w[Set Get Test], { 'Name' => 'noisy', 'Mode' => 'ok', 'Secret' => secret }),
    *calls('RealNoisy', real_module, %w[Set], { 'Name' => 'noisy', 'Mode' => 'reboot', 'Secret' => secret }),
    *calls('RealNoisy', real_module, %w[Set], { 'Name' => 'noisy', 'Mode' => 'fail', 'Secret' => secret }),
    *calls('RealKeyed', real_module, %w[Set Get Test], { 'Name' => 'keyed', 'Ensure' => 'Present', 'Value' => 'v' }),
    *calls('RealEcho', real_module, %w[Set Get Test], { 'Name' => 'echo', 'Ensure' => 'Present', 'Value' => 'e' }),
    *calls('RealShape', real_module, %w[Set Get Test],
           { 'Name' => 'shape', 'Tags' => ['only'], 'Enabled' => true, 'Interval' => '00:05:00', 'Release' => '1.2.3' }),
    *calls('LcmClass', lcm_module, %w[Get Test], { 'Name' => 'plain' }),
    *calls('RealSetting', missing_module, %w[Get Test], { 'Name' => 'nowhere' }),
    *calls('LcmScript', lcm_module, %w[Get], { 'Name' => 'plain' }),
    *calls('LcmScript', lcm_module, %w[Get], { 'Name' => 'error-7' }),
    *%w[true stray text-false twice nothing].flat_map { |name| calls('LcmScript', lcm_module, %w[Test], { 'Name' => name }) },
    *[true, false].flat_map do |strict|
      [*calls('LcmScript', lcm_module, %w[Get], { 'Name' => 'error-51' }, strict: strict),
       *calls('LcmClass', lcm_module, %w[Get], { 'Name' => 'error-class' }, strict: strict),
       *%w[true stray twice nothing].flat_map do |name|
         calls('LcmScript', lcm_module, %w[Test], { 'Name' => name }, strict: strict)
       end]
    end,
  ]

  answers = nil
  before(:all) do
    Dir.mktmpdir('pwshlib-direct-compiled') do |dir|
      path = File.join(dir, 'cases.json')
      File.write(path, JSON.generate(cases))
      env = { 'PWSHLIB_REAL_DSC_STATE' => dir, 'PSModulePath' => File.join(__dir__, 'standin') }
      out, err, status = Open3.capture3(env, REAL_PWSH, '-NoProfile', '-NonInteractive', '-File',
                                        File.join(__dir__, 'direct_compiled.ps1'),
                                        '-Templates', File.expand_path('../../../lib/templates', __dir__), '-Cases', path)
      line = out.lines.find { |l| l.start_with?('PWSHLIB-ANSWERS ') }
      raise "direct_compiled.ps1 failed (#{status}): #{err}#{out}" unless status.success? && line

      answers = JSON.parse(line.delete_prefix('PWSHLIB-ANSWERS '))
    end
  end

  def parsed(lines)
    Array(lines).map { |line| JSON.parse(line) }
  end

  cases.each_with_index do |c, index|
    strictness = { nil => '', true => ', strict', false => ', lenient' }.fetch(c['strict'])
    it "#{c['resource']} #{c['method']} #{c['property']['Name']}#{strictness}" do
      answer = answers.fetch(index)
      expect(answer['first']).not_to be_nil, 'the first-call form declined a call'
      expect(parsed(answer['first'])).to eq(parsed(answer['prelude']))
      next if c['module'] == missing_module

      expect(answer['compiled']).not_to be_nil, 'the compiled path declined a call the prelude had resolved'
      expect(parsed(answer['compiled'])).to eq(parsed(answer['prelude']))
    end
  end

  it 'covers what the calls are to show: streams, a failure, a reboot, strict refusals' do
    all = answers.flat_map { |a| parsed(a['prelude']) }
    kinds = all.flat_map { |l| Array(l['pwshlib_streams']).map { |r| r['kind'] } }.uniq
    expect(kinds).to include('warning', 'verbose', 'debug', 'information', 'host', 'error')
    expect(all).to include(include('rebootrequired' => true))
    expect(all).to include(include('pwshlib_get_returned_this' => true))
    expect(all.map { |l| l['errormessage'] }).to include(/RealNoisy refused/, /non-terminating errors/, /not one boolean/,
                                                         /PwshlibMissing/)
  end
end
