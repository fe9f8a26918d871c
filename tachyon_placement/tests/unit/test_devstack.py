"""The devstack plugin (devstack/): shellcheck clean, and its phases run
against stand-ins for devstack's helpers (devstack itself cannot run
here): the configuration files it writes and the commands it runs."""
import configparser
import os
import shutil
import subprocess

import pytest

from tachyon_placement.conf import opts as tachyon_opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
DEVSTACK = os.path.join(ROOT, 'devstack')

# devstack's helpers, each recording its call (one line per call, fields
# separated by " | ") in $CALLS; iniset writes real ini files.
STAND_INS = r'''
record() { local IFS='|'; echo "$*" >> "$CALLS"; }
enable_service() { record enable_service "$@"; ENABLED="$ENABLED $*"; }
disable_service() {
    record disable_service "$@"
    local s
    for s in "$@"; do
        ENABLED=" ${ENABLED} "; ENABLED="${ENABLED// $s / }"
    done
}
is_service_enabled() {
    local s
    for s in "$@"; do
        # devstack's is_keystone_enabled: the service is named "key".
        [[ $s == keystone ]] && s=key
        [[ " $ENABLED " == *" $s "* ]] && return 0
    done
    return 1
}
iniset() {
    python3 - "$@" <<'PY'
import configparser, os, sys
path, section, option, value = sys.argv[1:5]
parser = configparser.RawConfigParser()
parser.optionxform = str
parser.read(path)
if section != 'DEFAULT' and not parser.has_section(section):
    parser.add_section(section)
parser.set(section, option, value)
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, 'w') as out:
    parser.write(out)
PY
}
configure_keystone_authtoken_middleware() {
    record configure_keystone_authtoken_middleware "$@"
    iniset "$1" keystone_authtoken auth_type password
    iniset "$1" keystone_authtoken username "$2"
}
setup_develop() { record setup_develop "$@"; }
create_service_user() { record create_service_user "$@"; }
get_or_create_service() {
    record get_or_create_service "$@"; echo service-id-1
}
get_or_create_endpoint() { record get_or_create_endpoint "$@"; }
apache_site_config_for() { echo "$APACHE_DIR/$1.conf"; }
enable_apache_site() { record enable_apache_site "$@"; }
disable_apache_site() { record disable_apache_site "$@"; }
restart_apache_server() { record restart_apache_server; }
run_process() { record run_process "$@"; }
stop_process() { record stop_process "$@"; }
wait_for_service() { record wait_for_service "$@"; }
echo_summary() { :; }
die() { record die "$@"; echo "die: $*" >&2; exit 1; }
sudo() { "$@"; }
'''


def _phases(tmp_path, *phases, **settings):
    """Runs plugin.sh for each (phase, subphase) as stack.sh does (the
    settings sourced first); returns (calls [fields], tachyon conf,
    agent conf or None, apache site text)."""
    calls = tmp_path / 'calls'
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    # tachyon-manage, as installed: records its arguments.
    manage = bindir / 'tachyon-manage'
    manage.write_text('#!/bin/bash\nIFS="|"; echo "tachyon-manage|$*" '
                      '>> "$CALLS"\n')
    manage.chmod(0o755)
    environment = {
        'DEST': str(tmp_path / 'opt'), 'DATA_DIR': str(tmp_path / 'data'),
        'SERVICE_PROTOCOL': 'http', 'SERVICE_HOST': '192.0.2.10',
        'STACK_USER': os.environ.get('USER', 'root'),
        'ENABLE_DEBUG_LOG_LEVEL': 'True', 'REGION_NAME': 'RegionOne',
        'SERVICE_TIMEOUT': '60', 'SERVICE_PASSWORD': 'devstack-secret',
        'KEYSTONE_SERVICE_URI': 'http://192.0.2.10/identity',
        'SERVICE_DOMAIN_NAME': 'Default', 'SERVICE_PROJECT_NAME': 'service',
        'ENFORCE_SCOPE': 'False',
        'TACHYON_CONF_DIR': str(tmp_path / 'etc' / 'tachyon'),
        'APACHE_DIR': str(tmp_path / 'apache'),
        'ENABLED': ' '.join(['key', 'n-api', 'n-cpu', 'placement-api',
                             'placement-client'] +
                            settings.pop('extra_services', [])),
        'CALLS': str(calls),
    }
    environment.update(settings)
    os.makedirs(environment['APACHE_DIR'], exist_ok=True)
    script = STAND_INS + ''.join(
        'export %s=%s\n' % (name, _quote(value))
        for name, value in environment.items())
    script += 'source %s\n' % os.path.join(DEVSTACK, 'settings')
    for phase in phases:
        script += 'source %s %s\n' % (os.path.join(DEVSTACK, 'plugin.sh'),
                                      ' '.join(phase))
    done = subprocess.run(
        ['bash', '-euo', 'pipefail', '-c', script], capture_output=True,
        text=True, timeout=120,
        env=dict(os.environ, PATH='%s:%s' % (bindir, os.environ['PATH'])))
    assert done.returncode == 0, done.stdout + done.stderr
    found = [line.split('|') for line in calls.read_text().splitlines()]
    conf_dir = environment['TACHYON_CONF_DIR']
    conf = _ini(os.path.join(conf_dir, 'placement.conf'))
    agent_path = os.path.join(conf_dir, 'topology-agent.conf')
    agent = _ini(agent_path) if os.path.exists(agent_path) else None
    site_path = os.path.join(environment['APACHE_DIR'],
                             'tachyon-placement.conf')
    site = open(site_path).read() if os.path.exists(site_path) else None
    return found, conf, agent, site


def _quote(value):
    return "'%s'" % value.replace("'", "'\\''")


def _ini(path):
    parser = configparser.RawConfigParser()
    parser.read(path)
    return parser


def _named(calls, name):
    return [call[1:] for call in calls if call[0] == name]


def test_shellcheck_finds_nothing():
    shellcheck = shutil.which('shellcheck')
    if shellcheck is None:
        pytest.fail('shellcheck is missing (tools/run-tests.sh installs '
                    "Debian's package)")
    done = subprocess.run(
        [shellcheck, '-x', '-s', 'bash', 'devstack/plugin.sh',
         'devstack/lib/tachyon', 'devstack/settings'],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_stack_installs_configures_and_starts_in_placements_place(tmp_path):
    calls, conf, agent, site = _phases(
        tmp_path, ('stack', 'install'), ('stack', 'post-config'))
    # Placement's own service is off, Tachyon's on.
    assert ['placement-api', 'placement-client'] == _named(
        calls, 'disable_service')[0]
    assert _named(calls, 'setup_develop') == [
        [str(tmp_path / 'opt' / 'tachyon-placement'), 'server']]
    # The same user, service and URL as devstack's lib/placement.
    assert _named(calls, 'create_service_user') == [['placement', 'admin']]
    assert _named(calls, 'get_or_create_service')[0][:2] == [
        'placement', 'placement']
    assert _named(calls, 'get_or_create_endpoint') == [
        ['service-id-1', 'RegionOne', 'http://192.0.2.10/placement']]
    # Configuration: keystone, the embedded engine, legacy policy.
    assert conf.get('api', 'auth_strategy') == 'keystone'
    assert conf.get('keystone_authtoken', 'username') == 'placement'
    assert conf.get('graph', 'data_dir') == str(
        tmp_path / 'data' / 'tachyon')
    assert not conf.has_option('graph', 'connection')
    assert conf.get('oslo_policy', 'enforce_scope') == 'False'
    # Schema, then the server under gunicorn with Tachyon's worker,
    # behind Apache at /placement.
    assert _named(calls, 'tachyon-manage') == [
        ['--config-file', str(tmp_path / 'etc' / 'tachyon' /
                              'placement.conf'), 'db', 'sync']]
    (service, command, group, user, env), feed = _named(calls, 'run_process')
    assert service == 'tachyon-placement'
    assert command.split() == [
        'gunicorn', '-c', 'python:tachyon_placement.wsgi.gunicorn',
        '--bind', '127.0.0.1:8778', '--workers', '2', '--threads', '4',
        'tachyon_placement.wsgi.api:application']
    assert sorted(env.split()) == [
        'SCRIPT_NAME=/placement', 'TACHYON_CONFIG_FILE=%s' % (
            tmp_path / 'etc' / 'tachyon' / 'placement.conf')]
    assert _named(calls, 'wait_for_service') == [
        ['60', 'http://192.0.2.10/placement']]
    assert 'ProxyPass http://127.0.0.1:8778/placement' in site
    assert '<Location /placement>' in site
    # The change feed: its own server, behind its own Location (after the
    # API's: Apache merges Locations in order, the later wins).
    assert feed[0] == 'tachyon-feed'
    assert feed[1].split() == [
        'tachyon-feed', '--config-file',
        str(tmp_path / 'etc' / 'tachyon' / 'placement.conf'),
        '--host', '127.0.0.1', '--port', '8779']
    assert site.index('<Location /placement/tachyon/changes>') > (
        site.index('<Location /placement>'))
    assert ('ProxyPass http://127.0.0.1:8779/tachyon/changes retry=0 '
            'flushpackets=on') in site
    assert _named(calls, 'enable_apache_site') == [['tachyon-placement']]
    # Start comes after configuration, schema after the accounts.
    order = [call[0] for call in calls]
    assert order.index('tachyon-manage') < order.index('run_process')
    assert order.index('create_service_user') < order.index('run_process')
    assert agent is None


def test_every_option_written_is_one_tachyon_has(tmp_path):
    _calls, conf, _agent, _site = _phases(
        tmp_path, ('stack', 'install'), ('stack', 'post-config'),
        TACHYON_ENGINE='neo4j', ENFORCE_SCOPE='True')
    known = {getattr(group, 'name', group): {opt.dest for opt in opts}
             for group, opts in tachyon_opts.list_opts()}
    for section in ('api', 'graph'):
        for option in conf.options(section):
            if option in conf.defaults():
                continue
            assert option in known[section], (section, option)
    assert conf.get('graph', 'connection') == 'bolt://127.0.0.1:7687'
    assert conf.get('graph', 'username') == 'neo4j'
    assert conf.get('graph', 'password') == 'devstack-secret'
    assert conf.get('oslo_policy', 'enforce_new_defaults') == 'True'
    assert conf.get('oslo_policy', 'enforce_scope') == 'True'


def test_topology_agent_on_compute_hosts(tmp_path):
    calls, _conf, agent, _site = _phases(
        tmp_path, ('stack', 'install'), ('stack', 'post-config'),
        extra_services=['tachyon-topology-agent'],
        TACHYON_PHYSICAL_DEVICE_MAPPINGS='physnet1:ens1f0')
    assert agent.get('placement', 'auth_type') == 'password'
    assert agent.get('placement', 'username') == 'nova'
    assert agent.get('placement', 'auth_url') == (
        'http://192.0.2.10/identity')
    assert agent.get('topology_agent', 'physical_device_mappings') == (
        'physnet1:ens1f0')
    started = {call[0]: call[1] for call in _named(calls, 'run_process')}
    assert started['tachyon-topology-agent'].split() == [
        'tachyon-topology-agent', '--config-file',
        str(tmp_path / 'etc' / 'tachyon' / 'topology-agent.conf')]


def test_unstack_and_clean(tmp_path):
    calls, _conf, _agent, site = _phases(
        tmp_path, ('stack', 'install'), ('stack', 'post-config'),
        ('unstack',), ('clean',))
    assert _named(calls, 'stop_process') == [
        ['tachyon-topology-agent'], ['tachyon-feed'], ['tachyon-placement']]
    assert _named(calls, 'disable_apache_site') == [['tachyon-placement']]
    assert not os.path.exists(tmp_path / 'data' / 'tachyon')


def test_an_unknown_engine_is_refused(tmp_path):
    with pytest.raises(AssertionError) as exc:
        _phases(tmp_path, ('stack', 'post-config'), TACHYON_ENGINE='mysql')
    assert 'TACHYON_ENGINE must be falkordb or neo4j' in str(exc.value)
