"""Store.backups: the graph read whole at one version, and written back.

A backup (tachyon_placement/backup/) holds every node and relationship
the service keeps, read through Engine.frozen (one graph version while
the service goes on serving).  Left out is what the service measures
again on its own: the telemetry collector's values and runs, its lease,
and the counter of telemetry versions; the what-if sessions (an
operator's drafts, minutes long) and the recorded drift (the watcher
records it again within one refresh).

A restore writes them into an empty graph, label by label and type by
type, in batches.  ``(:Meta {key: 'restore'})`` marks a restore under way:
Store.sync (the API's start, ``db sync``) refuses such a graph, and the
next restore starts it again from an empty graph.  Finishing moves the
graph version far past the backup's (RESTORE_GAP), makes every process
reload its copy of the graph and raises the change feed's floor to it, so
a feed client's cursor from before the restore gets 410 and relists: it
can never miss a change silently (a cursor from the lost timeline past
the backup point could otherwise be taken for one of the new one).
"""
from tachyon_placement.graph import engine as engine_module
from tachyon_placement.graph.cypher import Statement
from tachyon_placement.graph import schema

# Every label a backup holds.
LABELS = (
    'ResourceProvider', 'ResourceClass', 'Trait', 'Aggregate', 'Consumer',
    'ConsumerType', 'Meta', 'Tombstone', 'ConsumerTombstone', 'Weigher',
    'Metric', 'PciAffinityRule', 'Host', 'Socket', 'NUMANode', 'PCIDevice',
    'HostTombstone')
RELATIONSHIP_TYPES = schema.RELATIONSHIP_TYPES

# Versions a restore skips: more than a cloud writes in decades (2**40 at
# 1,000 writes a second is 35 years), so no cursor of the lost timeline
# reaches past it.
RESTORE_GAP = 2 ** 40

_LEFT_OUT = """
  AND NOT n:MetricValues AND NOT n:CollectorRun AND NOT n:SchemaProbe
  AND NOT n:WhatIfSession AND NOT n:Drift AND NOT n:DriftTombstone
  AND NOT (n:Meta AND n.key IN ['telemetry', 'telemetry_lease', 'restore',
                                'whatif_sessions'])
"""

NODES = Statement('backup_nodes', neo4j="""
MATCH (n)
WHERE true""" + _LEFT_OUT + """
RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props
""", falkordb="""
MATCH (n)
WHERE id(n) >= $first AND id(n) < $last""" + _LEFT_OUT + """
RETURN toString(id(n)) AS id, labels(n) AS labels, properties(n) AS props
""")

RELATIONSHIPS = Statement('backup_relationships', neo4j="""
MATCH (a)-[r]->(b)
RETURN elementId(a) AS start, type(r) AS type, elementId(b) AS end,
       properties(r) AS props
""", falkordb="""
MATCH (a)
WHERE id(a) >= $first AND id(a) < $last
MATCH (a)-[r]->(b)
RETURN toString(id(a)) AS start, type(r) AS type, toString(id(b)) AS end,
       properties(r) AS props
""")

VERSIONS = Statement('backup_versions', common="""
OPTIONAL MATCH (graph_version:Meta {key: 'graph'})
OPTIONAL MATCH (schema:Meta {key: 'schema'})
RETURN coalesce(graph_version.version, 0) AS graph_version,
       schema.version AS schema_version
""")

# What a graph holds beyond what ``db sync`` makes (standard resource
# classes and traits, Meta counters): a restore goes into an empty graph.
HELD = Statement('backup_target_held', common="""
MATCH (n)
WHERE NOT n:Meta AND NOT n:SchemaProbe
  AND NOT ((n:ResourceClass OR n:Trait) AND NOT n.name STARTS WITH 'CUSTOM_')
RETURN count(n) AS held
""")

# Empties the graph a chunk at a time: one transaction deleting a half
# restored cloud would hold all of it in Neo4j's heap.
WIPE_CHUNK = 20000
WIPE = Statement('backup_restore_wipe', common="""
MATCH (n)
WITH n LIMIT $chunk
DETACH DELETE n
RETURN count(*) AS deleted
""")

UNFINISHED = Statement('backup_restore_unfinished', common="""
OPTIONAL MATCH (marker:Meta {key: 'restore'})
RETURN marker.source AS source
""")

BEGIN = Statement('backup_restore_begin', common="""
CREATE (marker:Meta {key: 'restore', source: $source})
""")

FINISH = Statement('backup_restore_finish', common="""
MATCH (marker:Meta {key: 'restore'})
DELETE marker
MERGE (graph_version:Meta {key: 'graph'})
ON CREATE SET graph_version.version = 0
SET graph_version.version = graph_version.version + $gap
SET graph_version.full_reload = graph_version.version,
    graph_version.feed_floor = graph_version.version,
    graph_version.weighers = graph_version.version,
    graph_version.topology = graph_version.version,
    graph_version.pci_affinity = graph_version.version
RETURN graph_version.version AS version
""")


def _node_statement(label):
    return Statement('backup_restore_%s' % label.lower(), neo4j="""
UNWIND $rows AS row
CREATE (n:%s)
SET n += row.props
RETURN row.id AS id, elementId(n) AS node
""" % label, falkordb="""
UNWIND $rows AS row
CREATE (n:%s)
SET n += row.props
RETURN row.id AS id, id(n) AS node
""" % label)


def _relationship_statement(kind):
    # FalkorDB seeks a node by id only for a plain variable: given
    # ``row.start`` it scanned every node for every row (a restore of
    # 10,000 hosts did not end; test_statement_plans checks the seek).
    return Statement('backup_restore_%s' % kind.lower(), neo4j="""
UNWIND $rows AS row
MATCH (a) WHERE elementId(a) = row.start
MATCH (b) WHERE elementId(b) = row.end
CREATE (a)-[r:%s]->(b)
SET r += row.props
RETURN count(r) AS made
""" % kind, falkordb="""
UNWIND $rows AS row
WITH row, row.start AS start_id, row.end AS end_id
MATCH (a), (b)
WHERE id(a) = start_id AND id(b) = end_id
CREATE (a)-[r:%s]->(b)
SET r += row.props
RETURN count(r) AS made
""" % kind)


RESTORE_NODES = {label: _node_statement(label) for label in LABELS}
RESTORE_RELATIONSHIPS = {kind: _relationship_statement(kind)
                         for kind in RELATIONSHIP_TYPES}


class NotEmpty(Exception):
    """A restore was asked into a graph that holds data."""


class BackupStore(engine_module.ResourceStore):

    def frozen(self):
        """Engine.frozen: the graph at one version (see the engines)."""
        return self.engine.frozen()

    @staticmethod
    def versions(frozen):
        """(graph version, schema version or None) of a frozen view."""
        row = frozen.read(VERSIONS)[0]
        return row['graph_version'], row['schema_version']

    @staticmethod
    def nodes(frozen):
        """(id, labels, properties) of every node kept, one by one."""
        for row in frozen.scan(NODES):
            yield row['id'], row['labels'], row['props']

    @staticmethod
    def relationships(frozen):
        """(start id, type, end id, properties), one by one."""
        for row in frozen.scan(RELATIONSHIPS):
            yield row['start'], row['type'], row['end'], row['props']

    def unfinished(self, creating=True):
        """The source of a restore under way (or interrupted), or None
        (``creating``: see ResourceStore.read_latest)."""
        return self.read_latest(UNFINISHED, creating)[0]['source']

    def begin_restore(self, source):
        """Empties the graph (after checking it is empty, or holds an
        unfinished restore) and marks a restore of ``source`` under way."""
        held = self.engine.write(HELD)[0]['held']
        if held and self.unfinished() is None:
            raise NotEmpty('the graph holds %d nodes (providers, consumers, '
                           'custom names, definitions or feed records): a '
                           'restore goes into an empty graph' % held)
        self._wipe()
        self.engine.write(BEGIN, source=source)

    def restore_nodes(self, label, rows):
        """Writes nodes of ``label`` ({'id': backup id, 'props': {...}});
        returns {backup id: the new node's id}."""
        return {row['id']: row['node'] for row in self.engine.write(
            RESTORE_NODES[label], rows=rows)}

    def restore_relationships(self, kind, rows):
        """Writes relationships of ``kind`` ({'start', 'end': new node
        ids, 'props'}); returns how many it made."""
        return self.engine.write(RESTORE_RELATIONSHIPS[kind],
                                 rows=rows)[0]['made']

    def finish_restore(self):
        """Ends the restore; returns the graph version it now has."""
        return self.engine.write(FINISH, gap=RESTORE_GAP)[0]['version']

    def abandon_restore(self):
        """Empties the graph again after a restore failed."""
        self._wipe()

    def _wipe(self):
        while self.engine.write(WIPE, chunk=WIPE_CHUNK)[0]['deleted']:
            pass
