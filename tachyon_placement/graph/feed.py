"""What the change feed (tachyon_placement/feed) reads of the engine:
deletions after a cursor (provider and host tombstones), hosts' topologies
published after it, and the retention floor.

Tombstones are the feed's only history (live objects carry the version of
their last change), so retention is theirs: ``prune_feed`` deletes those
older than the last ``keep`` versions and records that floor on the Meta
node; a cursor below it gets 410.
"""
import json

from tachyon_placement.graph.cypher import Statement

FLOOR = Statement('feed_floor', common="""
OPTIONAL MATCH (graph_version:Meta {key: 'graph'})
RETURN coalesce(graph_version.feed_floor, 0) AS floor,
       coalesce(graph_version.version, 0) AS version
""")

TOMBSTONES = Statement('feed_tombstones', common="""
MATCH (gone:Tombstone) WHERE gone.stamp > $since
RETURN gone.uuid AS uuid, gone.stamp AS stamp
""")

HOSTS = Statement('feed_hosts', common="""
MATCH (host:Host) WHERE host.stamp > $since
RETURN host.name AS name, host.stamp AS stamp,
       host.generation AS generation, host.document AS document
""")

GONE_HOSTS = Statement('feed_gone_hosts', common="""
MATCH (gone:HostTombstone) WHERE gone.stamp > $since
RETURN gone.name AS name, gone.stamp AS stamp
""")

PRUNE = Statement('feed_prune', common="""
MATCH (graph_version:Meta {key: 'graph'})
WITH graph_version, graph_version.version - $keep AS floor
WHERE floor > coalesce(graph_version.feed_floor, 0)
SET graph_version.feed_floor = floor
WITH floor
CALL {
  WITH floor
  MATCH (gone:Tombstone) WHERE gone.stamp <= floor
  DELETE gone
  RETURN count(*) AS providers_pruned
}
CALL {
  WITH floor
  MATCH (gone:HostTombstone) WHERE gone.stamp <= floor
  DELETE gone
  RETURN count(*) AS hosts_pruned
}
RETURN floor, providers_pruned, hosts_pruned
""")


def host_state(generation, document):
    """A published topology as the feed shows it."""
    return {'generation': generation, 'document': json.loads(document)}


class FeedStore:
    """Mixin of Store: what the change feed reads of the engine."""

    def feed_floor(self):
        return self.engine.read(FLOOR)[0]['floor']

    def feed_since(self, since):
        """(tombstones [(uuid, stamp)], hosts [(name, stamp, state)],
        gone hosts [(name, stamp)]) after ``since``."""
        tombstones = [(row['uuid'], row['stamp'])
                      for row in self.engine.read(TOMBSTONES, since=since)]
        hosts = [(row['name'], row['stamp'],
                  host_state(row['generation'], row['document']))
                 for row in self.engine.read(HOSTS, since=since)]
        gone = [(row['name'], row['stamp'])
                for row in self.engine.read(GONE_HOSTS, since=since)]
        return tombstones, hosts, gone

    def prune_feed(self, keep):
        """Forget deletions older than the last ``keep`` versions; the
        new floor, or None when it did not move."""
        rows = self.engine.write(PRUNE, keep=keep)
        return rows[0]['floor'] if rows else None
