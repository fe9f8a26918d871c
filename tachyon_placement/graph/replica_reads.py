"""An engine whose reads go to a private replica of the serving FalkorDB
server, and everything else to the server: the feed server's.

Why: the feed server follows the graph (once per stream interval, the
providers and consumers written since, whatever its number of
subscribers).  FalkorDB runs a write only when no read holds the graph,
so on the serving server those reads made Placement's writes wait: with
one subscriber following a stream of allocation writes, PUT
/allocations' p95 grew by 40 % while the engine's CPU stayed flat (the
bench's feed runs, README).  On a replica the feed's reads hold the
replica's graph only; the serving server's part is to send the
replication stream, which it does for any replica.

The replica is a sandbox without a memory bound (it grows with the
graph), kept running by the engine processes' room (processes.Kept:
started at once, and again when it dies).  Its reads may lag the
server's writes by the replication delay: ``read_primary`` reads the
server (the feed tells a cursor ahead of its replica from one ahead of
the graph with it).  When the server cannot be
replicated (a managed one refusing SYNC), the reads go to the server, as
without a replica.
"""
import collections
import threading

from oslo_log import log as logging
import redis.exceptions

from tachyon_placement.graph import engine
from tachyon_placement.graph import falkordb_engine
from tachyon_placement import processes

LOG = logging.getLogger(__name__)

ReplicaBounds = collections.namedtuple('ReplicaBounds',
                                       'timeout memory_mib max_rows')
# The feed's reads are Tachyon's own statements, bounded as on the server:
# no memory capacity of their own (0), and a timeout far above the largest
# (a whole copy of a 10,000-host graph takes seconds).
BOUNDS = ReplicaBounds(timeout=300.0, memory_mib=0, max_rows=0)
# A replica that stopped answering (the engine over its socket says
# Unavailable, as for any lost connection).
_GONE = (redis.exceptions.ConnectionError, engine.Unavailable)
# Reads the replica queues (the feed's watcher, and its preflight threads).
MAX_QUEUED = 256


class ReplicaReads(engine.Engine):
    dialect = falkordb_engine.FalkorDBEngine.dialect
    reads_whole_commits = falkordb_engine.FalkorDBEngine.reads_whole_commits
    leaves_cycles_in_flight = (
        falkordb_engine.FalkorDBEngine.leaves_cycles_in_flight)

    def __init__(self, primary, **binaries):
        """``primary``: the FalkorDBEngine of the serving server."""
        self.primary = primary
        self._replica = processes.Kept(
            primary.connect_raw, primary.graph_name, BOUNDS,
            watch_memory=False, max_queued=MAX_QUEUED, **binaries)
        self._lock = threading.Lock()
        self._reads = None      # the FalkorDBEngine of the replica
        self._closed = False
        self._start()

    def _start(self):
        """Reads on a replica running now, or on the server when none can
        be made."""
        reads, self._reads = self._reads, None
        if reads is not None:
            reads.close()
        try:
            sandbox = self._replica.running()
        except (processes.SandboxError, OSError) as exc:
            LOG.warning('The feed server reads the graph server itself: '
                        'no replica of it could be made (%s)', exc)
            self._replica.stop()
            return
        self._reads = falkordb_engine.FalkorDBEngine(
            self.primary.graph_name, unix_socket_path=sandbox.socket_path,
            local_locks=False)
        LOG.info('The feed server reads a replica of the graph server '
                 '(pid %d)', sandbox.pid)

    # -- the engine -----------------------------------------------------------

    def read(self, statement, **params):
        reads = self._reads
        if reads is None:
            return self.primary.read(statement, **params)
        try:
            return reads.read(statement, **params)
        except _GONE:
            pass
        # The replica died (killed, out of memory): another one, once.
        with self._lock:
            if self._closed:
                raise engine.GraphError('the engine is closed')
            if self._reads is reads:
                LOG.warning('The feed server\'s replica of the graph '
                            'stopped: starting another')
                self._start()
        return self._read_retried(statement, params)

    def _read_retried(self, statement, params):
        reads = self._reads
        if reads is None:
            return self.primary.read(statement, **params)
        try:
            return reads.read(statement, **params)
        except _GONE as exc:
            raise engine.GraphError('%s: the replica of the graph server '
                                    'stopped' % statement.name) from exc

    def read_primary(self, statement, **params):
        return self.primary.read(statement, **params)

    def write(self, statement, **params):
        return self.primary.write(statement, **params)

    def exclusive(self, keys=()):
        return self.primary.exclusive(keys)

    def ensure_schema(self):
        return self.primary.ensure_schema()

    def check_scorer_query(self, text, bounds):
        return self.primary.check_scorer_query(text, bounds)

    def run_scorer_query(self, text, bounds, max_rows):
        return self.primary.run_scorer_query(text, bounds, max_rows)

    def drop_scorer_copy(self):
        return self.primary.drop_scorer_copy()

    def reset(self):
        return self.primary.reset()

    def frozen(self):
        return self.primary.frozen()

    def drop_graph(self):
        return self.primary.drop_graph()

    def close(self):
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._reads is not None:
            self._reads.close()
        self._replica.close()
        self.primary.close()
