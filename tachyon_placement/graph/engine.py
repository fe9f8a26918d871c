"""The engine interface every graph backend implements.

Engines run registered ``Statement`` objects and return rows as plain
dicts.  ``write`` runs one statement as one atomic unit.  ``exclusive``
makes the reads and writes of the calling thread inside it one transaction
whose statements take write locks (Neo4j); engines that run each write
alone and in order (FalkorDB) rely on their guarded statements instead.
"""
import contextlib
import socket

from tachyon_placement.monitoring import metrics
from tachyon_placement import processes


class GraphError(Exception):
    """The engine failed (connection, constraint, syntax)."""


class Unavailable(GraphError):
    """The engine cannot serve now but may soon: its connection was lost
    (a failover under way, a server restarting), or a write was not
    acknowledged by the replicas it must reach ([graph] replica_acks).
    The API answers 503 with Retry-After: a write so refused may or may
    not have happened, as after any lost connection."""

    RETRY_AFTER = 2


class Busy(Exception):
    """Too many requests of one kind run at once in this process (checks
    of operators' queries): the API answers 503 with Retry-After."""

    RETRY_AFTER = 5

    def __init__(self, detail, code):
        super().__init__(detail)
        self.code = code


class ConstraintViolation(GraphError):
    """A uniqueness constraint refused a write."""


class RefusedQuery(GraphError):
    """An operator's query (a Cypher scorer) that may not run: it does not
    parse, writes, calls procedures or loads files."""


class QueryBoundBroken(GraphError):
    """An operator's query broke its bounds in memory, time or rows."""


class Frozen:
    """What Engine.frozen gives: ``read(statement, **params)`` (rows) and
    ``scan(statement, **params)`` (rows one by one, in bounded memory) of
    the graph as it was when the view began.  A statement given to scan
    takes ``$first`` and ``$last``: engines that page it (FalkorDB) read
    the nodes whose ids are in [first, last) at a time."""

    def read(self, statement, **params):
        raise NotImplementedError

    def scan(self, statement, **params):
        raise NotImplementedError


class Section:
    """The outcome of an ``Engine.exclusive`` section."""

    def __init__(self):
        self.rolled_back = False


def reply_to(address, payload, timeout):
    """What a server at ``address`` (('unix', path) or (host, port))
    sends back to ``payload`` within ``timeout`` seconds on a connection
    of its own (b'' when it closes it), or None when it does not (not
    even connecting): how the engines tell a hung server from a busy one.
    """
    try:
        if address[0] == 'unix':
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(address[1])
        else:
            sock = socket.create_connection(address, timeout=timeout)
    except OSError:
        return None
    try:
        sock.settimeout(timeout)
        sock.sendall(payload)
        return sock.recv(64)
    except OSError:
        return None
    finally:
        sock.close()


def counted(dialect, kind, run, *args):
    """``run(*args)``, one round trip to the engine ``dialect`` of
    ``kind`` (read or write) for the metrics; failed unless it answered
    (a ConstraintViolation is an answer)."""
    try:
        result = run(*args)
    except ConstraintViolation:
        metrics.engine_call(dialect, kind)
        raise
    except Exception:
        metrics.engine_call(dialect, kind, failed=True)
        raise
    metrics.engine_call(dialect, kind)
    return result


# Plan operations an operator's scorer may not have (FalkorDB's plan, in
# the sandbox that checks it).
REFUSED_OPERATIONS = frozenset((
    'Create', 'Delete', 'Update', 'Merge', 'MergeCreate', 'ProcedureCall',
    'Load CSV', 'Foreach'))


class Engine:
    dialect = None
    # Whether a read sees each write whole or not at all (FalkorDB runs
    # one query at a time); Neo4j's read-committed reads can see part of
    # a write that is being committed (world/world.py World.complete).
    reads_whole_commits = False
    # Whether the driver can leave its objects of a statement in flight in
    # reference cycles (the neo4j driver's results and transactions): what
    # world/records.py settle() froze of them then is swept now and then.
    leaves_cycles_in_flight = True

    def read(self, statement, **params):
        raise NotImplementedError

    def read_primary(self, statement, **params):
        """A read where the writes go (where reads may lag them:
        graph/replica_reads.py)."""
        return self.read(statement, **params)

    def write(self, statement, **params):
        raise NotImplementedError

    def ensure_schema(self):
        raise NotImplementedError

    def frozen(self):
        """A context manager giving a Frozen view of the graph as it is
        at one moment (one graph version), which writes after it do not
        change, without holding the whole graph in memory (backups)."""
        raise NotImplementedError

    def exclusive(self, keys=()):
        """A context in which this thread's statements form one
        transaction, so that what its first statement read and locked
        (Neo4j: by setting a property of each node, in a fixed order) no
        other writer can change before it commits; or (FalkorDB) in which
        it holds write locks on ``keys`` (the uuids of the providers and
        consumers it touches) that other processes wait for.  It gives a
        ``Section``: when a guarded write found a changed generation or
        the engine gave up on a lock (a deadlock, which Neo4j may report
        as late as the commit), the context ends silently, rolled back,
        with ``rolled_back`` set, and the caller tries again.  Here: no
        transaction (see module), nothing is ever rolled back.
        """
        return contextlib.nullcontext(Section())

    def check_scorer_query(self, text, bounds):
        """The columns of ``text``, an operator's read-only query, after it
        was planned and run once within ``bounds`` (weighing.model
        ScorerBounds) in an empty sandbox server, never in the serving
        engine (processes.check); RefusedQuery when it does not
        parse, writes, calls procedures, loads files or breaks a bound."""
        try:
            columns, plan = processes.check(text, bounds)
        except processes.SandboxError as exc:
            raise RefusedQuery(str(exc)) from exc
        except processes.SandboxesBusy as exc:
            raise Busy('%d checks of Cypher queries run already in this '
                       'process; try again shortly.'
                       % processes.CHECKS_AT_ONCE,
                       'tachyon.scorer_checks.busy') from exc
        operations = {line.strip().split(' |')[0] for line in plan}
        refused = operations & REFUSED_OPERATIONS
        if refused or len(plan) < 2:
            raise RefusedQuery('the query may only read (it has %s)'
                               % ', '.join(sorted(refused or operations)))
        return columns

    def run_scorer_query(self, text, bounds, max_rows):
        """The rows of ``text`` (checked by check_scorer_query), read-only,
        within ``bounds`` and at most ``max_rows`` rows: QueryBoundBroken
        when it breaks one, GraphError when it fails otherwise."""
        raise NotImplementedError

    @staticmethod
    def sandboxed_rows(sandbox, text, bounds, max_rows):
        """The rows of a scorer run in ``sandbox`` (a
        processes.Replica or Copy) as dicts, its failures as this module's."""
        sandbox.bounds = bounds
        try:
            columns, rows = sandbox.query(text, max_rows)
        except processes.SandboxBroken as exc:
            raise QueryBoundBroken(str(exc)) from exc
        except processes.SandboxError as exc:
            raise GraphError('scorer query: %s' % exc) from exc
        return [dict(zip(columns, (value.decode() if isinstance(value, bytes)
                                   else value for value in row)))
                for row in rows]

    def drop_scorer_copy(self):
        """Let go of what runs scorers (a sandbox's copy of the graph)
        while this process does not collect."""

    def close(self):
        pass

    def reset(self):
        """Delete everything (tests only)."""
        raise NotImplementedError


class ResourceStore:
    """The store of one resource (graph/store.py Store composes them): its
    operations, each one or a few statements run on ``engine``."""

    def __init__(self, engine):
        self.engine = engine

    def read_latest(self, statement, creating=False, **params):
        """``statement``'s rows read where the writes go (a replica may
        not have the latest); ``creating``: run as a write, which FalkorDB
        answers for a graph key that does not exist yet where a read
        fails (start-up work before anything made the graph)."""
        run = self.engine.write if creating else self.engine.read_primary
        return run(statement, **params)
