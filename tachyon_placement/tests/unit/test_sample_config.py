"""The sample configuration files `tox -e genconfig` writes: every
section an operator sets is in them, with the defaults the code uses."""
import configparser
import os
import re
import subprocess
import sys

import pytest

OPTION = re.compile(r'^#[a-z_0-9]+ =( |$)')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def _generate(tmp_path, generator_conf):
    output = tmp_path / 'sample.conf'
    result = subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator', '--config-file',
         os.path.join(ROOT, 'etc', generator_conf), '--output-file',
         str(output)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return output.read_text()


def _commented(sample, section):
    """{option: commented default} of one section of a sample."""
    parser = configparser.ConfigParser(interpolation=None)
    # "#name = default" lines (the default may be empty) become options;
    # other comments go.
    uncommented = '\n'.join(
        line[1:] if OPTION.match(line) else line
        for line in sample.splitlines()
        if not line.startswith('#') or OPTION.match(line))
    parser.read_string(uncommented, source='sample')
    return dict(parser[section]) if section in parser else None


@pytest.mark.parametrize('generator_conf, sections', [
    ('tachyon-placement-config-generator.conf',
     {'api': 'auth_strategy', 'graph': 'connection',
      'placement': 'randomize_allocation_candidates',
      'telemetry': 'url', 'weighing': 'host_subset_size',
      'changes': 'retention_versions',
      'keystone_authtoken': 'www_authenticate_uri'}),
    ('tachyon-topology-agent-config-generator.conf',
     {'topology_agent': 'physical_device_mappings',
      'placement': 'auth_url'}),
])
def test_sample_has_every_section(tmp_path, generator_conf, sections):
    sample = _generate(tmp_path, generator_conf)
    for section, option in sections.items():
        found = _commented(sample, section)
        assert found is not None, 'no [%s] in the sample' % section
        assert option in found, '[%s] %s missing' % (section, option)


def test_agent_sample_shows_the_agents_defaults(tmp_path):
    sample = _generate(tmp_path,
                       'tachyon-topology-agent-config-generator.conf')
    placement = _commented(sample, 'placement')
    assert placement['service_type'] == 'placement'
    assert placement['valid_interfaces'] == 'internal,public'
    agent = _commented(sample, 'topology_agent')
    assert agent['interval'] == '300'
    assert agent['host'] == '<hostname>'
