"""Store.exports: the graph as an openstack-placement database's rows,
kind by kind (backup/placement_export.py writes them), read through
Engine.frozen so that every kind comes from the same graph version.

Each statement scans one label; on FalkorDB the scan goes by windows of
node ids (engine.Frozen), on Neo4j it streams.
"""
from tachyon_placement.graph import engine as engine_module
from tachyon_placement.graph.cypher import Statement


def _scan(name, label, variable, rest):
    """A statement over every node of ``label`` bound to ``variable``,
    followed by ``rest`` (a MATCH or the RETURN)."""
    return Statement(name, neo4j='MATCH (%s:%s)\n%s' % (
        variable, label, rest), falkordb=(
        'MATCH (%s:%s)\nWHERE id(%s) >= $first AND id(%s) < $last\n%s' % (
            variable, label, variable, variable, rest)))


CLASSES = _scan('export_resource_classes', 'ResourceClass', 'rc', """
RETURN rc.name AS name, rc.ordinal AS ordinal,
       rc.created_at AS created_at, rc.updated_at AS updated_at
""")

TRAITS = _scan('export_traits', 'Trait', 't', """
RETURN t.name AS name, t.created_at AS created_at,
       t.updated_at AS updated_at
""")

PROVIDERS = _scan('export_providers', 'ResourceProvider', 'rp', """
RETURN rp.uuid AS uuid, rp.name AS name, rp.generation AS generation,
       rp.seq AS seq, rp.parent_uuid AS parent_uuid,
       rp.root_uuid AS root_uuid, rp.created_at AS created_at,
       rp.updated_at AS updated_at
""")

INVENTORIES = _scan('export_inventories', 'ResourceProvider', 'rp', """
MATCH (rp)-[inv:PROVIDES]->(rc:ResourceClass)
RETURN rp.uuid AS provider_uuid, rc.name AS resource_class,
       inv.total AS total, inv.reserved AS reserved,
       inv.min_unit AS min_unit, inv.max_unit AS max_unit,
       inv.step_size AS step_size, inv.allocation_ratio AS allocation_ratio,
       inv.created_at AS created_at, inv.updated_at AS updated_at
""")

PROVIDER_TRAITS = _scan('export_provider_traits', 'ResourceProvider', 'rp',
                        """
MATCH (rp)-[:HAS_TRAIT]->(t:Trait)
RETURN rp.uuid AS provider_uuid, t.name AS trait
""")

AGGREGATES = _scan('export_aggregates', 'Aggregate', 'agg', """
RETURN agg.uuid AS uuid, agg.created_at AS created_at
""")

PROVIDER_AGGREGATES = _scan('export_provider_aggregates', 'ResourceProvider',
                            'rp', """
MATCH (rp)-[:MEMBER_OF]->(agg:Aggregate)
RETURN rp.uuid AS provider_uuid, agg.uuid AS aggregate_uuid
""")

CONSUMERS = _scan('export_consumers', 'Consumer', 'c', """
RETURN c.uuid AS uuid, c.generation AS generation,
       c.project_id AS project_id, c.user_id AS user_id,
       c.consumer_type AS consumer_type, c.created_at AS created_at,
       c.updated_at AS updated_at
""")

# A consumer's rows together, in the order it wrote them: inserted so
# into a Placement database, they list as they did here.
ALLOCATIONS = _scan('export_allocations', 'Consumer', 'c', """
MATCH (c)-[a:CONSUMES]->(rp:ResourceProvider)
RETURN c.uuid AS consumer_uuid, rp.uuid AS provider_uuid,
       a.resource_class AS resource_class, a.used AS used,
       a.position AS position,
       a.created_at AS created_at, a.updated_at AS updated_at
ORDER BY consumer_uuid, coalesce(position, -1), provider_uuid,
         resource_class
""")

# The kinds, in the order a Placement database needs them written.
KINDS = (
    ('resource_classes', CLASSES),
    ('traits', TRAITS),
    ('providers', PROVIDERS),
    ('inventories', INVENTORIES),
    ('provider_traits', PROVIDER_TRAITS),
    ('aggregates', AGGREGATES),
    ('provider_aggregates', PROVIDER_AGGREGATES),
    ('consumers', CONSUMERS),
    ('allocations', ALLOCATIONS),
)


class ExportStore(engine_module.ResourceStore):

    def frozen(self):
        return self.engine.frozen()

    @staticmethod
    def rows(frozen, kind):
        """The rows of one kind (see KINDS), one by one."""
        return frozen.scan(dict(KINDS)[kind])
