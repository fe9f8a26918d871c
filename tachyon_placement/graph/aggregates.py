"""Aggregates: ``(:ResourceProvider)-[:MEMBER_OF]->(:Aggregate {uuid})``.

An aggregate is nothing but a uuid that providers share; its node is
created the first time a provider joins it and, as in Placement, kept when
the last member leaves.  Replacing a provider's aggregates is the one
statement SET_PROVIDER.  From microversion 1.19 it is guarded by the
provider generation and bumps it; before 1.19 Placement neither checks nor
bumps the generation, and neither does this.
"""
from tachyon_placement.domain import errors
from tachyon_placement.domain import traits as domain
from tachyon_placement.graph import engine
from tachyon_placement.graph import providers
from tachyon_placement.graph import versioning
from tachyon_placement.graph import cypher
from tachyon_placement.graph.cypher import Statement

FOR_PROVIDER = Statement('aggregate_for_provider', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
RETURN %s,
       [(rp)-[:MEMBER_OF]->(a:Aggregate) | a.uuid] AS aggregates
""" % providers.PROVIDER)


# $aggregates is duplicate-free; $generation null means unguarded and
# $increment is 1 (bump) or 0.  No row back: provider gone or generation
# changed.  Stale edges go through OPTIONAL MATCH + DELETE (see the note in
# graph/traits.py on FalkorDB and relationship comprehensions).
_SET_PROVIDER = """
MATCH (rp:ResourceProvider {uuid: $uuid})
%(lock)s
WITH rp
WHERE $generation IS NULL OR rp.generation = $generation
SET rp.generation = rp.generation + $increment,
    rp.updated_at = CASE WHEN $increment > 0 THEN timestamp()
                    ELSE rp.updated_at END
WITH rp
%(bump)s
SET rp.stamp = stamp, rp.labels_stamp = stamp
WITH rp
OPTIONAL MATCH (rp)-[stale:MEMBER_OF]->(old:Aggregate)
WHERE NOT old.uuid IN $aggregates
DELETE stale
WITH rp, count(*) AS visited
FOREACH (agg_uuid IN $aggregates |
         MERGE (a:Aggregate {uuid: agg_uuid})
         ON CREATE SET a.created_at = timestamp()
         MERGE (rp)-[:MEMBER_OF]->(a))
RETURN rp.generation AS generation
"""


def _set_provider_text(dialect):
    return _SET_PROVIDER % {'lock': cypher.write_lock('rp', dialect),
                            'bump': versioning.BUMP}


SET_PROVIDER = Statement('aggregate_set_provider',
                         neo4j=_set_provider_text('neo4j'),
                         falkordb=_set_provider_text('falkordb'),
                         guarded=True)


_CREATE_RACE_RETRIES = 3


class AggregateStore(engine.ResourceStore):
    """Store.aggregates: providers' aggregates."""

    def __init__(self, engine, providers):
        super().__init__(engine)
        self._providers = providers         # ProviderStore

    def of_provider(self, uuid):
        """(Provider, [aggregate uuid] sorted), or NotFound."""
        rows = self.engine.read(FOR_PROVIDER, uuid=uuid)
        if not rows:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        return (providers.provider_from_row(rows[0]['rp']),
                sorted(rows[0]['aggregates']))

    def set_for_provider(self, uuid, aggregates, generation=None):
        """Replace provider ``uuid``'s aggregates by ``aggregates``.

        With ``generation`` (1.19+) only if the provider is still at that
        generation, and the generation is bumped; without it (1.1-1.18)
        unconditionally and the generation is left alone.  Returns the
        provider's generation afterwards.  Raises NotFound or
        ConcurrentUpdate.
        """
        aggregates = domain.unique(aggregates)
        for attempt in range(_CREATE_RACE_RETRIES):
            try:
                rows = self.engine.write(
                    SET_PROVIDER, uuid=uuid, aggregates=aggregates,
                    generation=generation,
                    increment=0 if generation is None else 1)
                break
            except engine.ConstraintViolation:
                # Another writer created one of the aggregate nodes first
                # (the statement was rolled back): it exists now.
                if attempt == _CREATE_RACE_RETRIES - 1:
                    raise
        if rows:
            return rows[0]['generation']
        if self._providers.find(uuid) is None:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        raise errors.ConcurrentUpdate(uuid=uuid)
