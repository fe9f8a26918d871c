"""Traits: ``(:Trait {name, standard, created_at, updated_at})`` and the
``(:ResourceProvider)-[:HAS_TRAIT]->(:Trait)`` edges.

Standard traits (os-traits) are synced at start-up with ``standard: true``;
custom ones (CUSTOM_*) are created through the API with ``standard: false``.
Replacing a provider's traits is the one guarded statement SET_PROVIDER:
it checks the generation, bumps it when the set changes (as Placement
does: an unchanged set leaves the generation alone) and rewrites the edges.
"""
from tachyon_placement.domain import errors
from tachyon_placement.domain import models
from tachyon_placement.domain import traits as domain
from tachyon_placement.graph import engine
from tachyon_placement.graph import providers
from tachyon_placement.graph import versioning
from tachyon_placement.graph import cypher
from tachyon_placement.graph.cypher import Statement

_TRAIT = '{.name, .created_at, .updated_at}'

STANDARD_NAMES = Statement('trait_standard_names', common="""
MATCH (t:Trait)
WHERE t.standard = true
RETURN t.name AS name
""")

# Only the names not yet recorded as standard are sent, so a restart with
# an up-to-date graph writes nothing.
SYNC = Statement('trait_sync', common="""
UNWIND $names AS trait_name
MERGE (t:Trait {name: trait_name})
ON CREATE SET t.created_at = timestamp()
SET t.standard = true
RETURN count(t) AS synced
""")

# The optional filters are null when unused so the statement stays static;
# the association count is only computed when it is asked for.
LIST = Statement('trait_list', common="""
MATCH (t:Trait)
WHERE $names IS NULL OR t.name IN $names
WITH t, CASE WHEN $associated IS NULL THEN null
        ELSE size([(t)<-[:HAS_TRAIT]-(rp:ResourceProvider) | rp.uuid]) > 0
        END AS associated
WHERE $associated IS NULL OR associated = $associated
RETURN t %s AS t
""" % _TRAIT)

GET = Statement('trait_get', common="""
MATCH (t:Trait {name: $name})
RETURN t %s AS t
""" % _TRAIT)

CREATE = Statement('trait_create', common="""
OPTIONAL MATCH (existing:Trait {name: $name})
WITH count(existing) AS found
WHERE found = 0
CREATE (t:Trait {name: $name, standard: false, created_at: timestamp()})
RETURN t %s AS t
""" % _TRAIT)

# Refuses (deletes nothing) while a provider has the trait.
DELETE = Statement('trait_delete', common="""
MATCH (t:Trait {name: $name})
WITH t, size([(t)<-[:HAS_TRAIT]-(rp:ResourceProvider) | rp.uuid]) AS users
WHERE users = 0
DELETE t
RETURN count(*) AS deleted
""")

FOR_PROVIDER = Statement('trait_for_provider', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
RETURN %s,
       [(rp)-[:HAS_TRAIT]->(t:Trait) | t %s] AS traits
""" % (providers.PROVIDER, _TRAIT))


# $names is duplicate-free.  No row back: the provider is gone, its
# generation is not $generation, or a trait in $names does not exist.
# Stale edges are deleted through OPTIONAL MATCH, not by collecting them in
# a pattern comprehension: FalkorDB caches the plan of a comprehension that
# yields relationships compiled before the type existed, and that plan
# then never finds any.
_SET_PROVIDER = """
MATCH (rp:ResourceProvider {uuid: $uuid})
%(lock)s
WITH rp
WHERE rp.generation = $generation
OPTIONAL MATCH (t:Trait)
WHERE t.name IN $names
WITH rp, collect(t) AS wanted
WHERE size(wanted) = size($names)
WITH rp, wanted, [(rp)-[:HAS_TRAIT]->(held:Trait) | held.name] AS current
WITH rp, wanted,
     size(current) <> size(wanted)
     OR any(name IN current WHERE NOT name IN $names) AS changed
SET rp.generation = CASE WHEN changed THEN rp.generation + 1
                    ELSE rp.generation END,
    rp.updated_at = CASE WHEN changed THEN timestamp()
                    ELSE rp.updated_at END
WITH rp, wanted
%(bump)s
SET rp.stamp = stamp, rp.labels_stamp = stamp
WITH rp, wanted
OPTIONAL MATCH (rp)-[stale:HAS_TRAIT]->(old:Trait)
WHERE NOT old.name IN $names
DELETE stale
WITH rp, wanted, count(*) AS visited
FOREACH (t IN wanted | MERGE (rp)-[:HAS_TRAIT]->(t))
RETURN rp.generation AS generation,
       [t IN wanted | t %(trait)s] AS traits
"""


def _set_provider_text(dialect):
    return _SET_PROVIDER % {'lock': cypher.write_lock('rp', dialect),
                            'trait': _TRAIT, 'bump': versioning.BUMP}


SET_PROVIDER = Statement('trait_set_provider',
                         neo4j=_set_provider_text('neo4j'),
                         falkordb=_set_provider_text('falkordb'),
                         guarded=True)


KNOWN = Statement('rp_known_traits', common="""
UNWIND $names AS trait_name
MATCH (t:Trait {name: trait_name})
RETURN t.name AS name
""")


def trait_from_row(data):
    return models.Trait(
        name=data['name'],
        created_at=models.from_millis(data.get('created_at')),
        updated_at=models.from_millis(data.get('updated_at')))


def _sorted_traits(rows):
    return sorted((trait_from_row(data) for data in rows),
                  key=lambda trait: trait.name)


class TraitStore(engine.ResourceStore):
    """Store.traits: traits."""

    def __init__(self, engine, providers):
        super().__init__(engine)
        self._providers = providers         # ProviderStore

    def sync(self, names):
        """Record the standard traits ``names`` (idempotent)."""
        known = {row['name'] for row in self.engine.read(STANDARD_NAMES)}
        missing = sorted(set(names) - known)
        if not missing:
            return
        try:
            self.engine.write(SYNC, names=missing)
        except engine.ConstraintViolation:
            # Another process synced the same names at the same time (an
            # engine without serialised writes): MERGE again finds them.
            self.engine.write(SYNC, names=missing)

    def list(self, name_in=None, associated=None):
        """Traits sorted by name; ``name_in`` (exact names) and
        ``associated`` (with / without providers) filter when not None."""
        rows = self.engine.read(
            LIST, names=None if name_in is None else list(name_in),
            associated=associated)
        return _sorted_traits(row['t'] for row in rows)

    def get(self, name):
        rows = self.engine.read(GET, name=name)
        if not rows:
            raise errors.NotFound('No such trait(s): %s.' % name, name=name)
        return trait_from_row(rows[0]['t'])

    def find(self, name):
        rows = self.engine.read(GET, name=name)
        return trait_from_row(rows[0]['t']) if rows else None

    def create(self, name):
        """Create custom trait ``name``; Exists if it is already there."""
        try:
            rows = self.engine.write(CREATE, name=name)
        except engine.ConstraintViolation:
            rows = []
        if not rows:
            raise errors.Exists('The Trait %s already exists' % name,
                                name=name)
        return trait_from_row(rows[0]['t'])

    def delete(self, name):
        """Delete trait ``name``: NotFound, or InUse while a provider has
        it.  Whether it may be deleted (custom) is the caller's rule."""
        self.get(name)
        try:
            rows = self.engine.write(DELETE, name=name)
        except engine.ConstraintViolation:
            rows = []  # Neo4j: a provider took it between match and delete
        if rows and rows[0]['deleted']:
            return
        if self.find(name) is None:
            raise errors.NotFound('No such trait(s): %s.' % name, name=name)
        raise errors.InUse(
            'The trait %s is in use by a resource provider.' % name,
            name=name)

    def of_provider(self, uuid):
        """(Provider, [Trait] sorted by name), or NotFound."""
        rows = self.engine.read(FOR_PROVIDER, uuid=uuid)
        if not rows:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        return (providers.provider_from_row(rows[0]['rp']),
                _sorted_traits(rows[0]['traits']))

    def set_for_provider(self, uuid, names, generation):
        """Replace provider ``uuid``'s traits by ``names`` if its
        generation is still ``generation``.

        Returns (new generation, [Trait] sorted by name).  Raises NotFound
        (provider), ConcurrentUpdate (generation) or Invalid with
        ``missing`` (sorted names of traits that do not exist).
        """
        names = domain.unique(names)
        rows = self.engine.write(SET_PROVIDER, uuid=uuid, names=names,
                                 generation=generation)
        if rows:
            return rows[0]['generation'], _sorted_traits(rows[0]['traits'])
        current = self._providers.find(uuid)
        if current is None:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        if current.generation != generation:
            raise errors.ConcurrentUpdate(uuid=uuid)
        missing = self.missing(names)
        if missing:
            raise errors.Invalid(missing=sorted(missing))
        # Nothing explains the refusal: something changed and changed back.
        raise errors.ConcurrentUpdate(uuid=uuid)

    def missing(self, names):
        """Which of ``names`` are no trait."""
        names = set(names)
        if not names:
            return set()
        found = self.engine.read(KNOWN, names=sorted(names))
        return names - {row['name'] for row in found}
