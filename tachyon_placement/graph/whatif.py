"""Store.whatif_sessions: what-if sessions (tachyon_placement/whatif/) as
``(:WhatIfSession {id, document, generation, expires_at})``, the document a
JSON text the session's writes replace whole, guarded by its generation.

A session's nodes are none of the cloud's: writing one moves no graph
version (no process reloads its copy of the graph, no feed event), backups
leave them out, and an expired one is deleted by the next session opened.
"""
import json

from tachyon_placement.graph import cypher
from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement


def _create_text(dialect):
    # Expired sessions are deleted, then the live ones counted: the node
    # made only while fewer than $most live.  On Neo4j the opens take a
    # lock of their own first (a Meta node of theirs, no writer of the
    # cloud takes it), so two that count at once cannot both pass $most.
    lock = ''
    if dialect == 'neo4j':
        lock = """
MERGE (opening:Meta {key: 'whatif_sessions'})
%s
WITH opening
""" % cypher.write_lock('opening', dialect)
    return lock + """
OPTIONAL MATCH (expired:WhatIfSession)
WHERE expired.expires_at <= timestamp()
DELETE expired
WITH count(*) AS purged
OPTIONAL MATCH (open:WhatIfSession)
WITH count(open) AS live,
     sum(CASE WHEN open.owner = $owner THEN 1 ELSE 0 END) AS owned
WHERE live < $most AND owned < $most_owned
CREATE (s:WhatIfSession {id: $id, document: $document, generation: 0,
                         expires_at: $expires_at, owner: $owner})
RETURN s.generation AS generation
"""


CREATE = Statement('whatif_session_create', neo4j=_create_text('neo4j'),
                   falkordb=_create_text('falkordb'))

GET = Statement('whatif_session_get', common="""
MATCH (s:WhatIfSession {id: $id})
WHERE s.expires_at > timestamp()
RETURN s.document AS document, s.generation AS generation,
       s.expires_at AS expires_at
""")


def _save_text(dialect):
    # The lock first, then the generation: on Neo4j two saves that both
    # read the old generation before either committed would otherwise
    # both write, the second over the first.
    return """
MATCH (s:WhatIfSession {id: $id})
%s
WITH s WHERE s.generation = $generation AND s.expires_at > timestamp()
SET s.document = $document, s.generation = s.generation + 1
RETURN s.generation AS generation
""" % cypher.write_lock('s', dialect)


SAVE = Statement('whatif_session_save', neo4j=_save_text('neo4j'),
                 falkordb=_save_text('falkordb'), guarded=True)

LIST = Statement('whatif_session_list', common="""
MATCH (s:WhatIfSession)
WHERE s.expires_at > timestamp() AND ($owner IS NULL OR s.owner = $owner)
RETURN s.document AS document
ORDER BY s.id
LIMIT $most
""")

DELETE = Statement('whatif_session_delete', common="""
OPTIONAL MATCH (s:WhatIfSession {id: $id})
WITH s, s IS NOT NULL AND s.expires_at > timestamp() AS live
DELETE s
RETURN live AS deleted
""")


class WhatIfSessionStore(engine.ResourceStore):
    """The stored what-if sessions: documents (dicts) by id."""

    def create(self, uuid, document, expires_at_ms, most, owner,
               most_owned):
        """Store a new session of ``owner`` (a project id); False when
        ``most`` live already, or ``most_owned`` of that owner."""
        rows = self.engine.write(CREATE, id=uuid,
                                 document=json.dumps(document),
                                 expires_at=expires_at_ms, most=most,
                                 owner=owner, most_owned=most_owned)
        return bool(rows)

    def documents(self, owner, most):
        """The documents of the live sessions of ``owner`` (None: every
        owner's), ``most`` at most, by id."""
        rows = self.engine.read_primary(LIST, owner=owner, most=most)
        return [json.loads(row['document']) for row in rows]

    def get(self, uuid):
        """(document, generation, expires_at ms) of a live session, or
        None."""
        rows = self.engine.read_primary(GET, id=uuid)
        if not rows:
            return None
        row = rows[0]
        return (json.loads(row['document']), row['generation'],
                row['expires_at'])

    def save(self, uuid, document, generation):
        """Replace the document at ``generation``; the new generation, or
        None when it moved on (another write of the session) or the
        session is gone."""
        rows = self.engine.write(SAVE, id=uuid, generation=generation,
                                 document=json.dumps(document))
        return rows[0]['generation'] if rows else None

    def delete(self, uuid):
        """Whether a live session was deleted."""
        rows = self.engine.write(DELETE, id=uuid)
        return bool(rows and rows[0]['deleted'])
