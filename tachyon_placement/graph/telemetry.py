"""Metric definitions (graph/definitions.py, label Metric), the values the
collector stored (``(:MetricValues {name, values, collected_at})``, the
values a JSON text {provider uuid: number}, collected_at in ms since the
epoch), and the collector's lease.

Storing values does not move the graph version (the copies of the provider
graph stay as they are): it bumps the Meta node ``telemetry``'s own
counter, which the version read returns beside the graph version, so each
process reloads the values (one read) when they changed.
"""
import orjson

from tachyon_placement.domain import errors
from tachyon_placement.graph import cypher
from tachyon_placement.graph import definitions
from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement

METRICS = definitions.Kind('Metric', 'metric', 'metrics')

# Values moved: the Meta node's telemetry counter, which every process
# reads beside the graph version.
_BUMP = """
WITH count(*) AS stored_count
MERGE (counter:Meta {key: 'telemetry'})
ON CREATE SET counter.version = 0
SET counter.version = counter.version + 1
RETURN counter.version AS version
"""

STORE_VALUES = Statement('telemetry_store_values', common="""
MERGE (stored:MetricValues {name: $name})
SET stored.values = $values, stored.collected_at = $collected_at,
    stored.disabled = null
""" + _BUMP)

VALUES = Statement('telemetry_values', common="""
MATCH (stored:MetricValues)
WHERE stored.disabled IS NULL
RETURN stored.name AS name, stored.values AS values,
       stored.collected_at AS collected_at
""")

# A Cypher scorer that broke its bounds: its values go (its weighers score
# nothing) and the collector no longer runs it, until it is enabled again
# (its weigher stored again).
DISABLE = Statement('telemetry_disable', common="""
MERGE (stored:MetricValues {name: $name})
SET stored.values = '{}', stored.disabled = $reason,
    stored.collected_at = $at
""" + _BUMP)

ENABLE = Statement('telemetry_enable', common="""
MATCH (stored:MetricValues {name: $name})
WHERE stored.disabled IS NOT NULL
DELETE stored
RETURN count(*) AS enabled
""")

DISABLED = Statement('telemetry_disabled', common="""
MATCH (stored:MetricValues)
WHERE stored.disabled IS NOT NULL
RETURN stored.name AS name, stored.disabled AS reason,
       stored.collected_at AS since
""")

DROP_VALUES = Statement('telemetry_drop_values', common="""
MATCH (stored:MetricValues)
WHERE NOT stored.name IN $kept
DELETE stored
RETURN count(*) AS dropped
""")


# What the collector's last run of each source found (an operator's view,
# not the scheduler's: no version bump, no process reloads it).
STORE_RUN = Statement('telemetry_store_run', common="""
MERGE (run:CollectorRun {name: $name})
SET run.status = $status
""")

RUNS = Statement('telemetry_runs', common="""
MATCH (run:CollectorRun)
RETURN run.name AS name, run.status AS status
ORDER BY name
""")

DROP_RUNS = Statement('telemetry_drop_runs', common="""
MATCH (run:CollectorRun)
WHERE NOT run.name IN $kept
DELETE run
RETURN count(*) AS dropped
""")


def _lease_text(dialect):
    # The lease is the holder's while it renews it in time; anyone may
    # take it once it expired (a collector that died).
    return """
MERGE (lease:Meta {key: 'telemetry_lease'})
ON CREATE SET lease.holder = $holder, lease.until = 0
WITH lease
%s
WITH lease, (lease.holder = $holder
             OR coalesce(lease.until, 0) < timestamp()) AS mine
SET lease.holder = CASE WHEN mine THEN $holder ELSE lease.holder END,
    lease.until = CASE WHEN mine THEN timestamp() + $ttl_ms
                  ELSE lease.until END
RETURN mine
""" % cypher.write_lock('lease', dialect)


RELEASE_LEASE = Statement('telemetry_release_lease', common="""
MATCH (lease:Meta {key: 'telemetry_lease'})
WHERE lease.holder = $holder
SET lease.until = 0
RETURN count(*) AS released
""")

TAKE_LEASE = Statement('telemetry_take_lease', neo4j=_lease_text('neo4j'),
                       falkordb=_lease_text('falkordb'))


class MetricStore(definitions.DefinitionStore):
    """Store.metrics: the metrics, as ``make`` (name, definition,
    generation) makes them (the telemetry room's Metric), their values,
    and the collector's lease."""

    def __init__(self, engine, make):
        super().__init__(engine, METRICS, make)

    def store_values(self, name, values, collected_at_ms):
        self.engine.write(STORE_VALUES, name=name,
                          values=orjson.dumps(values).decode(),
                          collected_at=collected_at_ms)

    def drop_values(self, kept):
        """Forget the values (and the runs) of metrics no longer
        defined."""
        self.engine.write(DROP_VALUES, kept=sorted(kept))
        self.engine.write(DROP_RUNS, kept=sorted(kept))

    def store_run(self, name, status):
        """What the collector's last run of ``name`` found (a JSON-able
        dict)."""
        self.engine.write(STORE_RUN, name=name,
                          status=orjson.dumps(status).decode())

    def runs(self):
        """{name: the status its last run stored}."""
        return {row['name']: orjson.loads(row['status'])
                for row in self.engine.read(RUNS)}

    def values(self):
        """{metric name: (collected_at ms, {provider uuid: value})}."""
        # orjson: at 10,000 hosts the values are megabytes of JSON that
        # every process parses after each collection (4x faster).
        return {row['name']: (row['collected_at'], orjson.loads(row['values']))
                for row in self.engine.read(VALUES)}

    def take_lease(self, holder, ttl_seconds):
        """Whether ``holder`` holds (took or renewed) the collector's
        lease for the next ``ttl_seconds``."""
        try:
            rows = self.engine.write(TAKE_LEASE, holder=holder,
                                     ttl_ms=int(ttl_seconds * 1000))
        except engine.ConstraintViolation:
            return False  # another process created the lease first
        return bool(rows and rows[0]['mine'])

    def release_lease(self, holder):
        """Let the lease go if ``holder`` holds it (a clean stop)."""
        self.engine.write(RELEASE_LEASE, holder=holder)


class ScorerStore(engine.ResourceStore):
    """Store.scorers: Cypher scorers, checked and run where they cannot
    hurt the serving engine, and the signals disabled when they broke
    their bounds."""

    def check(self, query, bounds, columns):
        """Raise domain Invalid unless ``query`` is a read-only query,
        without procedures or files, returning ``columns`` (and maybe
        others), that the engine plans and runs within ``bounds``
        (processes/sandbox.py) where it cannot hurt the
        serving engine."""
        try:
            returned = self.engine.check_scorer_query(query, bounds)
        except engine.RefusedQuery as exc:
            raise errors.Invalid('cypher scorer refused: %s' % exc)
        if not set(columns) <= set(returned):
            raise errors.Invalid(
                'cypher scorer refused: it must return the columns %s '
                '(it returns %s)' % (', '.join(columns),
                                     ', '.join(returned) or 'none'))

    def scores(self, query, bounds, max_rows):
        """{provider uuid: score} of a checked Cypher scorer; rows whose
        score is no finite number are left out.  engine.QueryBoundBroken
        when it breaks ``bounds`` or returns more than ``max_rows``
        rows."""
        scores = {}
        for row in self.engine.run_scorer_query(query, bounds, max_rows):
            score = row.get('score')
            if (isinstance(score, (int, float)) and not isinstance(
                    score, bool) and score == score
                    and abs(score) != float('inf')
                    and isinstance(row.get('uuid'), str)):
                scores[row['uuid']] = float(score)
        return scores

    def disable_signal(self, name, reason, at_ms):
        """Stop collecting ``name`` (a Cypher scorer's signal) and forget
        its values: it broke its bounds (``reason``)."""
        self.engine.write(DISABLE, name=name, reason=reason, at=at_ms)

    def enable_signal(self, name):
        """Collect ``name`` again (its weigher was stored again)."""
        self.engine.write(ENABLE, name=name)

    def disabled_signals(self):
        """{signal name: (reason, since ms)} of disabled scorers."""
        return {row['name']: (row['reason'], row['since'])
                for row in self.engine.read(DISABLED)}

    def drop_copy(self):
        """Free what runs Cypher scorers (FalkorDB: the sandbox holding a
        copy of the graph) while this process does not run them."""
        self.engine.drop_scorer_copy()
