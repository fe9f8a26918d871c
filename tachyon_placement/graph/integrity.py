"""Store.integrity: what must hold in every graph, checked (``tachyon-manage
db verify``: after a failover, a restore, an import).

The usage kept on each inventory (``PROVIDES.used``, which capacity checks
read instead of adding allocations up) must equal the sum of the
allocations against it; no allocation may be of a class its provider has
no inventory of; and usage above capacity is reported (Placement lets an
inventory shrink below its usage, so that is a warning, not corruption).

Values stored under the wrong names (a FalkorDB replica whose attribute
table is not its primary's, promoted: doc/source/admin/ha.rst) are also
looked for where they did harm: every consumer's project and user are
names as the API takes them and its type a consumer type (or none), and
every allocation is of a resource class that exists.
"""
import collections
import re

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

CONSUMERS = Statement('integrity_consumers', common="""
MATCH (c:Consumer)
RETURN c.uuid AS consumer, c.project_id AS project_id,
       c.user_id AS user_id, c.consumer_type AS consumer_type
ORDER BY consumer
""")

ALLOCATION_CLASSES = Statement('integrity_allocation_classes', common="""
MATCH (:Consumer)-[held:CONSUMES]->(:ResourceProvider)
RETURN held.resource_class AS resource_class, count(held) AS allocations
""")

CLASS_NAMES = Statement('integrity_class_names', common="""
MATCH (rc:ResourceClass)
RETURN rc.name AS name
""")

# As the API takes them (schemas/common.py: external ids are 1-255
# characters; a consumer type is a resource class-like name, or none for
# consumers written before microversion 1.38).
_EXTERNAL_ID_LENGTH = 255
_CONSUMER_TYPE = re.compile(r'^[A-Z0-9_]{1,255}$')


def consumer_problems(row):
    """What is wrong with a consumer row of CONSUMERS, in words (empty
    when nothing)."""
    problems = []
    for field in ('project_id', 'user_id'):
        value = row[field]
        if not isinstance(value, str) or not (
                0 < len(value) <= _EXTERNAL_ID_LENGTH):
            problems.append('%s %r is no project or user id'
                            % (field, value))
    kind = row['consumer_type']
    if kind is not None and not (isinstance(kind, str)
                                 and _CONSUMER_TYPE.match(kind)):
        problems.append('consumer_type %r is no consumer type' % (kind,))
    return problems


Report = collections.namedtuple(
    'Report', 'counts usage orphans consumers classes')
Report.__doc__ = """``counts``: {name: number} (providers, consumers,
allocations, inventories, the sums of generations and of allocated
amounts); ``usage``: rows where the kept usage differs from the
allocations or passes capacity; ``orphans``: allocations of a class their
provider has no inventory of; ``consumers``: [(consumer, [problems])];
``classes``: {resource class no ResourceClass names: allocations}."""


class IntegrityStore(engine.ResourceStore):
    """Store.integrity."""

    def report(self):
        counts = self.engine.read(COUNTS)[0]
        # Sums come back as floats from FalkorDB: amounts are whole.
        consumers = [(row['consumer'], consumer_problems(row))
                     for row in self.engine.read(CONSUMERS)]
        known = {row['name'] for row in self.engine.read(CLASS_NAMES)}
        return Report({name: int(value or 0)
                       for name, value in counts.items()},
                      self.engine.read(USAGE), self.engine.read(ORPHANS),
                      [(consumer, problems)
                       for consumer, problems in consumers if problems],
                      {row['resource_class']: row['allocations']
                       for row in self.engine.read(ALLOCATION_CLASSES)
                       if row['resource_class'] not in known})
