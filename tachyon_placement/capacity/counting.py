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


def replay(requests, room):
    """{anchor root: instances claimed there} of the claims made one after
    the other on ``requests`` (domain.AllocationRequests in the search's
    order, found before any claim), each on the first one that fits."""
    left = {}
    claimed = collections.Counter()
    for request in requests:
        fits = None
        for uuid, amounts in request.allocations.items():
            for rc, amount in amounts.items():
                if amount <= 0:
                    continue
                key = (uuid, rc)
                free = left.get(key)
                if free is None:
                    free = left[key] = room(uuid, rc)
                times = free // amount
                if fits is None or times < fits:
                    fits = times
        if not fits:
            # Nothing asked (no amount) claims nothing: it never fills.
            continue
        for uuid, amounts in request.allocations.items():
            for rc, amount in amounts.items():
                if amount > 0:
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


class Counting:
    """Counts of the candidates ``requests`` (every candidate of a request
    before any claim, in the search's order) found on ``snapshot`` (a
    domain.Snapshot, whose nodes hold the usage).

    ``alone(anchors)``: the candidates anchored at ``anchors`` (a set of
    roots) only, searched anew.  The search lists a candidate made of
    sharing providers alone once, at the first root it can be anchored
    at; the other roots those providers reach count theirs from their
    own search."""

    def __init__(self, snapshot, requests, alone):
        self.snapshot = snapshot
        self.requests = requests
        self.alone = alone
        self.reach = set()
        by_uuid = snapshot.by_uuid
        for request in requests:
            nodes = [by_uuid[uuid] for uuid in request.allocations]
            if nodes and all(node.sharing for node in nodes):
                for node in nodes:
                    self.reach |= node.anchors

    def room(self, uuid, rc):
        return self.snapshot.by_uuid[uuid].room(rc)[0]

    def capacity(self):
        by_anchor = {}
        for request in self.requests:
            by_anchor.setdefault(request.anchor, []).append(request)
        for anchor in sorted(self.reach - set(by_anchor),
                             key=self.snapshot.root_key):
            by_anchor[anchor] = ()
        hosts = {}
        for anchor, found in by_anchor.items():
            if anchor in self.reach:
                found = self.alone({anchor})
            fits = sum(replay(found, self.room).values())
            if fits:
                hosts[anchor] = fits
        shared = any(map(_crosses, self.requests))
        if not shared:
            return Capacity(hosts, sum(hosts.values()), dict(hosts), False)
        claims = {anchor: fits for anchor, fits
                  in replay(self.requests, self.room).items() if fits}
        return Capacity(hosts, sum(claims.values()), claims, True)

    def within(self, capacity, anchors):
        """Instances that fit on the hosts ``anchors`` (a set of roots)
        alone: the claims made there only."""
        if not capacity.shared and not self.reach:
            return sum(fits for anchor, fits in capacity.hosts.items()
                       if anchor in anchors)
        if self.reach & anchors:
            found = self.alone(anchors)
        else:
            found = [request for request in self.requests
                     if request.anchor in anchors]
        return sum(replay(found, self.room).values())


def _crosses(request):
    """Whether ``request`` takes from a tree other than its anchor's."""
    return any(root != request.anchor for root in request.roots)
