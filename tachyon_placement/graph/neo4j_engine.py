"""Neo4j 5 engine through the official driver.

Each statement, read or write, runs as one auto-commit query (writes are
tried again when Neo4j rolled them back for a deadlock).  Statements that
update several providers or consumers take their write locks first, in uuid
order, before reading generations: Neo4j reads at read-committed isolation.

Allocation and reshape writes go further (``exclusive``): one explicit
transaction whose first statement locks the consumers and providers and
reads them, then checks and writes, so writers in other API processes wait
for the locks instead of losing the race and retrying.
"""
import contextlib
import socket
import threading
import time

import neo4j
import neo4j.exceptions
from oslo_log import log as logging

from tachyon_placement.graph import engine
from tachyon_placement.graph import schema
from tachyon_placement.graph import versioning
from tachyon_placement import processes


LOG = logging.getLogger(__name__)

# A query that has had no answer for HANG_CHECK seconds has its server
# checked: a Bolt handshake on a connection of its own.  A server that
# does not answer that within HANG_PING seconds is hung (a JVM stopped by
# SIGSTOP, a frozen VM, a network dropping packets): the query's
# connection is shut down, and the statement ends Unavailable (503 with
# Retry-After) within about HANG_CHECK + HANG_PING + WATCH_EVERY seconds
# instead of holding its request as long as the server stays stopped (the
# driver has no read timeout unless the server hints one).  A long query
# on a live server goes on: the server answers the handshake meanwhile.
# HANG_PING allows for a garbage collection pause of the JVM.
HANG_CHECK = 2.0
HANG_PING = 2.5
WATCH_EVERY = 0.5
# A new connection's handshake, and the wait for one from the pool (the
# handshake's deadline): the same bound (the driver's defaults, 30 and
# 60 s, are as long as a request waits on a stopped server).
CONNECTION_TIMEOUT = HANG_CHECK + HANG_PING
# Bolt's preamble and four version proposals (5.0 to 5.8, then none): any
# reply, even a refusal or a TLS alert, shows that the server runs.
_HANDSHAKE = (b'\x60\x60\xb0\x17' + b'\x00\x08\x08\x05'
              + b'\x00\x00\x04\x04' + b'\x00' * 8)


def answers_handshake(address, timeout):
    """Whether the server at ``address`` ((host, port)) replies to a Bolt
    handshake (or closes the connection) within ``timeout`` seconds."""
    return engine.reply_to(address, _HANDSHAKE, timeout) is not None


def _raw_socket(holder):
    """The socket under a session's or transaction's connection (the
    driver's internals: None when they are not as expected)."""
    connection = getattr(holder, '_connection', None)
    bolt_socket = getattr(connection, 'socket', None)
    raw = getattr(bolt_socket, '_socket', None)
    return raw if isinstance(raw, socket.socket) else None


class _HangWatch:
    """The queries in flight, checked every WATCH_EVERY seconds by one
    thread while there are any (see HANG_CHECK)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = {}          # token -> [holder, checked at, cut]
        self._thread = None

    @contextlib.contextmanager
    def watching(self, holder):
        """Watch the query run in the block on ``holder`` (a session or
        a transaction); yields a list that holds True once it was cut."""
        entry = [holder, time.monotonic(), []]
        token = object()
        with self._lock:
            self._running[token] = entry
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name='tachyon-neo4j-hang-watch',
                    daemon=True)
                self._thread.start()
        try:
            yield entry[2]
        finally:
            with self._lock:
                del self._running[token]

    def _watch(self):
        while True:
            time.sleep(WATCH_EVERY)
            now = time.monotonic()
            with self._lock:
                if not self._running:
                    self._thread = None
                    return
                overdue = [entry for entry in self._running.values()
                           if now - entry[1] >= HANG_CHECK]
            checked = {}
            for entry in overdue:
                raw = _raw_socket(entry[0])
                try:
                    address = raw.getpeername()[:2] if raw else None
                except OSError:
                    address = None
                if address is None:
                    continue
                if address not in checked:
                    checked[address] = answers_handshake(address, HANG_PING)
                if checked[address]:
                    # Alive: looked at again HANG_CHECK from now.
                    entry[1] = time.monotonic()
                    continue
                entry[2].append(True)
                LOG.warning('Neo4j at %s:%s answered nothing for %.1f s, '
                            'not even a handshake: its query is cut',
                            address[0], address[1],
                            time.monotonic() - entry[1])
                with contextlib.suppress(OSError):
                    raw.shutdown(socket.SHUT_RDWR)


def _plain(value):
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


# Tries of a write Neo4j rolled back for a deadlock.
WRITE_ATTEMPTS = 5


# The driver's errors that mean no server answers now (a restart, a
# cluster's leader election): the API answers 503, not 500.
_UNREACHABLE = (neo4j.exceptions.ServiceUnavailable,
                neo4j.exceptions.SessionExpired)


def _failed(statement, exc):
    """The engine error for the driver's ``exc`` in ``statement``."""
    kind = engine.Unavailable if isinstance(exc, _UNREACHABLE) \
        else engine.GraphError
    return kind('%s: %s' % (statement.name, exc))


class _GuardFailed(Exception):
    """Raised inside a managed transaction to roll it back."""


def _close_quietly(closable):
    """Close a session, or roll a transaction back (a failed one may refuse
    even that)."""
    with contextlib.suppress(neo4j.exceptions.Neo4jError,
                             neo4j.exceptions.DriverError):
        closable.close()


class _Exclusive(engine.Section):
    """The open transaction of an ``exclusive`` section."""

    def __init__(self, tx):
        super().__init__()
        self.tx = tx


class _FrozenTransaction(engine.Frozen):
    """Reads in the transaction holding the graph version's lock; a scan
    streams its rows as the server sends them (no paging needed)."""

    def __init__(self, tx, dialect):
        self._tx = tx
        self._dialect = dialect

    def read(self, statement, **params):
        return list(self.scan(statement, **params))

    def scan(self, statement, **params):
        try:
            for record in self._tx.run(statement.text(self._dialect),
                                       params):
                yield {key: _plain(value) for key, value in record.items()}
        except neo4j.exceptions.Neo4jError as exc:
            raise engine.GraphError('%s: %s' % (statement.name, exc)) from exc


class Neo4jEngine(engine.Engine):
    dialect = 'neo4j'

    def __init__(self, uri, username=None, password=None, database=None):
        auth = (username, password) if username else None
        # The server's notices (unknown labels on an empty graph, ...) are
        # not sent at all: the driver would log one line per query.  The
        # suite asks the server for deprecations on its own.
        self._driver = neo4j.GraphDatabase.driver(
            uri, auth=auth, notifications_min_severity='OFF',
            connection_timeout=CONNECTION_TIMEOUT,
            connection_acquisition_timeout=CONNECTION_TIMEOUT)
        self._hangs = _HangWatch()
        self._database = database
        self._local = threading.local()
        self._scorer_lock = threading.Lock()
        self._scorer_copy = None

    def _session(self, access_mode):
        # One bookmark manager for every session of the process: a read
        # sees what this process wrote, also from cluster followers.
        return self._driver.session(
            database=self._database, default_access_mode=access_mode,
            bookmark_manager=self._driver.execute_query_bookmark_manager)

    def _read_session(self):
        """This thread's session for reads (sessions are not shared between
        threads; keeping one saves acquiring one per read)."""
        session = getattr(self._local, 'read_session', None)
        if session is None:
            session = self._local.read_session = self._session(
                neo4j.READ_ACCESS)
        return session

    def _drop_read_session(self):
        session = getattr(self._local, 'read_session', None)
        self._local.read_session = None
        if session is not None:
            _close_quietly(session)

    def _read(self, statement, text, params):
        """A read is one statement, so an auto-commit query is atomic: one
        round trip instead of a managed transaction's three (the graph
        version is read on every request).  Retried once when the driver
        says it may be (a lost connection, a cluster leader change) and
        it failed quickly."""
        for attempt in (1, 2):
            session = self._read_session()
            cut = ()
            started = time.monotonic()
            try:
                with self._hangs.watching(session) as cut:
                    return self._work(text, params)(session)
            except (neo4j.exceptions.Neo4jError,
                    neo4j.exceptions.DriverError) as exc:
                self._drop_read_session()
                if cut:
                    raise engine.Unavailable(
                        '%s: the server stopped answering' % statement.name
                    ) from exc
                # Again only after a quick failure (a pooled connection
                # the server had closed): not after waiting out a server
                # that does not answer.
                if attempt == 1 and exc.is_retryable() and (
                        time.monotonic() - started < HANG_CHECK):
                    continue
                raise _failed(statement, exc) from exc

    @staticmethod
    def _work(text, params, guarded=False):
        def run(tx):
            rows = [{key: _plain(value) for key, value in record.items()}
                    for record in tx.run(text, params)]
            if guarded and not rows:
                # The guard failed: undo the lock-taking writes.
                raise _GuardFailed()
            return rows
        return run

    def _run(self, statement, params, read_only):
        text = statement.text(self.dialect)
        section = getattr(self._local, 'section', None)
        if section is not None:
            return self._run_in(section, statement, text, params)
        if read_only:
            return self._read(statement, text, params)
        try:
            return self._write(statement, text, params)
        except _UNREACHABLE as exc:
            raise _failed(statement, exc) from exc

    def _write(self, statement, text, params):
        """A write is one statement too, run as an auto-commit query: the
        server commits as soon as it ran, so the locks it took (the graph
        version's above all, which every write takes) are not held over a
        round trip for COMMIT.  A guard that fails leaves nothing behind
        (locks are taken by setting and removing a property at once).
        Retried when Neo4j rolled it back for a deadlock; a lost
        connection is not retried: the write may have happened."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return self._watched_write(statement, text, params)
            except neo4j.exceptions.ConstraintError as exc:
                raise engine.ConstraintViolation(str(exc)) from exc
            except neo4j.exceptions.TransientError as exc:
                if attempt == WRITE_ATTEMPTS:
                    raise engine.GraphError(
                        '%s: %s' % (statement.name, exc)) from exc
            except neo4j.exceptions.Neo4jError as exc:
                raise engine.GraphError(
                    '%s: %s' % (statement.name, exc)) from exc

    def _watched_write(self, statement, text, params):
        cut = ()
        try:
            with self._session(neo4j.WRITE_ACCESS) as session, \
                    self._hangs.watching(session) as cut:
                return self._work(text, params)(session)
        except (neo4j.exceptions.Neo4jError,
                neo4j.exceptions.DriverError) as exc:
            if not cut:
                raise
            raise engine.Unavailable(
                '%s: the server stopped answering' % statement.name
            ) from exc

    def _run_in(self, section, statement, text, params):
        cut = ()
        try:
            with self._hangs.watching(section.tx) as cut:
                return self._work(text, params, statement.guarded)(
                    section.tx)
        except _GuardFailed:
            section.rolled_back = True
            return []
        except neo4j.exceptions.ConstraintError as exc:
            section.rolled_back = True
            raise engine.ConstraintViolation(str(exc)) from exc
        except neo4j.exceptions.TransientError:
            raise  # the section ends and the caller tries again
        except (neo4j.exceptions.Neo4jError,
                neo4j.exceptions.DriverError) as exc:
            if cut:
                section.rolled_back = True
                raise engine.Unavailable(
                    '%s: the server stopped answering' % statement.name
                ) from exc
            if isinstance(exc, (neo4j.exceptions.Neo4jError,)
                          + _UNREACHABLE):
                raise _failed(statement, exc) from exc
            raise

    @contextlib.contextmanager
    def exclusive(self, keys=()):
        # ``keys`` unused: the section's first statement locks the nodes.
        if getattr(self._local, 'section', None) is not None:
            yield engine.Section()  # already inside one: it decides
            return
        with self._session(neo4j.WRITE_ACCESS) as session:
            try:
                tx = session.begin_transaction()
            except _UNREACHABLE as exc:
                raise engine.Unavailable('begin: %s' % exc) from exc
            section = _Exclusive(tx)
            self._local.section = section
            try:
                yield section
            except neo4j.exceptions.TransientError:
                # Deadlock or lock timeout on the way: the transaction is
                # lost; the caller's retry loop goes on.
                section.rolled_back = True
            except BaseException:
                _close_quietly(tx)
                raise
            finally:
                self._local.section = None
            if section.rolled_back:
                _close_quietly(tx)
                return
            try:
                tx.commit()
            except neo4j.exceptions.TransientError:
                # Neo4j takes some locks only at commit (relationship
                # chains): a deadlock there rolls the attempt back too.
                section.rolled_back = True
            except _UNREACHABLE as exc:
                raise engine.Unavailable('commit: %s' % exc) from exc
            except neo4j.exceptions.Neo4jError as exc:
                raise engine.GraphError('commit: %s' % exc) from exc

    def run_scorer_query(self, text, bounds, max_rows):
        with self._scorer_lock:
            if self._scorer_copy is None:
                self._scorer_copy = processes.Copy(
                    self._export, self._version, bounds)
            copy = self._scorer_copy
        return self.sandboxed_rows(copy, text, bounds, max_rows)

    def _version(self):
        return self.read(versioning.VERSION)[0]['version']

    def _stream(self, statement):
        """The rows of ``statement``, read as they come (the export of a
        cloud is not held whole)."""
        with self._session(neo4j.READ_ACCESS) as session:
            for record in session.run(statement.text(self.dialect)):
                yield tuple(_plain(value) for value in record.values())

    def _export(self):
        return (self._stream(schema.EXPORT_NODES),
                self._stream(schema.EXPORT_RELATIONSHIPS))

    def drop_scorer_copy(self):
        with self._scorer_lock:
            copy, self._scorer_copy = self._scorer_copy, None
        if copy is not None:
            copy.close()

    def read(self, statement, **params):
        return engine.counted(self.dialect, 'read', self._run, statement,
                              params, True)

    def write(self, statement, **params):
        return engine.counted(self.dialect, 'write', self._run, statement,
                              params, False)

    @contextlib.contextmanager
    def frozen(self):
        """One transaction that first takes the graph version's lock:
        every write that changes the graph bumps that version, so writes
        wait until the view ends, and what it reads is one version (Neo4j
        Community has no snapshot of its own).  Rolled back at the end."""
        with self._session(neo4j.WRITE_ACCESS) as session:
            tx = session.begin_transaction()
            try:
                try:
                    tx.run(versioning.SETTLED.text(self.dialect)).consume()
                except neo4j.exceptions.Neo4jError as exc:
                    raise engine.GraphError('locking the graph version: %s'
                                            % exc) from exc
                yield _FrozenTransaction(tx, self.dialect)
            finally:
                _close_quietly(tx)

    def ensure_schema(self):
        for statement in schema.DROP_OBSOLETE + schema.SCHEMA:
            self.write(statement)
        self.write(schema.BACKFILL_NAME_KEYS,
                   open=schema.NAME_KEY_OPEN, close=schema.NAME_KEY_CLOSE)

    def reset(self):
        self.write(schema.DELETE_ALL)

    def close(self):
        self.drop_scorer_copy()
        self._driver.close()
