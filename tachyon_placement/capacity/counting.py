"""How many more instances of one request fit: counted exactly as claiming
the request again and again until nothing fits would count them, each
claim taking the first candidate GET /allocation_candidates gives (as
Nova claims the first it is given), and counted where the claims land.

The claims need not be made one by one.  Without weighers the candidates
come in an order that does not depend on usage (the search orders a
root's groups by how many providers could ever hold each, not how many
can now: domain/candidates/), and usage only takes candidates away: so
after some claims, the first candidate is the first of the candidates
found *before* any claim that still fits.  ``replay`` walks that list
once, claiming each candidate as many times as it fits (one division per
class), which is the claims' count at the cost of one search however
many instances fit.  The hypothesis tests
(tests/unit/test_capacity_counting.py) check that a claim only takes
candidates away, and the counts against the claims made one by one
through the domain search, on generated clouds: nested trees, granular
groups, group_policy, same_subtree, sharing providers, max_unit,
step_size, reserved and allocation ratios, traits and member_of, and
clouds of 10 to 30 NUMA hosts with shared disk pools.

Pure: the candidates are domain.AllocationRequests, ``room`` a function
(provider uuid, class) -> what is left to allocate; nothing here reads
the graph.
"""
import collections
import dataclasses

from tachyon_placement.domain import candidates as domain


def replay(requests, room, place=None):
    """{root: instances claimed there} of the claims made one after the
    other on ``requests`` (domain.AllocationRequests in the search's
    order, found before any claim), each on the first one that fits,
    counted at ``place(request)`` (default: its anchor);
    ``room(uuid, rc)``: what is left of a provider's class before any
    claim."""
    left = {}
    claimed = collections.Counter()
    for request in requests:
        fits = None
        for uuid, amounts in request.allocations.items():
            for rc, amount in amounts.items():
                key = (uuid, rc)
                free = left.get(key)
                if free is None:
                    free = left[key] = room(uuid, rc)
                # Placement's amounts are at least 1.
                times = free // amount
                if fits is None or times < fits:
                    fits = times
        if not fits:
            continue
        for uuid, amounts in request.allocations.items():
            for rc, amount in amounts.items():
                left[(uuid, rc)] -= fits * amount
        claimed[place(request) if place else request.anchor] += fits
    return claimed


@dataclasses.dataclass(frozen=True)
class Capacity:
    """``hosts``: {root: instances that fit on the candidates placed at
    that root alone (see Counting), claimed by nothing else}, in the
    order of their first candidates; ``total``: instances that fit in
    the whole cloud (less than the sum of the hosts' when they compete
    for a sharing provider); ``claims``: {root: instances of the total
    whose claims land there}; ``shared``: whether a candidate takes from
    a sharing provider of another tree."""
    hosts: dict
    total: int
    claims: dict
    shared: bool


# Replays of the candidates of coupled hosts, by the identity of the
# domain Runs they come from (held, so their ids are not reused): the same
# Runs name the same providers at the same usage.  A write changes one
# tree's Runs: the replays of the components it left alone are kept.
_REPLAYS = {}
_REPLAYS_KEPT = 4096
# What a Run's ``derived`` holds its anchor's count under.
_FITS = 'capacity.fits'


class Counting:
    """Counts of the candidates of a request (every candidate before any
    claim, in the search's order: ``pieces``, domain Runs of one anchor's
    requests and single domain.AllocationRequests) found on ``snapshot`` (a
    domain.Snapshot, whose nodes hold the usage).

    A candidate counts where its claims land (its *place*): at its anchor
    when it takes from the anchor's tree; a candidate made of sharing
    providers alone (the search lists it once, at the first root it can be
    anchored at) counts at the oldest root among those providers' trees,
    whichever root it was listed at: the claims take nothing from that
    root's tree.  A host's count is the claims of the candidates placed
    there alone.

    Hosts whose candidates stay in their own tree, a tree no other host's
    candidate takes from, are independent: the total and an aggregate's
    count add their own counts up, and replay only the candidates of the
    coupled hosts (those that share providers) together, component by
    component (hosts linked by the providers they share).  A host's count
    is kept on its Run, a component's replay by its Runs' identity: a
    repeated count recounts only the trees that changed."""

    def __init__(self, snapshot, pieces):
        self.snapshot = snapshot
        self._rooms = {}
        by_uuid = snapshot.by_uuid
        # {anchor: (its requests, their Run or None)}, in the search's
        # order (depth first: an anchor's requests come together).
        self.by_anchor = {}
        crossing = {}
        # {id(request): place} of the requests placed away from their
        # anchor (held by by_anchor: the ids stay theirs).
        self._elsewhere = {}
        # The anchors such requests leave, and the places they land at.
        self.affected = set()
        for piece in pieces:
            if isinstance(piece, domain.Run):
                if not piece.items:
                    continue
                anchor = piece.items[0].anchor
                self.by_anchor[anchor] = (piece.items, piece)
                requests = piece.items if piece.sharing_only else ()
                if len(piece.roots) != 1 or anchor not in piece.roots:
                    crossing[anchor] = piece.roots
            else:
                anchor = piece.anchor
                self.by_anchor.setdefault(anchor, ([], None))[0].append(
                    piece)
                requests = (piece,)
                if len(piece.roots) != 1 or anchor not in piece.roots:
                    crossing[anchor] = crossing.get(
                        anchor, frozenset()) | piece.roots
            for request in requests:
                nodes = [by_uuid[uuid] for uuid in request.allocations]
                if not (nodes and all(node.sharing for node in nodes)):
                    continue
                place = min({node.root_uuid for node in nodes},
                            key=snapshot.root_key)
                if place != anchor:
                    self._elsewhere[id(request)] = place
                    self.affected.update((anchor, place))
        self.shared = bool(crossing)
        self.components, self.coupled = _components(crossing,
                                                    self.by_anchor)

    def place(self, request):
        """The root a candidate's claims count at (see the class)."""
        return self._elsewhere.get(id(request), request.anchor)

    def room(self, uuid, rc):
        key = (uuid, rc)
        free = self._rooms.get(key)
        if free is None:
            free = self._rooms[key] = (
                self.snapshot.by_uuid[uuid].room(rc)[0])
        return free

    def capacity(self):
        # The places in the order of their first candidate, and the
        # candidates of those that requests leave or land at.
        order = []
        counted = {}
        placed = {}
        for anchor, (found, run) in self.by_anchor.items():
            if anchor not in self.affected:
                order.append(anchor)
                counted[anchor] = self._fits(found, run)
                continue
            for request in found:
                place = self.place(request)
                listed = placed.get(place)
                if listed is None:
                    listed = placed[place] = []
                    order.append(place)
                listed.append(request)
        for place, listed in placed.items():
            counted[place] = sum(replay(listed, self.room).values())
        hosts = {place: counted[place] for place in order if counted[place]}
        claims = {}
        for anchor in self.by_anchor:
            if anchor not in self.coupled:
                claims[anchor] = hosts.get(anchor, 0)
        for members in self.components:
            claims.update(self._replayed(members))
        claims = {place: fits for place, fits in claims.items() if fits}
        return Capacity(hosts, sum(claims.values()), claims, self.shared)

    def _fits(self, found, run):
        """The instances that fit on ``found`` (an anchor's requests, all
        placed there), kept on their Run."""
        if run is None:
            return sum(replay(found, self.room).values())
        derived = run.derived
        if derived is None:
            derived = run.derived = {}
        fits = derived.get(_FITS)
        if fits is None:
            fits = derived[_FITS] = sum(replay(found, self.room).values())
        return fits

    def within(self, capacity, places):
        """Instances that fit on the hosts ``places`` (a set of roots)
        alone: the claims of the candidates placed there only."""
        fits = 0
        chosen = {}
        for place in places:
            number = self.coupled.get(place)
            if number is None:
                fits += capacity.hosts.get(place, 0)
            else:
                chosen.setdefault(number, set()).add(place)
        for number, picked in chosen.items():
            members = self.components[number]
            if self.affected.isdisjoint(members):
                fits += sum(self._replayed(
                    [anchor for anchor in members
                     if anchor in picked]).values())
            else:
                fits += sum(replay(
                    [request for anchor in members
                     for request in self.by_anchor[anchor][0]
                     if self.place(request) in picked],
                    self.room).values())
        return fits

    def _replayed(self, anchors):
        """{place: claims} of replay() of the candidates anchored at
        ``anchors`` (in the search's order), kept by their Runs' identity
        when all are Runs."""
        runs = tuple([self.by_anchor[anchor][1] for anchor in anchors])
        key = None
        if all(run is not None for run in runs):
            key = tuple(map(id, runs))
            kept = _REPLAYS.get(key)
            if kept is not None:
                return kept[1]
        claims = replay([request for anchor in anchors
                         for request in self.by_anchor[anchor][0]],
                        self.room, self.place)
        if key is not None:
            if len(_REPLAYS) >= _REPLAYS_KEPT:
                _REPLAYS.clear()
            _REPLAYS[key] = (runs, claims)
        return claims


def _components(crossing, by_anchor):
    """(The anchors that share providers, in groups that share none with
    one another (each in the search's order), {root: its group's number}
    for every root of a group, anchor or not): ``crossing`` {anchor: the
    roots of the providers its candidates take from, beyond its own}."""
    if not crossing:
        return [], {}
    parent = {}

    def find(root):
        while parent.get(root, root) != root:
            root = parent[root]
        return root

    for anchor, roots in crossing.items():
        for root in roots:
            first, second = find(anchor), find(root)
            if first != second:
                parent[second] = first
    linked = set(crossing).union(*crossing.values())
    groups = {}
    for anchor in by_anchor:
        if anchor in linked:
            groups.setdefault(find(anchor), []).append(anchor)
    numbers = {top: number for number, top in enumerate(groups)}
    return list(groups.values()), {root: numbers[find(root)]
                                   for root in linked
                                   if find(root) in numbers}
