"""Slots: what the search assigns a provider to (a suffixed group, or one
resource class of the unsuffixed group), with what a provider fits
memoized on the provider per slot signature, across requests."""
from tachyon_placement.domain import providers as provider_rules


def all_of(required, present):
    return all(any_of & present for any_of in required)


# Distinct slots remembered per provider: requests come in few shapes
# (flavors), and a forgotten answer is only computed again.
FIT_MEMO_SIZE = 64
_SIGNATURES = {}


def _signature(slot):
    """A string naming everything ``Slot._check`` looks at.

    A string, the same object for equal slots: its hash is computed once,
    and a memo holding only strings and booleans is no work for the
    garbage collector.
    """
    group = slot.group
    parts = [slot.resources, sorted(group.forbidden_traits), slot.granular]
    if slot.granular:
        parts += [sorted(sorted(any_of) for any_of in group.required_traits),
                  sorted(sorted(any_of) for any_of in group.member_of),
                  sorted(group.forbidden_aggs),
                  slot.tree_root if slot.resources else None]
    elif group.in_tree is not None:
        parts.append(slot.tree_root)
    return interned(repr(parts))


def interned(text):
    """The one string object equal to ``text`` (of the last few thousand
    asked for)."""
    found = _SIGNATURES.get(text)
    if found is None:
        if len(_SIGNATURES) >= 4096:
            _SIGNATURES.clear()
        found = _SIGNATURES.setdefault(text, text)
    return found


class Slot:
    """A suffixed group, or one resource class of the unsuffixed group."""

    __slots__ = ('index', 'group', 'suffix', 'granular', 'resources',
                 'first_class', 'tracked', 'tree_root', 'subtrees',
                 'free', 'signature', 'unused_signature')

    def __init__(self, index, group, resources, tree_root):
        self.index = index
        self.group = group
        self.suffix = group.suffix
        self.granular = group.use_same_provider
        self.resources = tuple(resources)      # ((rc, amount), ...)
        self.first_class = self.resources[0][0] if self.resources else None
        # The resources whose merged amounts the search must add up
        # (plan.make_plan narrows this to classes in several slots).
        self.tracked = self.resources
        # No other slot's choices depend on this one's (plan.make_plan
        # decides).
        self.free = False
        self.tree_root = tree_root
        self.subtrees = ()                     # same_subtree numbers
        self.signature = _signature(self)
        self.unused_signature = interned(self.signature + ' unused')

    def fits(self, node):
        """What does not depend on the anchor (memoized on the node)."""
        return self._memoized(node, self.signature,
                              provider_rules.has_capacity)

    def could_fit(self, node):
        """fits() with nothing used on ``node``: what claims never change
        (the search orders its slots by it)."""
        return self._memoized(node, self.unused_signature,
                              provider_rules.could_hold)

    def _memoized(self, node, signature, holds):
        memo = node.fit_memo
        if memo is None:
            memo = node.fit_memo = {}
        found = memo.get(signature)
        if found is None:
            if len(memo) >= FIT_MEMO_SIZE:
                memo.clear()
            found = memo[signature] = self._check(node, holds)
        return found

    def _check(self, node, holds):
        # Capacity first: most providers of a tree lack the classes of a
        # granular group, and the tests are independent.
        inventories = node.inventories
        for rc, amount in self.resources:
            if not holds(inventories.get(rc), amount):
                return False
        group = self.group
        if group.forbidden_traits & node.traits:
            # For the unsuffixed group too: such a provider can be in no
            # combination.
            return False
        if self.granular:
            if not all_of(group.required_traits, node.traits):
                return False
            if not all_of(group.member_of, node.aggregates):
                return False
            if group.forbidden_aggs & node.aggregates:
                return False
            # in_tree only ever narrows groups that ask for resources.
            if self.resources and self.tree_root is not None and (
                    node.root_uuid != self.tree_root):
                return False
        elif group.in_tree is not None and node.root_uuid != self.tree_root:
            return False
        return True

    def options_at(self, anchor_node, candidates, fits=None):
        """The providers of ``candidates`` the slot can take at
        ``anchor_node``; ``fits``: the test of a provider alone (default
        ``self.fits``)."""
        anchor = anchor_node.uuid
        fits = fits or self.fits
        if self.granular:
            # A provider anchors at its root, a sharing one also at the
            # roots of its aggregate mates (``candidates`` holds both).
            return [node for node in candidates if fits(node)]
        group = self.group
        members = group.member_of
        anchor_member = bool(members) and all_of(members,
                                                 anchor_node.aggregates)
        if group.forbidden_aggs & anchor_node.aggregates:
            return []
        chosen = []
        for node in candidates:
            if not fits(node):
                continue
            member = bool(members) and all_of(members, node.aggregates)
            if node.root_uuid != anchor and (
                    group.in_tree is not None or (members and not member)):
                # Only a sharing provider (itself in the requested
                # aggregates, without in_tree) reaches other trees.
                continue
            if members and not (member or anchor_member):
                continue
            if group.forbidden_aggs & node.aggregates:
                continue
            chosen.append(node)
        return chosen


def make_slots(groups, in_tree_roots):
    slots = []
    for index, group in enumerate(groups):
        tree_root = in_tree_roots.get(index)
        if group.use_same_provider:
            slots.append(Slot(len(slots), group, group.resources.items(),
                              tree_root))
        else:
            for rc, amount in group.resources.items():
                slots.append(Slot(len(slots), group, ((rc, amount),),
                                  tree_root))
    return slots


def anchor_filter(wide):
    required = frozenset(wide.root_required or ())
    forbidden = frozenset(wide.root_forbidden or ())

    def allowed(anchor_node):
        return (anchor_node.parent_uuid is None
                and required <= anchor_node.traits
                and not forbidden & anchor_node.traits)
    return allowed
