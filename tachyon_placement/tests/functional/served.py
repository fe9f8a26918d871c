"""Run a real tachyon-placement-api process on loopback for a test."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tachyon_placement.processes import replicas
from tachyon_placement.processes import sandbox as sandboxes
from tachyon_placement.tests.functional.fixtures import engine as engines


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def children(pid):
    """[(pid, name, command line)] of the processes ``pid`` started (that
    this user can read)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry, 'rb') as stat:
                fields = stat.read().rsplit(b')', 1)
            with open('/proc/%s/cmdline' % entry, 'rb') as cmdline:
                line = cmdline.read()
            name = fields[0].split(b'(', 1)[1]
            parent = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            found.append((int(entry), name, line))
    return found


def _alive(pid):
    """Whether pid runs (a zombie waiting for its parent does not)."""
    try:
        with open('/proc/%d/stat' % pid) as stat:
            return stat.read().rpartition(')')[2].split()[0] not in 'ZX'
    except OSError:
        return False


def command_line(pid):
    """``pid``'s command line, for a failure's message."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as cmdline:
            return cmdline.read().replace(b'\0', b' ')[:300].decode(
                errors='replace')
    except OSError as exc:
        return str(exc)


def _thread_states(pid):
    """{thread id: its state letter} of ``pid``'s threads."""
    states = {}
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return states
    for task in tasks:
        try:
            with open('/proc/%d/task/%s/stat' % (pid, task)) as stat:
                states[task] = stat.read().rpartition(')')[2].split()[0]
        except OSError:
            pass        # the thread ended meanwhile
    return states


@contextlib.contextmanager
def paused(pid, within=10.0):
    """``pid`` stopped (SIGSTOP) for the duration, continued after.

    kill() returns once the stop is sent, not once it took: each thread
    of the process stops when it next runs, and a JVM has hundreds.  So
    this waits (``within`` seconds at most) until every thread is in the
    stopped state: a probe sent before that could be answered by a
    thread still running, and the test would say the product missed a
    hang that had not begun."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + within
        while True:
            states = _thread_states(pid)
            running = {task: state for task, state in states.items()
                       if state not in 'TtZX'}
            if states and not running:
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    'pid %d not stopped %g s after SIGSTOP: threads %r'
                    % (pid, within, running))
            time.sleep(0.01)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


class ServedPlacement:
    """The API served by its console script with a config of its own, on
    the suite's engine (fixtures/engine.py): an embedded FalkorDB of its
    own, or the Neo4j server, emptied first."""

    def __init__(self, workdir, extra_conf='', appendfsync='everysec',
                 data_dir=None):
        """``data_dir``: another instance's, to share its engine as API
        worker processes do (every instance shares a Neo4j server)."""
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        self.config = os.path.join(self.workdir, 'placement.conf')
        if data_dir is None:
            engines.wipe_shared_engine()
        self.data_dir = data_dir or os.path.join(self.workdir, 'graph')
        with open(self.config, 'w') as out:
            out.write('[api]\nauth_strategy = noauth2\n[graph]\n%s%s'
                      % (engines.served_graph_conf(self.data_dir,
                                                   appendfsync),
                         extra_conf))
        self.process = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self, timeout=60):
        log = open(os.path.join(self.workdir, 'api.log'), 'ab')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'tachyon_placement.cmd.api',
             '--config-file', self.config, '--port', str(self.port)],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('API exited: %s' % self.log_tail())
            try:
                self.request('GET', '/')
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError('API did not start: %s' % self.log_tail())

    def stop(self, sig=None):
        _stop(self.process, sig, self.log_tail)

    def engine_pid(self):
        """Pid of the engine: the embedded FalkorDB server (see
        processes/embedded.py), or the Neo4j JVM (known only when the suite was
        told how it was started)."""
        if engines.NEO4J_URI:
            if not engines.NEO4J_CONTROL:
                pytest.skip('Neo4j was not started by the suite '
                            '(TACHYON_TEST_NEO4J_CONTROL unset): its '
                            'process is not known')
            return int(engines.neo4j_control('pid'))
        with open(os.path.join(self.data_dir, 'server.pid')) as pid_file:
            return int(pid_file.read().split()[0])

    def kill_engine(self):
        """SIGKILL the engine and wait until it is dead (a big JVM takes a
        moment to go; revive_engine() must not find it still there)."""
        pid = self.engine_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def revive_engine(self):
        """Start a killed engine again: the API restarts its embedded one
        by itself; Neo4j is the control script's."""
        if engines.NEO4J_URI:
            engines.neo4j_control('start')

    def log_tail(self):
        with open(os.path.join(self.workdir, 'api.log'), 'rb') as log:
            return log.read()[-3000:].decode('utf-8', 'replace')

    def request(self, method, path, body=None, version='latest',
                token='admin', service='placement', headers=None):
        """``service``: placement, or tachyon (Tachyon's own routes)."""
        return json_request(self.url, method, path, body, version, token,
                            service, headers=headers)


class ServedGunicorn:
    """The API under gunicorn with Tachyon's configuration module (the
    ``[server]`` extra), ``workers`` processes, on the suite's engine;
    ``extra_conf`` goes into its placement.conf, ``env`` into gunicorn's
    environment."""

    def __init__(self, workdir, workers=1, extra_conf='', env=None):
        self.config = ServedPlacement(workdir, extra_conf=extra_conf)
        self.port = free_port()
        self.process = None
        self.workers = workers
        self.env = env or {}
        self.workdir = str(workdir)

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self, timeout=60):
        env = dict(os.environ, TACHYON_CONFIG_FILE=self.config.config,
                   **self.env)
        log = open(os.path.join(self.workdir, 'gunicorn.log'), 'ab')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '-c',
             'python:tachyon_placement.wsgi.gunicorn', '--bind',
             '127.0.0.1:%d' % self.port, '--workers', str(self.workers),
             'tachyon_placement.wsgi.api:application'],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('gunicorn exited: %s' % self.log_tail())
            try:
                with socket.create_connection(('127.0.0.1', self.port),
                                              timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError('gunicorn did not start: %s' % self.log_tail())

    def request(self, method, path, body=None, version='latest',
                token='admin', service='placement', headers=None):
        return json_request(self.url, method, path, body, version, token,
                            service, headers=headers)

    def log_tail(self):
        with open(os.path.join(self.workdir, 'gunicorn.log'), 'rb') as log:
            return log.read()[-3000:].decode('utf-8', 'replace')

    def stop(self):
        _stop(self.process, None, self.log_tail)
        self.config.stop()


def _stop(process, sig, log_tail, timeout=30):
    """Stop ``process`` with ``sig`` (SIGTERM by default); one that is
    still there after ``timeout`` seconds is killed, and the failure says
    what its log ended with (a server that does not stop is a bug)."""
    if not process or process.poll() is not None:
        return
    if sig is None:
        process.terminate()
    else:
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
        raise RuntimeError('pid %d did not stop within %d s of signal %s; '
                           'its log ended: %s' % (
                               process.pid, timeout, sig or 'SIGTERM',
                               log_tail()))


class ServedFeed:
    """tachyon-feed served by its console script beside a ServedPlacement,
    with its configuration file (and ``extra_conf`` after it)."""

    def __init__(self, api, extra_conf=''):
        self.api = api
        self.workdir = api.workdir
        self.port = free_port()
        self.config = os.path.join(self.workdir, 'feed.conf')
        with open(api.config) as source, open(self.config, 'w') as out:
            out.write(source.read() + '\n' + extra_conf)
        self.process = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self, timeout=None):
        """Start the feed server; wait until it answers a read.  It
        listens once its replica of the graph has its copy, or failed to
        (sandbox.COPY_STALL per attempt, replicas.COPY_ATTEMPTS): the
        wait covers both attempts, so a failure's log is read here."""
        if timeout is None:
            timeout = replicas.COPY_ATTEMPTS * sandboxes.COPY_STALL + 30
        log = open(os.path.join(self.workdir, 'feed.log'), 'ab')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'tachyon_placement.cmd.feed',
             '--config-file', self.config, '--port', str(self.port)],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('feed exited: %s' % self.log_tail())
            try:
                status, _body = json_request(self.url, 'GET',
                                             '/tachyon/changes',
                                             version='1.0',
                                             service='tachyon')
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError('feed did not start: %s' % self.log_tail())

    def stop(self):
        _stop(self.process, None, self.log_tail)

    def log_tail(self, size=3000):
        with open(os.path.join(self.workdir, 'feed.log'), 'rb') as log:
            return log.read()[-size:].decode('utf-8', 'replace')

    def rss_kib(self):
        with open('/proc/%d/status' % self.process.pid) as status:
            for line in status:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        return 0


def scrape_metrics(base, token='admin', accept='text/plain'):
    """(status, Content-Type, text) of GET /tachyon/monitoring/metrics
    (``accept`` None: no Accept header)."""
    request = urllib.request.Request(base + '/tachyon/monitoring/metrics')
    if token:
        request.add_header('x-auth-token', token)
    if accept is not None:
        request.add_header('accept', accept)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return (response.status, response.headers['Content-Type'],
                    response.read().decode())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers['Content-Type'], exc.read().decode()


def json_request(base, method, path, body=None, version='latest',
                 token='admin', service='placement', timeout=60,
                 headers=None):
    """(status, JSON body or None) of one request to the service at
    ``base``; ``headers``: more of them."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    req.add_header('x-auth-token', token)
    req.add_header('openstack-api-version', '%s %s' % (service, version))
    req.add_header('accept', 'application/json')
    if data is not None:
        req.add_header('content-type', 'application/json')
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        text = exc.read()
        try:
            return exc.code, json.loads(text) if text else None
        except ValueError:
            # Not ours (a proxy's page): the status still counts.
            return exc.code, {'text': text.decode('utf-8', 'replace')}
