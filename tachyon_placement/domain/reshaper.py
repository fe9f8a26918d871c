"""POST /reshaper planned as a pure function.

Placement's order of events, whose visible effects (checks and generation
bumps) are kept: the new inventories are laid over the current ones (the
"interim" inventory), the allocations are checked and written against
that, then each provider's inventory becomes exactly the new one, which
must not drop a class still in use.  A provider's generation moves once
for the interim inventory (when it is not empty), once when its
allocations change, and once for the final inventory.
"""
import dataclasses

from tachyon_placement.domain import allocations
from tachyon_placement.domain import errors
from tachyon_placement.domain import inventory as inventory_domain


@dataclasses.dataclass
class ReshapePlan:
    allocation_plan: allocations.WritePlan
    inventory_guards: list    # [{'uuid', 'generation', 'bump'}]
    inventory_upserts: list   # [{'rp', 'resource_class', fields...}]
    inventory_deletes: list   # [{'rp', 'resource_class'}]

    def as_params(self):
        params = self.allocation_plan.as_params()
        params.update(inventory_guards=self.inventory_guards,
                      inventory_upserts=self.inventory_upserts,
                      inventory_deletes=self.inventory_deletes)
        params['stamped'] = sorted(
            set(params['stamped'])
            | {guard['uuid'] for guard in self.inventory_guards})
        return params


def plan_reshape(new_inventories, requests, consumers, providers):
    """``new_inventories``: {rp_uuid: [Inventory]} (the whole new set of
    each provider); ``requests``: [ConsumerRequest]; ``consumers`` and
    ``providers`` as for allocations.plan_write (providers must include
    every provider of new_inventories).  Raises allocations'
    InvalidAllocation or inventory_domain.InventoryInUse."""
    interim = dict(providers)
    for rp_uuid, inventories in new_inventories.items():
        current = providers[rp_uuid]
        laid_over = dict(current.inventories)
        for inventory in inventories:
            used = (current.inventories[inventory.resource_class].used
                    if inventory.resource_class in current.inventories
                    else 0)
            laid_over[inventory.resource_class] = dataclasses.replace(
                inventory, used=used)
        interim[rp_uuid] = allocations.ProviderState(
            rp_uuid, current.generation, laid_over)
    plan = allocations.plan_write(requests, consumers, interim)

    used_after = {}
    for rp_uuid, state in interim.items():
        for rc, inventory in state.inventories.items():
            used_after[(rp_uuid, rc)] = inventory.used
    for delta in plan.deltas:
        key = (delta['rp'], delta['rc'])
        used_after[key] = used_after.get(key, 0) + delta['delta']

    guards, upserts, deletes = [], [], []
    for rp_uuid in sorted(new_inventories):
        inventories = new_inventories[rp_uuid]
        final = {inventory.resource_class for inventory in inventories}
        dropped = [rc for rc in interim[rp_uuid].inventories
                   if rc not in final]
        busy = [rc for rc in dropped if used_after.get((rp_uuid, rc))]
        if busy:
            raise inventory_domain.InventoryInUse(busy, rp_uuid)
        deletes += [{'rp': rp_uuid, 'resource_class': rc} for rc in dropped]
        upserts += [dict(inventory.as_dict(), rp=rp_uuid,
                         resource_class=inventory.resource_class,
                         allocation_ratio=float(inventory.allocation_ratio))
                    for inventory in inventories]
        guards.append({'uuid': rp_uuid,
                       'generation': providers[rp_uuid].generation,
                       'bump': 2 if inventories else 1})
    return ReshapePlan(plan, guards, upserts, deletes)


def apply(store, new_inventories, requests, retries,
          client_generations=None):
    """Read, check and write a reshape atomically, retrying like
    allocations.apply when a concurrent writer got in between.  Provider
    generations given by the client are the caller's to check first."""
    requested_rps = sorted({rp for request in requests
                            for rp in request.allocations})
    requested_classes = {rc for request in requests
                         for amounts in request.allocations.values()
                         for rc in amounts}
    requested_classes |= {inventory.resource_class
                          for inventories in new_inventories.values()
                          for inventory in inventories}
    allocations.check_classes_exist(store, requested_classes)

    def attempt():
        consumers, providers = store.allocations.write_states(
            [r.uuid for r in requests],
            set(requested_rps) | set(new_inventories))
        allocations.check_consumer_generations(consumers, client_generations)
        allocations.check_providers_exist(requested_rps, providers)
        return store.reshapes.write(plan_reshape(
            new_inventories, requests, consumers, providers))

    if retries.write(store, set(requested_rps) | set(new_inventories),
                     [r.uuid for r in requests], attempt):
        return
    raise errors.ConcurrentUpdate(
        'Another thread concurrently updated the data. Please retry your '
        'update')
