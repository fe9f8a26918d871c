"""Consumers and allocations.

``(:Consumer {uuid, generation, project_id, user_id, consumer_type})``
``-[:CONSUMES {resource_class, used, position, created_at, updated_at}]->``
``(:ResourceProvider)``; ``position`` orders a consumer's allocations as
Placement lists them, in the order they were written (imported ones: by
their row id in Placement's database).  The sum per provider and class
is kept on the inventory edge as ``PROVIDES.used`` so capacity checks
never aggregate.

An attempt of an allocation write reads with STATES (which takes the
write locks on Neo4j) and writes with the one guarded statement WRITE: it
re-reads the generations of the providers and consumers and writes only
when all still match.  Two writes need no read first: a claim for new
consumers (CLAIM, which checks the inventories and room it relies on)
and the removal of a consumer's allocations (REMOVE).
"""
from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import models
from tachyon_placement.graph import engine
from tachyon_placement.graph import versioning
from tachyon_placement.graph import cypher
from tachyon_placement.graph.cypher import Statement

FOR_CONSUMER = Statement('alloc_for_consumer', common="""
MATCH (c:Consumer {uuid: $uuid})-[a:CONSUMES]->(rp:ResourceProvider)
RETURN c {.uuid, .generation, .project_id, .user_id, .consumer_type} AS c,
       rp.uuid AS rp, rp.generation AS generation,
       a.resource_class AS rc, a.used AS used,
       coalesce(a.updated_at, a.created_at) AS modified,
       coalesce(a.position, -1) AS position
ORDER BY position, rp, rc
""")

FOR_PROVIDER = Statement('alloc_for_provider', common="""
MATCH (rp:ResourceProvider {uuid: $uuid})
OPTIONAL MATCH (c:Consumer)-[a:CONSUMES]->(rp)
RETURN rp.generation AS generation, c.uuid AS consumer,
       c.generation AS consumer_generation,
       a.resource_class AS rc, a.used AS used,
       coalesce(a.updated_at, a.created_at) AS modified,
       coalesce(c.stamp, 0) AS stamp, coalesce(a.position, -1) AS position
""")

CLASS_ORDINALS = Statement('alloc_class_ordinals', common="""
MATCH (k:ResourceClass) WHERE k.name IN $names
RETURN k.name AS name, k.ordinal AS ordinal
""")


# What one attempt of an allocation or reshape write reads, in one
# statement: the consumers, then the providers asked for and those the
# consumers hold.  On Neo4j it takes their write locks first (consumers,
# then providers, each in uuid order, so two writers never wait on each
# other in a circle), inside the attempt's transaction (engine.exclusive),
# so what it reads stays true until the write commits.  Setting a property
# takes a node's write lock until the transaction ends; it is removed again
# at once.
_STATES = """
CALL {{
  UNWIND $consumers AS consumer_uuid
  MATCH (c:Consumer {{uuid: consumer_uuid}})
  WITH c ORDER BY c.uuid
  %(lock_c)s
  RETURN collect(c {{.uuid, .generation, .project_id, .user_id,
                    .consumer_type,
                    allocations: [(c)-[a:CONSUMES]->(held:ResourceProvider) |
                                  {{rp: held.uuid, rc: a.resource_class,
                                   used: a.used}}]}}) AS consumers
}}
WITH consumers,
     reduce(wanted = $providers, state IN consumers |
            wanted + [alloc IN state.allocations | alloc.rp]) AS wanted
CALL {{
  WITH wanted
  UNWIND wanted AS rp_uuid
  WITH DISTINCT rp_uuid ORDER BY rp_uuid
  MATCH (rp:ResourceProvider {{uuid: rp_uuid}})
  %(lock_rp)s
  RETURN collect(rp {{.uuid, .generation,
                     inventories: [(rp)-[inv:PROVIDES]->(rc:ResourceClass) |
                                   {{resource_class: rc.name,
                                    total: inv.total, reserved: inv.reserved,
                                    min_unit: inv.min_unit,
                                    max_unit: inv.max_unit,
                                    step_size: inv.step_size,
                                    allocation_ratio: inv.allocation_ratio,
                                    used: inv.used}}]}}) AS providers
}}
RETURN consumers, providers
"""


# Take the locks (Neo4j) and check every generation the plan relies on.
GUARDS = """
CALL {{
  UNWIND $provider_guards AS guard
  MATCH (rp:ResourceProvider {{uuid: guard.uuid}})
  %(lock_rp)s
  RETURN collect(CASE WHEN rp.generation = guard.generation
                 THEN rp.uuid END) AS fresh_providers
}}
CALL {{
  UNWIND $consumer_guards AS guard
  OPTIONAL MATCH (c:Consumer {{uuid: guard.uuid}})
  %(lock_c)s
  RETURN collect(CASE WHEN (c IS NULL AND guard.generation IS NULL)
                           OR c.generation = guard.generation
                 THEN guard.uuid END) AS fresh_consumers
}}
"""

GUARDS_HOLD = """
size(fresh_providers) = size($provider_guards)
  AND size(fresh_consumers) = size($consumer_guards)
"""

# Replace the consumers' allocations, move usage by the planned deltas,
# bump generations, drop consumers left with nothing; stamp the consumers
# with the new graph version and leave a tombstone (with the providers it
# held) for each dropped one: the change feed's consumers.
BODY = """
CALL {{
  UNWIND $consumer_guards AS guard
  MATCH (:Consumer {{uuid: guard.uuid}})-[old:CONSUMES]->()
  DELETE old
}}
CALL {{
  UNWIND $consumers AS wanted
  MERGE (c:Consumer {{uuid: wanted.uuid}})
  ON CREATE SET c.created_at = timestamp(), c.generation = 0
  SET c.generation = c.generation + wanted.increment,
      c.project_id = wanted.project_id,
      c.user_id = wanted.user_id,
      c.consumer_type = CASE WHEN wanted.keep_type THEN c.consumer_type
                        ELSE wanted.consumer_type END,
      c.updated_at = timestamp()
}}
CALL {{
  UNWIND $allocations AS alloc
  MATCH (c:Consumer {{uuid: alloc.consumer}})
  MATCH (rp:ResourceProvider {{uuid: alloc.rp}})
  CREATE (c)-[:CONSUMES {{resource_class: alloc.rc, used: alloc.used,
                          position: alloc.position,
                          created_at: timestamp()}}]->(rp)
}}
CALL {{
  UNWIND $deltas AS change
  MATCH (:ResourceProvider {{uuid: change.rp}})-[inv:PROVIDES]->
        (:ResourceClass {{name: change.rc}})
  SET inv.used = coalesce(inv.used, 0) + change.delta
}}
CALL {{
  UNWIND $provider_guards AS guard
  MATCH (rp:ResourceProvider {{uuid: guard.uuid}})
  SET rp.generation = rp.generation + 1, rp.updated_at = timestamp()
}}
CALL {{
  UNWIND $emptied AS emptied
  MATCH (gone:Consumer {{uuid: emptied.uuid}})
  DETACH DELETE gone
}}
""" + versioning.BUMP_FORMAT + versioning.STAMP_LISTED_FORMAT + """
CALL {{
  WITH stamp
  UNWIND $consumers AS wanted
  MATCH (c:Consumer {{uuid: wanted.uuid}})
  SET c.stamp = stamp
}}
CALL {{
  WITH stamp
  UNWIND $emptied AS emptied
  MERGE (gone:ConsumerTombstone {{uuid: emptied.uuid}})
  SET gone.stamp = stamp, gone.providers = emptied.providers
}}
"""

_WRITE = (GUARDS + """
WITH fresh_providers, fresh_consumers
WHERE """ + GUARDS_HOLD + BODY + """
RETURN size(fresh_providers) AS providers
""")


def locking(template, dialect):
    """Fill the lock placeholders of a statement template for a dialect:
    Neo4j takes write locks before reading generations, FalkorDB runs
    writes one at a time and needs none."""
    return template.format() % {
        'lock_rp': cypher.write_lock('rp', dialect),
        'lock_c': cypher.write_lock('c', dialect),
    }


def _write_text(dialect):
    return locking(_WRITE, dialect)


WRITE = Statement('alloc_write', neo4j=_write_text('neo4j'),
                  falkordb=_write_text('falkordb'), guarded=True)

# A claim: allocations for consumers that do not exist yet (what Nova's
# scheduler writes for every instance it places), planned on the
# providers' states in the process's copy of the graph rather than read
# first.  That copy may be behind, so instead of the providers'
# generations the write checks what the plan relied on: every inventory
# it takes from still has the fields the plan was checked against (total,
# reserved, units, ratio) and room for the amount at its usage now.  The
# same outcome as a locked read and a guarded write, in one round trip
# and with no write lock to wait for: the providers a whole scheduler
# fleet picks first were a queue of reads and writes under one stripe.
# Neo4j locks the providers before it reads their usage.
_CLAIM = """
CALL {{
  UNWIND $provider_guards AS guard
  MATCH (rp:ResourceProvider {{uuid: guard.uuid}})
  %(lock_rp)s
  RETURN count(rp) AS locked_providers
}}
CALL {{
  WITH locked_providers
  UNWIND $claims AS claim
  MATCH (:ResourceProvider {{uuid: claim.rp}})-[inv:PROVIDES]->
        (:ResourceClass {{name: claim.rc}})
  WHERE inv.total = claim.total AND inv.reserved = claim.reserved
    AND inv.min_unit = claim.min_unit AND inv.max_unit = claim.max_unit
    AND inv.step_size = claim.step_size
    AND inv.allocation_ratio = claim.allocation_ratio
    AND coalesce(inv.used, 0) + claim.delta
        <= (inv.total - inv.reserved) * inv.allocation_ratio
  RETURN count(inv) AS fitting
}}
CALL {{
  UNWIND $consumer_guards AS guard
  OPTIONAL MATCH (c:Consumer {{uuid: guard.uuid}})
  RETURN count(c) AS existing_consumers
}}
WITH locked_providers, fitting, existing_consumers
WHERE locked_providers = size($provider_guards)
  AND fitting = size($claims) AND existing_consumers = 0
""" + BODY + """
RETURN fitting AS claimed
"""

CLAIM = Statement('alloc_claim', neo4j=locking(_CLAIM, 'neo4j'),
                  falkordb=locking(_CLAIM, 'falkordb'), guarded=True)

# DELETE /allocations/{consumer} in one statement: the consumer's
# allocations go, the usage they held comes back to the inventories, the
# consumer goes (as Placement drops a consumer left with nothing) and the
# providers are stamped; provider generations stay (Placement leaves them
# too).  Nothing to check, so nothing to read first: a locked read and a
# guarded write were two of the five engine statements of a scheduling
# loop's claim.  No row when the consumer holds nothing (nothing
# written).  Neo4j locks the consumer, then its providers in uuid order
# (STATES's order), before it reads usage.
_REMOVE = """
MATCH (c:Consumer {{uuid: $uuid}})
%(lock_c)s
WITH c
MATCH (c)-[held:CONSUMES]->(rp:ResourceProvider)
WITH c, rp, held.resource_class AS rc, sum(held.used) AS used
ORDER BY rp.uuid
%(lock_rp)s
WITH c, collect({{rp: rp.uuid, rc: rc, used: used}}) AS taken
CALL {{
  WITH taken
  UNWIND taken AS back
  MATCH (:ResourceProvider {{uuid: back.rp}})-[inv:PROVIDES]->
        (:ResourceClass {{name: back.rc}})
  SET inv.used = coalesce(inv.used, 0) - back.used
}}
WITH c, taken
DETACH DELETE c
WITH taken
""" + versioning.BUMP_FORMAT + """
CALL {{
  WITH stamp, taken
  UNWIND taken AS back
  MATCH (stamped:ResourceProvider {{uuid: back.rp}})
  SET stamped.stamp = stamp
}}
MERGE (gone:ConsumerTombstone {{uuid: $uuid}})
SET gone.stamp = stamp, gone.providers = [back IN taken | back.rp]
RETURN size(taken) AS removed
"""

REMOVE = Statement('alloc_remove', neo4j=locking(_REMOVE, 'neo4j'),
                   falkordb=locking(_REMOVE, 'falkordb'))

STATES = Statement('alloc_states', neo4j=locking(_STATES, 'neo4j'),
                   falkordb=locking(_STATES, 'falkordb'))


def _inventory(data):
    return models.Inventory(**{key: value for key, value in data.items()
                               if value is not None})


class AllocationStore(engine.ResourceStore):
    """Store.allocations: consumers and allocations."""

    def write_states(self, consumer_uuids, provider_uuids):
        """What one attempt of a write reads (see _STATES), as
        ({uuid: ConsumerState}, {uuid: ProviderState}): a generation-None
        state for each consumer that does not exist; the providers asked
        for that exist and those the consumers hold."""
        row = self.engine.read(
            STATES, consumers=sorted(set(consumer_uuids)),
            providers=sorted(set(provider_uuids)))[0]
        consumers = {uuid: domain.ConsumerState(uuid)
                     for uuid in consumer_uuids}
        for data in row['consumers']:
            allocations = {}
            for alloc in data['allocations']:
                allocations.setdefault(alloc['rp'], {})[alloc['rc']] = (
                    alloc['used'])
            consumers[data['uuid']] = domain.ConsumerState(
                uuid=data['uuid'], generation=data['generation'],
                project_id=data.get('project_id'),
                user_id=data.get('user_id'),
                consumer_type=data.get('consumer_type'),
                allocations=allocations)
        providers = {
            data['uuid']: domain.ProviderState(
                uuid=data['uuid'], generation=data['generation'],
                inventories={inv['resource_class']: _inventory(inv)
                             for inv in data['inventories']})
            for data in row['providers']}
        return consumers, providers

    def write_claim(self, plan, claims):
        """Apply a claim's WritePlan (see CLAIM); ``claims``: its deltas
        with the inventory fields they were checked against.  False when
        a consumer exists, a provider went, or an inventory changed or
        has no room left."""
        try:
            return bool(self.engine.write(CLAIM, claims=claims,
                                          **plan.as_params()))
        except engine.ConstraintViolation:
            return False  # another writer created one of the consumers

    def remove(self, consumer_uuid):
        """Remove every allocation of ``consumer_uuid`` and the consumer
        (see REMOVE); False when it holds none (nothing written)."""
        return bool(self.engine.write(REMOVE, uuid=consumer_uuid))

    def locked_for_write(self, keys):
        """The section in which one attempt of an allocation or reshape
        write reads (on Neo4j write_states takes the locks), checks and
        writes (engine.exclusive); ``keys``: the uuids of the providers
        and consumers asked for."""
        return self.engine.exclusive(keys)

    def write(self, plan):
        """Apply a WritePlan; False when a guard failed (state changed)."""
        try:
            return bool(self.engine.write(WRITE, **plan.as_params()))
        except engine.ConstraintViolation:
            # Another writer created one of our new consumers first.
            return False

    def of_consumer(self, uuid):
        """(ConsumerState or None, {rp: generation}, last modified)."""
        rows = self.engine.read(FOR_CONSUMER, uuid=uuid)
        if not rows:
            return None, {}, None
        data = rows[0]['c']
        state = domain.ConsumerState(
            uuid=data['uuid'], generation=data['generation'],
            project_id=data.get('project_id'), user_id=data.get('user_id'),
            consumer_type=data.get('consumer_type'))
        generations = {}
        for row in rows:
            state.allocations.setdefault(row['rp'], {})[row['rc']] = (
                row['used'])
            generations[row['rp']] = row['generation']
        modified = max((row['modified'] for row in rows
                        if row['modified'] is not None), default=None)
        return state, generations, models.from_millis(modified)

    def of_provider(self, uuid):
        """(generation, {consumer: {'resources', 'consumer_generation'}},
        last modified), or None when the provider does not exist."""
        rows = self.engine.read(FOR_PROVIDER, uuid=uuid)
        if not rows:
            return None
        by_consumer = {}
        for row in self._placement_order(rows):
            if row['consumer'] is None:
                continue
            entry = by_consumer.setdefault(row['consumer'], {
                'resources': {},
                'consumer_generation': row['consumer_generation']})
            entry['resources'][row['rc']] = row['used']
        modified = max((row['modified'] for row in rows
                        if row['modified'] is not None), default=None)
        return rows[0]['generation'], by_consumer, models.from_millis(
            modified)

    def _placement_order(self, rows):
        """A provider's allocation rows as Placement lists them: its
        database reads them through the index on (provider, resource
        class, used), so by class (its id: the ordinal here), amount,
        then as inserted (the write's graph version, then the position in
        the write)."""
        names = sorted({row['rc'] for row in rows if row['rc']})
        if not names:
            return rows
        ordinals = {found['name']: found['ordinal'] for found in
                    self.engine.read(CLASS_ORDINALS, names=names)}
        return sorted(rows, key=lambda row: (
            ordinals.get(row['rc'], -1), row['used'] or 0, row['stamp'],
            row['position'], row['consumer'] or ''))


PROJECT_USAGE = Statement('alloc_project_usage', common="""
MATCH (c:Consumer {project_id: $project_id})-[a:CONSUMES]->()
WHERE $user_id IS NULL OR c.user_id = $user_id
RETURN c.uuid AS consumer, c.consumer_type AS consumer_type,
       a.resource_class AS resource_class, a.used AS used
""")


class UsageStore(engine.ResourceStore):
    """Store.usages: allocation rows behind GET /usages."""

    def project_rows(self, project_id, user_id=None):
        return self.engine.read(PROJECT_USAGE, project_id=project_id,
                                user_id=user_id)
