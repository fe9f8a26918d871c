"""Named definitions that operators manage through Tachyon's own API
(weighers, metrics): ``(:<Label> {name, definition, generation,
created_at, updated_at})``, the definition a JSON text.

Every write bumps the graph version and records it on the Meta node under
the kind's own key, so each API process reloads the definitions (one read)
with its next copy of the graph.  A create refuses a taken name (Neo4j's
unique constraint also stops a racing create), a replace a generation that
moved on.
"""
import json

from tachyon_placement.domain import errors
from tachyon_placement.graph import cypher
from tachyon_placement.graph import engine
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement

_COLUMNS = """d.name AS name, d.definition AS definition,
       d.generation AS generation"""


class Kind:
    """The statements of one kind of definition."""

    def __init__(self, label, kind, stamp_key):
        """``label``: the node label; ``kind``: the statement name prefix
        and the word in messages; ``stamp_key``: the Meta property that
        records the graph version of the last write."""
        self.kind = kind
        stamp = """
MATCH (stamped_meta:Meta {key: 'graph'})
SET stamped_meta.%s = stamp
""" % stamp_key
        self.list = Statement('%s_list' % kind, common="""
MATCH (d:%s)
RETURN %s
ORDER BY d.name
""" % (label, _COLUMNS))
        self.get = Statement('%s_get' % kind, common="""
MATCH (d:%s {name: $name})
RETURN %s
""" % (label, _COLUMNS))
        self.create = Statement('%s_create' % kind, common="""
OPTIONAL MATCH (existing:%s {name: $name})
WITH existing WHERE existing IS NULL
%s
%s
CREATE (d:%s {name: $name, definition: $definition, generation: 0,
              created_at: timestamp()})
RETURN %s
""" % (label, versioning.BUMP, stamp, label, _COLUMNS), guarded=True)

        def replace_text(dialect):
            return """
MATCH (d:%s {name: $name})
%s
WITH d WHERE d.generation = $generation
%s
%s
SET d.generation = d.generation + 1, d.updated_at = timestamp(),
    d.definition = $definition
RETURN %s
""" % (label, cypher.write_lock('d', dialect), versioning.BUMP, stamp,
                _COLUMNS)
        self.replace = Statement('%s_replace' % kind,
                                 neo4j=replace_text('neo4j'),
                                 falkordb=replace_text('falkordb'),
                                 guarded=True)
        self.delete = Statement('%s_delete' % kind, common="""
MATCH (d:%s {name: $name})
%s
%s
DELETE d
RETURN count(*) AS deleted
""" % (label, versioning.BUMP, stamp))


def _rows(rows):
    return [(row['name'], json.loads(row['definition']), row['generation'])
            for row in rows]


class DefinitionStore(engine.ResourceStore):
    """The definitions of one Kind, each made an object by ``make(name,
    definition dict, generation)``; ``put`` takes one (its ``name`` and
    ``stored()`` document)."""

    def __init__(self, engine, kind, make):
        super().__init__(engine)
        self.kind = kind
        self._make = make
        # {(name, generation, stored text): made} of the last list: every
        # process lists them all again after any write of the kind (a
        # thousand weighers stored one by one were half a million made
        # again); the unchanged ones are not parsed and checked again.
        self._listed = {}

    def list(self):
        listed, made = self._listed, {}
        for row in self.engine.read(self.kind.list):
            key = (row['name'], row['generation'], row['definition'])
            found = listed.get(key)
            if found is None:
                found = self._make(row['name'], json.loads(row['definition']),
                                   row['generation'])
            made[key] = found
        self._listed = made
        return list(made.values())

    def get(self, name):
        rows = self.engine.read(self.kind.get, name=name)
        if not rows:
            raise errors.NotFound('No %s named %s.' % (self.kind.kind, name))
        return self._make(*_rows(rows)[0])

    def put(self, definition, generation):
        """Create (``generation`` None) or replace (at ``generation``);
        the stored one.  ConcurrentUpdate when the name is taken or the
        definition moved on (or is gone)."""
        kind, name = self.kind, definition.name
        text = json.dumps(definition.stored(), sort_keys=True)
        try:
            if generation is None:
                rows = self.engine.write(kind.create, name=name,
                                         definition=text)
            else:
                rows = self.engine.write(kind.replace, name=name,
                                         generation=generation,
                                         definition=text)
        except engine.ConstraintViolation:
            rows = []  # another writer created it first
        if not rows:
            raise errors.ConcurrentUpdate(
                'The %s %s was created or changed by another request: '
                'read it again and retry with its generation.'
                % (kind.kind, name))
        return self._make(*_rows(rows)[0])

    def delete(self, name):
        rows = self.engine.write(self.kind.delete, name=name)
        if not (rows and rows[0]['deleted']):
            raise errors.NotFound('No %s named %s.' % (self.kind.kind, name))
