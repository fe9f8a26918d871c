"""Interop harness: serve Tachyon on loopback, drive it with real clients.

One server per test session (pytest session), started as a real process
with a fresh configuration (``[api] auth_strategy = noauth2`` and a fresh
``[graph] data_dir``) on a free loopback port, stopped at the end.

Environment:

``INTEROP_TARGET``
    ``tachyon`` (default) or ``placement``: the reference, upstream
    openstack-placement 16.0.0 on a fresh SQLite database (see
    reference_placement.py), to check the tests themselves.
``TACHYON_SERVER_PYTHON``
    Interpreter of the environment the server runs in (default: the
    repository's ``.venv``). The server imports ``tachyon_placement`` from
    the repository (its working directory is the repository root).
``INTEROP_KEEP``
    If set, keep the server's work directory (configuration, data, log).
``TACHYON_TEST_NEO4J_URI``
    Serve Tachyon on that Neo4j server (emptied first) instead of its
    embedded engine (``TACHYON_TEST_NEO4J_USER``/``_PASSWORD``/``_DATABASE``
    go with it).

At the end the run prints, per suite, how many steps (tests) ran, passed
and failed, and which Placement microversions the clients used.
"""
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

import telemetry_feed

INTEROP_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(INTEROP_DIR)
TOKEN = 'admin'

# suite name -> set of microversions ('1.x') the clients sent
MICROVERSIONS = collections.defaultdict(set)
# suite name -> {'passed': n, 'failed': n, 'error': n}
STEPS = collections.defaultdict(collections.Counter)
# nodeid -> outcome of the call phase ('passed'/'failed')
OUTCOMES = {}
SERVER_INFO = {}


def suite_of(nodeid):
    return os.path.splitext(os.path.basename(nodeid.split('::')[0]))[0]


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _server_python():
    python = os.environ.get('TACHYON_SERVER_PYTHON')
    if python:
        return python
    candidate = os.path.join(ROOT, '.venv', 'bin', 'python')
    if os.path.exists(candidate):
        return candidate
    raise pytest.UsageError(
        'TACHYON_SERVER_PYTHON is not set and %s does not exist: run '
        'interop/run.sh, or point TACHYON_SERVER_PYTHON at a Python that '
        'has Tachyon installed' % candidate)


NEO4J_URI = os.environ.get('TACHYON_TEST_NEO4J_URI')
NEO4J_OPTIONS = {
    'username': os.environ.get('TACHYON_TEST_NEO4J_USER'),
    'password': os.environ.get('TACHYON_TEST_NEO4J_PASSWORD'),
    'database': os.environ.get('TACHYON_TEST_NEO4J_DATABASE'),
}

# Run by the server's interpreter: empty the Neo4j server for this run.
_WIPE_NEO4J = """
import json, sys
from tachyon_placement.graph import neo4j_engine
options = json.loads(sys.argv[2])
engine = neo4j_engine.Neo4jEngine(sys.argv[1], **options)
engine.reset()
engine.close()
"""


def _graph_options(data_dir):
    """The [graph] section: the embedded engine in data_dir, or Neo4j."""
    lines = ['data_dir = %s' % data_dir]
    if NEO4J_URI:
        lines.append('connection = %s' % NEO4J_URI)
        lines.extend('%s = %s' % (key, value)
                     for key, value in NEO4J_OPTIONS.items() if value)
        subprocess.run([_server_python(), '-c', _WIPE_NEO4J, NEO4J_URI,
                        json.dumps(NEO4J_OPTIONS)], check=True, cwd=ROOT,
                       timeout=120)
    return '\n'.join(lines) + '\n'


def _tachyon_command(workdir, port, telemetry_url=None,
                     auth_strategy='noauth2', extra_conf='', embedded=False):
    """``extra_conf``: more sections ([keystone_authtoken],
    [oslo_policy]...); ``embedded``: a FalkorDB of its own whatever the
    run's engine (a second server must not empty the shared Neo4j)."""
    data_dir = os.path.join(workdir, 'graph')
    graph = ('data_dir = %s\n' % data_dir if embedded
             else _graph_options(data_dir))
    conf = os.path.join(workdir, 'tachyon.conf')
    with open(conf, 'w') as f:
        f.write('[DEFAULT]\n'
                'debug = False\n'
                'log_file = %s\n'
                '[api]\n'
                'auth_strategy = %s\n'
                '[graph]\n%s%s' % (os.path.join(workdir, 'server.log'),
                                   auth_strategy, graph, extra_conf))
        if telemetry_url:
            # Collect every second, so a step sees a change quickly.
            f.write('[telemetry]\nurl = %s\nrefresh_interval = 1\n'
                    % telemetry_url)
    python = _server_python()
    script = os.path.join(os.path.dirname(python), 'tachyon-placement-api')
    if os.path.exists(script):
        cmd = [script]
    else:
        cmd = [python, '-m', 'tachyon_placement.cmd.api']
    return cmd + ['--config-file', conf, '--port', str(port)], data_dir


def _placement_command(workdir, port, auth_strategy='noauth2',
                       extra_conf=''):
    conf = os.path.join(workdir, 'placement.conf')
    with open(conf, 'w') as f:
        f.write('[DEFAULT]\n'
                'debug = False\n'
                'log_file = %s\n'
                '[api]\n'
                'auth_strategy = %s\n'
                '[placement_database]\n'
                'connection = sqlite:///%s\n'
                'sync_on_startup = True\n%s' % (
                    os.path.join(workdir, 'server.log'), auth_strategy,
                    os.path.join(workdir, 'placement.sqlite'), extra_conf))
    cmd = [_server_python(), os.path.join(INTEROP_DIR,
                                          'reference_placement.py'),
           '--config-file', conf, '--port', str(port)]
    return cmd, None


def _tail(path, lines=40):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return '(no %s)' % path


def _stop_embedded_engine(data_dir):
    """Make sure the embedded FalkorDB server of our data_dir is gone.

    The API process stops it on exit when it is the last user; if the API
    process had to be killed, the engine (started for this run only) is
    stopped here through its pid file.
    """
    if not data_dir:
        return
    try:
        with open(os.path.join(data_dir, 'server.pid')) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            cmdline = f.read().decode(errors='replace')
    except OSError:
        return
    if data_dir not in cmdline:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not os.path.exists('/proc/%d' % pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _server_preexec():
    """In the server child: own session; SIGTERM when pytest dies."""
    os.setsid()
    try:
        import ctypes
        libc = ctypes.CDLL('libc.so.6', use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class Server:
    # The exporter and Prometheus the server collects from (Tachyon on a
    # machine with Prometheus), else None.
    telemetry = None

    def __init__(self, target, endpoint, proc, workdir, data_dir):
        self.target = target
        self.endpoint = endpoint
        self.proc = proc
        self.workdir = workdir
        self.data_dir = data_dir
        self.log_path = os.path.join(workdir, 'server.log')
        self.console_path = os.path.join(workdir, 'console.log')

    def diagnostics(self):
        return ('--- server console (%s) ---\n%s--- server log (%s) ---\n%s'
                % (self.console_path, _tail(self.console_path),
                   self.log_path, _tail(self.log_path)))


@pytest.fixture(scope='session')
def server():
    target = os.environ.get('INTEROP_TARGET', 'tachyon')
    if target not in ('tachyon', 'placement'):
        raise pytest.UsageError('INTEROP_TARGET must be tachyon or placement')
    workdir = tempfile.mkdtemp(prefix='tachyon-interop-')
    port = _free_port()
    feed = None
    if target == 'tachyon':
        feed = telemetry_feed.Feed().start(workdir)
        cmd, data_dir = _tachyon_command(workdir, port,
                                         feed.url if feed else None)
    else:
        cmd, data_dir = _placement_command(workdir, port)
    endpoint = 'http://127.0.0.1:%d' % port
    console = open(os.path.join(workdir, 'console.log'), 'w')
    env = dict(os.environ)
    for name in list(env):
        if name.startswith('OS_'):
            del env[name]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=console,
                            stderr=subprocess.STDOUT, env=env,
                            preexec_fn=_server_preexec)
    srv = Server(target, endpoint, proc, workdir, data_dir)
    srv.telemetry = feed
    SERVER_INFO.update(target=target, endpoint=endpoint, workdir=workdir,
                       command=' '.join(cmd))
    started = time.monotonic()
    try:
        deadline = started + 90
        while True:
            if proc.poll() is not None:
                pytest.exit('%s server exited with %s on start-up\n%s' % (
                    target, proc.returncode, srv.diagnostics()), returncode=1)
            try:
                resp = requests.get(endpoint + '/', timeout=2)
                if resp.status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.exit('%s server did not answer on %s within 90 s\n%s'
                            % (target, endpoint, srv.diagnostics()),
                            returncode=1)
            time.sleep(0.2)
        SERVER_INFO['startup_seconds'] = round(time.monotonic() - started, 1)
        SERVER_INFO['version_document'] = resp.json()
        yield srv
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _stop_embedded_engine(data_dir)
        if feed is not None:
            feed.stop()
        console.close()
        SERVER_INFO['exit_code'] = proc.returncode
        SERVER_INFO['log_tail'] = _tail(srv.log_path, 15)
        if os.environ.get('INTEROP_KEEP'):
            SERVER_INFO['kept'] = workdir
        else:
            shutil.rmtree(workdir, ignore_errors=True)


class RawAPI:
    """Plain HTTP to the server, for setting up and checking state.

    Not a client under test: steps use it to prepare what the step does
    not exercise and to verify what the client did.
    """

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.session = requests.Session()

    def request(self, method, path, body=None, version='1.39',
                roles=None, token=TOKEN, expect=None):
        headers = {'X-Auth-Token': token, 'Accept': 'application/json'}
        if version:
            headers['OpenStack-API-Version'] = 'placement %s' % version
        if roles is not None:
            headers['X-Roles'] = roles
        kwargs = {}
        if body is not None:
            kwargs['json'] = body
        resp = self.session.request(method, self.endpoint + path,
                                    headers=headers, timeout=60, **kwargs)
        if expect is not None:
            statuses = expect if isinstance(expect, tuple) else (expect,)
            assert resp.status_code in statuses, (
                'setup/check request %s %s (microversion %s) returned %s, '
                'expected %s: %s' % (method, path, version, resp.status_code,
                                     expect, resp.text[:2000]))
        return resp

    def get(self, path, **kwargs):
        kwargs.setdefault('expect', 200)
        resp = self.request('GET', path, **kwargs)
        return resp.json() if resp.content else None

    def put(self, path, body=None, **kwargs):
        kwargs.setdefault('expect', (200, 201, 204))
        resp = self.request('PUT', path, body, **kwargs)
        return resp.json() if resp.content else None

    def post(self, path, body=None, **kwargs):
        kwargs.setdefault('expect', (200, 201, 204))
        resp = self.request('POST', path, body, **kwargs)
        return resp.json() if resp.content else None

    def delete(self, path, **kwargs):
        kwargs.setdefault('expect', 204)
        return self.request('DELETE', path, **kwargs)

    # Common set-up helpers -------------------------------------------------

    def create_provider(self, name, parent=None, uuid_=None):
        body = {'name': name, 'uuid': uuid_ or str(uuid.uuid4())}
        if parent:
            body['parent_provider_uuid'] = parent
        return self.post('/resource_providers', body, expect=200)

    def generation(self, rp_uuid):
        return self.get('/resource_providers/%s' % rp_uuid)['generation']

    def set_inventories(self, rp_uuid, inventories):
        return self.put('/resource_providers/%s/inventories' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'inventories': inventories}, expect=200)

    def set_traits(self, rp_uuid, traits):
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.put('/traits/%s' % trait, expect=(201, 204))
        return self.put('/resource_providers/%s/traits' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'traits': list(traits)}, expect=200)

    def set_aggregates(self, rp_uuid, aggregates):
        return self.put('/resource_providers/%s/aggregates' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'aggregates': list(aggregates)}, expect=200)

    def ensure_resource_class(self, name):
        self.put('/resource_classes/%s' % name, expect=(201, 204))


@pytest.fixture(scope='session')
def api(server):
    return RawAPI(server.endpoint)


@pytest.fixture(scope='session')
def run_id():
    """A short tag that makes this run's names unique."""
    return uuid.uuid4().hex[:8].upper()


def record_microversion(nodeid_or_suite, version):
    if version:
        MICROVERSIONS[suite_of(nodeid_or_suite)].add(str(version))


# Reporting ---------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    suite = suite_of(item.nodeid)
    if report.when == 'call':
        OUTCOMES[item.nodeid] = report.outcome
        STEPS[suite][report.outcome] += 1
    elif report.when == 'setup' and report.outcome != 'passed':
        OUTCOMES[item.nodeid] = 'error'
        STEPS[suite]['error' if report.failed else report.outcome] += 1
    if report.failed and report.when == 'call' and TRACE:
        report.sections.append(('client trace', '\n'.join(TRACE[-60:])))
    if report.failed and report.when == 'call':
        srv = item.funcargs.get('server')
        if srv is not None and getattr(srv, 'proc', None) is not None:
            if srv.proc.poll() is not None:
                report.sections.append(('server died', srv.diagnostics()))


def _version_key(v):
    major, _, minor = v.partition('.')
    try:
        return (int(major), int(minor or 0))
    except ValueError:
        return (99, 0)


def pytest_terminal_summary(terminalreporter):
    if not STEPS and not SERVER_INFO:
        return
    write = terminalreporter.write_line
    write('')
    write('=' * 72)
    write('Interop summary (target: %s, %s, engine: %s)' % (
        SERVER_INFO.get('target', '?'), SERVER_INFO.get('endpoint', '?'),
        'Neo4j at %s' % NEO4J_URI if NEO4J_URI else 'embedded FalkorDB'))
    if 'command' in SERVER_INFO:
        write('  server: %s' % SERVER_INFO['command'])
    if 'startup_seconds' in SERVER_INFO:
        write('  server answered after %.1f s; exit code at stop: %s' % (
            SERVER_INFO['startup_seconds'], SERVER_INFO.get('exit_code')))
    if SERVER_INFO.get('kept'):
        write('  work directory kept: %s' % SERVER_INFO['kept'])
    all_versions = set()
    for suite in sorted(STEPS):
        counts = STEPS[suite]
        total = counts['passed'] + counts['failed'] + counts['error']
        write('  suite %-20s %3d steps: %3d passed, %3d failed%s%s' % (
            suite, total, counts['passed'], counts['failed'],
            (' (%d blocked by an earlier step)' % counts['blocked'])
            if counts['blocked'] else '',
            (', %d errors' % counts['error']) if counts['error'] else ''))
        if counts['skipped']:
            write('        %d SKIPPED (no step may be skipped)'
                  % counts['skipped'])
        versions = sorted(MICROVERSIONS.get(suite, ()), key=_version_key)
        all_versions.update(versions)
        write('        microversions used: %s' % (
            ', '.join(versions) if versions else '(none)'))
    write('  all microversions covered: %s' % ', '.join(
        sorted(all_versions, key=_version_key)))
    out = os.environ.get('INTEROP_RESULTS')
    if out:
        with open(out, 'w') as f:
            json.dump({'server': {k: v for k, v in SERVER_INFO.items()
                                  if k != 'log_tail'},
                       'steps': {s: dict(c) for s, c in STEPS.items()},
                       'outcomes': OUTCOMES,
                       'microversions': {s: sorted(v, key=_version_key)
                                         for s, v in MICROVERSIONS.items()}},
                      f, indent=1, sort_keys=True)
    write('=' * 72)


def pytest_collection_modifyitems(session, config, items):
    # Steps run in file order (they build on each other within a suite);
    # keep nova's suite first, then the CLI's.
    order = {'test_nova_client': 0, 'test_osc_placement': 1}
    items.sort(key=lambda item: order.get(suite_of(item.nodeid), 9))


# Client traces and step prerequisites ----------------------------------------

# What the clients did during the current step (HTTP exchanges, commands);
# shown in the report of a failed step.
TRACE = []


def trace(line):
    TRACE.append(line)


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'after(*steps): the step builds on these earlier steps of '
        'the same suite; if one of them did not pass, the step fails as '
        'blocked (it is never skipped)')


@pytest.fixture(autouse=True)
def _clear_trace():
    TRACE.clear()
    yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    marker = item.get_closest_marker('after')
    if marker:
        module = item.nodeid.split('::')[0]
        for name in marker.args:
            outcome = OUTCOMES.get('%s::%s' % (module, name), 'not run')
            if outcome != 'passed':
                STEPS[suite_of(item.nodeid)]['blocked'] += 1
                pytest.fail('blocked: prerequisite step %s %s' % (
                    name, outcome), pytrace=False)
