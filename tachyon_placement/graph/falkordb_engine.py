"""FalkorDB engine: the embedded default, or an external server.

FalkorDB runs each write query atomically and one at a time, so a single
statement that checks generations and writes is a safe optimistic update.

Allocation and reshape attempts of API processes sharing one server (the
workers of a WSGI server, or several hosts) read, check and write in
several queries, and lose the race to each other when they touch the same
providers.  ``exclusive`` makes them take turns instead, as Neo4j's row
locks do: it holds a lock per stripe of the providers and consumers an
attempt touches.  Through a unix socket (the embedded server: every
process on one machine) the stripes are bytes of a file locked with fcntl
(local_locks.py); otherwise they are kept in the same server (``SET NX``
with an expiry, so a killed holder cannot block anyone for long).  The
locks only save retries: the guarded write still refuses changed
generations, and an attempt that cannot get its locks in time goes on
without them.

Through Redis Sentinel (``sentinel://``: a primary, its replicas and the
sentinels that fail over) the engine asks the sentinels for the primary
on every new connection (falkordb's sentinel client, which never sends a
write again after an ambiguous failure).  A lost connection answers
``engine.Unavailable`` (the API's 503) rather than a retried write; the
next statement first checks which primary it reached: a new one moves the
graph version (versioning.PRIMARY_SEEN) so every copy of the graph
reloads.  With ``replica_acks`` a write is answered only once that many
replicas hold it (Redis WAIT, on the write's own connection); fewer within
``replica_ack_timeout`` is Unavailable too: the write happened on the
primary but a failover may lose it.
"""
import collections
import contextlib
import random
import socket
import threading
import time
import uuid
import zlib

import falkordb
from falkordb import sentinel as falkordb_sentinel
from oslo_log import log as logging
import redis.exceptions
import redis.sentinel

from tachyon_placement.graph import engine
from tachyon_placement.graph import local_locks as local_locks_module
from tachyon_placement.graph import schema
from tachyon_placement.graph import scorer_sandbox
from tachyon_placement.graph import versioning
from tachyon_placement.monitoring import metrics

LOG = logging.getLogger(__name__)

# Stripes of the write locks (a fixed number bounds the keys), how long a
# lock lives if its holder dies, how long an attempt waits for its locks.
LOCK_STRIPES = 512
LOCK_TTL_MS = 5000
LOCK_WAIT = 2.0
# Takes the stripes KEYS in order for token ARGV[1] (ARGV[2]: expiry in
# ms) until one is someone else's; returns how many it holds. One round
# trip for a write's stripes (a batch of 50 consumers on 50 hosts has a
# hundred), not one per stripe.
_ACQUIRE = """
for i, key in ipairs(KEYS) do
  if not redis.call('set', key, ARGV[1], 'NX', 'PX', ARGV[2]) then
    if redis.call('get', key) ~= ARGV[1] then
      return i - 1
    end
  end
end
return #KEYS
"""

# Releases the stripes KEYS that still hold token ARGV[1] (a lock that
# expired and went to another holder is not this holder's to delete).
_RELEASE = """
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[1] then
    released = released + redis.call('del', key)
  end
end
return released
"""


# Through Sentinel: seconds to reach a sentinel or a server, and that a
# server may take to answer (a partitioned primary would hang a request
# forever; the longest of Tachyon's statements take seconds).
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 60.0
SENTINEL_PORT = 26379

# The errors of a server that cannot take a write now: a replica not yet
# promoted, a primary with too few replicas (min-replicas-to-write), one
# still loading its data or out of touch with its primary.
_NOT_NOW = ('READONLY', 'NOREPLICAS', 'LOADING', 'MASTERDOWN')
_LOST = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

Sentinels = collections.namedtuple(
    'Sentinels', 'addresses service password')
Sentinels.__doc__ = """Where the sentinels of a FalkorDB primary are:
``addresses`` [(host, port)], ``service`` (the primary's name they
monitor), ``password`` (the sentinels' own, or None)."""


class _PrimaryConnection(falkordb_sentinel.FalkorDBSentinelManagedConnection):
    """A connection to the primary the sentinels name, which tells the
    engine that it made a new one (it may reach a new primary)."""

    def on_connect_check_health(self, *args, **kwargs):
        super().on_connect_check_health(*args, **kwargs)
        # A sentinel's answer can be out of date (it has not yet seen a
        # failover, or a demoted primary is back): such a server answers
        # reads from an old graph.  Only a server that says it is the
        # primary is used; the next connection asks the sentinels again.
        self.send_command('ROLE')
        role = self.read_response()[0]
        if isinstance(role, bytes):
            role = role.decode()
        if role != 'master':
            self.disconnect()
            raise redis.exceptions.ConnectionError(
                '%s:%s is a %s, not the primary' % (self.host, self.port,
                                                    role))
        connected = getattr(self.connection_pool, 'tachyon_connected', None)
        if connected is not None:
            connected()


class _SentinelClient(falkordb.FalkorDB):
    """falkordb.FalkorDB over a client of the sentinels' primary: its
    constructor takes one sentinel and finds the service by listing
    them; Tachyon names every sentinel and the service."""

    def __init__(self, client):   # noqa: super() would connect anew
        self.connection = client
        self.flushdb = client.flushdb
        self.execute_command = client.execute_command


# A frozen replica's reads are Tachyon's own statements over windows of
# node ids: no memory capacity of their own, a timeout far above any.
FROZEN_BOUNDS = collections.namedtuple(
    'FrozenBounds', 'timeout memory_mib max_rows')(300.0, 0, 0)


class _FrozenCopy(engine.Frozen):
    """A private copy of the graph: nobody writes it, so a scan reads it
    by windows of node ids, each reply bounded."""

    WINDOW = 2000

    def __init__(self, graph, dialect):
        self._graph = graph
        self._dialect = dialect

    def read(self, statement, **params):
        try:
            result = self._graph.ro_query(statement.text(self._dialect),
                                          params)
        except redis.exceptions.RedisError as exc:
            raise engine.GraphError('%s: %s' % (statement.name, exc)) from exc
        columns = [column[1] for column in result.header]
        return [dict(zip(columns, row)) for row in result.result_set]

    def scan(self, statement, **params):
        top = self.read(schema.TOP_NODE_ID)[0]['top']
        if top is None:
            return
        for first in range(0, top + 1, self.WINDOW):
            yield from self.read(statement, first=first,
                                 last=first + self.WINDOW, **params)


class FalkorDBEngine(engine.Engine):
    dialect = 'falkordb'
    reads_whole_commits = True
    # redis-py's replies are plain lists (test_graph_version.py checks that
    # requests leave no cycle at all here): no sweep of what was frozen,
    # whose full collection held a worker for 0.7-1.7 s at 10,000 hosts.
    leaves_cycles_in_flight = False

    def __init__(self, graph_name, unix_socket_path=None, host=None,
                 port=None, password=None, revive=None, local_locks=True,
                 sentinels=None, replica_acks=0, replica_ack_timeout=2.0):
        """``revive`` restarts a dead embedded server (it is called once
        when the connection fails, then the statement is retried);
        ``local_locks``: through a unix socket, lock write attempts with
        fcntl rather than in the server; ``sentinels``: a Sentinels, the
        primary they name is the server; ``replica_acks``: replicas that
        must hold a write before it is answered (``replica_ack_timeout``
        seconds at most)."""
        self._sentinel = None
        self._primary_unseen = False
        self._primary_lock = threading.Lock()
        if sentinels is not None:
            self._sentinel = redis.sentinel.Sentinel(
                sentinels.addresses, sentinel_kwargs={
                    'password': sentinels.password,
                    'socket_timeout': CONNECT_TIMEOUT,
                    'socket_connect_timeout': CONNECT_TIMEOUT},
                password=password, decode_responses=True,
                socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=ANSWER_TIMEOUT, socket_keepalive=True)
            self._service = sentinels.service
            client = self._sentinel.master_for(
                sentinels.service,
                redis_class=falkordb_sentinel.FalkorDBSentinelRedis,
                connection_class=_PrimaryConnection)
            client.connection_pool.tachyon_connected = self._connected
            self._db = _SentinelClient(client)
            self._primary_unseen = True
        elif unix_socket_path:
            self._db = falkordb.FalkorDB(unix_socket_path=unix_socket_path,
                                         password=password)
        else:
            self._db = falkordb.FalkorDB(host=host or 'localhost',
                                         port=port or 6379,
                                         password=password)
        self._replica_acks = replica_acks
        self._ack_timeout_ms = max(1, int(replica_ack_timeout * 1000))
        self._graph = self._db.select_graph(graph_name)
        self._lock_prefix = 'tachyon:write-lock:%s:' % graph_name
        self._acquire = self._db.connection.register_script(_ACQUIRE)
        self._release = self._db.connection.register_script(_RELEASE)
        self._stripe_file = None
        if unix_socket_path and local_locks:
            stripe_file = local_locks_module.stripe_file(
                '%s.%s.write-locks' % (unix_socket_path, graph_name),
                LOCK_STRIPES)
            try:
                stripe_file.check()
                self._stripe_file = stripe_file
            except OSError as exc:
                LOG.warning('Write locks in the graph server: cannot open '
                            '%s (%s)', stripe_file.path, exc)
        self._revive = revive
        self._closed = False
        self._lock = threading.Lock()
        self._address = (('unix', unix_socket_path) if unix_socket_path
                         else ('tcp', host or 'localhost', port or 6379))
        self._password = password
        self._scorer_replica = None

    @property
    def graph_name(self):
        return self._graph.name

    def _connected(self):
        """A new connection to the primary the sentinels named: which one
        it is is checked before the next statement."""
        self._primary_unseen = True

    def _see_primary(self):
        """Record the primary reached (its replication id); the first
        process to reach a new one moves the graph version (see
        versioning.PRIMARY_SEEN)."""
        with self._primary_lock:
            if not self._primary_unseen:
                return
            self._primary_unseen = False
            try:
                primary = self._db.connection.info('replication')[
                    'master_replid']
                # A write (a graph key that does not exist yet fails a
                # read), made only on a new connection: rare.
                row = self._run_once(versioning.PRIMARY_SEEN, {
                    'primary': primary,
                    'gap': versioning.PRIMARY_GAP}, False)[0]
                if row['switched']:
                    LOG.warning('A new graph primary (%s): the graph '
                                'version moved to %d, every copy '
                                'reloads', primary, row['version'])
                    metrics.engine_reconnect(self.dialect)
            except BaseException:
                self._primary_unseen = True
                raise

    def _run(self, statement, params, read_only):
        if self._sentinel is not None:
            try:
                if self._primary_unseen:
                    self._see_primary()
                return self._run_once(statement, params, read_only)
            except _LOST as exc:
                # A failover under way: the sentinels name the new primary
                # to the next connection, checked before it is used.
                self._primary_unseen = True
                raise engine.Unavailable(
                    '%s: the graph primary is unreachable (%s)'
                    % (statement.name, exc)) from exc
        try:
            return self._run_once(statement, params, read_only)
        except _LOST as exc:
            if not self._revive:
                raise engine.Unavailable('%s: %s' % (statement.name, exc)) \
                    from exc
            # The embedded server died (crash, OOM kill): start it again
            # from its append-only file.  A read is simply retried; a write
            # may or may not have been applied before the connection broke,
            # so it is reported, not repeated.
            self._revive()
            metrics.engine_reconnect(self.dialect)
            if not read_only:
                raise engine.Unavailable(
                    '%s: connection to the graph engine was lost'
                    % statement.name)
            return self._run_once(statement, params, read_only)

    def _run_once(self, statement, params, read_only):
        text = statement.text(self.dialect)
        try:
            if read_only:
                result = self._graph.ro_query(text, params)
            elif self._replica_acks:
                result = self._acknowledged(statement, text, params)
            else:
                result = self._graph.query(text, params)
        except redis.exceptions.ResponseError as exc:
            if 'unique constraint violation' in str(exc):
                raise engine.ConstraintViolation(str(exc)) from exc
            if str(exc).startswith(_NOT_NOW):
                raise engine.Unavailable(
                    '%s: %s' % (statement.name, exc)) from exc
            raise engine.GraphError('%s: %s' % (statement.name, exc)) from exc
        except _LOST:
            raise
        except redis.exceptions.RedisError as exc:
            raise engine.GraphError('%s: %s' % (statement.name, exc)) from exc
        columns = [column[1] for column in result.header]
        return [dict(zip(columns, row)) for row in result.result_set]

    def _acknowledged(self, statement, text, params):
        """The result of write ``text``, once ``replica_acks`` replicas
        hold it: WAIT counts the replicas that hold the writes of the
        connection it is sent on, so the write and WAIT go on one
        connection taken from the pool for them."""
        connection = self._db.connection
        pinned = type(connection)(connection_pool=connection.connection_pool,
                                  single_connection_client=True)
        try:
            graph = falkordb.Graph(pinned, self._graph.name)
            graph.schema = self._graph.schema   # labels known to the pool's
            result = graph.query(text, params)
            acks = pinned.execute_command('WAIT', self._replica_acks,
                                          self._ack_timeout_ms)
        finally:
            pinned.close()
        if acks < self._replica_acks:
            raise engine.Unavailable(
                '%s: written on the primary but held by %d of the %d '
                'replicas [graph] replica_acks asks within %d ms: a failover '
                'may lose it' % (statement.name, acks, self._replica_acks,
                                 self._ack_timeout_ms))
        return result

    @contextlib.contextmanager
    def exclusive(self, keys=()):
        stripes = sorted({zlib.crc32(key.encode()) % LOCK_STRIPES
                          for key in keys})
        deadline = time.monotonic() + LOCK_WAIT
        if self._stripe_file is not None:
            held = self._stripe_file.acquire(stripes, deadline)
            try:
                yield engine.Section()
            finally:
                self._stripe_file.release(held)
            return
        names = ['%s%d' % (self._lock_prefix, stripe) for stripe in stripes]
        token = uuid.uuid4().hex
        held = []
        try:
            pause = 0.0005
            # In sorted order, keeping what is held while waiting for the
            # next (every writer takes them in that order: no deadlock).
            while len(held) < len(names):
                rest = names[len(held):]
                taken = self._acquire(keys=rest, args=[token, LOCK_TTL_MS])
                held.extend(rest[:taken])
                if len(held) == len(names):
                    break
                if time.monotonic() > deadline:
                    break  # go on with what is held: the guards still hold
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, 0.008)
            yield engine.Section()
        except _LOST as exc:
            self._primary_unseen = self._sentinel is not None
            raise engine.Unavailable('write lock: %s' % exc) from exc
        except redis.exceptions.ResponseError as exc:
            # A replica not yet promoted, a primary without its replicas.
            kind = engine.Unavailable if str(exc).startswith(_NOT_NOW) \
                else engine.GraphError
            raise kind('write lock: %s' % exc) from exc
        except redis.exceptions.RedisError as exc:
            raise engine.GraphError('write lock: %s' % exc) from exc
        finally:
            if held:
                with contextlib.suppress(redis.exceptions.RedisError):
                    self._release(keys=held, args=[token])

    def run_scorer_query(self, text, bounds, max_rows):
        with self._lock:
            if self._scorer_replica is None:
                self._scorer_replica = scorer_sandbox.Replica(
                    self.connect_raw, self._graph.name, bounds)
            replica = self._scorer_replica
        return self.sandboxed_rows(replica, text, bounds, max_rows)

    def drop_scorer_copy(self):
        with self._lock:
            replica, self._scorer_replica = self._scorer_replica, None
        if replica is not None:
            replica.close()

    @property
    def through_sentinel(self):
        return self._sentinel is not None

    def replicas_online(self):
        """How many replicas the server (the primary) has online now."""
        try:
            info = self._db.connection.info('replication')
        except redis.exceptions.RedisError as exc:
            raise engine.Unavailable('replication: %s' % exc) from exc
        return sum(1 for key, value in info.items()
                   if key.startswith('slave') and isinstance(value, dict)
                   and value.get('state') == 'online')

    def connect_raw(self):
        """A new socket to this server (through Sentinel: the primary
        now), authenticated when it needs it (the scorer replica's relay,
        graph/scorer_sandbox.py)."""
        if self._sentinel is not None:
            try:
                address = self._sentinel.discover_master(self._service)
            except redis.exceptions.RedisError as exc:
                raise OSError('no graph primary: %s' % exc) from exc
            sock = socket.create_connection(address, timeout=10)
        elif self._address[0] == 'unix':
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(self._address[1])
        else:
            sock = socket.create_connection(self._address[1:], timeout=10)
        if self._password:
            sock.sendall(scorer_sandbox.resp_command(
                b'AUTH', self._password.encode()))
            if not sock.recv(64).startswith(b'+OK'):
                sock.close()
                raise OSError('the graph server refused the password')
        sock.settimeout(None)
        return sock

    def read(self, statement, **params):
        return engine.counted(self.dialect, 'read', self._run, statement,
                              params, True)

    def write(self, statement, **params):
        return engine.counted(self.dialect, 'write', self._run, statement,
                              params, False)

    @contextlib.contextmanager
    def frozen(self):
        """A private replica of the server (scorer_sandbox.Replica, as the
        feed server's reads), detached once in sync: it then holds the
        graph as it was after one whole write, while the server goes on
        serving reads and writes (it only sends its copy, as to any
        replica).  Stopped at the end.  GRAPH.COPY, tried first, hung
        the whole server once under concurrent writes (10,000 hosts)."""
        replica = scorer_sandbox.Replica(
            self.connect_raw, self._graph.name, FROZEN_BOUNDS,
            watch_memory=False)
        try:
            try:
                try:
                    sandbox = replica.running()
                except scorer_sandbox.SandboxError as exc:
                    # Once in some hundred copies under load the replica
                    # died as its copy arrived (its log is in the error):
                    # another one, once.
                    LOG.warning('A replica of the graph server failed, '
                                'making another: %s', exc)
                    sandbox = replica.running()
                detach = redis.Redis(unix_socket_path=sandbox.socket_path)
                try:
                    detach.execute_command('REPLICAOF', 'NO', 'ONE')
                finally:
                    detach.close()
            except (scorer_sandbox.SandboxError,
                    redis.exceptions.RedisError, OSError) as exc:
                raise engine.GraphError('a replica of the graph server '
                                        'could not be made: %s' % exc) \
                    from exc
            copy = falkordb.FalkorDB(unix_socket_path=sandbox.socket_path)
            try:
                yield _FrozenCopy(copy.select_graph(self._graph.name),
                                  self.dialect)
            finally:
                copy.close()
        finally:
            replica.close()

    def ensure_schema(self):
        """Create what is missing, drop what is obsolete, and nothing
        else: FalkorDB logs a CRITICAL line for every constraint created
        again, so existing ones are listed first."""
        self.write(schema.REGISTER_RELATIONSHIP_TYPES)
        try:
            indexed = {(row[0], prop)
                       for row in self._graph.list_indices().result_set
                       if row[6] == 'NODE' for prop in row[1]}
            unique = {(c['label'], tuple(c['properties']))
                      for c in self._graph.list_constraints()
                      if c['type'] == 'UNIQUE' and c['entitytype'] == 'NODE'}
            for label, prop, _unique in schema.OBSOLETE_KEYS:
                if (label, (prop,)) in unique:
                    self._graph.drop_node_unique_constraint(label, prop)
                if (label, prop) in indexed:
                    self._graph.drop_node_range_index(label, prop)
            for label, prop, _unique in schema.KEYS:
                if (label, prop) not in indexed:
                    self._graph.create_node_range_index(label, prop)
            self.write(schema.BACKFILL_NAME_KEYS,
                       open=schema.NAME_KEY_OPEN, close=schema.NAME_KEY_CLOSE)
            for label, prop, is_unique in schema.KEYS:
                if is_unique and (label, (prop,)) not in unique:
                    self._graph.create_node_unique_constraint(label, prop)
        except redis.exceptions.ResponseError as exc:
            raise engine.GraphError(str(exc)) from exc

    def reset(self):
        self.write(schema.DELETE_ALL)

    def drop_graph(self):
        """Delete the whole graph key (tests: one graph per test file)."""
        try:
            self._graph.delete()
        except redis.exceptions.ResponseError:
            pass  # never written to: nothing to delete

    def close(self):
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._scorer_replica is not None:
            self._scorer_replica.close()
        try:
            self._db.connection.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
