"""How many more instances of one request fit: counted exactly as claiming
the request again and again until nothing fits would count them, each
claim taking the first candidate GET /allocation_candidates gives (as
Nova claims the first it is given).

The claims need not be made one by one.  In Placement's order (depth
first, not shuffled, no weigher) the candidates come in an order that
does not depend on usage, and usage only takes candidates away: so after
some claims, the first candidate is the first of the candidates found
*before* any claim that still fits.  ``replay`` walks that list once,
claiming each candidate as many times as it fits (one division per
class), which is the claims' count at the cost of one search however
many instances fit.  The hypothesis tests
(tests/unit/test_capacity_counting.py) check it against the claims made
one by one through the domain search, on generated clouds: nested trees,
granular groups, group_policy, same_subtree, sharing providers, max_unit,
step_size, reserved and allocation ratios, traits and member_of.

Pure: the candidates are domain.AllocationRequests, ``room`` a function
(provider uuid, class) -> what is left to allocate; nothing here reads
the graph.
"""
import collections
import dataclasses

from tachyon_placement.domain import candidates as domain


def replay(requests, room):
    """{anchor root: instances claimed there} of the claims made one after
    the other on ``requests`` (domain.AllocationRequests in the search's
    order, found before any claim), each on the first one that fits;
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
        claimed[request.anchor] += fits
    return claimed


@dataclasses.dataclass(frozen=True)
class Capacity:
    """``hosts``: {root: instances that fit on that host alone (its tree
    and the sharing providers reaching it, claimed by nothing else)}, in
    the candidates' order; ``total``: instances that fit in the whole
    cloud (less than the sum of the hosts' when they compete for a
    sharing provider); ``claims``: {root: instances of the total claimed
    there}; ``shared``: whether a candidate takes from a sharing
    provider of another tree."""
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

    ``alone(anchors)``: the candidates anchored at ``anchors`` (a set of
    roots) only, searched anew.  The search lists a candidate made of
    sharing providers alone once, at the first root it can be anchored
    at; the other roots those providers reach count theirs from their
    own search.

    Hosts whose candidates stay in their own tree, a tree no other host's
    candidate takes from, are independent: the total and an aggregate's
    count add their own counts up, and replay only the candidates of the
    coupled hosts (those that share providers) together, component by
    component (hosts linked by the providers they share).  A host's count
    is kept on its Run, a component's replay by its Runs' identity: a
    repeated count recounts only the trees that changed."""

    def __init__(self, snapshot, pieces, alone):
        self.snapshot = snapshot
        self.alone = alone
        self._rooms = {}
        by_uuid = snapshot.by_uuid
        # {anchor: (its requests, their Run or None)}, in the search's
        # order (depth first: an anchor's requests come together).
        self.by_anchor = {}
        crossing = {}
        self.reach = set()
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
                if nodes and all(node.sharing for node in nodes):
                    for node in nodes:
                        self.reach |= node.anchors
        self.shared = bool(crossing)
        self.components = _components(crossing, self.by_anchor)
        self.coupled = {anchor: number
                        for number, members in enumerate(self.components)
                        for anchor in members}

    def room(self, uuid, rc):
        key = (uuid, rc)
        free = self._rooms.get(key)
        if free is None:
            free = self._rooms[key] = (
                self.snapshot.by_uuid[uuid].room(rc)[0])
        return free

    def capacity(self):
        by_anchor = dict(self.by_anchor)
        for anchor in sorted(self.reach - set(by_anchor),
                             key=self.snapshot.root_key):
            by_anchor[anchor] = ((), None)
        hosts = {}
        for anchor, (found, run) in by_anchor.items():
            if anchor in self.reach:
                fits = sum(replay(self.alone({anchor}), self.room).values())
            elif run is not None:
                derived = run.derived
                if derived is None:
                    derived = run.derived = {}
                fits = derived.get(_FITS)
                if fits is None:
                    fits = derived[_FITS] = sum(
                        replay(found, self.room).values())
            else:
                fits = sum(replay(found, self.room).values())
            if fits:
                hosts[anchor] = fits
        # In the total a root counts the candidates the search listed
        # there: those made of sharing providers alone that it can take
        # too are listed (and claimed) at an earlier root.
        claims = {}
        for anchor, (found, _run) in self.by_anchor.items():
            if anchor in self.coupled:
                continue
            if anchor in self.reach:
                claims[anchor] = sum(replay(found, self.room).values())
            else:
                claims[anchor] = hosts.get(anchor, 0)
        for members in self.components:
            claims.update(self._replayed(members))
        claims = {anchor: fits for anchor, fits in claims.items() if fits}
        return Capacity(hosts, sum(claims.values()), claims, self.shared)

    def within(self, capacity, anchors):
        """Instances that fit on the hosts ``anchors`` (a set of roots)
        alone: the claims made there only."""
        if self.reach & anchors:
            return sum(replay(self.alone(anchors), self.room).values())
        fits = 0
        chosen = {}
        for anchor in anchors:
            number = self.coupled.get(anchor)
            if number is None:
                fits += capacity.hosts.get(anchor, 0)
            else:
                chosen.setdefault(number, set()).add(anchor)
        for number, picked in chosen.items():
            fits += sum(self._replayed(
                [anchor for anchor in self.components[number]
                 if anchor in picked]).values())
        return fits

    def _replayed(self, anchors):
        """replay() of the candidates anchored at ``anchors`` (in the
        search's order), kept by their Runs' identity when all are Runs."""
        runs = tuple([self.by_anchor[anchor][1] for anchor in anchors])
        key = None
        if all(run is not None for run in runs):
            key = tuple(map(id, runs))
            kept = _REPLAYS.get(key)
            if kept is not None:
                return kept[1]
        claims = replay([request for anchor in anchors
                         for request in self.by_anchor[anchor][0]],
                        self.room)
        if key is not None:
            if len(_REPLAYS) >= _REPLAYS_KEPT:
                _REPLAYS.clear()
            _REPLAYS[key] = (runs, claims)
        return claims


def _components(crossing, by_anchor):
    """The anchors that share providers, in groups that share none with
    one another (each in the search's order): ``crossing`` {anchor: the
    roots of the providers its candidates take from, beyond its own}."""
    if not crossing:
        return []
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
    return list(groups.values())
