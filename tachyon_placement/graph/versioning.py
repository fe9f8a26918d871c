"""The graph version: a change counter for read-your-writes caches.

Every write that changes what a provider looks like (its tree position,
inventories, usage, traits, aggregates) bumps ``(:Meta {key: 'graph'})``'s
``version`` once and stamps each provider it changed with the new value
(``rp.stamp``); a deleted provider leaves a ``(:Tombstone {uuid, stamp})``.
A write that changes a provider's traits or aggregates (or makes it) also
sets ``rp.labels_stamp``: the far more frequent allocation writes move only
usage and generations, and a copy then keeps the labels it has.
A process holding a copy of the graph asks for the version on each request
(one indexed read) and, when it moved, reloads only the providers stamped
after its copy.  FalkorDB runs writes one at a time and Neo4j serialises
them on the Meta node's lock, so stamps follow commit order.
"""
import collections

from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement

# Bumps the version once (place it where the statement has a single row)
# and binds the new value as ``stamp``.
BUMP = """
CALL {
  MERGE (graph_version:Meta {key: 'graph'})
  ON CREATE SET graph_version.version = 0
  SET graph_version.version = graph_version.version + 1
  RETURN graph_version.version AS stamp
}
"""

# The same for templates that go through str.format first.
BUMP_FORMAT = BUMP.replace('{', '{{').replace('}', '}}')

# Stamps every provider named in $stamped (after BUMP).
STAMP_LISTED = """
CALL {
  WITH stamp
  UNWIND $stamped AS stamped_uuid
  MATCH (stamped:ResourceProvider {uuid: stamped_uuid})
  SET stamped.stamp = stamp
}
"""
STAMP_LISTED_FORMAT = STAMP_LISTED.replace('{', '{{').replace('}', '}}')

# The version and the stamps beside it, bound by name: world/cache.py
# reads what changed after binding them (see VERSION_AND_CHANGES).
VERSION_VALUES = """
OPTIONAL MATCH (graph_version:Meta {key: 'graph'})
OPTIONAL MATCH (telemetry:Meta {key: 'telemetry'})
WITH coalesce(graph_version.version, 0) AS version,
     coalesce(graph_version.full_reload, 0) AS full_reload,
     coalesce(graph_version.weighers, 0) AS weighers,
     coalesce(telemetry.version, 0) AS telemetry,
     coalesce(graph_version.topology, 0) AS topology,
     coalesce(graph_version.pci_affinity, 0) AS pci_affinity,
     coalesce(graph_version.feed_floor, 0) AS feed_floor
"""
VERSION_COLUMNS = 'version, full_reload, weighers, telemetry, topology, ' \
    'pci_affinity, feed_floor'
VERSION_READ = VERSION_VALUES + 'RETURN ' + VERSION_COLUMNS + '\n'
VERSION = Statement('graph_version', common=VERSION_READ)
# The graph version once every write up to it is whole: taking the
# version's lock waits for the write holding it, which lets go only once
# all it changed is visible (Neo4j reads at read-committed isolation and
# can show the version of a write before the rest of it; see
# world/world.py World.complete).  FalkorDB shows whole writes only and
# never needs it.
SETTLED = Statement('graph_version_settled', neo4j="""
MATCH (graph_version:Meta {key: 'graph'})
SET graph_version._lock = true REMOVE graph_version._lock
RETURN graph_version.version AS version
""", falkordb=VERSION_READ)

# A new primary (a Sentinel failover, graph/falkordb_engine.py) may lack
# the writes the old one had not yet sent to it (none acknowledged, with
# [graph] replica_acks): copies of the graph and feed cursors read before
# may hold them.  The first process to see the new primary (its
# replication id, $primary, differs from the one recorded) moves the
# version by PRIMARY_GAP (more writes than can be lost) and every copy's
# full reload and the feed's floor with it: each process reloads, each
# cursor from before gets 410 (no silent gap).  The others find it done.
PRIMARY_GAP = 1 << 24
PRIMARY_SEEN = Statement('graph_primary_seen', common="""
MERGE (graph_version:Meta {key: 'graph'})
ON CREATE SET graph_version.version = 0
WITH graph_version,
     coalesce(graph_version.primary, $primary) <> $primary AS switched
SET graph_version.primary = $primary,
    graph_version.version = graph_version.version +
        CASE WHEN switched THEN $gap ELSE 0 END
WITH graph_version, switched
FOREACH (_ IN CASE WHEN switched THEN [1] ELSE [] END |
  SET graph_version.full_reload = graph_version.version,
      graph_version.feed_floor = graph_version.version,
      graph_version.weighers = graph_version.version,
      graph_version.topology = graph_version.version,
      graph_version.pci_affinity = graph_version.version)
RETURN switched, graph_version.version AS version
""")

# What the version read returns: the graph version, the version of the
# last change that needs a full reload, the versions of the last changes
# to the weighers, hosts' topologies and PCI affinity rules (stamps on the
# Meta node), the version of the metric values (graph/telemetry.py), and
# the feed's floor (graph/feed.py PRUNE: the deletions at or before it
# are forgotten, so a copy older than it cannot learn them).
GraphVersion = collections.namedtuple(
    'GraphVersion', 'version full_reload weighers telemetry topology '
    'pci_affinity feed_floor')


class VersionStore(engine.ResourceStore):
    """Store.versions: the graph version."""

    def graph(self):
        """The GraphVersion now."""
        return graph_version_of(self.engine.read(VERSION)[0])

    def written(self):
        """The graph version writes have reached: graph_version, or
        where reads lag the writes (a replica), the version where the
        writes go."""
        return graph_version_of(self.engine.read_primary(VERSION)[0]).version

    def settled(self):
        """The graph version up to which every write is visible whole."""
        if self.engine.reads_whole_commits:
            return self.graph().version
        rows = self.engine.write(SETTLED)
        return rows[0]['version'] if rows else 0


def graph_version_of(row):
    """The GraphVersion of a row with VERSION's columns."""
    return GraphVersion(row['version'], row['full_reload'], row['weighers'],
                        row['telemetry'], row['topology'],
                        row['pci_affinity'], row['feed_floor'])
