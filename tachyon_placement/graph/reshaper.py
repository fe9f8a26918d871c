"""POST /reshaper as one guarded statement: inventories of some providers
and allocations of some consumers replaced together, or nothing at all."""
from tachyon_placement.graph import engine
from tachyon_placement.graph import allocations
from tachyon_placement.graph import inventories
from tachyon_placement.graph.cypher import Statement

_RESHAPE = ("""
CALL {{
  UNWIND $inventory_guards AS guard
  MATCH (rp:ResourceProvider {{uuid: guard.uuid}})
  %(lock_rp)s
  RETURN collect(CASE WHEN rp.generation = guard.generation
                 THEN rp.uuid END) AS fresh_inventories
}}
""" + allocations.GUARDS + """
WITH fresh_inventories, fresh_providers, fresh_consumers
WHERE size(fresh_inventories) = size($inventory_guards)
  AND """ + allocations.GUARDS_HOLD + """
CALL {{
  UNWIND $inventory_upserts AS wanted
  MATCH (target:ResourceProvider {{uuid: wanted.rp}})
  MATCH (rc:ResourceClass {{name: wanted.resource_class}})
  MERGE (target)-[inv:PROVIDES]->(rc)
  ON CREATE SET inv.created_at = timestamp(), inv.used = 0
  ON MATCH SET inv.updated_at = timestamp()
  """ + inventories.SET_FIELDS + """
}}
""" + allocations.BODY + """
CALL {{
  UNWIND $inventory_deletes AS gone
  MATCH (:ResourceProvider {{uuid: gone.rp}})-[inv:PROVIDES]->
        (:ResourceClass {{name: gone.resource_class}})
  DELETE inv
}}
CALL {{
  UNWIND $inventory_guards AS guard
  MATCH (rp:ResourceProvider {{uuid: guard.uuid}})
  SET rp.generation = rp.generation + guard.bump,
      rp.updated_at = timestamp()
}}
RETURN size(fresh_inventories) AS providers
""")

RESHAPE = Statement(
    'reshape', neo4j=allocations.locking(_RESHAPE, 'neo4j'),
    falkordb=allocations.locking(_RESHAPE, 'falkordb'), guarded=True)


class ReshapeStore(engine.ResourceStore):
    """Store.reshapes: the reshaper write."""

    def write(self, plan):
        """Apply a domain ReshapePlan; False when a guard failed."""
        try:
            return bool(self.engine.write(RESHAPE, **plan.as_params()))
        except allocations.engine.ConstraintViolation:
            return False
