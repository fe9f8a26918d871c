"""Sandboxes that hold the serving graph: a replica of the serving
FalkorDB server (``Replica``: the collector's scorers read it; the feed
server's reads, ``Kept``), or a copy of a graph an engine exports
(``Copy``: Neo4j, which cannot replicate to FalkorDB)."""
import concurrent.futures
import logging
import threading
import time

from tachyon_placement.processes import relay as relays
from tachyon_placement.processes import sandbox as sandboxes

LOG = logging.getLogger(__name__)
# Sandboxes tried for one replica before its start fails.
COPY_ATTEMPTS = 2


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
        """A new sandbox, in sync: a copy that failed (the sandbox died
        as it arrived, hung, or stalled: Sandbox._wait_synced; FalkorDB
        4.16.3 does each now and then under load) is tried again with
        another sandbox, COPY_ATTEMPTS times in all."""
        self._stop_sandbox()
        if self._relay is None:
            self._relay = relays.Relay(self._connect)
            relays.sync_at_once(self._connect)
        for attempt in range(1, COPY_ATTEMPTS + 1):
            try:
                self._sandbox = sandboxes.Sandbox(
                    self.bounds, replica_of=(
                        '127.0.0.1', self._relay.port, self._relay.rotate()),
                    graph=self.graph, **self._options).start()
                return
            except sandboxes.SandboxError as exc:
                if attempt == COPY_ATTEMPTS:
                    raise
                LOG.warning('A replica of the graph server failed '
                            '(attempt %d of %d), making another: %s',
                            attempt, COPY_ATTEMPTS, exc)

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
        sandbox = sandboxes.Sandbox(self.bounds, graph='tachyon-copy',
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


class Kept:
    """A Replica kept running for a process's reads (the feed server's):
    started, and started again after it died, from a thread kept for it
    (a sandbox is killed with the thread that started it, and the thread
    of a read may end)."""

    def __init__(self, connect, graph, bounds, **options):
        """As Replica's."""
        self._replica = Replica(connect, graph, bounds, **options)
        self._starter = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix='tachyon-replica-starter')

    def running(self):
        """The sandbox (``socket_path``, ``pid``), started again if it is
        not running (SandboxError, OSError when none can be made)."""
        return self._starter.submit(self._replica.running).result()

    def stop(self):
        """The sandbox stopped (``running`` starts another)."""
        self._replica.close()

    def close(self):
        self._replica.close()
        self._starter.shutdown(wait=False)
