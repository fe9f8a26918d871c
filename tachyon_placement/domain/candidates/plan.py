"""The plan of a request's search, made once per request: which slots'
amounts must be added up, which constrain no other, the same_subtree
groups, and the order of the slots per count of options (the layout);
``search_key`` names all that the candidates at a root depend on besides
its tree, so they can be remembered on it."""
import collections
import dataclasses

from tachyon_placement.domain.candidates import slots as slot_rules


@dataclasses.dataclass
class Plan:
    isolate: bool
    exclude_nested: bool
    unsuffixed_required: list
    subtree_slots: list          # [[slot index, ...] per same_subtree]
    # {rc: (total amount, [index of the slots asking])} for classes in
    # several slots
    shared_slots: dict
    granular: list               # indexes of the suffixed groups' slots
    # No choice can rule out another (no class in two slots, no isolation
    # between two groups, no same_subtree, no nested pruning): an anchor's
    # candidates are the product of its slots' options.
    independent: bool = False
    layouts: dict = dataclasses.field(default_factory=dict)


def layout(slots, plan, counts):
    """(slots in search order, {depth: same_subtree members complete at
    that depth}, depth where the unsuffixed traits are complete) for
    slots with ``counts`` options each."""
    # Most constrained slot first; ties keep request order.
    order = sorted(slots, key=lambda slot: (counts[slot.index], slot.index))
    position = {slot.index: depth for depth, slot in enumerate(order)}
    subtree_checks = {}
    for members in plan.subtree_slots:
        last = max(position[index] for index in members)
        subtree_checks.setdefault(last, []).append(members)
    unsuffixed = [position[slot.index] for slot in slots
                  if not slot.granular]
    traits_check_at = max(unsuffixed) if (
        unsuffixed and plan.unsuffixed_required) else None
    return order, subtree_checks, traits_check_at


def make_plan(slots, groups, wide, settings):
    """The plan of a search for ``groups`` over ``slots``; marks the slots
    whose amounts must be added up (``tracked``), their same_subtree
    numbers and whether they constrain no other slot (``free``)."""
    subtree_slots = _subtree_slots(slots, wide)
    totals = collections.Counter()
    asking = collections.defaultdict(list)
    for slot in slots:
        for rc, amount in slot.resources:
            totals[rc] += amount
            asking[rc].append(slot.index)
    unsuffixed = [group for group in groups if not group.use_same_provider]
    plan = Plan(
        isolate=wide.group_policy == 'isolate',
        # Placement counts max_allocation_candidates before it drops the
        # nested candidates of old microversions; keep that order when a
        # maximum is set, otherwise prune them during the search.
        exclude_nested=(not settings.nested_aware
                        and settings.max_candidates < 0),
        unsuffixed_required=(unsuffixed[0].required_traits
                             if unsuffixed else []),
        subtree_slots=subtree_slots,
        shared_slots={rc: (totals[rc], indexes)
                      for rc, indexes in asking.items() if len(indexes) > 1},
        granular=[slot.index for slot in slots if slot.granular])
    for slot in slots:
        slot.tracked = tuple((rc, amount) for rc, amount in slot.resources
                             if rc in plan.shared_slots)
    _mark_free(slots, plan)
    plan.independent = not (
        plan.exclude_nested or plan.subtree_slots or plan.shared_slots
        or (plan.isolate and len(plan.granular) > 1))
    return plan


def _subtree_slots(slots, wide):
    """[[slot index, ...] per same_subtree of two slots or more]; numbers
    each slot's same_subtrees (``subtrees``)."""
    by_suffix = collections.defaultdict(list)
    for slot in slots:
        by_suffix[slot.suffix].append(slot.index)
    subtree_slots = []
    for suffixes in wide.same_subtrees or ():
        members = sorted({index for suffix in suffixes
                          for index in by_suffix.get(suffix, ())})
        if len(members) < 2:
            continue
        subtree_slots.append(members)
        for index in members:
            slots[index].subtrees += (len(subtree_slots) - 1,)
    return subtree_slots


def _mark_free(slots, plan):
    """Flag the slots whose choice constrains no other slot."""
    for slot in slots:
        slot.free = not (
            slot.tracked or slot.subtrees or plan.exclude_nested
            or (plan.unsuffixed_required and not slot.granular)
            or (plan.isolate and slot.granular and len(plan.granular) > 1))


def search_key(slots, plan, wide, settings):
    """A string naming all that the candidates anchored at a root depend
    on besides its tree (and the sharing providers reaching it): the
    slots, the plan, the root filters and how options are ordered within
    a tree; None when that order depends on more than the providers
    (metric values).  The same object for equal searches (as a slot's
    signature).
    """
    token = ()
    if settings.option_key is not None:
        token = getattr(settings.option_key, 'memo_token', None)
        if token is None:
            return None
    parts = [
        [(slot.suffix, slot.signature, slot.tracked, slot.subtrees,
          slot.free, sorted(sorted(any_of) for any_of in slot.group.member_of),
          sorted(slot.group.forbidden_aggs), slot.group.in_tree is not None)
         for slot in slots],
        (plan.isolate, plan.exclude_nested, plan.independent,
         sorted(sorted(any_of) for any_of in plan.unsuffixed_required),
         plan.subtree_slots, sorted(plan.shared_slots.items()),
         plan.granular),
        sorted(wide.root_required or ()), sorted(wide.root_forbidden or ()),
        token]
    return slot_rules.interned(repr(parts))
