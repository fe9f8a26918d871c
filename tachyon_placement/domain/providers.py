"""Provider rules: list filters and the tree rules of create/update.

Pure functions over the views the store returns, so they can be unit
tested without a database.
"""
import dataclasses

from tachyon_placement.domain import errors


@dataclasses.dataclass
class ProviderFilters:
    """What GET /resource_providers can filter on.

    ``required_traits`` and ``member_of`` are lists of sets: every set must
    be satisfied, by any one of its members.
    """
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    resources: dict = dataclasses.field(default_factory=dict)


def has_capacity(inventory, amount):
    """Placement's capacity check for one class on one provider."""
    if inventory is None:
        return False
    return (inventory.used + amount <= inventory.capacity
            and inventory.min_unit <= amount <= inventory.max_unit
            and amount % inventory.step_size == 0)


def could_hold(inventory, amount):
    """has_capacity() with nothing used: whether the inventory could ever
    take ``amount`` (what does not change as claims are made)."""
    if inventory is None:
        return False
    return (amount <= inventory.capacity
            and inventory.min_unit <= amount <= inventory.max_unit
            and amount % inventory.step_size == 0)


def matches(view, filters):
    """Whether one view matches ``filters`` (select() is the same test
    over many views, written for speed)."""
    if any(not (any_of & view.traits) for any_of in filters.required_traits):
        return False
    if filters.forbidden_traits & view.traits:
        return False
    if any(not (any_of & view.aggregates) for any_of in filters.member_of):
        return False
    if filters.forbidden_aggregates & view.aggregates:
        return False
    return all(has_capacity(view.inventories.get(rc), amount)
               for rc, amount in filters.resources.items())


def select(views, filters):
    """The views that match ``filters``, in their order.

    One pass per condition, each a plain comprehension: a listing tests
    tens of thousands of providers, and a call per provider and condition
    (matches()) cost several times the tests themselves."""
    for any_of in filters.required_traits:
        views = [view for view in views if not any_of.isdisjoint(view.traits)]
    if filters.forbidden_traits:
        forbidden = filters.forbidden_traits
        views = [view for view in views if forbidden.isdisjoint(view.traits)]
    for any_of in filters.member_of:
        views = [view for view in views
                 if not any_of.isdisjoint(view.aggregates)]
    if filters.forbidden_aggregates:
        forbidden = filters.forbidden_aggregates
        views = [view for view in views
                 if forbidden.isdisjoint(view.aggregates)]
    for rc, amount in filters.resources.items():
        # has_capacity(), inline.
        views = [view for view in views
                 if (inventory := view.inventories.get(rc)) is not None
                 and inventory.used + amount <= inventory.capacity
                 and inventory.min_unit <= amount <= inventory.max_unit
                 and amount % inventory.step_size == 0]
    return list(views)


def check_new_parent(provider, parent_uuid, allow_reparenting, subtree):
    """Tree rules of PUT /resource_providers/{uuid} (1.14 and 1.37).

    ``subtree`` is the set of uuids in the provider's subtree (itself
    included).  Raises Invalid with Placement's reason text.
    """
    if parent_uuid == provider.parent_uuid:
        return
    if parent_uuid is None:
        if not allow_reparenting:
            raise errors.Invalid(
                'un-parenting a provider is not currently allowed.')
        return
    if provider.parent_uuid is not None and not allow_reparenting:
        raise errors.Invalid(
            're-parenting a provider is not currently allowed.')
    if parent_uuid in subtree:
        raise errors.Invalid(
            'creating loop in the provider tree is not allowed.')
