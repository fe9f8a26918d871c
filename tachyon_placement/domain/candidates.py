"""Allocation candidates: the search behind GET /allocation_candidates.

Pure functions, no I/O.  The caller (usecases/candidates.py, over the
process's copy of the graph, world/candidates.py) proves which roots can
anchor a candidate (``plan_probes``/``candidate_roots``), hands over a
``Snapshot`` with the trees of the sharing providers reaching them and a
function that loads more whole trees (providers with parent, root,
traits, aggregates and inventories including usage); ``find_candidates``
visits the roots in order, loading their trees in batches as it goes,
and finds the allocation requests exactly as Placement 16.0.0 defines
them:

* A request is a list of ``RequestGroup``.  The unsuffixed group may spread
  its resources over the providers of one tree plus the sharing providers
  (``MISC_SHARES_VIA_AGGREGATE``) associated with that tree by aggregate;
  its traits are satisfied collectively by the providers that supply its
  resources, its ``member_of`` by each provider or by the tree's root.
  A suffixed group is satisfied by one provider on its own.
* Every candidate is *anchored* at one root: a provider's own root, or for
  a sharing provider also the root of any tree that has a member in one of
  its aggregates.  All groups of a candidate share the anchor.
* ``group_policy=isolate`` puts suffixed groups on distinct providers,
  ``same_subtree`` requires one of the providers of the named groups to be
  an ancestor of all of them, ``root_required`` filters anchors, amounts
  that several groups take from one provider must fit together.

Placement builds each group's candidates independently and then walks the
cartesian product of them, which explodes on wide trees of identical
children.  Here every group (and every resource class of the unsuffixed
group) is a *slot*; per anchor a backtracking search assigns providers to
slots, most constrained slot first (by how many providers could ever hold
each, with nothing used: so a claim only takes candidates away and never
reorders the others, which GET /tachyon/capacity counts on), checking
capacity, isolation and subtree constraints as soon as they can fail, and
skipping a provider that is interchangeable with one that already failed at
the same point (same parent, traits, aggregates, inventory and usage, not
yet used by this candidate).  A slot whose choice constrains no other (its
classes asked for by no other slot, outside isolation and same_subtree) is
not searched again for each of its options: the deeper solutions are
replayed, and when every slot is such, the candidates are the product of
the options.  What a provider fits is memoized on it per slot signature,
across requests: it never changes.  Results stream per anchor, depth-first
or breadth-first, so a ``limit`` stops the work (and the loading) early.

``randomize_allocation_candidates``: Placement samples ``limit`` candidates
from everything it generated.  Here roots and choices are visited in random
order and, with a limit, roots are interleaved (one candidate each in turn)
so the answer spreads over hosts as a sample would, without generating
what will not be returned.

Why one module of some 1,600 lines: the sections below (request, snapshot,
results, slots, the anchor search, probes, checks) share private types and
memo rules (a slot's signature keys what a provider fits, a probe's result
is a set whose identity keys SET_OPERATIONS); apart, each would reach into
the others' internals.  Read it from ``find_candidates``.
"""
import collections
import dataclasses
import functools
import itertools
import operator
import random

from tachyon_placement.domain import providers as provider_rules
from tachyon_placement.domain import sharded

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
DEPTH_FIRST = 'depth-first'
BREADTH_FIRST = 'breadth-first'


# ---------------------------------------------------------------------------
# Request model


@dataclasses.dataclass
class RequestGroup:
    """One request group; ``suffix`` '' is the unsuffixed group.

    ``required_traits`` and ``member_of`` are lists of sets: every set must
    be satisfied by any one of its members.
    """
    suffix: str = ''
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggs: set = dataclasses.field(default_factory=set)
    in_tree: str = None

    @property
    def use_same_provider(self):
        return bool(self.suffix)


@dataclasses.dataclass
class RequestWide:
    """The parameters that apply to the request as a whole."""
    limit: int = None
    group_policy: str = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    same_subtrees: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Settings:
    """``[placement]`` knobs and the microversion switch for nested trees.

    ``option_key``: ((rc, amount), ...) of a slot -> a sort key of
    provider nodes or None, to try some providers of a slot before others
    (the weighers' preference within a tree); None (or a None key) keeps
    Placement's order.

    ``refiner``: an object with ``accept(request)`` (False drops an
    allocation request) and ``ranks``/``rank(request)`` (when ``ranks``,
    each anchor's requests are ordered by rank, stably, in the places its
    requests had): a capability's say on whole candidates (PCI-NUMA
    affinity, topology/affinity.py); None changes nothing.

    ``summaries``: False leaves the provider summaries out (empty).
    """
    max_candidates: int = -1
    strategy: str = DEPTH_FIRST
    randomize: bool = False
    nested_aware: bool = True
    rng: random.Random = None
    option_key: object = None
    refiner: object = None
    # False: no provider summaries (a count of the candidates needs none).
    summaries: bool = True


# ---------------------------------------------------------------------------
# Provider snapshot


def int_capacity(inventory):
    """The capacity Placement reports and checks merged amounts against."""
    return int((inventory.total - inventory.reserved)
               * inventory.allocation_ratio)


_SERIALS = itertools.count()


class ProviderNode:
    """A provider as the search sees it (``Snapshot`` fills in the rest).

    Compact: a worker holds one per provider of the cloud once candidate
    requests have visited every tree (227,641 in the bench's 50,000-host
    cloud), so what is equal is shared, not copied: the traits and
    aggregates sets and the inventories mapping are the ones given (the
    store's record, replaced, never changed, when its provider changes),
    the anchors of a tree's providers one set, and the lineage a tuple.
    """

    __slots__ = ('uuid', 'parent_uuid', 'root_uuid', 'seq', 'traits',
                 'aggregates', 'inventories', 'sharing', 'ancestors',
                 'sym_class', 'anchors', 'fit_memo', 'found_memo',
                 '_summary', '_tree_summaries', 'serial')

    def __init__(self, uuid, parent_uuid=None, root_uuid=None, seq=0,
                 traits=(), aggregates=(), inventories=None):
        self.uuid = uuid
        self.parent_uuid = parent_uuid
        self.root_uuid = root_uuid or uuid
        self.seq = seq if seq is not None else 0
        # frozenset() of a frozenset is that very set.
        self.traits = frozenset(traits)
        self.aggregates = frozenset(aggregates)
        # {resource class: models.Inventory, with ``used``}; kept as given
        # and never changed.
        self.inventories = inventories if inventories is not None else {}
        self.sharing = SHARING_TRAIT in self.traits
        # The uuids of the node and its ancestors up to the root (set by
        # the Snapshot that indexes it).
        self.ancestors = (uuid,)
        self.sym_class = None
        # Roots this provider can anchor a candidate at: its own root,
        # and for a sharing provider the roots it reaches (set by the
        # Snapshot that indexes it).
        self.anchors = None
        # {slot signature: does it fit}: the node never changes, so this
        # holds across requests.
        self.fit_memo = None
        # {search key: (serials of the sharing providers reaching it, a
        # Run of the allocation requests anchored here)}, on roots
        # (see find_candidates): they never change either.
        self.found_memo = None
        # Unique for the process's life: names this node in other nodes'
        # memos without a reference (no cycle among frozen nodes).
        self.serial = next(_SERIALS)
        # Its ProviderSummary, made on first use (see summarize).  Nothing
        # a node holds refers back to a node: nodes are frozen out of the
        # garbage collector's sight (world/records.py settle), so one in
        # a reference cycle would never be freed.
        self._summary = None
        # On roots: a Run of the summaries of the whole tree (made on first
        # use; a changed tree is made of new nodes).
        self._tree_summaries = None

    def room(self, rc):
        """(What is left to allocate of ``rc``, its max_unit), for the
        amounts several slots merge on this provider (computed, not
        kept: a dict of them per node was the largest part of a node)."""
        inventory = self.inventories[rc]
        return int_capacity(inventory) - inventory.used, inventory.max_unit

    def __repr__(self):
        return 'ProviderNode(%s)' % self.uuid


class Snapshot:
    """Whole provider trees, indexed for the search.

    ``mates``: {sharing provider uuid: roots of the providers that share an
    aggregate with it}, as the store knows it for the whole cloud; trees can
    then be added as the search needs them.  Without it the snapshot is the
    whole world and the mates are derived from the loaded aggregates.
    """

    def __init__(self, nodes=(), mates=None):
        # Sharded: see extend.
        self.by_uuid = sharded.ShardedDict()
        self.trees = sharded.ShardedDict()  # root -> [node] in creation order
        # root uuid -> {resource class: the tree's providers of it}
        self.tree_classes = sharded.ShardedDict()
        self.sharing_nodes = []
        self._mates = mates
        # root uuid -> sharing nodes reaching it (see reaching)
        self._reaching = None
        self.add(nodes)
        if mates is None:
            members = collections.defaultdict(set)
            for node in self.by_uuid.values():
                for agg in node.aggregates:
                    members[agg].add(node.root_uuid)
            for node in self.sharing_nodes:
                node.anchors = node.anchors.union(
                    *(members[agg] for agg in node.aggregates))

    @classmethod
    def extend(cls, earlier, dropped, nodes, mates):
        """A snapshot of the trees the snapshot ``earlier`` indexed, less
        those of the roots ``dropped``, plus ``nodes`` (whole trees, none
        of them among the trees kept).

        The trees kept are taken as they are (shared, never touched
        again): a kept sharing provider's anchors, set from the mates it
        had, must still be right (drop its tree when its reach changed).
        """
        snapshot = cls.__new__(cls)
        snapshot._mates = mates
        # Copies of the earlier indexes less the trees not taken: under a
        # stream of writes a new snapshot is made per write that a
        # candidate request sees.  Re-indexing every kept node in Python
        # made that O(cloud) in the interpreter, and even C-level copies of
        # whole dicts were a tenth of a scheduling loop's request at 10,000
        # hosts: the indexes are sharded, and a copy copies only the shards
        # it changes.
        snapshot.by_uuid = earlier.by_uuid.copy()
        snapshot.trees = earlier.trees.copy()
        snapshot.tree_classes = earlier.tree_classes.copy()
        snapshot.sharing_nodes = [node for node in earlier.sharing_nodes
                                  if node.root_uuid not in dropped]
        # Which sharing providers reach which roots: the same unless one
        # went or came (add forgets it then).
        snapshot._reaching = (
            earlier._reaching
            if len(snapshot.sharing_nodes) == len(earlier.sharing_nodes)
            else None)
        for root in dropped:
            for node in snapshot.trees.pop(root, ()):
                if snapshot.by_uuid.get(node.uuid) is node:
                    del snapshot.by_uuid[node.uuid]
            snapshot.tree_classes.pop(root, None)
        snapshot.add(nodes)
        return snapshot

    def add(self, nodes):
        """Index whole trees (parents before children or not: any order)."""
        touched = set()
        for node in nodes:
            if node.uuid in self.by_uuid:
                continue
            self.by_uuid[node.uuid] = node
            self.trees.setdefault(node.root_uuid, []).append(node)
            touched.add(node.root_uuid)
            if node.sharing:
                self.sharing_nodes.append(node)
                self._reaching = None
        for root in touched:
            tree = self.trees[root]
            tree.sort(key=lambda node: (node.seq, node.uuid))
            by_class = {}
            for node in tree:
                for rc in node.inventories:
                    by_class.setdefault(rc, []).append(node)
            if root in self.by_uuid:
                self.tree_classes[root] = by_class
            parents = {node.parent_uuid for node in tree}
            own_root = frozenset((root,))
            for node in tree:
                if node.anchors is None:
                    node.anchors = own_root
                    if node.sharing and self._mates is not None:
                        node.anchors = own_root.union(
                            self._mates.get(node.uuid, ()))
                node.ancestors = self._lineage(node)
                node.sym_class = None
                if node.parent_uuid and node.uuid not in parents:
                    # Interchangeable leaves: swapping two of these (while
                    # the candidate being built uses neither) maps every
                    # solution onto another one.
                    node.sym_class = (
                        node.parent_uuid, node.traits, node.aggregates,
                        tuple(sorted(
                            (rc, inv.total, inv.reserved, inv.min_unit,
                             inv.max_unit, inv.step_size,
                             inv.allocation_ratio, inv.used)
                            for rc, inv in node.inventories.items())))
        self.sharing_nodes.sort(key=lambda node: (node.seq, node.uuid))

    def _lineage(self, node):
        """(node, its parent, ..., its root) as uuids."""
        seen = []
        while node is not None and node.uuid not in seen:
            seen.append(node.uuid)
            node = self.by_uuid.get(node.parent_uuid)
        return tuple(seen)

    def root_key(self, root_uuid):
        root = self.by_uuid.get(root_uuid)
        return (root.seq if root is not None else 0, root_uuid)

    @property
    def providers(self):
        return sorted(self.by_uuid.values(),
                      key=lambda node: (node.seq, node.uuid))

    def reaching(self, anchor):
        """The sharing providers of other trees that reach ``anchor``."""
        if self._reaching is None:
            # Indexed once per snapshot from the few sharing providers'
            # side: each anchor asking them all was O(anchors x sharing).
            reaching = {}
            for node in self.sharing_nodes:
                for root in node.anchors:
                    if root != node.root_uuid:
                        reaching.setdefault(root, []).append(node)
            self._reaching = reaching
        return self._reaching.get(anchor, ())

    def candidates_at(self, anchor, rc=None):
        """The providers that can serve a candidate anchored at
        ``anchor``: its tree and the sharing providers reaching it; those
        with an inventory of ``rc`` when given."""
        reaching = self.reaching(anchor)
        if rc is None:
            nodes = self.trees.get(anchor, [])
        else:
            nodes = self.tree_classes.get(anchor, {}).get(rc, [])
            if reaching:
                reaching = [node for node in reaching
                            if rc in node.inventories]
        if not reaching:
            return nodes
        return sorted(nodes + reaching, key=lambda node: (node.seq,
                                                          node.uuid))

    def __contains__(self, uuid):
        return uuid in self.by_uuid


# ---------------------------------------------------------------------------
# Results


# Slots: a root remembers the requests found at it (found_memo), so a
# worker holds many.
@dataclasses.dataclass(slots=True)
class AllocationRequest:
    anchor: str
    # {rp_uuid: {resource_class: amount}}, in request group order
    allocations: dict
    # {suffix: [rp_uuid, ...]}, in request group order
    mappings: dict
    # The roots of the providers in ``allocations`` (for the summaries).
    roots: frozenset = dataclasses.field(default=frozenset(), compare=False,
                                         repr=False)


class ProviderSummary:
    """``provider``: the SummarizedProvider; ``resources``:
    {resource_class: {'capacity': int, 'used': int}}; ``traits``: [name].
    Made once per node (a node never changes) and shared by every
    candidate document that shows it: a document shows thousands.

    ``resources`` and ``traits`` are made when asked for, from the node's
    inventories and traits (shared, not copied): the renderer keeps each
    summary's JSON per shape (SummarizedProvider.encoded, Run.encoded) and
    asks again only for a shape it has not seen, while the dicts kept for
    every provider a document ever showed were 3 of the 36 MiB a worker
    kept after the bench's reads at 2,000 hosts.
    """

    __slots__ = ('provider', '_inventories', '_traits')

    def __init__(self, provider, inventories, traits):
        self.provider = provider
        self._inventories = inventories
        self._traits = traits

    @property
    def resources(self):
        return {rc: {'capacity': int_capacity(inventory),
                     'used': inventory.used}
                for rc, inventory in sorted(self._inventories.items())}

    @property
    def traits(self):
        return sorted(self._traits,
                      key=lambda name: (name.startswith('CUSTOM_'), name))


class SummarizedProvider:
    """What a provider summary shows of its node (not the node itself:
    the node holds its summary, and must not be in a reference cycle), and
    ``encoded``: {render shape: the summary as JSON}, for the API's
    renderer."""

    __slots__ = ('uuid', 'parent_uuid', 'root_uuid', 'encoded')

    def __init__(self, node):
        self.uuid = node.uuid
        self.parent_uuid = node.parent_uuid
        self.root_uuid = node.root_uuid
        self.encoded = None


class Run:
    """Items that a candidate document always lists together, in this
    order: the requests a search remembered at an anchor, or the summaries
    of a whole tree.  Made once and shared by every document that lists
    them (never changed): ``encoded`` is {render shape: the items as JSON,
    joined}, for the API's renderer, so that a document of a thousand
    requests joins a hundred pieces encoded before.

    ``roots``: the roots the items' providers belong to; ``sharing_only``:
    whether an item (a request) is made of sharing providers alone.
    ``derived``: what another room computes from the items alone (the
    providers they name do not change while the Run lives: a changed tree
    or sharing provider makes new Runs), kept as long as they are, e.g.
    how many times the requests fit (capacity/counting.py).
    """

    __slots__ = ('items', 'roots', 'sharing_only', 'encoded', 'derived')

    def __init__(self, items, roots=frozenset(), sharing_only=False):
        self.items = items
        self.roots = roots
        self.sharing_only = sharing_only
        self.encoded = None
        self.derived = None


@dataclasses.dataclass
class Candidates:
    allocation_requests: list
    provider_summaries: list
    # The same lists in pieces, in order: Runs and single items (None:
    # item by item).
    request_pieces: list = None
    summary_pieces: list = None


def empty():
    return Candidates([], [])


# ---------------------------------------------------------------------------
# Slots: what the search assigns a provider to


def _all_of(required, present):
    return all(any_of & present for any_of in required)


# Distinct slots remembered per provider: requests come in few shapes
# (flavors), and a forgotten answer is only computed again.
_FIT_MEMO_SIZE = 64
_SIGNATURES = {}


def _signature(slot):
    """A string naming everything ``_Slot._check`` looks at.

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
    return _interned(repr(parts))


def _interned(text):
    """The one string object equal to ``text`` (of the last few thousand
    asked for)."""
    found = _SIGNATURES.get(text)
    if found is None:
        if len(_SIGNATURES) >= 4096:
            _SIGNATURES.clear()
        found = _SIGNATURES.setdefault(text, text)
    return found


class _Slot:
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
        # (find_candidates narrows this to classes in several slots).
        self.tracked = self.resources
        # No other slot's choices depend on this one's (find_candidates
        # decides).
        self.free = False
        self.tree_root = tree_root
        self.subtrees = ()                     # same_subtree numbers
        self.signature = _signature(self)
        self.unused_signature = _interned(self.signature + ' unused')

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
            if len(memo) >= _FIT_MEMO_SIZE:
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
            if not _all_of(group.required_traits, node.traits):
                return False
            if not _all_of(group.member_of, node.aggregates):
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
        anchor_member = bool(members) and _all_of(members,
                                                  anchor_node.aggregates)
        if group.forbidden_aggs & anchor_node.aggregates:
            return []
        chosen = []
        for node in candidates:
            if not fits(node):
                continue
            member = bool(members) and _all_of(members, node.aggregates)
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


def _make_slots(groups, in_tree_roots):
    slots = []
    for index, group in enumerate(groups):
        tree_root = in_tree_roots.get(index)
        if group.use_same_provider:
            slots.append(_Slot(len(slots), group, group.resources.items(),
                               tree_root))
        else:
            for rc, amount in group.resources.items():
                slots.append(_Slot(len(slots), group, ((rc, amount),),
                                   tree_root))
    return slots


def _anchor_filter(wide):
    required = frozenset(wide.root_required or ())
    forbidden = frozenset(wide.root_forbidden or ())

    def allowed(anchor_node):
        return (anchor_node.parent_uuid is None
                and required <= anchor_node.traits
                and not forbidden & anchor_node.traits)
    return allowed


# ---------------------------------------------------------------------------
# The per-anchor search


@dataclasses.dataclass
class _Plan:
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


def _layout(slots, plan, counts):
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


class _AnchorSearch:
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
            layout = plan.layouts[counts] = _layout(slots, plan, counts)
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
            if not _all_of(plan.unsuffixed_required, offered):
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
            if not _all_of(self.plan.unsuffixed_required, offered):
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
                if _all_of(required, frozenset().union(
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


def _roundrobin(iterables):
    """Breadth-first: one item of each in turn.  The first round pulls the
    iterables lazily, so a limit reached in it never asks for more."""
    active = collections.deque()
    for iterable in iterables:
        iterator = iter(iterable)
        for item in iterator:
            yield item
            active.append(iterator)
            break
    while active:
        iterator = active.popleft()
        for item in iterator:
            yield item
            active.append(iterator)
            break


def _materialize(slots, anchor, assignment):
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
    return AllocationRequest(anchor=anchor, allocations=allocations,
                             mappings=mappings, roots=roots)


def _identity(request):
    return (frozenset((rp, rc, amount)
                      for rp, amounts in request.allocations.items()
                      for rc, amount in amounts.items()),
            frozenset((suffix, frozenset(rps))
                      for suffix, rps in request.mappings.items()))


class _Batches:
    """Cut the roots to visit into batches to load.

    Without a limit they double up to a bound; with one they are sized from
    the candidates found per root so far, so a limited request loads little
    more than the trees its answer comes from.
    """
    first = 32
    largest = 2048

    def __init__(self, wanted):
        self.wanted = wanted
        self.visited = 0
        self.produced = 0
        self.size = self.first

    def cut(self, items):
        """Batches of ``items`` (any iterable, drawn as the search goes)."""
        items = iter(items)
        while True:
            batch = list(itertools.islice(items, self.size))
            if not batch:
                return
            yield batch
            self.size = self._next_size()

    def _next_size(self):
        if self.wanted is None or not self.produced:
            return min(self.size * 2, self.largest)
        missing = max(self.wanted - self.produced, 0)
        per_root = self.produced / self.visited
        estimate = int(missing / per_root * 1.25) + 16
        return max(self.first, min(estimate, self.largest))


# Candidates remembered per anchor and search (find_candidates): anchors
# with more are searched again each time (what a large tree yields is
# mostly cut by the limit anyway).
_FOUND_MEMO_MAX = 64


def _search_key(slots, plan, wide, settings):
    """A string naming all that the candidates anchored at a root depend
    on besides its tree (and the sharing providers reaching it): the
    slots, the plan, the root filters and how options are ordered within
    a tree; None when that order depends on more than the providers
    (metric values).  The same object for equal searches, as _signature.
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
    return _interned(repr(parts))


def _serials(nodes):
    return tuple([node.serial for node in nodes])


def _mark_free(slots, plan):
    """Flag the slots whose choice constrains no other slot."""
    for slot in slots:
        slot.free = not (
            slot.tracked or slot.subtrees or plan.exclude_nested
            or (plan.unsuffixed_required and not slot.granular)
            or (plan.isolate and slot.granular and len(plan.granular) > 1))


def find_candidates(snapshot, groups, wide, settings=None,
                    in_tree_roots=None, anchors=None, load=None):
    """Allocation candidates for ``groups`` (request order).

    ``snapshot``: the trees loaded so far.  ``anchors``: the roots a
    candidate may be anchored at, in the order to visit them (an iterable,
    drawn from as the search goes; default: every
    root of the snapshot, oldest first); roots not loaded yet are loaded
    with ``load(roots) -> [ProviderNode]`` as the search reaches them (whole
    trees; the sharing providers that reach them must be in the snapshot
    already).  ``in_tree_roots``: {group index: root uuid of its in_tree
    provider}; None there means the provider does not exist.
    """
    settings = settings or Settings()
    in_tree_roots = in_tree_roots or {}
    rng = None
    if settings.randomize:
        rng = settings.rng or random.Random()
    for index, group in enumerate(groups):
        if group.in_tree is not None and in_tree_roots.get(index) is None:
            return empty()
    slots = _make_slots(groups, in_tree_roots)
    if not slots:
        return empty()
    if anchors is None:
        ordered = sorted(snapshot.trees, key=snapshot.root_key)
    else:
        ordered = anchors
    if rng is not None:
        ordered = list(ordered)
        rng.shuffle(ordered)

    slots_by_suffix = collections.defaultdict(list)
    for slot in slots:
        slots_by_suffix[slot.suffix].append(slot.index)
    subtree_slots = []
    for suffixes in wide.same_subtrees or ():
        members = sorted({index for suffix in suffixes
                          for index in slots_by_suffix.get(suffix, ())})
        if len(members) < 2:
            continue
        subtree_slots.append(members)
        for index in members:
            slots[index].subtrees += (len(subtree_slots) - 1,)
    totals = collections.Counter()
    asking = collections.defaultdict(list)
    for slot in slots:
        for rc, amount in slot.resources:
            totals[rc] += amount
            asking[rc].append(slot.index)
    unsuffixed = [group for group in groups if not group.use_same_provider]
    exclude_nested = not settings.nested_aware
    plan = _Plan(
        isolate=wide.group_policy == 'isolate',
        # Placement counts max_allocation_candidates before it drops the
        # nested candidates of old microversions; keep that order when a
        # maximum is set, otherwise prune them during the search.
        exclude_nested=exclude_nested and settings.max_candidates < 0,
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
    anchor_ok = _anchor_filter(wide)
    option_keys = {}
    if settings.option_key is not None:
        option_keys = {slot.index: settings.option_key(slot.resources)
                       for slot in slots}
    limit = wide.limit
    # Old microversions list only the providers of the surviving requests
    # in the summaries, counted before the limit: enumerate everything.
    stop_at = limit if (limit and settings.nested_aware) else None
    maximum = settings.max_candidates
    wanted = stop_at
    if maximum >= 0:
        wanted = maximum if wanted is None else min(wanted, maximum)
    batches = _Batches(wanted)

    interleave = settings.strategy == BREADTH_FIRST or (
        rng is not None and wide.limit and settings.max_candidates < 0)
    memo_key = None
    if not (interleave or rng is not None or settings.refiner is not None):
        memo_key = _search_key(slots, plan, wide, settings)

    def searches():
        for batch in batches.cut(ordered):
            missing = [anchor for anchor in batch
                       if anchor not in snapshot.trees]
            if missing and load is not None:
                snapshot.add(load(missing))
            for anchor in batch:
                batches.visited += 1
                anchor_node = snapshot.by_uuid.get(anchor)
                if anchor_node is None or not anchor_ok(anchor_node):
                    continue
                if memo_key is not None and anchor_node.found_memo:
                    found = anchor_node.found_memo.get(memo_key)
                    # Remembered with the very sharing providers that
                    # reached the tree then: one that changed, came or
                    # went since makes it searched again.
                    if found is not None and found[0] == _serials(
                            snapshot.reaching(anchor)):
                        yield anchor_node, found[1]
                        continue
                options = {}
                sizes = []
                for slot in slots:
                    # Only providers of one of its classes can serve a
                    # slot that asks for resources.
                    candidates = snapshot.candidates_at(anchor,
                                                        slot.first_class)
                    options[slot.index] = slot.options_at(anchor_node,
                                                          candidates)
                    if not options[slot.index]:
                        break
                    size = len(options[slot.index])
                    if size < len(candidates) and len(slots) > 1:
                        # Some are full, or never fit: count them with
                        # nothing used.
                        size = len(slot.options_at(anchor_node, candidates,
                                                   slot.could_fit))
                    sizes.append(size)
                    key = option_keys.get(slot.index)
                    if key is not None and len(options[slot.index]) > 1:
                        # Stable: equal keys keep Placement's order.
                        options[slot.index].sort(key=key)
                else:
                    search = _AnchorSearch(anchor, slots, plan, options,
                                           sizes, rng=rng)
                    if search.plausible():
                        yield anchor_node, search

    def stream(anchor_node, search):
        """(anchor, request, made of sharing providers alone) of each
        candidate anchored at ``anchor_node``, remembered on it (with the
        sharing providers reaching it) when they were all asked for; what
        was remembered comes as one _Remembered."""
        if isinstance(search, _Remembered):
            yield search
            return
        anchor = search.anchor
        # Only candidates made of sharing providers alone can come out of
        # several anchors: when no slot offers one, no need to look.
        shared_only = all(any(node.sharing for node in choices)
                          for choices in search.options.values())
        found = []
        for assignment in search.run():
            item = (anchor, _materialize(slots, anchor, assignment),
                    shared_only and all(node.sharing
                                        for node in assignment))
            found.append(item)
            yield item
        if memo_key is not None and len(found) <= _FOUND_MEMO_MAX:
            memo = anchor_node.found_memo
            if memo is None:
                memo = anchor_node.found_memo = {}
            elif len(memo) >= _FIT_MEMO_SIZE:
                memo.clear()
            memo[memo_key] = (_serials(snapshot.reaching(anchor)),
                              _remember(found))

    if interleave:
        produced = _roundrobin(stream(*found) for found in searches())
    else:
        produced = itertools.chain.from_iterable(
            stream(*found) for found in searches())

    refiner = settings.refiner
    ranked = refiner is not None and refiner.ranks
    results = []
    # results in pieces: whole Runs of remembered requests, single ones.
    pieces = []
    seen = set()
    generated = 0
    # With a ranking refiner, the anchor at which the limit was reached
    # is searched to its end, so that its best requests can come first.
    finishing = None
    for produced_item in produced:
        if type(produced_item) is _Remembered:
            run = produced_item.run
            if not (run.sharing_only or exclude_nested or refiner
                    is not None):
                # Nothing to check request by request: the anchor's
                # requests go in whole, or as many as the limits leave.
                taken = len(run.items)
                if maximum >= 0:
                    taken = min(taken, maximum - generated)
                if stop_at is not None:
                    taken = min(taken, stop_at - len(results))
                if taken == len(run.items):
                    pieces.append(run)
                    results.extend(run.items)
                else:
                    pieces.extend(run.items[:taken])
                    results.extend(run.items[:taken])
                generated += taken
                batches.produced = generated
                if ((maximum >= 0 and generated >= maximum)
                        or (stop_at is not None
                            and len(results) >= stop_at)):
                    break
                continue
            found = produced_item.found
        else:
            found = (produced_item,)
        stop = False
        for anchor, request, shared_only in found:
            if finishing is not None and anchor != finishing:
                stop = True
                break
            if refiner is not None and not refiner.accept(request):
                continue
            if shared_only:
                identity = _identity(request)
                if identity in seen:
                    continue
                seen.add(identity)
            generated += 1
            batches.produced = generated
            if not (exclude_nested and _nested(snapshot, request)):
                results.append(request)
                pieces.append(request)
            if maximum >= 0 and generated >= maximum:
                stop = True
                break
            if stop_at is not None and len(results) >= stop_at:
                if not ranked:
                    stop = True
                    break
                finishing = anchor
        if stop:
            break

    if ranked:
        results = _order_within_anchors(results, refiner.rank)
        pieces = None
    everything = results
    if limit and limit < len(results):
        results = (rng.sample(results, limit) if rng is not None
                   else results[:limit])
        pieces = None
    elif rng is not None:
        rng.shuffle(results)
        pieces = None
    summaries, summary_pieces = [], None
    if settings.summaries:
        summaries, summary_pieces = _summaries(
            snapshot, pieces or results, everything, settings.nested_aware)
    return Candidates(
        allocation_requests=results, provider_summaries=summaries,
        request_pieces=pieces, summary_pieces=summary_pieces)


class _Remembered(collections.namedtuple('_Remembered', 'run found')):
    """What a search found at an anchor, remembered: ``found`` as
    find_candidates streams it ((anchor, request, made of sharing
    providers alone) each), ``run`` the requests alone (a Run)."""
    __slots__ = ()


def _remember(found):
    found = tuple(found)
    requests = tuple([request for _anchor, request, _shared in found])
    return _Remembered(
        run=Run(requests,
                roots=frozenset().union(*[request.roots
                                          for request in requests]),
                sharing_only=any(shared for _anchor, _request, shared
                                 in found)),
        found=found)


def _order_within_anchors(results, rank):
    """``results`` with each anchor's requests sorted by ``rank`` (stable)
    in the positions that anchor's requests held."""
    positions = {}
    for index, request in enumerate(results):
        positions.setdefault(request.anchor, []).append(index)
    ordered = list(results)
    for indexes in positions.values():
        if len(indexes) > 1:
            group = sorted((results[i] for i in indexes), key=rank)
            for index, request in zip(indexes, group):
                ordered[index] = request
    return ordered


def _nested(snapshot, request):
    roots = [snapshot.by_uuid[rp].root_uuid for rp in request.allocations]
    return len(roots) != len(set(roots))


def _summaries(snapshot, pieces, everything, nested_aware):
    """The provider summaries of the requests in ``pieces`` (Runs and
    single requests), root by root (oldest first), and the same in pieces:
    each tree's summaries as one Run, when every provider of the tree is
    listed (nested-aware microversions); None otherwise."""
    roots = set().union(*[piece.roots for piece in pieces])
    used = None
    if not nested_aware:
        used = {rp for request in everything for rp in request.allocations}
    summaries = []
    summary_pieces = [] if used is None else None
    for root in sorted(roots, key=snapshot.root_key):
        if used is None:
            run = _tree_summaries(snapshot, root)
            summaries.extend(run.items)
            summary_pieces.append(run)
        else:
            summaries.extend([node._summary or summarize(node)
                              for node in snapshot.trees[root]
                              if node.uuid in used])
    return summaries, summary_pieces


def _tree_summaries(snapshot, root):
    """A Run of the summaries of the tree of ``root``, remembered on its
    root node."""
    root_node = snapshot.by_uuid.get(root)
    if root_node is not None and root_node._tree_summaries is not None:
        return root_node._tree_summaries
    run = Run(tuple([node._summary or summarize(node)
                     for node in snapshot.trees[root]]))
    if root_node is not None:
        root_node._tree_summaries = run
    return run


def summarize(node):
    """The node's ProviderSummary, made once (a node never changes)."""
    summary = node._summary
    if summary is None:
        summary = node._summary = ProviderSummary(
            SummarizedProvider(node), node.inventories, node.traits)
    return summary


# ---------------------------------------------------------------------------
# Narrowing the search space before loading trees (pure planning; the
# store runs the probes)


@dataclasses.dataclass
class Probe:
    """A cheap question to the graph whose answer bounds the anchors.

    ``kind`` 'rc': providers with room for ``amount`` of ``rc`` (in the tree
    of ``root`` when set); 'traits': providers with any of ``names``
    (``roots_only``: root providers); 'aggs': providers in any of
    ``names``.  Each matching provider can anchor a candidate at its root
    and, when it shares, at the roots of its aggregate mates.
    """
    key: str
    kind: str
    group: int = None
    rc: str = None
    amount: int = 0
    root: str = None
    names: tuple = ()
    roots_only: bool = False

    @property
    def selective(self):
        return self.kind != 'rc'

    def as_params(self):
        return {'key': self.key, 'rc': self.rc, 'amount': self.amount,
                'root': self.root, 'names': list(self.names),
                'roots_only': self.roots_only}


class IdentityMemo:
    """Results of functions of immutable values (frozensets, tuples, the
    lists of a copy of the graph's indexes), by the identity of the
    arguments, which it holds (so their ids are not reused).  The sets a
    request intersects (the roots with room for a class, kept per copy
    of the graph and carried to the next while they do not change) are
    mostly the very same from request to request: ten thousand roots
    intersected anew each time was a twentieth of a scheduling loop's
    request."""

    def __init__(self, size=64):
        # Small: an entry may hold sets of every root of the cloud.  The
        # bench's four kinds of candidate request take 58 entries, 5.7 MiB
        # at 10,000 hosts; at 32 they evicted one another in turn.
        self._found = {}
        self._size = size

    def __call__(self, function, *arguments):
        key = (function,) + tuple(map(id, arguments))
        found = self._found.get(key)
        if found is None:
            if len(self._found) >= self._size:
                self._found.clear()
            found = self._found[key] = (arguments, function(*arguments))
        return found[1]


# Intersections and unions of frozensets of roots (see IdentityMemo).
SET_OPERATIONS = IdentityMemo()


def _frozen(*values):
    return all(type(value) is frozenset for value in values)


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What a probe matched: the roots of the matching providers, the
    roots the matching sharing providers reach beyond their own, and (for
    aggregate probes) the matching providers."""
    roots: frozenset = frozenset()
    reach: frozenset = frozenset()
    uuids: frozenset = frozenset()

    @property
    def anchors(self):
        if not self.reach:
            return self.roots
        if _frozen(self.roots, self.reach):
            return SET_OPERATIONS(operator.or_, self.roots, self.reach)
        return self.roots | self.reach


def plan_probes(groups, wide, in_tree_roots=None):
    in_tree_roots = in_tree_roots or {}
    probes = []
    for name in sorted(wide.root_required or ()):
        probes.append(Probe(key='root:%s' % name, kind='traits',
                            names=(name,), roots_only=True))
    for index, group in enumerate(groups):
        for number, any_of in enumerate(group.required_traits):
            probes.append(Probe(key='g%d:t%d' % (index, number),
                                kind='traits', group=index,
                                names=tuple(sorted(any_of))))
        for number, any_of in enumerate(group.member_of):
            probes.append(Probe(key='g%d:a%d' % (index, number),
                                kind='aggs', group=index,
                                names=tuple(sorted(any_of))))
        for rc, amount in group.resources.items():
            probes.append(Probe(key='g%d:r:%s' % (index, rc), kind='rc',
                                group=index, rc=rc, amount=amount,
                                root=in_tree_roots.get(index)))
    return probes


def group_anchors(probes, results):
    """{group index (None: request wide): anchors allowed by its probes}.

    A group without probes is absent (it does not narrow anything).
    """
    bounds = {}
    for probe in probes:
        result = results.get(probe.key, ProbeResult())
        # Root providers asked for by root_required anchor themselves only.
        anchors = result.roots if probe.roots_only else result.anchors
        if probe.group in bounds:
            # New sets, never in place: the probes' own sets (kept per
            # copy of the graph) are not copied (a request at 10,000 hosts
            # made a dozen copies of 10,000 roots).
            bounds[probe.group] = intersection(bounds[probe.group], anchors)
        else:
            bounds[probe.group] = anchors
    return bounds


def candidate_roots(probes, results, bounds=None):
    """The anchors every probed group allows, or None when no probe ran
    (``bounds``: group_anchors(probes, results) if already made)."""
    if bounds is None:
        bounds = group_anchors(probes, results)
    if not bounds:
        return None
    return functools.reduce(intersection, bounds.values())


def intersection(one, other):
    """one & other, remembered (SET_OPERATIONS) when both are frozen."""
    if _frozen(one, other):
        return SET_OPERATIONS(operator.and_, one, other)
    return one & other


# ---------------------------------------------------------------------------
# Placement's order of failures


class UnknownResourceClass(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


class UnknownTrait(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


def check_request(groups, wide, unknown_classes, unknown_traits,
                  in_tree_roots, probes, results, bounds=None):
    """Raise what Placement raises first; False when it would find nothing
    (``bounds``: group_anchors(probes, results) if already made).

    Placement validates names while it searches, group after group, and
    stops at the first group without candidates: a later group's unknown
    trait then goes unnoticed.  The probes tell which groups match nothing
    at all.
    """
    for name in sorted(wide.root_required or ()):
        if name in unknown_traits:
            raise UnknownTrait(name)
    for name in sorted(wide.root_forbidden or ()):
        if name in unknown_traits:
            raise UnknownTrait(name)
    if bounds is None:
        bounds = group_anchors(probes, results)
    if wide.root_required and not bounds.get(None):
        return False
    by_group = collections.defaultdict(list)
    for probe in probes:
        by_group[probe.group].append(probe)
    for index, group in enumerate(groups):
        for rc in group.resources:
            if rc in unknown_classes:
                raise UnknownResourceClass(rc)
        if group.member_of:
            members = None
            for probe in by_group[index]:
                if probe.kind != 'aggs':
                    continue
                found = results.get(probe.key, ProbeResult()).uuids
                members = found if members is None else members & found
            if not members:
                return False
        for any_of in group.required_traits:
            for name in sorted(any_of):
                if name in unknown_traits:
                    raise UnknownTrait(name)
        for name in sorted(group.forbidden_traits):
            if name in unknown_traits:
                raise UnknownTrait(name)
        if group.in_tree is not None and in_tree_roots.get(index) is None:
            return False
        for probe in by_group[index]:
            if probe.kind == 'rc' and not results.get(
                    probe.key, ProbeResult()).roots:
                return False
        if index in bounds and not bounds[index]:
            return False
    return True
