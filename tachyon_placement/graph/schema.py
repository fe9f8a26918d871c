"""The graph's schema: the version of its shape, and its indexes and
uniqueness constraints, per engine (DDL differs)."""
from tachyon_placement.graph.cypher import Statement

# The version of the graph's shape (labels, properties and what they mean)
# this release reads and writes, recorded on ``(:Meta {key: 'schema'})`` by
# ``db sync`` (and the API's start).  A graph written before versions were
# recorded counts as 0.  Raise it together with a step in
# graph/migrations.py whenever a release changes the shape.
SCHEMA_VERSION = 1

# The recorded version, and whether the graph holds anything at all (an
# empty graph is new, not version 0).
SCHEMA_READ = Statement('schema_version_read', common="""
OPTIONAL MATCH (schema:Meta {key: 'schema'})
WITH schema.version AS version
OPTIONAL MATCH (anything)
WITH version, anything
LIMIT 1
RETURN version, anything IS NOT NULL AS populated
""")

SCHEMA_RECORD = Statement('schema_version_record', common="""
MERGE (schema:Meta {key: 'schema'})
SET schema.version = $version
""")

# (label, property, unique)
#
# Provider names are free text (Placement allows " a", "a ", "" is refused
# only by the schema's minLength), so they are not keyed on directly:
# FalkorDB's string index trims leading and trailing whitespace when it
# indexes a value (a lookup of "a" then also finds " a" and "a "), and its
# unique-constraint check crashes the server on such values (and on "").
# ``name_key`` (see providers.name_key) wraps the name in non-blank
# delimiters, which both engines index exactly.
KEYS = (
    ('ResourceProvider', 'uuid', True),
    ('ResourceProvider', 'name_key', True),
    ('ResourceProvider', 'root_uuid', False),
    ('ResourceClass', 'name', True),
    ('Trait', 'name', True),
    ('Aggregate', 'uuid', True),
    ('Consumer', 'uuid', True),
    # GET /usages?project_id= (Nova counts quota usage through it): a
    # scan of every consumer without it.
    ('Consumer', 'project_id', False),
    ('ConsumerType', 'name', True),
    ('Meta', 'key', True),
    ('ResourceProvider', 'stamp', False),
    ('ResourceProvider', 'labels_stamp', False),
    ('Tombstone', 'stamp', False),
    ('Weigher', 'name', True),
    ('Metric', 'name', True),
    ('MetricValues', 'name', True),
    ('CollectorRun', 'name', True),
    ('Host', 'name', True),
    ('Socket', 'host', False),
    ('NUMANode', 'host', False),
    ('PCIDevice', 'host', False),
    ('Host', 'stamp', False),
    ('PciAffinityRule', 'name', True),
    ('HostTombstone', 'stamp', False),
    # The change feed's consumers (graph/feed.py).
    ('Consumer', 'stamp', False),
    ('ConsumerTombstone', 'uuid', False),
    ('ConsumerTombstone', 'stamp', False),
)

NAME_KEY_OPEN = '<'
NAME_KEY_CLOSE = '>'


def name_key(name):
    """The indexed, unique key of a provider name (see KEYS)."""
    return NAME_KEY_OPEN + name + NAME_KEY_CLOSE


# Keys of earlier versions that ensure_schema removes: the unique
# constraint on the raw provider name (the crash above) and the unused
# Project/User keys.
OBSOLETE_KEYS = (
    ('ResourceProvider', 'name', True),
    ('Project', 'external_id', True),
    ('User', 'external_id', True),
)


def _neo4j_name(label, prop):
    return '%s_%s' % (label.lower(), prop)


def _neo4j_ddl(label, prop, unique):
    name = _neo4j_name(label, prop)
    if unique:
        return ('CREATE CONSTRAINT %s IF NOT EXISTS FOR (n:%s) '
                'REQUIRE n.%s IS UNIQUE' % (name, label, prop))
    return 'CREATE INDEX %s IF NOT EXISTS FOR (n:%s) ON (n.%s)' % (
        name, label, prop)


# FalkorDB has no IF NOT EXISTS: its engine lists what exists and creates
# the rest.  Unique constraints are created with GRAPH.CONSTRAINT by the
# engine on top of these exact-match indexes.
SCHEMA = tuple(
    Statement('schema_%s_%s' % (label.lower(), prop),
              neo4j=_neo4j_ddl(label, prop, unique),
              falkordb='CREATE INDEX FOR (n:%s) ON (n.%s)' % (label, prop))
    for label, prop, unique in KEYS)

# Sent by the Neo4j engine only: FalkorDB has no constraint DDL in Cypher
# (its engine uses GRAPH.CONSTRAINT DROP), so its text is a no-op.
DROP_OBSOLETE = tuple(
    Statement('schema_drop_%s_%s' % (label.lower(), prop),
              neo4j='DROP CONSTRAINT %s IF EXISTS' % _neo4j_name(label, prop),
              falkordb='RETURN 0 AS nothing')
    for label, prop, unique in OBSOLETE_KEYS)

# Providers written before name_key existed get theirs.
BACKFILL_NAME_KEYS = Statement('schema_backfill_name_keys', common='''
MATCH (rp:ResourceProvider)
WHERE rp.name_key IS NULL
SET rp.name_key = $open + rp.name + $close
RETURN count(rp) AS filled
''')

# Every relationship type of the model.  FalkorDB caches a query's plan on
# first use, and a plan made while a relationship type did not exist yet
# keeps returning nothing for it; so the engine registers them all up front.
RELATIONSHIP_TYPES = ('PARENT_OF', 'PROVIDES', 'HAS_TRAIT', 'MEMBER_OF',
                      'CONSUMES', 'HAS_SOCKET', 'HAS_NUMA_NODE',
                      'HAS_DEVICE', 'IN_SOCKET', 'ON_NUMA_NODE', 'HAS_VF',
                      'REPRESENTED_BY')

# Every relationship type the service writes (backups refuse others).
RELATIONSHIP_TYPES = (
    'PARENT_OF', 'PROVIDES', 'HAS_TRAIT', 'MEMBER_OF', 'CONSUMES',
    'HAS_SOCKET', 'HAS_NUMA_NODE', 'HAS_DEVICE', 'IN_SOCKET', 'ON_NUMA_NODE',
    'HAS_VF', 'REPRESENTED_BY')

# Makes the engine know every type before a read names one (a read of an
# unknown type is an error on FalkorDB, a notice on Neo4j).
REGISTER_RELATIONSHIP_TYPES = Statement(
    'schema_relationship_types', common=(
        'CREATE (a:SchemaProbe)\nCREATE (b:SchemaProbe)\n'
        + ''.join('CREATE (a)-[:%s]->(b)\n' % kind
                  for kind in RELATIONSHIP_TYPES)
        + 'DETACH DELETE a, b\n'))

DELETE_ALL = Statement('delete_all', common='MATCH (n) DETACH DELETE n')

# The property (attribute) names the graph knows; on FalkorDB in the order
# it numbered them (see cypher.attribute_registration).
PROPERTY_KEYS = Statement('schema_property_keys', common=(
    'CALL db.propertyKeys() YIELD propertyKey\n'
    'RETURN propertyKey AS name\n'))


# The graph as nodes and relationships, for the copy Neo4j's Cypher
# scorers run on (processes/replicas.py Copy): Neo4j bounds neither the
# memory of a value built in a row nor its heap per query, so operators'
# queries never run in it.  The collector's own values and runs are
# left out.
EXPORT_NODES = Statement('export_nodes', neo4j="""
MATCH (n)
WHERE NOT n:MetricValues AND NOT n:CollectorRun
RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props
""", falkordb="""
MATCH (n)
WHERE NOT n:MetricValues AND NOT n:CollectorRun
RETURN toString(id(n)) AS id, labels(n) AS labels, properties(n) AS props
""")

# The highest node id: a scan of a FalkorDB copy goes by windows of ids.
# (Neo4j streams a scan whole and never asks; its text only counts.)
TOP_NODE_ID = Statement('top_node_id', neo4j="""
MATCH (n)
RETURN count(n) AS top
""", falkordb="""
MATCH (n)
RETURN max(id(n)) AS top
""")

EXPORT_RELATIONSHIPS = Statement('export_relationships', neo4j="""
MATCH (a)-[r]->(b)
RETURN elementId(a) AS a, labels(a)[0] AS a_label, elementId(b) AS b,
       labels(b)[0] AS b_label, type(r) AS type, properties(r) AS props
""", falkordb="""
MATCH (a)-[r]->(b)
RETURN toString(id(a)) AS a, labels(a)[0] AS a_label,
       toString(id(b)) AS b, labels(b)[0] AS b_label, type(r) AS type,
       properties(r) AS props
""")
