"""What a process's copy of the graph (world/cache.py) reads of the
engine: everything at once, or what changed after a graph version.

Store.world_reads; the copy itself holds no statement.
"""
from tachyon_placement.graph import engine
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement

_PROVIDER_COLUMNS = """rp.uuid AS uuid, rp.name AS name,
       rp.generation AS generation, rp.parent_uuid AS parent_uuid,
       rp.root_uuid AS root_uuid, rp.seq AS seq, rp.stamp AS stamp,
       rp.labels_stamp AS labels_stamp, rp.created_at AS created_at,
       rp.updated_at AS updated_at"""
_INVENTORY_COLUMNS = """rp.uuid AS uuid, rc.name AS rc, inv.total AS total,
       inv.reserved AS reserved, inv.min_unit AS min_unit,
       inv.max_unit AS max_unit, inv.step_size AS step_size,
       inv.allocation_ratio AS allocation_ratio, inv.used AS used"""

# Full loads (no stamp filter: also providers written before stamps).
ALL_PROVIDERS = Statement('snap_all_providers', common="""
MATCH (rp:ResourceProvider)
RETURN %s
""" % _PROVIDER_COLUMNS)
ALL_INVENTORIES = Statement('snap_all_inventories', common="""
MATCH (rp:ResourceProvider)-[inv:PROVIDES]->(rc:ResourceClass)
RETURN %s
""" % _INVENTORY_COLUMNS)
ALL_TRAITS = Statement('snap_all_traits', common="""
MATCH (rp:ResourceProvider)-[:HAS_TRAIT]->(t:Trait)
RETURN rp.uuid AS uuid, t.name AS name
""")
ALL_AGGREGATES = Statement('snap_all_aggregates', common="""
MATCH (rp:ResourceProvider)-[:MEMBER_OF]->(a:Aggregate)
RETURN rp.uuid AS uuid, a.uuid AS name
""")

# Incremental loads: what was stamped after $since.  A provider comes with
# its inventories and labels (a few names); a copy keeps its own labels
# when they did not change (labels_stamp), so that most writes
# (allocations: usage and generations) leave the very sets in place.
_CHANGED_PROVIDER = """rp {.uuid, .name, .generation, .parent_uuid, .root_uuid,
          .seq, .stamp, .labels_stamp, .created_at, .updated_at,
          inventories: [(rp)-[inv:PROVIDES]->(rc:ResourceClass) |
                        {rc: rc.name, total: inv.total,
                         reserved: inv.reserved, min_unit: inv.min_unit,
                         max_unit: inv.max_unit, step_size: inv.step_size,
                         allocation_ratio: inv.allocation_ratio,
                         used: inv.used}],
          traits: [(rp)-[:HAS_TRAIT]->(t:Trait) | t.name],
          aggregates: [(rp)-[:MEMBER_OF]->(a:Aggregate) | a.uuid]}"""
# A page of them, in (stamp, uuid) order from ($start, $after) on: a
# process that fell far behind (every provider moved by a bulk load)
# parsed the whole cloud's maps at once, and the records made meanwhile
# pinned the freed memory (pymalloc arenas: 230 MiB more per worker at
# 10,000 hosts).  A provider written between two pages moves to the end
# and is read again (the later state wins): none is missed.  The page's
# start is written as NOT (...): FalkorDB folded "rp.stamp > $start OR
# rp.uuid > $after" into its index scan as a range on uuid too, which
# with $after '' is every provider (30 ms at 10,000 hosts for an empty
# page, the scheduling loop's largest engine cost; now 0.3 ms).
CHANGED = Statement('snap_changed', common="""
MATCH (rp:ResourceProvider)
WHERE rp.stamp >= $start AND NOT (rp.stamp = $start AND rp.uuid <= $after)
WITH rp ORDER BY rp.stamp, rp.uuid LIMIT $page
RETURN %s AS provider
""" % _CHANGED_PROVIDER)
DELETED = Statement('snap_deleted', common="""
MATCH (gone:Tombstone) WHERE gone.stamp > $since
RETURN gone.uuid AS uuid, gone.stamp AS stamp
""")
# The graph version (as versioning.VERSION reads it) and, in the same
# read, what changed since a copy's version: every request reads the
# version, and after a write in another process three round trips to the
# engine (version, changes, deletions) were a tenth of a scheduling loop's
# server time; with nothing changed the two index lookups find nothing.
# At most $most of each: the threads of a process that fell far behind (a
# bulk load) each read the changes, and only one applies them; when it
# may have been cut, the one that applies reads them all again (CHANGED,
# a page at a time, and DELETED).
#
# The version is read first and the changes after it, each subquery
# importing it (so Neo4j plans them on the right of an Apply, run after
# the read): Neo4j reads at read-committed isolation, and a write that
# committed between the two reads when the version came last (as the
# planner had placed it) named a copy after changes it did not hold; the
# next copy read only what came after, and the copy kept a deleted
# provider, or an old state of one, until that provider changed again
# (test_graph_version.py).  Read this way a copy may hold changes newer
# than its version, which the next copy reads again.
VERSION_AND_CHANGES = Statement('snap_version_and_changes', common="""
%s
CALL {
  WITH version
  MATCH (gone:Tombstone) WHERE gone.stamp > $since
  WITH gone LIMIT $most
  RETURN collect(gone {.uuid, .stamp}) AS deleted
}
CALL {
  WITH version
  MATCH (rp:ResourceProvider) WHERE rp.stamp > $since
  WITH rp LIMIT $most
  RETURN collect(%s) AS changed
}
RETURN %s, deleted, changed
""" % (versioning.VERSION_VALUES.strip(), _CHANGED_PROVIDER,
       versioning.VERSION_COLUMNS))


class WorldReadStore(engine.ResourceStore):
    """Store.world_reads: the reads that make and move a copy of the
    graph."""

    @property
    def reads_whole_commits(self):
        return self.engine.reads_whole_commits

    @property
    def leaves_cycles_in_flight(self):
        return self.engine.leaves_cycles_in_flight

    def providers(self):
        return self.engine.read(ALL_PROVIDERS)

    def inventories(self):
        return self.engine.read(ALL_INVENTORIES)

    def traits(self):
        return self.engine.read(ALL_TRAITS)

    def aggregates(self):
        return self.engine.read(ALL_AGGREGATES)

    def version_and_changes(self, since, most):
        """The graph version's row with ``changed`` (provider maps) and
        ``deleted`` ({uuid, stamp}) after ``since``, at most ``most`` of
        each."""
        return self.engine.read(VERSION_AND_CHANGES, since=since,
                                most=most)[0]

    def deleted(self, since):
        """[(uuid, stamp)] of the providers deleted after ``since``."""
        return [(row['uuid'], row['stamp'])
                for row in self.engine.read(DELETED, since=since)]

    def changed(self, since, page):
        """The provider maps stamped after ``since`` (an integer, as
        every stamp), read ``page`` at a time: each page's rows are
        garbage once the next is read."""
        start, after = since + 1, ''
        while True:
            rows = self.engine.read(CHANGED, start=start, after=after,
                                    page=page)
            for row in rows:
                yield row['provider']
            if len(rows) < page:
                return
            last = rows[-1]['provider']
            start, after = last['stamp'], last['uuid']
