"""Resource classes: standard ones synced from os-resource-classes, custom
ones (CUSTOM_*) created through the API.  ``ordinal`` keeps Placement's
listing order: standard classes in os-resource-classes order, then custom
classes in creation order from 10000 on."""
import os_resource_classes

from tachyon_placement.domain import errors
from tachyon_placement.domain import models
from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement

FIRST_CUSTOM_ORDINAL = 10000

_RC = 'rc {.name, .created_at, .updated_at} AS rc'

SYNC = Statement('rc_sync', common="""
UNWIND $classes AS cls
MERGE (rc:ResourceClass {name: cls.name})
ON CREATE SET rc.ordinal = cls.ordinal, rc.standard = true
SET rc.ordinal = cls.ordinal, rc.standard = true
RETURN count(rc) AS synced
""")

# Ordered before the projection: after ``AS rc`` the name is the map,
# which has no ordinal (the order was the engine's).
LIST = Statement('rc_list', common="""
MATCH (rc:ResourceClass)
WITH rc ORDER BY rc.ordinal
RETURN %s
""" % _RC)

GET = Statement('rc_get', common="""
MATCH (rc:ResourceClass {name: $name})
RETURN %s
""" % _RC)

CREATE = Statement('rc_create', common="""
OPTIONAL MATCH (existing:ResourceClass {name: $name})
WITH count(existing) AS found WHERE found = 0
OPTIONAL MATCH (custom:ResourceClass) WHERE custom.ordinal >= $first_custom
WITH found, max(custom.ordinal) AS last
CREATE (rc:ResourceClass {name: $name, standard: false,
                          ordinal: coalesce(last + 1, $first_custom),
                          created_at: timestamp()})
RETURN %s
""" % _RC)

# Allocation edges carry the class name, so a rename rewrites them too.
RENAME = Statement('rc_rename', common="""
MATCH (rc:ResourceClass {name: $name})
OPTIONAL MATCH (clash:ResourceClass {name: $new_name})
WITH rc, clash WHERE clash IS NULL
SET rc.name = $new_name, rc.updated_at = timestamp()
WITH rc
MERGE (graph_version:Meta {key: 'graph'})
ON CREATE SET graph_version.version = 0
SET graph_version.version = graph_version.version + 1,
    graph_version.full_reload = graph_version.version + 1
WITH rc
OPTIONAL MATCH ()-[used:CONSUMES {resource_class: $name}]->()
SET used.resource_class = $new_name
WITH DISTINCT rc
RETURN %s
""" % _RC)

DELETE = Statement('rc_delete', common="""
MATCH (rc:ResourceClass {name: $name})
WITH rc, size([(rc)<-[:PROVIDES]-(p) | p]) AS inventories
WHERE inventories = 0
OPTIONAL MATCH ()-[allocation:CONSUMES {resource_class: $name}]->()
WITH rc, count(allocation) AS allocations
WHERE allocations = 0
DELETE rc
RETURN count(*) AS deleted
""")


# The standard classes exist in every synced graph (Store.sync creates
# them, nothing deletes them): only custom names are looked up (missing()),
# so Nova's usual requests cost no round trip there.
STANDARD_CLASSES = frozenset(os_resource_classes.STANDARDS)

KNOWN = Statement('rp_known_classes', common="""
UNWIND $names AS class_name
MATCH (rc:ResourceClass {name: class_name})
RETURN rc.name AS name
""")


def _rc(row):
    data = row['rc']
    return models.ResourceClass(
        name=data['name'],
        created_at=models.from_millis(data.get('created_at')),
        updated_at=models.from_millis(data.get('updated_at')))


class ResourceClassStore(engine.ResourceStore):
    """Store.resource_classes: resource classes."""

    def sync(self, standard_names):
        self.engine.write(SYNC, classes=[
            {'name': name, 'ordinal': ordinal}
            for ordinal, name in enumerate(standard_names)])

    def list(self):
        return [_rc(row) for row in self.engine.read(LIST)]

    def get(self, name):
        rows = self.engine.read(GET, name=name)
        if not rows:
            raise errors.NotFound(
                'No such resource class %s.' % name, name=name)
        return _rc(rows[0])

    def exists(self, name):
        return bool(self.engine.read(GET, name=name))

    def missing(self, names):
        """Which of ``names`` are no resource class."""
        names = set(names) - STANDARD_CLASSES
        if not names:
            return set()
        found = self.engine.read(KNOWN, names=sorted(names))
        return names - {row['name'] for row in found}

    def create(self, name):
        rows = self.engine.write(CREATE, name=name,
                                 first_custom=FIRST_CUSTOM_ORDINAL)
        if not rows:
            raise errors.Exists(
                'Resource class %s already exists.' % name, name=name)
        return _rc(rows[0])

    def rename(self, name, new_name):
        current = self.get(name)
        rows = self.engine.write(RENAME, name=current.name, new_name=new_name)
        if not rows:
            raise errors.Exists(
                'Resource class %s already exists.' % new_name,
                name=new_name)
        return _rc(rows[0])

    def delete(self, name):
        self.get(name)
        rows = self.engine.write(DELETE, name=name)
        if not rows or not rows[0]['deleted']:
            raise errors.InUse(
                'Cannot delete resource class %s. Class is in use in '
                'inventory.' % name, name=name)
