"""Weighers (see tachyon_placement/weighing): ``(:Weigher {name,
definition, generation, created_at, updated_at})``, the definition a JSON
text (weight, scorer, match).

Every write bumps the graph version and records it as the Meta node's
``weighers`` stamp, so each process reloads the weighers (one read) with
its next copy of the graph, and rankings cached per copy stay exact.
"""
import json

from tachyon_placement.domain import errors
from tachyon_placement.graph import cypher
from tachyon_placement.graph import engine
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement
from tachyon_placement.weighing import model

_COLUMNS = """w.name AS name, w.definition AS definition,
       w.generation AS generation"""

LIST = Statement('weigher_list', common="""
MATCH (w:Weigher)
RETURN %s
ORDER BY w.name
""" % _COLUMNS)

GET = Statement('weigher_get', common="""
MATCH (w:Weigher {name: $name})
RETURN %s
""" % _COLUMNS)

# Stamps the graph version just bumped as the weighers' (after BUMP).
_STAMP_WEIGHERS = """
MATCH (stamped_meta:Meta {key: 'graph'})
SET stamped_meta.weighers = stamp
"""

# Both return nothing when the guard fails: a weigher of that name
# exists (create; Neo4j's unique constraint also stops a racing create),
# or it is gone or no longer at $generation (replace).
CREATE = Statement('weigher_create', common="""
OPTIONAL MATCH (existing:Weigher {name: $name})
WITH existing WHERE existing IS NULL
%s
%s
CREATE (w:Weigher {name: $name, definition: $definition, generation: 0,
                   created_at: timestamp()})
RETURN %s
""" % (versioning.BUMP, _STAMP_WEIGHERS, _COLUMNS), guarded=True)


def _replace_text(dialect):
    return """
MATCH (w:Weigher {name: $name})
%s
WITH w WHERE w.generation = $generation
%s
%s
SET w.generation = w.generation + 1, w.updated_at = timestamp(),
    w.definition = $definition
RETURN %s
""" % (cypher.write_lock('w', dialect), versioning.BUMP, _STAMP_WEIGHERS,
       _COLUMNS)


REPLACE = Statement('weigher_replace', neo4j=_replace_text('neo4j'),
                    falkordb=_replace_text('falkordb'), guarded=True)

DELETE = Statement('weigher_delete', common="""
MATCH (w:Weigher {name: $name})
%s
%s
DELETE w
RETURN count(*) AS deleted
""" % (versioning.BUMP, _STAMP_WEIGHERS))


def _weigher(row):
    return model.Weigher.from_document(
        row['name'], json.loads(row['definition']),
        generation=row['generation'])


class WeigherStore:
    """Mixin of Store: weighers."""

    def list_weighers(self):
        return [_weigher(row) for row in self.engine.read(LIST)]

    def get_weigher(self, name):
        rows = self.engine.read(GET, name=name)
        if not rows:
            raise errors.NotFound('No weigher named %s.' % name)
        return _weigher(rows[0])

    def put_weigher(self, weigher, generation):
        """Create (``generation`` None) or replace (at ``generation``) a
        weigher; the stored one.  ConcurrentUpdate when the name is taken
        or the weigher moved on (or is gone)."""
        definition = json.dumps(weigher.stored(), sort_keys=True)
        try:
            if generation is None:
                rows = self.engine.write(CREATE, name=weigher.name,
                                         definition=definition)
            else:
                rows = self.engine.write(REPLACE, name=weigher.name,
                                         generation=generation,
                                         definition=definition)
        except engine.ConstraintViolation:
            rows = []  # another writer created it first
        if not rows:
            raise errors.ConcurrentUpdate(
                'Weigher %s was created or changed by another request: '
                'read it again and retry with its generation.'
                % weigher.name)
        return _weigher(rows[0])

    def delete_weigher(self, name):
        rows = self.engine.write(DELETE, name=name)
        if not (rows and rows[0]['deleted']):
            raise errors.NotFound('No weigher named %s.' % name)
