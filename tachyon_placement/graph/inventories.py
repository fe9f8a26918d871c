"""Inventories: ``(rp)-[:PROVIDES {total, reserved, min_unit, max_unit,
step_size, allocation_ratio, used, created_at, updated_at}]->(rc)``.

``used`` is the sum of the provider's allocations of that class, kept by
the allocation writes; inventory writes never touch it on an existing
edge.  Every inventory change is the one guarded statement WRITE: it finds
the provider only at the generation the caller read and checked, bumps it,
and applies the upserts and deletes.  No row back means the generation
moved (or, defensively, a class vanished or gained allocations), and
nothing was written.
"""
from tachyon_placement.domain import errors
from tachyon_placement.domain import models
from tachyon_placement.graph import engine
from tachyon_placement.graph import providers
from tachyon_placement.graph import versioning
from tachyon_placement.graph import cypher
from tachyon_placement.graph.cypher import Statement

# The provider and every inventory it has, with the class ordinal so the
# caller can list classes in Placement's order.  OPTIONAL MATCH, not a
# pattern comprehension: FalkorDB caches a comprehension's plan with the
# relationship types and property keys that existed when it was compiled,
# and a plan compiled before the first inventory never sees any.
GET = Statement('inv_get', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
OPTIONAL MATCH (rp)-[inv:PROVIDES]->(rc:ResourceClass)
RETURN %s,
       collect({resource_class: rc.name, ordinal: rc.ordinal,
                total: inv.total, reserved: inv.reserved,
                min_unit: inv.min_unit, max_unit: inv.max_unit,
                step_size: inv.step_size,
                allocation_ratio: inv.allocation_ratio, used: inv.used,
                created_at: inv.created_at, updated_at: inv.updated_at})
       AS inventories
""" % providers.PROVIDER)

# On Neo4j (read committed) the provider's write lock is taken before its
# generation is read, so two writers cannot both see the old generation;
# FalkorDB runs write queries one at a time.

# The inventory fields of a PROVIDES edge ``inv`` from a record ``wanted``
# (shared with the reshaper's statement).
SET_FIELDS = '''SET inv.total = wanted.total,
      inv.reserved = wanted.reserved,
      inv.min_unit = wanted.min_unit,
      inv.max_unit = wanted.max_unit,
      inv.step_size = wanted.step_size,
      inv.allocation_ratio = wanted.allocation_ratio'''

_WRITE = """
MATCH (rp:ResourceProvider {uuid: $uuid})
%(lock)s
WITH rp WHERE rp.generation = $generation
CALL {
  UNWIND $upserts AS wanted
  MATCH (rc:ResourceClass {name: wanted.resource_class})
  RETURN count(rc) AS known
}
CALL {
  MATCH (:ResourceProvider {uuid: $uuid})-[inv:PROVIDES]->(rc:ResourceClass)
  WHERE rc.name IN $deletes AND coalesce(inv.used, 0) > 0
  RETURN count(inv) AS busy
}
WITH rp, known, busy
WHERE known = size($upserts) AND busy = 0
CALL {
  MATCH (:ResourceProvider {uuid: $uuid})-[gone:PROVIDES]->(rc:ResourceClass)
  WHERE rc.name IN $deletes
  DELETE gone
}
CALL {
  UNWIND $upserts AS wanted
  MATCH (target:ResourceProvider {uuid: $uuid})
  MATCH (rc:ResourceClass {name: wanted.resource_class})
  OPTIONAL MATCH (:Consumer)-[held:CONSUMES]->(target)
  WHERE held.resource_class = rc.name
  WITH wanted, target, rc, toInteger(coalesce(sum(held.used), 0)) AS allocated
  MERGE (target)-[inv:PROVIDES]->(rc)
  ON CREATE SET inv.created_at = timestamp(), inv.used = allocated
  ON MATCH SET inv.updated_at = timestamp()
  %(set_fields)s
}
%(bump)s
SET rp.generation = rp.generation + 1, rp.updated_at = timestamp(),
    rp.stamp = stamp
RETURN rp.generation AS generation
"""


def _write_text(dialect):
    return _WRITE % {'lock': cypher.write_lock('rp', dialect),
                     'set_fields': SET_FIELDS, 'bump': versioning.BUMP}


WRITE = Statement('inv_write', neo4j=_write_text('neo4j'),
                  falkordb=_write_text('falkordb'), guarded=True)

_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
           'allocation_ratio', 'used')


def _inventory(data):
    fields = {key: data[key] for key in _FIELDS if data.get(key) is not None}
    # Engines may hand sums back as floats; usage is a whole number.
    fields['used'] = int(fields.get('used') or 0)
    return models.Inventory(
        resource_class=data['resource_class'],
        created_at=models.from_millis(data.get('created_at')),
        updated_at=models.from_millis(data.get('updated_at')),
        **fields)


class InventoryStore(engine.ResourceStore):
    """Store.inventories: provider inventories (and the usages on them)."""

    def of_provider(self, uuid):
        """(Provider, {resource_class: Inventory}) with classes in
        Placement's order (standard classes first, then custom ones by
        creation); each Inventory carries ``used``.  Raises NotFound."""
        rows = self.engine.read(GET, uuid=uuid)
        if not rows:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid, uuid=uuid)
        row = rows[0]
        # A provider without inventory yields one all-null record.
        records = sorted((data for data in row['inventories']
                          if data.get('resource_class') is not None),
                         key=lambda data: (data.get('ordinal') is None,
                                           data.get('ordinal'),
                                           data['resource_class']))
        return (providers.provider_from_row(row['rp']),
                {data['resource_class']: _inventory(data)
                 for data in records})

    def write(self, uuid, generation, change):
        """Apply a domain ``InventoryWrite`` to provider ``uuid`` if it is
        still at ``generation``; returns the new generation.

        Raises ConcurrentUpdate when the provider moved on (or is gone).
        """
        rows = self.engine.write(
            WRITE, uuid=uuid, generation=generation,
            upserts=change.upsert_params(), deletes=list(change.deletes))
        if not rows:
            raise errors.ConcurrentUpdate(
                'Another thread concurrently updated the resource provider '
                'data. Please retry your update', uuid=uuid)
        return rows[0]['generation']
