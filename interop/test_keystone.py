"""Tachyon behind a real Keystone (PyPI keystone in interop/.keystone-venv,
SQLite, fernet tokens, bootstrapped, on loopback): ``auth_strategy =
keystone`` through keystonemiddleware, the osc-placement CLI and Nova's
report client authenticating with passwords and finding Tachyon in the
catalog, and the policy defaults answering each persona (admin, service,
project member and reader, system admin and reader) exactly as a real
openstack-placement 16.0.0 does behind the same Keystone: in legacy mode
and with ``enforce_new_defaults`` and ``enforce_scope``.

The servers of this module keep their graph in an embedded FalkorDB of
their own whatever the run's engine: authentication and policy do not
touch the engine, and the run's Neo4j belongs to the session's server.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
import requests

import conftest
import keystone_server

SUITE = 'test_keystone'

SERVICE_PROJECT = 'service'
MEMBER_PROJECT = 'tenant-a'

# (persona, username, scope: a project name or 'system')
PERSONAS = (
    ('project admin', 'admin', 'admin'),
    ('system admin', 'admin', 'system'),
    ('service', 'nova', SERVICE_PROJECT),
    ('project member', 'member-a', MEMBER_PROJECT),
    ('project reader', 'reader-a', MEMBER_PROJECT),
    ('system reader', 'system-reader', 'system'),
)

MODES = {
    'legacy': '',
    'new defaults': '[oslo_policy]\nenforce_new_defaults = True\n'
                    'enforce_scope = True\n',
}


def _keystone_python():
    python = os.environ.get('INTEROP_KEYSTONE_PYTHON')
    if not python or not os.path.exists(python):
        pytest.fail('INTEROP_KEYSTONE_PYTHON is not set (interop/run.sh '
                    'makes interop/.keystone-venv with keystone from PyPI)')
    return python


def _authtoken(keystone):
    return ('[keystone_authtoken]\n'
            'www_authenticate_uri = %(url)s\nauth_url = %(url)s\n'
            'auth_type = password\nproject_name = %(project)s\n'
            'project_domain_name = Default\nuser_domain_name = Default\n'
            'username = placement\npassword = %(password)s\n'
            'service_type = placement\n' % {
                'url': keystone.url, 'project': SERVICE_PROJECT,
                'password': keystone_server.PASSWORD})


class Served:
    """One API process (Tachyon or the reference Placement) with
    ``auth_strategy = keystone``."""

    def __init__(self, target, keystone, mode):
        self.target = target
        self.workdir = tempfile.mkdtemp(prefix='tachyon-keystone-')
        self.port = conftest._free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        extra = _authtoken(keystone) + MODES[mode]
        if target == 'tachyon':
            cmd, self.data_dir = conftest._tachyon_command(
                self.workdir, self.port, auth_strategy='keystone',
                extra_conf=extra, embedded=True)
        else:
            cmd, self.data_dir = conftest._placement_command(
                self.workdir, self.port, auth_strategy='keystone',
                extra_conf=extra)
        self.console = open(os.path.join(self.workdir, 'console.log'), 'w')
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        self.proc = subprocess.Popen(
            cmd, cwd=conftest.ROOT, stdout=self.console,
            stderr=subprocess.STDOUT, env=env,
            preexec_fn=conftest._server_preexec)
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('%s did not start:\n%s' % (
                    target, conftest._tail(os.path.join(self.workdir,
                                                        'server.log'))))
            try:
                if requests.get(self.endpoint + '/',
                                timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)

    def request(self, method, path, token, body=None, version='1.39'):
        headers = {'OpenStack-API-Version': 'placement %s' % version,
                   'Accept': 'application/json'}
        if token is not None:
            headers['X-Auth-Token'] = token
        if path.startswith('/tachyon'):
            headers['OpenStack-API-Version'] = 'tachyon 1.0'
        return requests.request(method, self.endpoint + path, json=body,
                                headers=headers, timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        conftest._stop_embedded_engine(self.data_dir)
        self.console.close()


@pytest.fixture(scope='module')
def keystone():
    workdir = tempfile.mkdtemp(prefix='tachyon-keystone-')
    ks = keystone_server.Keystone(_keystone_python(), workdir).start()
    admin = ks.admin_token()
    ks.user(admin, 'placement', [('admin', SERVICE_PROJECT),
                                 ('service', SERVICE_PROJECT)])
    ks.user(admin, 'nova', [('service', SERVICE_PROJECT)])
    ks.user(admin, 'member-a', [('member', MEMBER_PROJECT)])
    ks.user(admin, 'reader-a', [('reader', MEMBER_PROJECT)])
    ks.user(admin, 'system-reader', [('reader', 'system')])
    ks.member_project_id = ks.ensure(admin, 'projects', MEMBER_PROJECT)
    ks.service_project_id = ks.ensure(admin, 'projects', SERVICE_PROJECT)
    try:
        yield ks
    finally:
        ks.stop()


@pytest.fixture(scope='module')
def servers(keystone):
    """{(target, mode): Served}; Tachyon in legacy mode is in the catalog
    as the placement service."""
    started = {}
    try:
        for mode in MODES:
            for target in ('tachyon', 'placement'):
                started[(target, mode)] = Served(target, keystone, mode)
        keystone.register_placement(keystone.admin_token(),
                                    started[('tachyon', 'legacy')].endpoint)
        yield started
    finally:
        for served in started.values():
            served.stop()


def _tokens(keystone):
    tokens = {}
    for persona, user, scope in PERSONAS:
        if scope == 'system':
            tokens[persona] = keystone.token(user, system=True)
        else:
            tokens[persona] = keystone.token(user, project=scope)
    return tokens


def _requests(keystone, persona, mode):
    """The requests every persona sends; names unique per persona and
    mode, so a write allowed on one server is not a conflict on the
    next."""
    tag = '%s-%s' % (persona, mode)
    name = uuid.uuid5(uuid.NAMESPACE_URL, tag).hex[:12].upper()
    return [
        ('GET', '/resource_providers', None),
        ('POST', '/resource_providers', {'name': 'rp-%s' % name}),
        ('GET', '/resource_classes', None),
        ('PUT', '/resource_classes/CUSTOM_RC_%s' % name, None),
        ('GET', '/traits', None),
        ('PUT', '/traits/CUSTOM_T_%s' % name, None),
        ('GET', '/usages?project_id=%s' % keystone.member_project_id, None),
        ('GET', '/usages?project_id=%s' % keystone.service_project_id,
         None),
        ('GET', '/allocation_candidates?resources=VCPU:1', None),
        ('GET', '/allocations/%s' % uuid.uuid4(), None),
        ('GET', '/resource_providers?name=nothing', None),
        ('GET', '/', None),
    ]


@pytest.mark.parametrize('mode', list(MODES))
def test_policy_defaults_answer_as_placement(keystone, servers, mode):
    tokens = _tokens(keystone)
    differences, table = [], []
    for persona, _user, _scope in PERSONAS:
        for method, path, body in _requests(keystone, persona, mode):
            answers = {}
            for target in ('placement', 'tachyon'):
                response = servers[(target, mode)].request(
                    method, path, tokens[persona], body)
                answers[target] = response.status_code
            table.append('%-14s %-6s %-45s placement %d tachyon %d' % (
                persona, method, path[:45], answers['placement'],
                answers['tachyon']))
            if answers['placement'] != answers['tachyon']:
                differences.append(table[-1])
    conftest.trace('\n'.join(table))
    assert not differences, '\n'.join(differences)
    # Not all allowed nor all refused: the personas do differ.
    assert len({line.rsplit(' ', 1)[-1] for line in table}) > 1


@pytest.mark.parametrize('mode', list(MODES))
def test_tachyon_routes_follow_the_same_personas(keystone, servers, mode):
    tokens = _tokens(keystone)
    tachyon = servers[('tachyon', mode)]
    assert tachyon.request('GET', '/tachyon/weighers',
                           tokens['project admin']).status_code == 200
    assert tachyon.request('GET', '/tachyon/weighers',
                           tokens['project member']).status_code == 403
    assert tachyon.request('GET', '/tachyon/changes',
                           tokens['service']).status_code == 200


def test_bad_missing_and_revoked_tokens_get_401(keystone, servers):
    revoked = keystone.token('member-a', project=MEMBER_PROJECT)
    keystone.revoke(keystone.admin_token(), revoked)
    for target in ('tachyon', 'placement'):
        served = servers[(target, 'legacy')]
        for token in ('not-a-token', None, revoked):
            response = served.request('GET', '/resource_providers', token)
            assert response.status_code == 401, (target, token)
            # keystonemiddleware tells the client where to authenticate.
            assert keystone.url.rsplit('/v3', 1)[0] in response.headers[
                'WWW-Authenticate'], (target, response.headers)
        valid = keystone.token('admin', project='admin')
        assert served.request('GET', '/resource_providers',
                              valid).status_code == 200


def _osc(keystone, user, project, *command):
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_AUTH_URL=keystone.url, OS_USERNAME=user,
               OS_PASSWORD=keystone_server.PASSWORD, OS_PROJECT_NAME=project,
               OS_USER_DOMAIN_NAME='Default',
               OS_PROJECT_DOMAIN_NAME='Default', OS_IDENTITY_API_VERSION='3',
               OS_REGION_NAME='RegionOne', OS_INTERFACE='public',
               PYTHONWARNINGS='ignore')
    binary = os.path.join(os.path.dirname(sys.executable), 'openstack')
    return subprocess.run([binary] + list(command), capture_output=True,
                          text=True, env=env, timeout=180)


def test_osc_placement_through_keystone(keystone, servers):
    name = 'osc-keystone-%s' % uuid.uuid4().hex[:8]
    made = _osc(keystone, 'admin', 'admin', 'resource', 'provider',
                'create', name, '-f', 'value', '-c', 'uuid')
    assert made.returncode == 0, made.stderr
    listed = _osc(keystone, 'admin', 'admin', 'resource', 'provider',
                  'list', '--name', name, '-f', 'value', '-c', 'name')
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [name]
    refused = _osc(keystone, 'member-a', MEMBER_PROJECT, 'resource',
                   'provider', 'list')
    assert refused.returncode != 0
    assert '403' in refused.stderr or 'Forbidden' in refused.stderr, (
        refused.stderr)


def test_nova_report_client_through_keystone(keystone, servers, tmp_path):
    """nova-compute's first contact with Placement, configured as in
    nova.conf: the password plugin, the catalog, the service user."""
    script = tmp_path / 'nova_client.py'
    script.write_text('''
import sys
from nova import conf as nova_conf
from nova import context as nova_context
from nova import objects
from nova.scheduler.client import report

objects.register_all()
nova_conf.CONF(['--config-file', sys.argv[1]], project='nova')
client = report.report_client_singleton()
ctx = nova_context.get_admin_context()
uuid = sys.argv[2]
tree = client.get_provider_tree_and_ensure_root(ctx, uuid, name=sys.argv[3])
client.set_inventory_for_provider(ctx, uuid, {
    'VCPU': {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
             'step_size': 1, 'allocation_ratio': 4.0}})
print(client.get_provider_tree_and_ensure_root(ctx, uuid).data(uuid)
      .inventory['VCPU']['total'])
''')
    conf = tmp_path / 'nova.conf'
    conf.write_text(
        '[placement]\nauth_type = password\nauth_url = %s\n'
        'username = nova\npassword = %s\nproject_name = %s\n'
        'user_domain_name = Default\nproject_domain_name = Default\n'
        'region_name = RegionOne\nvalid_interfaces = public\n' % (
            keystone.url, keystone_server.PASSWORD, SERVICE_PROJECT))
    rp_uuid = str(uuid.uuid4())
    done = subprocess.run(
        [sys.executable, str(script), str(conf), rp_uuid, 'compute-ks'],
        capture_output=True, text=True, timeout=180,
        env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == '8'
    admin = keystone.admin_token()
    found = servers[('tachyon', 'legacy')].request(
        'GET', '/resource_providers/%s' % rp_uuid, admin)
    assert found.status_code == 200 and found.json()['name'] == 'compute-ks'
