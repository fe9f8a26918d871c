"""How many more instances of one request fit: counted exactly as claiming
the request again and again until nothing fits would count them.

``claimed_until_full`` is that definition: the domain's candidate search
(domain/candidates.py, the very search of GET /allocation_candidates)
asked for one candidate, the candidate's allocations added to the
providers' usage, again, until no candidate is left.  It costs a search
per claim (about 0.3 ms), so ``count`` takes a closed form where one is
provably the same number: a tree of one provider asked for one group of
resources without a sharing provider in reach (each claim takes the same
amounts from the same provider until one class runs out).  The
hypothesis tests (tests/unit/test_capacity_counting.py) check the closed
form against the claims on generated trees and requests.

Pure: providers are domain.ProviderNode, requests domain.RequestGroup and
RequestWide; nothing here reads the graph.
"""
import dataclasses

from tachyon_placement.domain import candidates as domain

# Claims simulated for one count at most: a request of one unit on a
# provider of millions would otherwise take minutes.  A count that
# reaches it is reported as at least this many.
MAX_CLAIMS = 100000


@dataclasses.dataclass(frozen=True)
class Count:
    """``fits``: instances that fit; ``exact``: False when the count
    stopped at MAX_CLAIMS (at least that many fit)."""
    fits: int
    exact: bool = True


def with_claim(nodes, allocations):
    """New ProviderNodes for ``nodes`` with ``allocations`` ({provider
    uuid: {class: amount}}) added to their usage (nodes are never changed
    in place: the search keeps memos on them)."""
    moved = []
    for node in nodes:
        amounts = allocations.get(node.uuid)
        inventories = node.inventories
        if amounts:
            inventories = {
                rc: (dataclasses.replace(inventory,
                                         used=inventory.used + amounts[rc])
                     if rc in amounts else inventory)
                for rc, inventory in inventories.items()}
        moved.append(domain.ProviderNode(
            node.uuid, node.parent_uuid, node.root_uuid, node.seq,
            node.traits, node.aggregates, inventories))
    return moved


def claimed_until_full(nodes, groups, wide, max_claims=MAX_CLAIMS):
    """The Count of claims of the request (``groups``, ``wide``) that
    succeed one after the other on ``nodes`` (whole trees and the sharing
    providers reaching them), each taking the first candidate the search
    gives, as Nova claims the first it is given."""
    first = dataclasses.replace(wide, limit=1)
    settings = domain.Settings(max_candidates=1)
    fits = 0
    while fits < max_claims:
        found = domain.find_candidates(domain.Snapshot(nodes), groups, first,
                                       settings)
        if not found.allocation_requests:
            return Count(fits)
        nodes = with_claim(nodes,
                           found.allocation_requests[0].allocations)
        fits += 1
    return Count(fits, exact=False)


def closed_form(nodes, groups, wide):
    """The count of claimed_until_full without a search per claim, or None
    when no closed form is known to give the same number."""
    if len(nodes) != 1 or len(groups) != 1 or wide.same_subtrees:
        return None
    node = nodes[0]
    if node.sharing:
        return None
    resources = groups[0].resources
    if not resources:
        return None
    found = domain.find_candidates(domain.Snapshot(nodes), groups,
                                   dataclasses.replace(wide, limit=1),
                                   domain.Settings(max_candidates=1))
    if not found.allocation_requests:
        return Count(0)
    fits = None
    for rc, amount in resources.items():
        left, _max_unit = node.room(rc)
        # The first claim fitted: amount respects min_unit, max_unit and
        # step_size, and every claim asks the same.
        each = left // amount
        fits = each if fits is None else min(fits, each)
    return Count(fits)


def count(nodes, groups, wide):
    """How many instances of the request fit on ``nodes``: the closed form
    where there is one, else the claims simulated."""
    found = closed_form(nodes, groups, wide)
    if found is not None:
        return found
    return claimed_until_full(nodes, groups, wide)
