"""Indexes and uniqueness constraints, per engine (DDL differs)."""
from tachyon_placement.graph.cypher import Statement

# (label, property, unique)
KEYS = (
    ('ResourceProvider', 'uuid', True),
    ('ResourceProvider', 'name', True),
    ('ResourceProvider', 'root_uuid', False),
    ('ResourceClass', 'name', True),
    ('Trait', 'name', True),
    ('Aggregate', 'uuid', True),
    ('Consumer', 'uuid', True),
    ('Project', 'external_id', True),
    ('User', 'external_id', True),
    ('ConsumerType', 'name', True),
    ('Meta', 'key', True),
    ('ResourceProvider', 'stamp', False),
    ('Tombstone', 'stamp', False),
)


def _neo4j_ddl(label, prop, unique):
    name = '%s_%s' % (label.lower(), prop)
    if unique:
        return ('CREATE CONSTRAINT %s IF NOT EXISTS FOR (n:%s) '
                'REQUIRE n.%s IS UNIQUE' % (name, label, prop))
    return 'CREATE INDEX %s IF NOT EXISTS FOR (n:%s) ON (n.%s)' % (
        name, label, prop)


# FalkorDB has no IF NOT EXISTS; the engine ignores "already indexed".
# Unique constraints are created with GRAPH.CONSTRAINT by the engine on top
# of these exact-match indexes.
SCHEMA = tuple(
    Statement('schema_%s_%s' % (label.lower(), prop),
              neo4j=_neo4j_ddl(label, prop, unique),
              falkordb='CREATE INDEX FOR (n:%s) ON (n.%s)' % (label, prop))
    for label, prop, unique in KEYS)

# Every relationship type of the model.  FalkorDB caches a query's plan on
# first use, and a plan made while a relationship type did not exist yet
# keeps returning nothing for it; so the engine registers them all up front.
RELATIONSHIP_TYPES = ('PARENT_OF', 'PROVIDES', 'HAS_TRAIT', 'MEMBER_OF',
                      'CONSUMES')

REGISTER_RELATIONSHIP_TYPES = Statement(
    'schema_relationship_types', common='''
CREATE (a:SchemaProbe)
CREATE (b:SchemaProbe)
CREATE (a)-[:PARENT_OF]->(b), (a)-[:PROVIDES]->(b), (a)-[:HAS_TRAIT]->(b),
       (a)-[:MEMBER_OF]->(b), (a)-[:CONSUMES]->(b)
DETACH DELETE a, b
''')

DELETE_ALL = Statement('delete_all', common='MATCH (n) DETACH DELETE n')
