"""Store.integrity: what must hold in every graph, checked (``tachyon-manage
db verify``: after a failover, a restore, an import).

The usage kept on each inventory (``PROVIDES.used``, which capacity checks
read instead of adding allocations up) must equal the sum of the
allocations against it; no allocation may be of a class its provider has
no inventory of; and usage above capacity is reported (Placement lets an
inventory shrink below its usage, so that is a warning, not corruption).
"""
import collections

from tachyon_placement.graph import engine
from tachyon_placement.graph.cypher import Statement

USAGE = Statement('integrity_usage', common="""
MATCH (rp:ResourceProvider)-[inv:PROVIDES]->(rc:ResourceClass)
OPTIONAL MATCH (:Consumer)-[held:CONSUMES {resource_class: rc.name}]->(rp)
WITH rp, rc, inv, sum(held.used) AS allocated
WITH rp.uuid AS provider, rc.name AS resource_class,
     coalesce(inv.used, 0) AS used, allocated,
     (inv.total - inv.reserved) * inv.allocation_ratio AS capacity
WHERE used <> allocated OR used > capacity
RETURN provider, resource_class, used, allocated, capacity
ORDER BY provider, resource_class
""")

ORPHANS = Statement('integrity_orphan_allocations', common="""
MATCH (c:Consumer)-[held:CONSUMES]->(rp:ResourceProvider)
OPTIONAL MATCH (rp)-[inv:PROVIDES]->(:ResourceClass
                                      {name: held.resource_class})
WITH c, held, rp, inv
WHERE inv IS NULL
RETURN c.uuid AS consumer, rp.uuid AS provider,
       held.resource_class AS resource_class, held.used AS used
ORDER BY consumer, provider, resource_class
""")

COUNTS = Statement('integrity_counts', common="""
OPTIONAL MATCH (rp:ResourceProvider)
WITH count(rp) AS providers, sum(rp.generation) AS provider_generations
OPTIONAL MATCH (c:Consumer)
WITH providers, provider_generations, count(c) AS consumers,
     sum(c.generation) AS consumer_generations
OPTIONAL MATCH (:Consumer)-[held:CONSUMES]->(:ResourceProvider)
WITH providers, provider_generations, consumers, consumer_generations,
     count(held) AS allocations, sum(held.used) AS allocated
OPTIONAL MATCH (:ResourceProvider)-[inv:PROVIDES]->(:ResourceClass)
RETURN providers, provider_generations, consumers, consumer_generations,
       allocations, allocated, count(inv) AS inventories
""")

Report = collections.namedtuple('Report', 'counts usage orphans')
Report.__doc__ = """``counts``: {name: number} (providers, consumers,
allocations, inventories, the sums of generations and of allocated
amounts); ``usage``: rows where the kept usage differs from the
allocations or passes capacity; ``orphans``: allocations of a class their
provider has no inventory of."""


class IntegrityStore(engine.ResourceStore):
    """Store.integrity."""

    def report(self):
        counts = self.engine.read(COUNTS)[0]
        # Sums come back as floats from FalkorDB: amounts are whole.
        return Report({name: int(value or 0)
                       for name, value in counts.items()},
                      self.engine.read(USAGE), self.engine.read(ORPHANS))
