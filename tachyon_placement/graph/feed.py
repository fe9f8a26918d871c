"""What the change feed (tachyon_placement/feed) reads of the engine:
deletions after a cursor (provider, consumer and host tombstones), hosts'
topologies published after it, consumers stamped after it with their
allocations, and the retention floor.

Tombstones are the feed's only history (live objects carry the version of
their last change), so retention is theirs: ``FeedStore.prune`` deletes those
older than the last ``keep`` versions and records that floor on the Meta
node; a cursor below it gets 410.
"""
import json

from tachyon_placement.domain import allocations as domain
from tachyon_placement.graph import engine
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

# Consumers written in (since, upto]: their state now, with their
# allocations and the roots of the providers that hold them.
CONSUMERS = Statement('feed_consumers', common="""
MATCH (c:Consumer) WHERE c.stamp > $since AND c.stamp <= $upto
OPTIONAL MATCH (c)-[a:CONSUMES]->(rp:ResourceProvider)
RETURN c.uuid AS uuid, c.stamp AS stamp, c.generation AS generation,
       c.project_id AS project_id, c.user_id AS user_id,
       c.consumer_type AS consumer_type,
       collect({rp: rp.uuid, rc: a.resource_class, used: a.used}) AS held
""")

# The consumers with allocations on some of $providers, as they are now
# (a provider that joined an aggregate or a tree brings its consumers into
# the filters of it).
CONSUMERS_ON = Statement('feed_consumers_on', common="""
UNWIND $providers AS wanted
MATCH (on:ResourceProvider {uuid: wanted})
MATCH (c:Consumer)-[:CONSUMES]->(on)
WITH DISTINCT c
OPTIONAL MATCH (c)-[a:CONSUMES]->(rp:ResourceProvider)
RETURN c.uuid AS uuid, c.stamp AS stamp, c.generation AS generation,
       c.project_id AS project_id, c.user_id AS user_id,
       c.consumer_type AS consumer_type,
       collect({rp: rp.uuid, rc: a.resource_class, used: a.used}) AS held
""")

GONE_CONSUMERS = Statement('feed_gone_consumers', common="""
MATCH (gone:ConsumerTombstone) WHERE gone.stamp > $since
  AND gone.stamp <= $upto
RETURN gone.uuid AS uuid, gone.stamp AS stamp, gone.providers AS providers
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
CALL {
  WITH floor
  MATCH (gone:ConsumerTombstone) WHERE gone.stamp <= floor
  DELETE gone
  RETURN count(*) AS consumers_pruned
}
CALL {
  WITH floor
  MATCH (gone:DriftTombstone) WHERE gone.stamp <= floor
  DELETE gone
  RETURN count(*) AS drift_pruned
}
RETURN floor, providers_pruned, hosts_pruned, consumers_pruned,
       drift_pruned
""")


def host_state(generation, document):
    """A published topology as the feed shows it."""
    return {'generation': generation, 'document': json.loads(document)}


def _consumer(row):
    """(stamp, ConsumerState, [provider uuids]) of a CONSUMERS row."""
    allocations = {}
    for held in row['held']:
        if held.get('rp') is not None:
            allocations.setdefault(held['rp'], {})[held['rc']] = held['used']
    state = domain.ConsumerState(
        uuid=row['uuid'], generation=row['generation'],
        project_id=row['project_id'], user_id=row['user_id'],
        consumer_type=row['consumer_type'], allocations=allocations)
    return row['stamp'], state, sorted(allocations)


class FeedStore(engine.ResourceStore):
    """Store.changes: what the change feed reads of the engine."""

    def floor(self):
        return self.engine.read(FLOOR)[0]['floor']

    def since(self, since):
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

    def consumers(self, since, upto):
        """The consumers written in (``since``, ``upto``], latest first
        wins: {uuid: (stamp, ConsumerState or None when deleted, [provider
        uuids it held when deleted, or holds][, True: deleted and made
        again meanwhile, the providers it held when deleted included])}."""
        found = {}
        for row in self.engine.read(GONE_CONSUMERS, since=since, upto=upto):
            found[row['uuid']] = (row['stamp'], None,
                                  list(row['providers'] or ()))
        for row in self.engine.read(CONSUMERS, since=since, upto=upto):
            known = found.get(row['uuid'])
            if known is not None and known[0] > row['stamp']:
                continue
            stamp, state, providers = _consumer(row)
            if known is not None:
                # Deleted, then made again: it left what it held then
                # (and maybe more: ``True`` says so).
                found[row['uuid']] = (stamp, state, sorted(
                    set(providers) | set(known[2])), True)
            else:
                found[row['uuid']] = (stamp, state, providers)
        return found

    def consumers_on(self, providers):
        """The consumers with allocations on some of ``providers`` now:
        {uuid: (stamp, ConsumerState, [provider uuids it holds])}."""
        if not providers:
            return {}
        return {row['uuid']: _consumer(row) for row in self.engine.read(
            CONSUMERS_ON, providers=sorted(providers))}

    def prune(self, keep):
        """Forget deletions older than the last ``keep`` versions; the
        new floor, or None when it did not move."""
        rows = self.engine.write(PRUNE, keep=keep)
        return rows[0]['floor'] if rows else None
