"""Writing an imported Placement database into the graph
(tachyon_placement/importing).

Every statement takes a batch of rows and is idempotent (MERGE on the
keys Placement keeps unique), so a batch written twice (an import resumed
after an interruption) leaves the graph as written once.  The import's
progress lives in ``(:Meta {key: 'import'})``: the source, the kinds done,
whether it finished.  The last step stamps every provider and bumps the
graph version with a full reload, so running API processes drop their
copies of the graph.
"""
from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement

MARKER = Statement('import_marker', common="""
OPTIONAL MATCH (marker:Meta {key: 'import'})
OPTIONAL MATCH (rp:ResourceProvider)
WITH marker, count(rp) AS providers
RETURN marker IS NOT NULL AS found, marker.source AS source,
       marker.done AS done, marker.finished AS finished, providers
""")

BEGIN = Statement('import_begin', common="""
MERGE (marker:Meta {key: 'import'})
ON CREATE SET marker.source = $source, marker.done = [],
              marker.finished = false, marker.started_at = timestamp()
RETURN marker.source AS source
""")

MARK_DONE = Statement('import_mark_done', common="""
MATCH (marker:Meta {key: 'import'})
SET marker.done = [kind IN marker.done WHERE kind <> $kind] + [$kind]
RETURN size(marker.done) AS done
""")

CLASSES = Statement('import_classes', common="""
UNWIND $rows AS row
MERGE (rc:ResourceClass {name: row.name})
ON CREATE SET rc.standard = row.standard, rc.ordinal = row.ordinal
SET rc.created_at = row.created_at, rc.updated_at = row.updated_at
RETURN count(rc) AS written
""")

TRAITS = Statement('import_traits', common="""
UNWIND $rows AS row
MERGE (t:Trait {name: row.name})
ON CREATE SET t.standard = row.standard
SET t.created_at = row.created_at, t.updated_at = row.updated_at
RETURN count(t) AS written
""")

PROVIDERS = Statement('import_providers', common="""
UNWIND $rows AS row
MERGE (rp:ResourceProvider {uuid: row.uuid})
SET rp.name = row.name, rp.name_key = row.name_key,
    rp.generation = row.generation, rp.parent_uuid = row.parent_uuid,
    rp.root_uuid = row.root_uuid, rp.seq = row.seq,
    rp.created_at = row.created_at, rp.updated_at = row.updated_at
RETURN count(rp) AS written
""")

# After every provider is written: a parent may come after its child in
# id order (a provider moved under a newer one, microversion 1.37).
PROVIDER_PARENTS = Statement('import_provider_parents', common="""
UNWIND $rows AS row
MATCH (rp:ResourceProvider {uuid: row.uuid})
MATCH (parent:ResourceProvider {uuid: row.parent_uuid})
MERGE (parent)-[edge:PARENT_OF]->(rp)
RETURN count(edge) AS written
""")

INVENTORIES = Statement('import_inventories', common="""
UNWIND $rows AS row
MATCH (rp:ResourceProvider {uuid: row.provider_uuid})
MATCH (rc:ResourceClass {name: row.resource_class})
MERGE (rp)-[inv:PROVIDES]->(rc)
SET inv.total = row.total, inv.reserved = row.reserved,
    inv.min_unit = row.min_unit, inv.max_unit = row.max_unit,
    inv.step_size = row.step_size,
    inv.allocation_ratio = row.allocation_ratio, inv.used = row.used,
    inv.created_at = row.created_at, inv.updated_at = row.updated_at
RETURN count(inv) AS written
""")

PROVIDER_TRAITS = Statement('import_provider_traits', common="""
UNWIND $rows AS row
MATCH (rp:ResourceProvider {uuid: row.provider_uuid})
MATCH (t:Trait {name: row.trait})
MERGE (rp)-[has:HAS_TRAIT]->(t)
RETURN count(has) AS written
""")

PROVIDER_AGGREGATES = Statement('import_provider_aggregates', common="""
UNWIND $rows AS row
MATCH (rp:ResourceProvider {uuid: row.provider_uuid})
MERGE (agg:Aggregate {uuid: row.aggregate_uuid})
ON CREATE SET agg.created_at = row.created_at
MERGE (rp)-[member:MEMBER_OF]->(agg)
RETURN count(member) AS written
""")

CONSUMERS = Statement('import_consumers', common="""
UNWIND $rows AS row
MERGE (c:Consumer {uuid: row.uuid})
SET c.generation = row.generation, c.project_id = row.project_id,
    c.user_id = row.user_id, c.consumer_type = row.consumer_type,
    c.created_at = row.created_at, c.updated_at = row.updated_at
RETURN count(c) AS written
""")

ALLOCATIONS = Statement('import_allocations', common="""
UNWIND $rows AS row
MATCH (c:Consumer {uuid: row.consumer_uuid})
MATCH (rp:ResourceProvider {uuid: row.provider_uuid})
MERGE (c)-[a:CONSUMES {resource_class: row.resource_class}]->(rp)
SET a.used = row.used, a.position = row.position,
    a.created_at = row.created_at, a.updated_at = row.updated_at
RETURN count(a) AS written
""")

# The creation counter goes on from the last provider; every provider is
# stamped with the new version, which asks processes for a full reload
# (and every consumer, for the change feed).
FINISH = Statement('import_finish', common="""
MERGE (counter:Meta {key: 'provider_seq'})
SET counter.value = CASE WHEN coalesce(counter.value, 0) > $last_seq
                    THEN counter.value ELSE $last_seq END
WITH counter
MERGE (graph_version:Meta {key: 'graph'})
ON CREATE SET graph_version.version = 0
SET graph_version.version = graph_version.version + 1
SET graph_version.full_reload = graph_version.version
WITH graph_version.version AS stamp
MATCH (marker:Meta {key: 'import'})
SET marker.finished = true, marker.finished_at = timestamp()
WITH stamp
CALL {
  WITH stamp
  MATCH (c:Consumer)
  SET c.stamp = stamp
  RETURN count(c) AS consumers
}
WITH stamp
OPTIONAL MATCH (rp:ResourceProvider)
SET rp.stamp = stamp, rp.labels_stamp = stamp
RETURN stamp, count(rp) AS providers
""")

# What --verify compares with the source.
GRAPH_COUNTS = Statement('import_graph_counts', common="""
CALL { MATCH (rp:ResourceProvider) RETURN count(rp) AS providers }
CALL { MATCH (:ResourceProvider)-[inv:PROVIDES]->()
       RETURN count(inv) AS inventories }
CALL { MATCH (:ResourceProvider)-[has:HAS_TRAIT]->()
       RETURN count(has) AS provider_traits }
CALL { MATCH (:ResourceProvider)-[member:MEMBER_OF]->()
       RETURN count(member) AS provider_aggregates }
CALL { MATCH (c:Consumer) RETURN count(c) AS consumers }
CALL { MATCH (:Consumer)-[a:CONSUMES]->() RETURN count(a) AS allocations }
RETURN providers, inventories, provider_traits, provider_aggregates,
       consumers, allocations
""")

GRAPH_USAGES = Statement('import_graph_usages', common="""
MATCH (rp:ResourceProvider)-[inv:PROVIDES]->(rc:ResourceClass)
OPTIONAL MATCH (:Consumer)-[a:CONSUMES {resource_class: rc.name}]->(rp)
RETURN rp.uuid AS provider_uuid, rc.name AS resource_class,
       inv.used AS kept, sum(a.used) AS allocated
""")

# The allocations of classes a provider has no inventory of (Placement
# refuses them, a damaged database might hold some): counted apart.
GRAPH_ORPHAN_USAGES = Statement('import_graph_orphan_usages', common="""
MATCH (:Consumer)-[a:CONSUMES]->(rp:ResourceProvider)
OPTIONAL MATCH (rp)-[inv:PROVIDES]->(:ResourceClass {name: a.resource_class})
WITH rp, a, inv WHERE inv IS NULL
RETURN rp.uuid AS provider_uuid, a.resource_class AS resource_class,
       sum(a.used) AS allocated
""")

WRITES = {
    'resource_classes': CLASSES,
    'traits': TRAITS,
    'providers': PROVIDERS,
    'provider_parents': PROVIDER_PARENTS,
    'inventories': INVENTORIES,
    'provider_traits': PROVIDER_TRAITS,
    'provider_aggregates': PROVIDER_AGGREGATES,
    'consumers': CONSUMERS,
    'allocations': ALLOCATIONS,
}


class ImportStore(engine.ResourceStore):
    """Store.imports: the import's writes and checks."""

    def marker(self):
        """(the import marker {source, done, finished} or None, how many
        providers the graph has)."""
        row = self.engine.read(MARKER)[0]
        marker = None
        if row['found']:
            marker = {'source': row['source'], 'done': row['done'] or [],
                      'finished': bool(row['finished'])}
        return marker, row['providers']

    def begin(self, source):
        """Records an import of ``source`` (kept if one is under way)."""
        return self.engine.write(BEGIN, source=source)[0]['source']

    def rows(self, kind, rows):
        """Writes a batch of one kind; how many were written."""
        found = self.engine.write(WRITES[kind], rows=rows)
        return found[0]['written'] if found else 0

    def mark(self, kind):
        self.engine.write(MARK_DONE, kind=kind)

    def finish(self, last_seq):
        """(graph version stamped on every provider, providers)."""
        row = self.engine.write(FINISH, last_seq=last_seq)[0]
        return row['stamp'], row['providers']

    def counts(self):
        return dict(self.engine.read(GRAPH_COUNTS)[0])

    def usages(self):
        """{(provider uuid, class): (used kept on the inventory, or None
        without one; sum of the allocations)}."""
        usages = {(row['provider_uuid'], row['resource_class']):
                  (row['kept'] or 0, row['allocated'] or 0)
                  for row in self.engine.read(GRAPH_USAGES)}
        for row in self.engine.read(GRAPH_ORPHAN_USAGES):
            usages[(row['provider_uuid'], row['resource_class'])] = (
                None, row['allocated'] or 0)
        return usages
