"""How many more instances of a request fit: the use case behind GET
/tachyon/capacity.

Every candidate of the request, found once in Placement's order from one
copy of the graph (usecases/candidates.py every_candidate), is counted by
capacity/counting.py as claims one after the other would count it: per
host (the host alone), in total, and per aggregate (the hosts whose root
provider is in it, alone).
"""
from tachyon_placement.capacity import counting
from tachyon_placement.usecases import candidates


TooManyCandidates = candidates.TooManyCandidates


def count(store, groups, wide, settings, most, per_aggregate=False):
    """{'total': n, 'shared': bool, 'hosts': [{root_provider_uuid, name,
    fits, in_total}][, 'aggregates': [{uuid, fits, hosts}]]}: see
    capacity.counting.Capacity.  domain.UnknownResourceClass or
    UnknownTrait when the request names one the graph does not have;
    TooManyCandidates when it has more than ``most`` candidates."""
    found, snapshot, world = candidates.every_candidate(
        store, groups, wide, settings, most)
    counts = counting.Counting(
        snapshot, found.request_pieces or found.allocation_requests)
    capacity = counts.capacity()
    records = world.records
    hosts = []
    for root, fits in capacity.hosts.items():
        record = records.get(root)
        hosts.append({'root_provider_uuid': root,
                      'name': record.provider.name if record else None,
                      'fits': fits,
                      'in_total': capacity.claims.get(root, 0)})
    document = {'total': capacity.total, 'shared': capacity.shared,
                'hosts': hosts}
    if per_aggregate:
        document['aggregates'] = _per_aggregate(world, counts, capacity)
    return document


def _per_aggregate(world, counts, capacity):
    """Per aggregate with a root provider in it: the instances that fit on
    those hosts alone and how many of them take one."""
    counted = []
    for aggregate, members in sorted(world.by_aggregate.items()):
        roots = frozenset(record.uuid for record in members
                          if record.parent_uuid is None)
        if not roots:
            continue
        counted.append({
            'uuid': aggregate,
            'fits': counts.within(capacity, roots),
            'hosts': sum(1 for root in roots if root in capacity.hosts)})
    return counted
