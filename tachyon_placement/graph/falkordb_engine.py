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
import os
import random
import socket
import threading
import time
import uuid
import zlib

import falkordb
from falkordb import sentinel as falkordb_sentinel
from oslo_log import log as logging
import redis.backoff
import redis.exceptions
import redis.retry
import redis.sentinel

from tachyon_placement.graph import engine
from tachyon_placement.graph import local_locks as local_locks_module
from tachyon_placement.graph import schema
from tachyon_placement.graph import versioning
from tachyon_placement.monitoring import metrics
from tachyon_placement import processes

LOG = logging.getLogger(__name__)

# Stripes of the write locks (a fixed number bounds the keys), how long a
# lock lives if its holder dies, how long an attempt waits for its locks.
LOCK_STRIPES = 512
LOCK_TTL_MS = 5000
LOCK_WAIT = 2.0
# How often a write waiting for serving replicas looks at their offsets.
ACK_POLL = 0.01
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


# Seconds to reach a sentinel or a server, and that a server may take to
# answer once it started to (a partitioned primary would hang a request
# forever; the longest of Tachyon's statements take seconds; a server that
# does not start to answer is HANG_CHECK's).  Always explicit: redis-py 8
# reads with a 5 s timeout unless told otherwise.
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 60.0
SENTINEL_PORT = 26379

# The errors of a server that cannot take a write now: a replica not yet
# promoted, a primary with too few replicas (min-replicas-to-write), one
# still loading its data or out of touch with its primary.
_NOT_NOW = ('READONLY', 'NOREPLICAS', 'LOADING', 'MASTERDOWN')

# A server that sends no byte of an answer for HANG_CHECK seconds is sent
# PING on a socket of its own; one that does not answer that within
# HANG_PING seconds either is hung (stopped by SIGSTOP, a frozen VM, a
# network that drops packets): the statement ends Unavailable (503 with
# Retry-After) within HANG_CHECK + HANG_PING seconds, instead of holding
# its request for as long as the server stays stopped.  A long statement
# on a live server goes on: the server answers the PING meanwhile.
HANG_CHECK = 2.0
HANG_PING = 1.5
# Through Sentinel, a thread of each process follows the sentinels'
# choice of primary (their +switch-master messages, and a question every
# SWITCH_POLL seconds in case one is missed; never in a request's path):
# every connection to a server they no longer name is retired, so a
# demoted or paused-then-resumed old primary serves no read once another
# one is promoted.  An answer that took more than SLOW_ANSWER seconds (its
# server may have been paused while the sentinels promoted another one,
# and answer from its old graph when it resumes) is used only once a
# sentinel confirms that its server is still the primary.
SWITCH_POLL = 0.5
SLOW_ANSWER = 0.5


class Hung(redis.exceptions.RedisError):
    """The server stopped answering, even PING (see HANG_CHECK).  Not a
    redis ConnectionError: redis-py would send the statement again."""


class Demoted(redis.exceptions.RedisError):
    """An answer from a server that is no longer the primary (or that no
    sentinel confirms): a write it took may be lost, a read is old."""


_LOST = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
         Hung, Demoted)
# No retry inside redis-py: a write sent again after a lost connection may
# run twice, and a read is retried (once, after reviving an embedded
# server) or answered 503 by the engine itself.
_NO_RETRY = dict(retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0))


def answers_ping(address, timeout):
    """Whether the server at ``address`` (('unix', path) or (host, port))
    replies to PING within ``timeout`` seconds: any reply (NOAUTH too)
    shows that its event loop runs."""
    return bool(engine.reply_to(address, b'PING\r\n', timeout))


class _WatchedAnswers:
    """A redis connection whose wait for an answer is watched (HANG_CHECK),
    and that its pool can retire (FalkorDBEngine._drop_connections): mixed
    into the connection classes of every engine connection."""

    _epoch = 0

    def on_connect_check_health(self, *args, **kwargs):
        self._epoch = getattr(self.connection_pool, 'tachyon_epoch', 0)
        super().on_connect_check_health(*args, **kwargs)

    def send_packed_command(self, *args, **kwargs):
        # Closed by the thread that uses it (a connection closed under
        # another thread's read fails that read in arbitrary ways).
        if self._sock is not None and self._epoch != getattr(
                self.connection_pool, 'tachyon_epoch', 0):
            self.disconnect()
        return super().send_packed_command(*args, **kwargs)

    def _server_address(self):
        path = getattr(self, 'path', None)
        return ('unix', path) if path else (self.host, self.port)

    def read_response(self, *args, **kwargs):
        # A caller's own timeout (pub/sub polling) is left alone.
        if 'timeout' in kwargs or self._sock is None:
            return super().read_response(*args, **kwargs)
        started = time.monotonic()
        while not self.can_read(timeout=HANG_CHECK):
            if not answers_ping(self._server_address(), HANG_PING):
                self.disconnect()
                raise Hung('%s: no answer for %.1f s, not even to PING'
                           % (self._host_error(), HANG_CHECK + HANG_PING))
        response = super().read_response(*args, **kwargs)
        pool = getattr(self, 'connection_pool', None)
        if self._epoch != getattr(pool, 'tachyon_epoch', 0) or (
                time.monotonic() - started > SLOW_ANSWER and not getattr(
                    pool, 'tachyon_still_primary', bool)(
                        self._server_address())):
            self.disconnect()
            raise Demoted('%s answered after the sentinels named another '
                          'primary' % self._host_error())
        return response


class _RetiringPool(redis.ConnectionPool):
    """A pool whose connections know it, as Sentinel's do (their
    ``connection_pool``): _WatchedAnswers reads its epoch."""

    def make_connection(self):
        connection = super().make_connection()
        connection.connection_pool = self
        return connection


class _WatchedConnection(_WatchedAnswers, redis.connection.Connection):
    pass


class _WatchedUnixConnection(_WatchedAnswers,
                             redis.connection.UnixDomainSocketConnection):
    pass


Sentinels = collections.namedtuple(
    'Sentinels', 'addresses service password')
Sentinels.__doc__ = """Where the sentinels of a FalkorDB primary are:
``addresses`` [(host, port)], ``service`` (the primary's name they
monitor), ``password`` (the sentinels' own, or None)."""


class _PrimaryConnection(_WatchedAnswers,
                         falkordb_sentinel.FalkorDBSentinelManagedConnection):
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


@contextlib.contextmanager
def _made_meanwhile():
    """An index or constraint that another process (a second API worker
    syncing the same fresh graph) made between the listing and the
    creation is there, which is all that is asked."""
    try:
        yield
    except redis.exceptions.ResponseError as exc:
        if not any(words in str(exc) for words in _MADE_MEANWHILE):
            raise


_MADE_MEANWHILE = ('already indexed', 'already exists')


class _Sentinels(redis.sentinel.Sentinel):
    """Sentinels asked all at once: a sentinel that has not yet heard of a
    failover names the old primary (and, once it is back from a pause,
    sees it up), so the primary is the one named by the sentinel with the
    latest configuration epoch (each failover moves it), not by the first
    to answer.  Every sentinel is asked for each new connection and each
    watch question, never for a request that reuses a connection."""

    def usable(self, service_name):
        """The primary's address in the latest configuration, or None
        while it is down or being failed over (a server being replaced
        must not be used, even when it answers again: a paused primary
        that resumes mid-failover takes writes that its replacement will
        not have)."""
        latest = self._latest(service_name)
        if not self.check_master_state(latest, service_name) or (
                'failover_in_progress' in latest['flags']):
            return None
        return latest['ip'], latest['port']

    def discover_master(self, service_name):
        address = self.usable(service_name)
        if address is None:
            raise redis.sentinel.MasterNotFoundError(
                'No primary up for %r (down, or being failed over)'
                % service_name)
        return address

    def _latest(self, service_name):
        latest = None
        errors = []
        for sentinel in self.sentinels:
            try:
                state = sentinel.sentinel_master(service_name)
            except (redis.exceptions.ConnectionError,
                    redis.exceptions.TimeoutError,
                    redis.exceptions.ResponseError) as exc:
                errors.append(repr(exc))
                continue
            if latest is None or state['config-epoch'] > latest[
                    'config-epoch']:
                latest = state
        if latest is None:
            raise redis.sentinel.MasterNotFoundError(
                'No sentinel answers for %r: %s'
                % (service_name, ', '.join(errors)))
        return latest


_UNASKED = object()


class _SwitchWatch:
    """Follows the sentinels' choice of primary from a thread of this
    process (SWITCH_POLL): ``switched(address)`` when they name another
    server.  Started by the first statement in each process (a thread does
    not survive a fork: a pre-forking server's workers start their own)."""

    def __init__(self, sentinel, service, switched):
        self._sentinel = sentinel
        self._service = service
        self._switched = switched
        self._pid = None
        self._stopped = threading.Event()
        self._woken = threading.Event()
        self._guard = threading.Lock()

    def follow(self):
        if self._pid == os.getpid() or self._stopped.is_set():
            return
        with self._guard:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            threading.Thread(target=self._watch, daemon=True,
                             name='tachyon-sentinel-watch').start()

    def _listen(self, sentinel):
        """Wake the watch at each step of a failover that ``sentinel``
        announces (one thread per sentinel: the one that leads a failover
        announces it first, the others once they hear of it): the primary
        seen down by a quorum, a replica chosen, the new configuration."""
        while not self._stopped.is_set():
            subscription = sentinel.pubsub(ignore_subscribe_messages=True)
            try:
                subscription.subscribe(
                    '+odown', '+failover-state-select-slave',
                    '+switch-master')
                while not self._stopped.is_set():
                    if subscription.get_message(timeout=SWITCH_POLL):
                        self._woken.set()
            except redis.exceptions.RedisError:
                self._stopped.wait(SWITCH_POLL)   # that sentinel is down
            finally:
                subscription.close()

    def _watch(self):
        for sentinel in list(self._sentinel.sentinels):
            threading.Thread(target=self._listen, args=(sentinel,),
                             daemon=True,
                             name='tachyon-sentinel-listen').start()
        known = _UNASKED
        while not self._stopped.is_set():
            # Woken by a message, or after SWITCH_POLL seconds: either way
            # the sentinels are asked (a message only says "ask now").
            self._woken.wait(SWITCH_POLL)
            self._woken.clear()
            try:
                # None while the primary is down or being replaced.
                address = self._sentinel.usable(self._service)
            except redis.exceptions.RedisError:
                continue   # no sentinel answers: nothing to follow
            if known is not _UNASKED and address != known:
                try:
                    self._switched(address)
                except Exception:  # noqa: BLE001 - the watch must go on
                    LOG.exception('Following the sentinels failed')
            known = address

    def stop(self):
        self._stopped.set()
        self._woken.set()


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


def _real_replicas(info):
    """The replicas an ``INFO replication`` lists that can serve: not
    Tachyon's private ones (the feed's reads, scorers' replicas, db
    backup's copy), which listen on no TCP port (``--port 0``) and are
    never promoted."""
    found = []
    for key, value in sorted(info.items()):
        if key.startswith('slave') and isinstance(value, dict):
            try:
                port = int(value.get('port') or 0)
            except (TypeError, ValueError):
                port = 0
            if port > 0:
                found.append(value)
    return found


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
            self._sentinel = _Sentinels(
                sentinels.addresses, sentinel_kwargs={
                    'password': sentinels.password,
                    'socket_timeout': CONNECT_TIMEOUT,
                    'socket_connect_timeout': CONNECT_TIMEOUT},
                password=password, decode_responses=True,
                socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=ANSWER_TIMEOUT, socket_keepalive=True,
                **_NO_RETRY)
            self._service = sentinels.service
            client = self._sentinel.master_for(
                sentinels.service,
                redis_class=falkordb_sentinel.FalkorDBSentinelRedis,
                connection_class=_PrimaryConnection)
            # What its connections know as their connection_pool.
            self._pool_face = client.connection_pool.proxy
            self._pool_face.tachyon_connected = self._connected
            self._pool_face.tachyon_still_primary = self._still_primary
            self._db = _SentinelClient(client)
            self._primary_unseen = True
            self._switch_watch = _SwitchWatch(
                self._sentinel, sentinels.service, self._primary_switched)
        elif unix_socket_path:
            self._db = falkordb.FalkorDB(connection_pool=_RetiringPool(
                connection_class=_WatchedUnixConnection,
                path=unix_socket_path, password=password,
                socket_timeout=ANSWER_TIMEOUT, decode_responses=True,
                **_NO_RETRY))
        else:
            self._db = falkordb.FalkorDB(connection_pool=_RetiringPool(
                connection_class=_WatchedConnection,
                host=host or 'localhost', port=port or 6379,
                password=password, socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=ANSWER_TIMEOUT, socket_keepalive=True,
                decode_responses=True, **_NO_RETRY))
        if sentinels is None:
            self._pool_face = self._db.connection.connection_pool
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

    def _drop_connections(self):
        """Retire every pooled connection: each is closed before its next
        command and made anew (through Sentinel: to the primary the
        sentinels name now).  One in the middle of a statement finishes
        it: a server that stopped answering ends it within HANG_CHECK +
        HANG_PING seconds, less than the sentinels' down-after."""
        face = self._pool_face
        face.tachyon_epoch = getattr(face, 'tachyon_epoch', 0) + 1

    def _still_primary(self, address):
        """Whether a sentinel names the server at ``address`` the primary
        now (False when none answers)."""
        try:
            return tuple(self._sentinel.discover_master(
                self._service)) == tuple(address)
        except redis.exceptions.RedisError:
            return False

    def _primary_switched(self, address):
        if address is None:
            LOG.warning('The sentinels see the graph primary down or are '
                        'failing it over: its connections are closed')
        else:
            LOG.warning('The sentinels name %s:%s the graph primary now: '
                        'connections to the previous one are closed',
                        *address)
        self._primary_unseen = True
        self._drop_connections()

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
            self._switch_watch.follow()
            try:
                if self._primary_unseen:
                    self._see_primary()
                return self._run_once(statement, params, read_only)
            except _LOST as exc:
                # A failover under way: the sentinels name the new primary
                # to the next connection, checked before it is used.
                self._primary_unseen = True
                if isinstance(exc, (Hung, Demoted)):
                    self._drop_connections()
                raise engine.Unavailable(
                    '%s: the graph primary is unreachable (%s)'
                    % (statement.name, exc)) from exc
        try:
            return self._run_once(statement, params, read_only)
        except Hung as exc:
            # Stopped, not dead: nothing to revive, and the pool's other
            # connections wait on the same server.
            self._drop_connections()
            raise engine.Unavailable('%s: %s' % (statement.name, exc)) \
                from exc
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
            acks = self._real_acks(pinned)
        finally:
            pinned.close()
        if acks < self._replica_acks:
            raise engine.Unavailable(
                '%s: written on the primary but held by %d of the %d '
                'replicas [graph] replica_acks asks within %d ms: a failover '
                'may lose it' % (statement.name, acks, self._replica_acks,
                                 self._ack_timeout_ms))
        return result

    def _real_acks(self, pinned):
        """How many replicas that can serve (_real_replicas) hold the
        writes of ``pinned`` within the ack timeout.  WAIT alone counts
        Tachyon's private replicas too (the feed's, a backup's), which
        are never promoted: with replica_acks = 1 and no other replica, a
        write was answered as held by a replica.  So WAIT for them all,
        then count the serving replicas whose acknowledged offset reached
        the write's."""
        written = int(pinned.info('replication')['master_repl_offset'])
        deadline = time.monotonic() + self._ack_timeout_ms / 1000.0
        while True:
            info = pinned.info('replication')
            real = _real_replicas(info)
            private = sum(
                1 for key, value in info.items()
                if key.startswith('slave') and isinstance(value, dict)
                and value not in real)
            held = sum(1 for value in real
                       if int(value.get('offset') or 0) >= written)
            remaining = deadline - time.monotonic()
            if held >= self._replica_acks or remaining <= 0:
                return held
            # Returns at once when enough replicas of any kind acked
            # (then a serving one's acknowledgement is still on its way).
            pinned.execute_command('WAIT', self._replica_acks + private,
                                   max(1, int(remaining * 1000)))
            time.sleep(ACK_POLL)

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
                self._scorer_replica = processes.Replica(
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
        return sum(1 for value in _real_replicas(info)
                   if value.get('state') == 'online')

    def replica_attribute_tables(self):
        """[(server, its attribute names in their order, or the error
        reading them)] for the primary, then each replica it lists
        (``INFO replication``): replicas store values by attribute number,
        so a replica whose table differs from the primary's holds values
        under the wrong names (doc/source/admin/ha.rst)."""
        try:
            info = self._db.connection.info('replication')
            primary = [row['name'] for row in self.read(schema.PROPERTY_KEYS)]
        except (redis.exceptions.RedisError, engine.GraphError) as exc:
            raise engine.Unavailable('replication: %s' % exc) from exc
        tables = [('primary', primary)]
        for value in _real_replicas(info):
            server = '%s:%s' % (value.get('ip'), value.get('port'))
            replica = falkordb.FalkorDB(
                host=value.get('ip'), port=value.get('port'),
                password=self._password, socket_timeout=CONNECT_TIMEOUT,
                socket_connect_timeout=CONNECT_TIMEOUT, **_NO_RETRY)
            try:
                result = replica.select_graph(self._graph.name).ro_query(
                    schema.PROPERTY_KEYS.text(self.dialect))
                tables.append((server, [row[0] for row in
                                        result.result_set]))
            except redis.exceptions.RedisError as exc:
                tables.append((server, exc))
            finally:
                replica.close()
        return tables

    def connect_raw(self):
        """A new socket to this server (through Sentinel: the primary
        now), authenticated when it needs it (the scorer replica's relay,
        processes/sandbox.py)."""
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
            sock.sendall(processes.resp_command(
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
        """A private replica of the server (processes.Replica, as the
        feed server's reads), detached once in sync: it then holds the
        graph as it was after one whole write, while the server goes on
        serving reads and writes (it only sends its copy, as to any
        replica).  Stopped at the end.  GRAPH.COPY, tried first, hung
        the whole server once under concurrent writes (10,000 hosts)."""
        replica = processes.Replica(
            self.connect_raw, self._graph.name, FROZEN_BOUNDS,
            watch_memory=False)
        try:
            try:
                # (A copy that failed is tried again by the Replica.)
                sandbox = replica.running()
                detach = redis.Redis(unix_socket_path=sandbox.socket_path,
                                     socket_timeout=ANSWER_TIMEOUT)
                try:
                    detach.execute_command('REPLICAOF', 'NO', 'ONE')
                finally:
                    detach.close()
            except (processes.SandboxError,
                    redis.exceptions.RedisError, OSError) as exc:
                raise engine.GraphError('a replica of the graph server '
                                        'could not be made: %s' % exc) \
                    from exc
            copy = falkordb.FalkorDB(unix_socket_path=sandbox.socket_path,
                                     socket_timeout=sandbox.answer_timeout())
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
                    with _made_meanwhile():
                        self._graph.create_node_range_index(label, prop)
            self.write(schema.BACKFILL_NAME_KEYS,
                       open=schema.NAME_KEY_OPEN, close=schema.NAME_KEY_CLOSE)
            for label, prop, is_unique in schema.KEYS:
                if is_unique and (label, (prop,)) not in unique:
                    with _made_meanwhile():
                        self._graph.create_node_unique_constraint(label,
                                                                  prop)
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
        if self._sentinel is not None:
            self._switch_watch.stop()
        try:
            self._db.connection.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
