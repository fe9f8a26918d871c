"""Inventory rules, as Placement applies them (no I/O).

The handlers read a provider with its current inventories (each carrying
``used``, the sum of its allocations), ask this module what a request
means against that state, and hand the resulting ``InventoryWrite`` to
the store, which applies it in one statement guarded by the provider
generation that was read.  Everything here raises ``DomainError``
subclasses carrying Placement's wording; the API layer adds the prefix
and status each endpoint uses.

Placement checks only capacity on inventory writes: min_unit, max_unit
and step_size bound allocations, not the inventory itself, and shrinking
capacity below current usage is allowed (the provider is then over
capacity and only logged about).  Removing a class that has allocations
is refused.
"""
import dataclasses

from tachyon_placement.domain import errors
from tachyon_placement.domain import models

MAX_INT = 2147483647

# What an inventory record gets for the fields a request leaves out.
DEFAULTS = {
    'reserved': 0,
    'min_unit': 1,
    'max_unit': MAX_INT,
    'step_size': 1,
    'allocation_ratio': 1.0,
}

FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')


class InvalidCapacity(errors.Invalid):
    """Reserved leaves no (before 1.26) or negative capacity."""

    def __init__(self, resource_class, provider_uuid,
                 reserved_can_be_total=False):
        if reserved_can_be_total:
            problem = 'The reserved value is greater than total.'
        else:
            problem = ('The reserved value is greater than or equal to '
                       'total.')
        super().__init__(
            "Invalid inventory for '%s' on resource provider '%s'. %s"
            % (resource_class, provider_uuid, problem),
            resource_class=resource_class, provider_uuid=provider_uuid)


class InventoryInUse(errors.InUse):
    """Inventory that has allocations cannot be removed."""

    def __init__(self, resource_classes, provider_uuid):
        super().__init__(
            "Inventory for '%s' on resource provider '%s' in use."
            % (', '.join(resource_classes), provider_uuid),
            resource_classes=list(resource_classes),
            provider_uuid=provider_uuid)


class InventoryExists(errors.Exists):
    """POST of a class the provider already has inventory of."""

    def __init__(self, resource_class, provider_uuid):
        super().__init__(
            "Inventory for '%s' on resource provider '%s' already exists."
            % (resource_class, provider_uuid),
            resource_class=resource_class, provider_uuid=provider_uuid)


class NoInventory(errors.NotFound):
    """The provider has no inventory of the class."""

    def __init__(self, resource_class, provider_uuid):
        super().__init__('No inventory of class %s found.' % resource_class,
                         resource_class=resource_class,
                         provider_uuid=provider_uuid)


@dataclasses.dataclass(frozen=True)
class InventoryWrite:
    """What one guarded store write does to a provider's inventory.

    ``upserts``: records to create or overwrite (``used`` is kept);
    ``deletes``: classes to remove.  Either may be empty: the write still
    bumps the generation, as Placement does.
    """
    upserts: tuple = ()
    deletes: tuple = ()

    def upsert_params(self):
        # allocation_ratio is stored as a float whatever the request sent,
        # so it reads back as Placement's (float column) does.
        return [dict(record.as_dict(), resource_class=record.resource_class,
                     allocation_ratio=float(record.allocation_ratio))
                for record in self.upserts]


def make_inventory(resource_class, data):
    """An Inventory from a request record, Placement's defaults filled in.

    Keys other than the inventory fields (the generation of a single PUT,
    the class of a POST) are ignored.  ``total`` is None when absent (only
    possible in a record the schema left unchecked).
    """
    fields = dict(DEFAULTS, total=None)
    fields.update((key, value) for key, value in data.items()
                  if key in FIELDS)
    return models.Inventory(resource_class=resource_class, **fields)


def capacity(inventory):
    """Allocatable amount: int((total - reserved) * allocation_ratio)."""
    return int((inventory.total - inventory.reserved)
               * inventory.allocation_ratio)


def _numeric(inventory):
    return all(isinstance(getattr(inventory, field), (int, float))
               and not isinstance(getattr(inventory, field), bool)
               for field in ('total', 'reserved', 'allocation_ratio'))


def check_capacity(provider_uuid, inventories, reserved_can_be_total):
    """Refuse a record whose capacity is negative (from 1.26) or not
    positive (before), first one in request order.

    A record that is not numeric (only possible under a key that is not a
    resource class name, which the schema leaves unchecked) is left to
    fail as an unknown resource class.
    """
    for inventory in inventories:
        if not _numeric(inventory):
            continue
        room = capacity(inventory)
        if room < 0 or (room == 0 and not reserved_can_be_total):
            raise InvalidCapacity(inventory.resource_class, provider_uuid,
                                  reserved_can_be_total)


def in_use(current, resource_classes):
    """The classes among ``resource_classes`` whose inventory in
    ``current`` ({class: Inventory}, in class order) has allocations, in
    that order."""
    wanted = set(resource_classes)
    return [rc for rc, inventory in current.items()
            if rc in wanted and inventory.used]


def over_capacity(current, inventories):
    """Classes whose current usage exceeds the capacity being written
    (allowed, but worth a warning)."""
    return [inventory.resource_class for inventory in inventories
            if inventory.resource_class in current
            and current[inventory.resource_class].used > capacity(inventory)]


def plan_add(provider_uuid, current, inventory):
    """POST: a class the provider does not have yet."""
    if inventory.resource_class in current:
        raise InventoryExists(inventory.resource_class, provider_uuid)
    return InventoryWrite(upserts=(inventory,))


def plan_update(provider_uuid, current, inventory):
    """PUT of one class: it must already be there."""
    if inventory.resource_class not in current:
        raise NoInventory(inventory.resource_class, provider_uuid)
    return InventoryWrite(upserts=(inventory,))


def plan_replace(provider_uuid, current, inventories):
    """PUT of the whole set (or DELETE of all): classes left out go,
    unless they have allocations."""
    keep = {inventory.resource_class for inventory in inventories}
    removed = [rc for rc in current if rc not in keep]
    busy = in_use(current, removed)
    if busy:
        raise InventoryInUse(busy, provider_uuid)
    return InventoryWrite(upserts=tuple(inventories),
                          deletes=tuple(removed))


def plan_delete(provider_uuid, current, resource_class):
    """DELETE of one class: refused while it has allocations."""
    if in_use(current, [resource_class]):
        raise InventoryInUse([resource_class], provider_uuid)
    if resource_class not in current:
        raise NoInventory(resource_class, provider_uuid)
    return InventoryWrite(deletes=(resource_class,))


def usages(current):
    """{class: used} for every class the provider has inventory of."""
    return {rc: int(inventory.used or 0) for rc, inventory in current.items()}


def last_modified(inventories):
    """Newest created/updated time of some inventories, or None."""
    stamps = [inventory.updated_at or inventory.created_at
              for inventory in inventories]
    stamps = [stamp for stamp in stamps if stamp is not None]
    return max(stamps) if stamps else None
