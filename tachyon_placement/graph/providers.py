"""Resource providers and their tree.

Tree edges are ``(parent)-[:PARENT_OF]->(child)``; ``parent_uuid`` and
``root_uuid`` are denormalised on every provider so filters and candidate
search never walk the tree.  ``seq`` keeps creation order, which is the
order Placement lists providers in.
"""
from tachyon_placement.domain import errors
from tachyon_placement.domain import models
from tachyon_placement.graph import engine
from tachyon_placement.graph import schema
from tachyon_placement.graph import versioning
from tachyon_placement.graph.cypher import Statement

PROVIDER = ('rp {.uuid, .name, .generation, .parent_uuid, .root_uuid, .seq, '
            '.created_at, .updated_at} AS rp')

GET = Statement('rp_get', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
RETURN %s
""" % PROVIDER)

GET_BY_NAME = Statement('rp_get_by_name', common="""
MATCH (rp:ResourceProvider {name_key: $name_key})
RETURN %s
""" % PROVIDER)

SUBTREE = Statement('rp_subtree', common="""
MATCH (:ResourceProvider {uuid: $uuid})-[:PARENT_OF*0..]->(rp:ResourceProvider)
RETURN rp.uuid AS uuid
""")

# The parent is looked up by coalesce($parent_uuid, ''): FalkorDB scans
# every provider for a property map holding a null instead of asking the
# index (35 ms per root provider at 120,000 providers: loading a cloud was
# quadratic); no provider has the uuid ''.
CREATE = Statement('rp_create', common="""
OPTIONAL MATCH (same_uuid:ResourceProvider {uuid: $uuid})
OPTIONAL MATCH (same_name:ResourceProvider {name_key: $name_key})
OPTIONAL MATCH (parent:ResourceProvider {uuid: coalesce($parent_uuid, '')})
WITH same_uuid, same_name, parent
WHERE same_uuid IS NULL AND same_name IS NULL
  AND ($parent_uuid IS NULL OR parent IS NOT NULL)
MERGE (counter:Meta {key: 'provider_seq'})
SET counter.value = coalesce(counter.value, 0) + 1
WITH parent, counter
%s
CREATE (rp:ResourceProvider {uuid: $uuid, name: $name, name_key: $name_key,
                             generation: 0,
                             parent_uuid: $parent_uuid,
                             root_uuid: coalesce(parent.root_uuid, $uuid),
                             seq: counter.value, stamp: stamp,
                             labels_stamp: stamp,
                             created_at: timestamp()})
FOREACH (p IN CASE WHEN parent IS NULL THEN [] ELSE [parent] END |
         CREATE (p)-[:PARENT_OF]->(rp))
RETURN %s
""" % (versioning.BUMP, PROVIDER))

RENAME = Statement('rp_rename', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
OPTIONAL MATCH (clash:ResourceProvider {name_key: $name_key})
WITH rp, clash WHERE clash IS NULL OR clash = rp
%s
SET rp.name = $name, rp.name_key = $name_key, rp.updated_at = timestamp(),
    rp.stamp = stamp
RETURN %s
""" % (versioning.BUMP, PROVIDER))

# Moves a provider (and its subtree) under a new parent, or makes it a root
# when $parent_uuid is null, and renames it.  The subtree takes the new
# root.  The caller has checked for loops; the WHERE re-checks that the
# parent still exists, the tree shape the caller saw (old parent) still
# holds and no other provider has the name.  (The parent by
# coalesce($parent_uuid, ''): see CREATE.)
REPARENT = Statement('rp_reparent', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
WHERE rp.parent_uuid = $old_parent_uuid
   OR (rp.parent_uuid IS NULL AND $old_parent_uuid IS NULL)
OPTIONAL MATCH (parent:ResourceProvider {uuid: coalesce($parent_uuid, '')})
OPTIONAL MATCH (clash:ResourceProvider {name_key: $name_key})
WITH rp, parent, clash
WHERE ($parent_uuid IS NULL OR parent IS NOT NULL)
  AND (clash IS NULL OR clash = rp)
OPTIONAL MATCH (:ResourceProvider)-[old:PARENT_OF]->(rp)
DELETE old
WITH DISTINCT rp, parent
FOREACH (p IN CASE WHEN parent IS NULL THEN [] ELSE [parent] END |
         CREATE (p)-[:PARENT_OF]->(rp))
SET rp.parent_uuid = $parent_uuid,
    rp.name = $name,
    rp.name_key = $name_key,
    rp.updated_at = timestamp()
WITH rp, coalesce(parent.root_uuid, rp.uuid) AS new_root
%s
MATCH (rp)-[:PARENT_OF*0..]->(member:ResourceProvider)
SET member.root_uuid = new_root, member.stamp = stamp
WITH DISTINCT rp
RETURN %s
""" % (versioning.BUMP, PROVIDER))

# A provider without children or allocations deleted, a tombstone left;
# nothing done when it has either (DELETE then counts 0 deleted).
_DELETE_UNUSED = """
MATCH (rp:ResourceProvider {uuid: $uuid})
WITH rp, size([(rp)-[:PARENT_OF]->(child) | child]) AS children,
     size([(rp)<-[:CONSUMES]-(consumer) | consumer]) AS consumers
WHERE children = 0 AND consumers = 0
%s
CREATE (:Tombstone {uuid: rp.uuid, stamp: stamp})
""" % versioning.BUMP

DELETE = Statement('rp_delete', common=_DELETE_UNUSED + """
DETACH DELETE rp
RETURN count(*) AS deleted
""")

# The same deletion as a guarded write (no row when the provider has a
# child or an allocation): within an exclusive section a refusal rolls
# the section back on Neo4j (a what-if session's commit, whatif/service.py).
DELETE_GUARDED = Statement('rp_delete_guarded', common=_DELETE_UNUSED + """
WITH rp, rp.uuid AS gone
DETACH DELETE rp
RETURN gone AS deleted
""", guarded=True)

DELETE_BLOCKERS = Statement('rp_delete_blockers', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
RETURN size([(rp)-[:PARENT_OF]->(child) | child]) AS children,
       size([(rp)<-[:CONSUMES]-(consumer) | consumer]) AS consumers
""")


def provider_from_row(data):
    return models.Provider(
        uuid=data['uuid'], name=data['name'], generation=data['generation'],
        parent_uuid=data.get('parent_uuid'), root_uuid=data.get('root_uuid'),
        created_at=models.from_millis(data.get('created_at')),
        updated_at=models.from_millis(data.get('updated_at')))


class ProviderStore(engine.ResourceStore):
    """Store.providers: resource providers."""

    def get(self, uuid):
        rows = self.engine.read(GET, uuid=uuid)
        if not rows:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        return provider_from_row(rows[0]['rp'])

    def delete_unused(self, uuid):
        """Delete the provider if it has no child and no allocation (a
        guarded write); whether it was deleted."""
        return bool(self.engine.write(DELETE_GUARDED, uuid=uuid))

    def find(self, uuid):
        rows = self.engine.read(GET, uuid=uuid)
        return provider_from_row(rows[0]['rp']) if rows else None

    def subtree_uuids(self, uuid):
        return {row['uuid'] for row in self.engine.read(SUBTREE, uuid=uuid)}

    def create(self, uuid, name, parent_uuid=None):
        """Create a provider; raises Exists (field=uuid|name) or Invalid."""
        try:
            rows = self.engine.write(CREATE, uuid=uuid, name=name,
                                     name_key=schema.name_key(name),
                                     parent_uuid=parent_uuid)
        except engine.ConstraintViolation:
            # A concurrent create took the uuid or name after the
            # statement's own check (Neo4j): say which, below.
            rows = []
        if rows:
            return provider_from_row(rows[0]['rp'])
        if self.engine.read(GET, uuid=uuid):
            raise errors.Exists(field='uuid', value=uuid)
        if self.engine.read(GET_BY_NAME, name_key=schema.name_key(name)):
            raise errors.Exists(field='name', value=name)
        raise errors.Invalid('parent provider UUID does not exist.')

    def update(self, current, name, parent_uuid):
        """Rename and/or move ``current``; tree rules are the caller's."""
        params = dict(uuid=current.uuid, name=name,
                      name_key=schema.name_key(name))
        if parent_uuid == current.parent_uuid:
            statement = RENAME
        else:
            statement = REPARENT
            params.update(parent_uuid=parent_uuid,
                          old_parent_uuid=current.parent_uuid)
        try:
            rows = self.engine.write(statement, **params)
        except engine.ConstraintViolation:
            rows = []  # a concurrent write took the name: see below
        if rows:
            return provider_from_row(rows[0]['rp'])
        if not self.engine.read(GET, uuid=current.uuid):
            raise errors.NotFound(uuid=current.uuid)
        clash = self.engine.read(GET_BY_NAME, name_key=schema.name_key(name))
        if clash and clash[0]['rp']['uuid'] != current.uuid:
            raise errors.Exists(field='name', value=name)
        if parent_uuid and not self.engine.read(GET, uuid=parent_uuid):
            raise errors.Invalid('parent provider UUID does not exist.')
        raise errors.ConcurrentUpdate()

    def delete(self, uuid):
        rows = self.engine.write(DELETE, uuid=uuid)
        if rows and rows[0]['deleted']:
            return
        blockers = self.engine.read(DELETE_BLOCKERS, uuid=uuid)
        if not blockers:
            raise errors.NotFound(uuid=uuid)
        if blockers[0]['children']:
            raise errors.InUse(reason='children')
        raise errors.InUse(reason='allocations')
