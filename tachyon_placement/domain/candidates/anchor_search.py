"""The search at one anchor: backtracking over the slots, most constrained
first, checking capacity, isolation and subtree constraints as soon as
they can fail (see the package's docstring)."""
import itertools
import operator

from tachyon_placement.domain.candidates import plan as plans
from tachyon_placement.domain.candidates import results
from tachyon_placement.domain.candidates import slots as slot_rules


class AnchorSearch:
    """Backtracking over the slots of one anchor.

    ``run()`` yields one tuple of providers (indexed like ``slots``) per
    valid candidate.
    """

    def __init__(self, anchor, slots, plan, options, sizes, rng=None):
        """``sizes``: per slot, how many options it would have with
        nothing used (the layout depends on them, not on the options, so
        that claims only take candidates away and never reorder the
        rest: GET /tachyon/capacity counts on that)."""
        self.anchor = anchor
        self.slots = slots
        self.plan = plan
        if rng is not None:
            for choices in options.values():
                rng.shuffle(choices)
        self.options = options
        # Anchors of one request mostly offer as many options per slot:
        # the same search layout.
        counts = tuple(sizes)
        layout = plan.layouts.get(counts)
        if layout is None:
            layout = plan.layouts[counts] = plans.layout(slots, plan, counts)
        self.order, self.subtree_checks, self.traits_check_at = layout
        self.assignment = [None] * len(slots)
        # Plain dicts: Counter's Python-level __missing__/__delitem__ were
        # a tenth of the search.
        self.usage = {}                # {(uuid, rc): amount assigned}
        self.refs = {}                 # {uuid: slots assigned to it}
        self.isolated = set()
        self.root_owner = {}
        self.subtree_root = {}
        self.found = 0

    # -- feasibility before searching ------------------------------------

    def plausible(self):
        options = self.options
        if any(not options[slot.index] for slot in self.slots):
            return False
        plan = self.plan
        if plan.unsuffixed_required:
            offered = set()
            for slot in self.slots:
                if not slot.granular:
                    for node in options[slot.index]:
                        offered |= node.traits
            if not slot_rules.all_of(plan.unsuffixed_required, offered):
                return False
        if plan.isolate and len(plan.granular) > 1:
            distinct = set()
            for index in plan.granular:
                distinct.update(options[index])
            if len(distinct) < len(plan.granular):
                return False
        # Each class requested by several slots must fit in the sum of
        # what the providers that could serve it have left.
        for rc, (total, indexes) in plan.shared_slots.items():
            nodes = set()
            for index in indexes:
                nodes.update(options[index])
            if sum(node.room(rc)[0] for node in nodes) < total:
                return False
        return True

    # -- state changes ----------------------------------------------------

    def _assign(self, slot, node):
        usage = self.usage
        # ``fits`` checked each amount on its own; only classes that other
        # slots ask for too can run out.
        for rc, amount in slot.tracked:
            left, max_unit = node.room(rc)
            merged = usage.get((node.uuid, rc), 0) + amount
            if merged > left or merged > max_unit:
                return False
        plan = self.plan
        if plan.exclude_nested and slot.resources:
            owner = self.root_owner.get(node.root_uuid)
            if owner is not None and owner[0] != node.uuid:
                return False
        for number in slot.subtrees:
            root = self.subtree_root.get(number)
            if root is not None and root[0] != node.root_uuid:
                return False
        # Commit.
        for rc, amount in slot.tracked:
            key = (node.uuid, rc)
            usage[key] = usage.get(key, 0) + amount
        if plan.isolate and slot.granular:
            self.isolated.add(node.uuid)
        if plan.exclude_nested and slot.resources:
            owner = self.root_owner.get(node.root_uuid)
            self.root_owner[node.root_uuid] = (
                node.uuid, (owner[1] if owner else 0) + 1)
        for number in slot.subtrees:
            root = self.subtree_root.get(number)
            self.subtree_root[number] = (
                node.root_uuid, (root[1] if root else 0) + 1)
        self.refs[node.uuid] = self.refs.get(node.uuid, 0) + 1
        self.assignment[slot.index] = node
        return True

    def _unassign(self, slot, node):
        usage = self.usage
        for rc, amount in slot.tracked:
            key = (node.uuid, rc)
            left = usage[key] - amount
            if left:
                usage[key] = left
            else:
                del usage[key]
        plan = self.plan
        if plan.isolate and slot.granular:
            self.isolated.discard(node.uuid)
        if plan.exclude_nested and slot.resources:
            owner = self.root_owner[node.root_uuid]
            if owner[1] == 1:
                del self.root_owner[node.root_uuid]
            else:
                self.root_owner[node.root_uuid] = (owner[0], owner[1] - 1)
        for number in slot.subtrees:
            root = self.subtree_root[number]
            if root[1] == 1:
                del self.subtree_root[number]
            else:
                self.subtree_root[number] = (root[0], root[1] - 1)
        refs = self.refs[node.uuid] - 1
        if refs:
            self.refs[node.uuid] = refs
        else:
            del self.refs[node.uuid]
        self.assignment[slot.index] = None

    def _complete_checks(self, depth):
        assignment = self.assignment
        for members in self.subtree_checks.get(depth, ()):
            if not same_subtree({assignment[index] for index in members}):
                return False
        if depth == self.traits_check_at:
            offered = set()
            for slot in self.slots:
                if not slot.granular:
                    offered |= assignment[slot.index].traits
            if not slot_rules.all_of(self.plan.unsuffixed_required,
                                     offered):
                return False
        return True

    # -- the search -------------------------------------------------------

    def run(self):
        if not self.order:
            self.found += 1
            return iter((tuple(self.assignment),))
        if self.plan.independent:
            return self._product()
        return self._extend(0)

    def _product(self):
        """What ``_extend`` yields when no choice constrains another: the
        options' product, in the same order, minus the combinations whose
        unsuffixed providers lack a required trait together."""
        order = self.order
        # The product runs in search order; candidates are in slot order.
        in_slot_order = [0] * len(order)
        for depth, slot in enumerate(order):
            in_slot_order[slot.index] = depth
        combos = itertools.product(*(self.options[slot.index]
                                     for slot in order))
        if len(order) == 1:
            arranged = combos
        else:
            arranged = map(operator.itemgetter(*in_slot_order), combos)
        required = self.plan.unsuffixed_required
        if not required:
            return arranged
        unsuffixed = [slot.index for slot in self.slots if not slot.granular]
        return (assignment for assignment in arranged
                if slot_rules.all_of(required, frozenset().union(
                    *(assignment[index].traits for index in unsuffixed))))

    def _extend(self, depth):
        slot = self.order[depth]
        # The last slot yields its solutions itself: one generator less
        # per candidate.
        last = depth + 1 == len(self.order)
        if slot.free and not last:
            yield from self._extend_free(depth)
            return
        failed = set()
        isolated = self.isolated if (
            self.plan.isolate and slot.granular) else ()
        for node in self.options[slot.index]:
            if node.uuid in isolated:
                continue
            sym = None
            if (node.sym_class is not None and node.uuid not in self.refs
                    and node.uuid != self.anchor):
                sym = node.sym_class
                if sym in failed:
                    continue
            if not self._assign(slot, node):
                continue
            before = self.found
            if self._complete_checks(depth):
                if last:
                    self.found += 1
                    yield tuple(self.assignment)
                else:
                    yield from self._extend(depth + 1)
            self._unassign(slot, node)
            if sym is not None and self.found == before:
                failed.add(sym)

    def _extend_free(self, depth):
        """``_extend`` for a slot no other slot depends on: the deeper
        slots' solutions are the same whichever option it takes, so they
        are searched once (lazily, for its first option) and replayed for
        the others, in the order ``_extend`` would give."""
        index = self.order[depth].index
        options = self.options[index]
        recorded = []
        for sub in self._extend(depth + 1):
            recorded.append(sub)
            yield sub[:index] + (options[0],) + sub[index + 1:]
        for node in options[1:]:
            for sub in recorded:
                yield sub[:index] + (node,) + sub[index + 1:]


def same_subtree(nodes):
    """True when one of ``nodes`` is an ancestor (or self) of all."""
    nodes = set(nodes)
    if len(nodes) <= 1:
        return True
    first, *others = nodes
    common = set(first.ancestors).intersection(
        *(node.ancestors for node in others))
    return any(node.uuid in common for node in nodes)


def materialize(slots, anchor, assignment):
    allocations = {}
    mappings = {}
    roots = set()
    own_tree = None
    for slot in slots:
        node = assignment[slot.index]
        if slot.resources:
            amounts = allocations.setdefault(node.uuid, {})
            for rc, amount in slot.resources:
                amounts[rc] = amounts.get(rc, 0) + amount
            roots.add(node.root_uuid)
            if not node.sharing:
                own_tree = node
        mapped = mappings.setdefault(slot.suffix, [])
        if node.uuid not in mapped:
            mapped.append(node.uuid)
    if own_tree is not None and len(roots) == 1:
        # Most requests stay in one tree: its providers' anchors, {root}
        # (they share nothing), is that set already; a set of its own
        # per request remembered was 216 bytes each.
        roots = own_tree.anchors
    else:
        roots = frozenset(roots)
    return results.AllocationRequest(
        anchor=anchor, allocations=allocations, mappings=mappings,
        roots=roots)
