"""The search of a request: the roots it may be anchored at visited in
order (their trees loaded in batches as it goes), the search at each (what
it found remembered on the root), the candidates taken under the limits,
then the answer (ranked, limited or sampled, summarized).
``find_candidates`` is these steps."""
import collections
import itertools
import random

from tachyon_placement.domain.candidates import anchor_search
from tachyon_placement.domain.candidates import plan as plans
from tachyon_placement.domain.candidates import request as requests
from tachyon_placement.domain.candidates import results
from tachyon_placement.domain.candidates import slots as slot_rules


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
    settings = settings or requests.Settings()
    in_tree_roots = in_tree_roots or {}
    for index, group in enumerate(groups):
        if group.in_tree is not None and in_tree_roots.get(index) is None:
            return results.empty()
    slots = slot_rules.make_slots(groups, in_tree_roots)
    if not slots:
        return results.empty()
    rng = None
    if settings.randomize:
        rng = settings.rng or random.Random()
    ordered = _anchor_order(snapshot, anchors, rng)
    plan = plans.make_plan(slots, groups, wide, settings)
    limits = _Limits(wide, settings)
    visits = _Visits(snapshot, slots, plan, wide, settings, rng, load,
                     limits)
    taken = _Taken(snapshot, settings, limits, visits.batches)
    taken.take(visits.candidates(ordered))
    return _answer(snapshot, taken, wide, settings, rng)


def _anchor_order(snapshot, anchors, rng):
    """The roots to visit: ``anchors``, or every root of the snapshot,
    oldest first; shuffled when candidates are randomized."""
    if anchors is None:
        ordered = sorted(snapshot.trees, key=snapshot.root_key)
    else:
        ordered = anchors
    if rng is not None:
        ordered = list(ordered)
        rng.shuffle(ordered)
    return ordered


class _Limits:
    """How many candidates a search takes.  ``stop_at``: requests
    returned (the limit; old microversions list only the providers of the
    surviving requests in the summaries, counted before the limit: they
    enumerate everything); ``maximum``: requests generated ([placement]
    max_allocation_candidates, -1: none); ``wanted``: the fewer."""

    def __init__(self, wide, settings):
        limit = wide.limit
        self.stop_at = limit if (limit and settings.nested_aware) else None
        self.maximum = settings.max_candidates
        self.wanted = self.stop_at
        if self.maximum >= 0:
            self.wanted = (self.maximum if self.wanted is None
                           else min(self.wanted, self.maximum))


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


# Candidates remembered per anchor and search: anchors with more are
# searched again each time (what a large tree yields is mostly cut by the
# limit anyway).
_FOUND_MEMO_MAX = 64


class _Remembered(collections.namedtuple('_Remembered', 'run found')):
    """What a search found at an anchor, remembered: ``found`` as
    _Visits.candidates streams it ((anchor, request, made of sharing
    providers alone) each), ``run`` the requests alone (a Run)."""
    __slots__ = ()


def _remember(found):
    found = tuple(found)
    requests_found = tuple([request for _anchor, request, _shared in found])
    return _Remembered(
        run=results.Run(requests_found, roots=frozenset().union(
            *[request.roots for request in requests_found]),
            sharing_only=any(shared for _anchor, _request, shared in found)),
        found=found)


def _serials(nodes):
    return tuple([node.serial for node in nodes])


class _Visits:
    """The roots visited in order, their trees loaded in batches as the
    search reaches them; at each root allowed, the search there, or what
    was remembered of it on the root (a _Remembered)."""

    def __init__(self, snapshot, slots, plan, wide, settings, rng, load,
                 limits):
        self.snapshot = snapshot
        self.slots = slots
        self.plan = plan
        self.rng = rng
        self.load = load
        self.anchor_ok = slot_rules.anchor_filter(wide)
        self.option_keys = {}
        if settings.option_key is not None:
            self.option_keys = {
                slot.index: settings.option_key(slot.resources)
                for slot in slots}
        self.batches = _Batches(limits.wanted)
        self.interleave = settings.strategy == requests.BREADTH_FIRST or (
            rng is not None and wide.limit and settings.max_candidates < 0)
        self.memo_key = None
        if not (self.interleave or rng is not None
                or settings.refiner is not None):
            self.memo_key = plans.search_key(slots, plan, wide, settings)

    def candidates(self, ordered):
        """(anchor, request, made of sharing providers alone) of each
        candidate, a _Remembered for all of a root's remembered ones;
        root after root, or one of each root in turn (breadth-first, and
        random with a limit)."""
        streams = (self._stream(*found) for found in self._searches(ordered))
        if self.interleave:
            return _roundrobin(streams)
        return itertools.chain.from_iterable(streams)

    def _searches(self, ordered):
        snapshot, batches, memo_key, anchor_ok = (
            self.snapshot, self.batches, self.memo_key, self.anchor_ok)
        for batch in batches.cut(ordered):
            missing = [anchor for anchor in batch
                       if anchor not in snapshot.trees]
            if missing and self.load is not None:
                snapshot.add(self.load(missing))
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
                search = self._search_at(anchor_node)
                if search is not None and search.plausible():
                    yield anchor_node, search

    def _search_at(self, anchor_node):
        """The search at ``anchor_node``; None when a slot has no option
        there."""
        anchor = anchor_node.uuid
        options = {}
        sizes = []
        for slot in self.slots:
            # Only providers of one of its classes can serve a slot that
            # asks for resources.
            candidates = self.snapshot.candidates_at(anchor,
                                                     slot.first_class)
            choices = options[slot.index] = slot.options_at(anchor_node,
                                                            candidates)
            if not choices:
                return None
            size = len(choices)
            if size < len(candidates) and len(self.slots) > 1:
                # Some are full, or never fit: count them with nothing
                # used.
                size = len(slot.options_at(anchor_node, candidates,
                                           slot.could_fit))
            sizes.append(size)
            key = self.option_keys.get(slot.index)
            if key is not None and len(choices) > 1:
                # Stable: equal keys keep Placement's order.
                choices.sort(key=key)
        return anchor_search.AnchorSearch(anchor, self.slots, self.plan,
                                          options, sizes, rng=self.rng)

    def _stream(self, anchor_node, search):
        """The candidates anchored at ``anchor_node``, remembered on it
        (with the sharing providers reaching it) when they were all asked
        for; what was remembered comes as one _Remembered."""
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
            item = (anchor,
                    anchor_search.materialize(self.slots, anchor,
                                              assignment),
                    shared_only and all(node.sharing
                                        for node in assignment))
            found.append(item)
            yield item
        if self.memo_key is not None and len(found) <= _FOUND_MEMO_MAX:
            memo = anchor_node.found_memo
            if memo is None:
                memo = anchor_node.found_memo = {}
            elif len(memo) >= slot_rules.FIT_MEMO_SIZE:
                memo.clear()
            memo[self.memo_key] = (_serials(self.snapshot.reaching(anchor)),
                                   _remember(found))


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


def _identity(request):
    return (frozenset((rp, rc, amount)
                      for rp, amounts in request.allocations.items()
                      for rc, amount in amounts.items()),
            frozenset((suffix, frozenset(rps))
                      for suffix, rps in request.mappings.items()))


class _Taken:
    """The candidates taken, in order, under the limits: a capability's
    refiner drops some, a request of sharing providers alone found at
    several roots counts once, old microversions' nested requests count
    and are left out; with a ranking refiner, the root at which the limit
    was reached is taken to its end, so that its best requests can come
    first.  ``pieces``: the same requests as whole Runs of remembered
    requests and single ones."""

    def __init__(self, snapshot, settings, limits, batches):
        self.snapshot = snapshot
        self.refiner = settings.refiner
        self.ranked = self.refiner is not None and self.refiner.ranks
        self.exclude_nested = not settings.nested_aware
        # The limits, as plain numbers: these run once per root or per
        # request taken (-1 and None: no limit).
        self.maximum = limits.maximum
        self.stop_at = limits.stop_at
        self.batches = batches
        self.requests = []
        self.pieces = []
        self.seen = set()
        self.generated = 0
        self.finishing = None

    def take(self, produced):
        whole_runs = not (self.exclude_nested or self.refiner is not None)
        for item in produced:
            if type(item) is _Remembered:
                if whole_runs and not item.run.sharing_only:
                    # Nothing to check request by request.
                    if self._take_run(item.run):
                        return
                    continue
                found = item.found
            else:
                found = (item,)
            if self._take_each(found):
                return

    def _take_run(self, run):
        """The run's requests in whole, or as many as the limits leave;
        True once the limits are reached."""
        maximum, stop_at, requests_taken = (self.maximum, self.stop_at,
                                            self.requests)
        taken = len(run.items)
        if maximum >= 0:
            taken = min(taken, maximum - self.generated)
        if stop_at is not None:
            taken = min(taken, stop_at - len(requests_taken))
        if taken == len(run.items):
            self.pieces.append(run)
            requests_taken.extend(run.items)
        else:
            self.pieces.extend(run.items[:taken])
            requests_taken.extend(run.items[:taken])
        self.generated += taken
        self.batches.produced = self.generated
        return ((maximum >= 0 and self.generated >= maximum)
                or (stop_at is not None and len(requests_taken) >= stop_at))

    def _take_each(self, found):
        """``found``'s requests one by one; True once the search ends."""
        maximum, stop_at, requests_taken = (self.maximum, self.stop_at,
                                            self.requests)
        for anchor, request, shared_only in found:
            if self.finishing is not None and anchor != self.finishing:
                return True
            if self.refiner is not None and not self.refiner.accept(request):
                continue
            if shared_only:
                identity = _identity(request)
                if identity in self.seen:
                    continue
                self.seen.add(identity)
            self.generated += 1
            self.batches.produced = self.generated
            if not (self.exclude_nested
                    and results.nested(self.snapshot, request)):
                requests_taken.append(request)
                self.pieces.append(request)
            if maximum >= 0 and self.generated >= maximum:
                return True
            if stop_at is not None and len(requests_taken) >= stop_at:
                if not self.ranked:
                    return True
                self.finishing = anchor
        return False


def _answer(snapshot, taken, wide, settings, rng):
    """The Candidates of what was taken: each root's requests in rank
    order, limited (sampled when random), summarized."""
    found, pieces = taken.requests, taken.pieces
    if taken.ranked:
        found = _order_within_anchors(found, settings.refiner.rank)
        pieces = None
    everything = found
    limit = wide.limit
    if limit and limit < len(found):
        found = (rng.sample(found, limit) if rng is not None
                 else found[:limit])
        pieces = None
    elif rng is not None:
        rng.shuffle(found)
        pieces = None
    summaries, summary_pieces = [], None
    if settings.summaries:
        summaries, summary_pieces = results.summaries(
            snapshot, pieces or found, everything, settings.nested_aware)
    return results.Candidates(
        allocation_requests=found, provider_summaries=summaries,
        request_pieces=pieces, summary_pieces=summary_pieces)


def _order_within_anchors(found, rank):
    """``found`` with each anchor's requests sorted by ``rank`` (stable)
    in the positions that anchor's requests held."""
    positions = {}
    for index, request in enumerate(found):
        positions.setdefault(request.anchor, []).append(index)
    ordered = list(found)
    for indexes in positions.values():
        if len(indexes) > 1:
            group = sorted((found[i] for i in indexes), key=rank)
            for index, request in zip(indexes, group):
                ordered[index] = request
    return ordered
