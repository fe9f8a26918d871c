"""Allocation writes planned as pure functions.

The store reads the current state of the consumers and providers a request
touches; ``plan_write`` checks the request against it exactly as Placement
does (inventory present, min_unit/max_unit/step_size, capacity) and
returns a ``WritePlan``: what to write, and the generations the write must
still find for it to be valid.  Usage changes are deltas, so providers
that only lose allocations need no guard.
"""
import collections
import dataclasses

from tachyon_placement.domain import errors


class InvalidAllocation(errors.DomainError):
    """Placement's InvalidInventory family: 409 'Unable to allocate ...'."""


@dataclasses.dataclass
class ConsumerState:
    uuid: str
    generation: int = None
    project_id: str = None
    user_id: str = None
    consumer_type: str = None
    # {rp_uuid: {resource_class: used}}
    allocations: dict = dataclasses.field(default_factory=dict)

    @property
    def exists(self):
        return self.generation is not None


@dataclasses.dataclass
class ProviderState:
    uuid: str
    generation: int
    inventories: dict  # {resource_class: models.Inventory (with used)}


@dataclasses.dataclass
class ConsumerRequest:
    """What one consumer's allocations must become."""
    uuid: str
    project_id: str
    user_id: str
    # {rp_uuid: {resource_class: used}}; empty removes every allocation.
    allocations: dict
    consumer_type: str = None  # None: keep the existing type


@dataclasses.dataclass
class WritePlan:
    provider_guards: list   # [{'uuid', 'generation'}] sorted by uuid
    consumer_guards: list   # [{'uuid', 'generation' (None: must not exist)}]
    # consumers: [{'uuid', 'project_id', 'user_id', 'consumer_type',
    # 'keep_type'}]
    consumers: list
    allocations: list       # [{'consumer', 'rp', 'rc', 'used'}]
    deltas: list            # [{'rp', 'rc', 'delta'}]
    # consumers left with no allocation: [{'uuid', 'providers' (those it
    # held)}] sorted by uuid
    emptied: list
    stamped: list           # providers whose view changes (graph version)

    def as_params(self):
        # The lists as they are, made for this plan alone (asdict copied
        # each dict deeply: about 5 % of a PUT's CPU in the interpreter).
        return {field.name: getattr(self, field.name)
                for field in dataclasses.fields(self)}


def _capacity_exceeded(inventory, used_after, amount, amount_all,
                       previously_used):
    capacity = inventory.capacity
    if capacity >= used_after + amount and capacity >= used_after + (
            amount_all):
        return False
    # Placement lets an over-committed provider (e.g. after its inventory
    # shrank) take a write that does not make the overage worse.
    return not (previously_used is not None
                and used_after + amount_all <= previously_used)


def plan_write(requests, consumers, providers):
    """Check ``requests`` against the state read and plan the write.

    ``consumers``: {uuid: ConsumerState} for every requested consumer (a
    state with generation None for one that does not exist yet).
    ``providers``: {uuid: ProviderState} for every provider in the requests
    and every provider the consumers hold (requested ones must exist: the
    caller reports a missing one).
    Raises InvalidAllocation with Placement's message.
    """
    old_by_key = collections.Counter()
    for request in requests:
        for rp_uuid, amounts in consumers[request.uuid].allocations.items():
            for rc, used in amounts.items():
                old_by_key[(rp_uuid, rc)] += used
    new_by_key = collections.Counter()
    new_allocations = []
    for request in requests:
        for rp_uuid, amounts in request.allocations.items():
            for rc, used in amounts.items():
                new_by_key[(rp_uuid, rc)] += used
                new_allocations.append((request.uuid, rp_uuid, rc, used))

    requested_classes = sorted({rc for _c, _rp, rc, _u in new_allocations})
    no_inventory = sorted(
        rp_uuid for rp_uuid in {rp for _c, rp, _rc, _u in new_allocations}
        if not set(providers[rp_uuid].inventories) & set(requested_classes))
    if no_inventory:
        raise InvalidAllocation(
            "Inventory for '%s' on resource provider '%s' invalid."
            % (', '.join(requested_classes), ', '.join(no_inventory)))

    running = collections.Counter()
    for _consumer, rp_uuid, rc, amount in new_allocations:
        running[(rp_uuid, rc)] += amount
        inventory = providers[rp_uuid].inventories.get(rc)
        if inventory is None:
            raise InvalidAllocation(
                "Inventory for '%s' on resource provider '%s' invalid."
                % (rc, rp_uuid))
        if (amount < inventory.min_unit or amount > inventory.max_unit
                or amount % inventory.step_size != 0):
            raise InvalidAllocation(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would violate inventory "
                "constraints." % (rc, rp_uuid))
        previously_used = inventory.used
        used_after = previously_used - old_by_key[(rp_uuid, rc)]
        if _capacity_exceeded(inventory, used_after, amount,
                              running[(rp_uuid, rc)],
                              previously_used if previously_used else None):
            raise InvalidAllocation(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would exceed the capacity."
                % (rc, rp_uuid))

    deltas = [{'rp': rp, 'rc': rc, 'delta': new_by_key[(rp, rc)] - old}
              for (rp, rc), old in old_by_key.items()
              if new_by_key[(rp, rc)] != old]
    deltas += [{'rp': rp, 'rc': rc, 'delta': used}
               for (rp, rc), used in new_by_key.items()
               if (rp, rc) not in old_by_key]
    # Placement bumps the generation of the providers named in the new
    # allocations (the only ones whose usage can grow) and, for a consumer
    # whose allocations are emptied by PUT/POST, of the providers it held.
    guarded = {rp for _c, rp, _rc, _u in new_allocations}
    emptied = []
    increments = {}
    for request in requests:
        held = consumers[request.uuid].allocations
        if any(request.allocations.values()):
            increments[request.uuid] = 1
        elif held:
            emptied.append({'uuid': request.uuid,
                            'providers': sorted(held)})
            increments[request.uuid] = 1
            guarded |= set(held)
        else:
            # Nothing held, nothing wanted: the consumer is recorded (with
            # generation 0 when new) and its generation does not move.
            increments[request.uuid] = 0
    return WritePlan(
        provider_guards=[{'uuid': rp, 'generation': providers[rp].generation}
                         for rp in sorted(guarded)],
        consumer_guards=[{'uuid': request.uuid,
                          'generation': consumers[request.uuid].generation}
                         for request in sorted(requests,
                                               key=lambda r: r.uuid)],
        consumers=[{'uuid': request.uuid, 'project_id': request.project_id,
                    'user_id': request.user_id,
                    'consumer_type': request.consumer_type,
                    'keep_type': request.consumer_type is None,
                    'increment': increments[request.uuid]}
                   for request in requests],
        # ``position``: where the write named it, the order GET
        # /allocations/{consumer} lists a consumer's allocations in (as
        # Placement lists its rows, in the order they were inserted).
        allocations=[{'consumer': consumer, 'rp': rp, 'rc': rc, 'used': used,
                      'position': position}
                     for position, (consumer, rp, rc, used)
                     in enumerate(new_allocations)],
        deltas=sorted(deltas, key=lambda d: (d['rp'], d['rc'])),
        emptied=sorted(emptied, key=lambda gone: gone['uuid']),
        stamped=sorted(guarded | {delta['rp'] for delta in deltas}))


class ProviderMissing(errors.DomainError):
    """A requested provider does not exist (400 in the API)."""


class UnknownResourceClass(errors.DomainError):
    """A requested resource class does not exist (400 in the API)."""


class ConsumerGenerationConflict(errors.DomainError):
    """The client's consumer_generation is stale (409 in the API)."""


def check_consumer_generations(consumers, client_generations):
    """Microversion 1.28+: the client must know each consumer's current
    generation (None for a consumer that does not exist yet)."""
    for uuid, wanted in (client_generations or {}).items():
        current = consumers[uuid].generation
        if current != wanted:
            raise ConsumerGenerationConflict(
                'consumer generation conflict - expected %s but got %s'
                % ('null' if current is None else current, wanted),
                expected=current, got=wanted)


def check_classes_exist(store, names):
    """Once, before any lock is held: classes are not what writers race
    on."""
    missing = store.resource_classes.missing(names)
    if missing:
        raise UnknownResourceClass(
            'No such resource class %s.' % sorted(missing)[0])


def check_providers_exist(requested_rps, providers):
    for rp in requested_rps:
        if rp not in providers:
            raise ProviderMissing(
                "Allocation for resource provider '%s' that does not "
                "exist." % rp, uuid=rp)


def _claimed(store, requests, requested_rps, client_generations):
    """Write ``requests`` as a claim when they may be one: consumers the
    client says are new (or does not say, before 1.28) taking resources,
    planned on the providers' states the store holds without reading
    (graph/allocations.py CLAIM).  True when written; False when they are
    no claim, or the states held are too old to plan on, or the write
    found the graph otherwise: the locked read, check and write then
    decide, with Placement's errors."""
    if not all(request.allocations for request in requests):
        return False
    if any(generation is not None
           for generation in (client_generations or {}).values()):
        return False
    providers = store.worlds.held_provider_states(requested_rps)
    if providers is None:
        return False
    try:
        plan = plan_write(requests, {request.uuid: ConsumerState(request.uuid)
                                     for request in requests}, providers)
    except InvalidAllocation:
        return False
    claims = [dict(delta, **providers[delta['rp']].inventories[
        delta['rc']].as_dict()) for delta in plan.deltas]
    return store.allocations.write_claim(plan, claims)


def apply(store, requests, retries, client_generations=None):
    """Read, check and write ``requests`` atomically, retrying when another
    writer changed a provider or consumer in between.

    ``retries``: a ``conflicts.ConflictRetries`` (how many attempts, how
    long to wait between them).

    ``client_generations``: {consumer uuid: generation or None} to enforce
    (microversion 1.28+); None skips the check.  ``store`` is the graph
    store port; this function does no other I/O.
    """
    requested_rps = sorted({rp for request in requests
                            for rp in request.allocations})
    requested_classes = {rc for request in requests
                         for amounts in request.allocations.values()
                         for rc in amounts}
    check_classes_exist(store, requested_classes)

    if _claimed(store, requests, requested_rps, client_generations):
        return

    def attempt():
        consumers, providers = store.allocations.write_states(
            [r.uuid for r in requests], requested_rps)
        check_consumer_generations(consumers, client_generations)
        check_providers_exist(requested_rps, providers)
        return store.allocations.write(plan_write(
            requests, consumers, providers))

    if not retries.write(store, requested_rps, [r.uuid for r in requests],
                         attempt):
        raise errors.ConcurrentUpdate(
            'Another thread concurrently updated the resource provider '
            'data. Please retry your update')


class NoAllocations(errors.DomainError):
    """The consumer holds no allocation (404 in the API)."""


def remove_allocations(store, consumer_uuid):
    """Remove every allocation of ``consumer_uuid`` (DELETE
    /allocations/{consumer}) and the consumer, leaving provider
    generations alone as Placement does; NoAllocations when it holds none.
    Nothing to check against what it holds: the store does it in one
    write (graph/allocations.py REMOVE), with no read before it."""
    if not store.allocations.remove(consumer_uuid):
        raise NoAllocations(
            "No allocations for consumer '%s'" % consumer_uuid)
