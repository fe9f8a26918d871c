"""capacity/counting.py counts what claiming the request again and again
counts: checked against those claims, made one by one through the domain
search (the brute force), on generated clouds and requests."""
import dataclasses

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tachyon_placement.capacity import counting
from tachyon_placement.domain import candidates as domain
from tachyon_placement.domain import models

CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
TRAITS = ('CUSTOM_FAST', 'CUSTOM_GOLD')
AGGREGATES = ('agg-a', 'agg-b')
SHARING = domain.SHARING_TRAIT


def with_claim(nodes, allocations):
    """New ProviderNodes for ``nodes`` with ``allocations`` ({provider
    uuid: {class: amount}}) added to their usage (the search keeps memos
    on nodes: they are never changed in place)."""
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


def claimed_until_full(nodes, groups, wide, anchors=None, most=2000):
    """The brute force: {anchor: claims} of the claims that succeed one
    after the other on ``nodes``, each taking the first candidate a search
    gives (anchored at ``anchors`` only, when given)."""
    first = dataclasses.replace(wide, limit=1)
    claims = {}
    for _ in range(most):
        found = domain.find_candidates(
            domain.Snapshot(nodes), groups, first,
            domain.Settings(max_candidates=1),
            anchors=(sorted(anchors, key=nodes_order(nodes))
                     if anchors is not None else None))
        if not found.allocation_requests:
            return claims
        request = found.allocation_requests[0]
        claims[request.anchor] = claims.get(request.anchor, 0) + 1
        nodes = with_claim(nodes, request.allocations)
    raise AssertionError('more than %d claims: draw smaller clouds' % most)


def nodes_order(nodes):
    seqs = {node.uuid: (node.seq, node.uuid) for node in nodes}
    return seqs.__getitem__


def counted(nodes, groups, wide):
    """(Capacity, Counting) as the use case counts them."""
    snapshot = domain.Snapshot(nodes)
    wide = dataclasses.replace(wide, limit=None)

    def search(anchors=None):
        return domain.find_candidates(
            snapshot, groups, wide, domain.Settings(),
            anchors=(sorted(anchors, key=snapshot.root_key)
                     if anchors is not None else None))

    def alone(anchors):
        return search(anchors).allocation_requests

    # The first search makes the requests one by one; the next ones give
    # the Runs the first remembered, the last the counts kept on them.
    passes = []
    for _ in range(3):
        found = search()
        counts = counting.Counting(
            snapshot, found.request_pieces or found.allocation_requests,
            alone)
        passes.append(counts.capacity())
    assert passes[0] == passes[1] == passes[2]
    return passes[-1], counts


@st.composite
def inventory(draw, rc):
    total = draw(st.integers(1, 24))
    reserved = draw(st.integers(0, total))
    ratio = draw(st.sampled_from((1.0, 1.5, 2.0, 0.5)))
    min_unit = draw(st.integers(1, 3))
    max_unit = draw(st.integers(min_unit, 16))
    step = draw(st.sampled_from((1, 1, 2)))
    capacity = int((total - reserved) * ratio)
    used = draw(st.integers(0, max(0, capacity)))
    return models.Inventory(rc, total, reserved, min_unit, max_unit, step,
                            ratio, used)


@st.composite
def provider(draw, uuid, parent, root, seq, sharing=False):
    classes = draw(st.sets(st.sampled_from(CLASSES), max_size=2))
    if sharing:
        classes = {'DISK_GB'}
    traits = set(draw(st.sets(st.sampled_from(TRAITS), max_size=1)))
    if sharing:
        traits.add(SHARING)
    aggregates = draw(st.sets(st.sampled_from(AGGREGATES), max_size=1))
    return domain.ProviderNode(
        uuid, parent_uuid=parent, root_uuid=root, seq=seq, traits=traits,
        aggregates=aggregates,
        inventories={rc: draw(inventory(rc)) for rc in sorted(classes)})


@st.composite
def clouds(draw):
    """1 to 3 hosts of 1 to 4 providers (a root, children, a grandchild),
    and maybe a sharing provider of DISK_GB in an aggregate."""
    nodes = []
    seq = 0
    for host in range(draw(st.integers(1, 3))):
        root = 'h%d' % host
        nodes.append(draw(provider(root, None, root, seq)))
        seq += 1
        parents = [root]
        for child in range(draw(st.integers(0, 3))):
            uuid = '%s-c%d' % (root, child)
            parent = draw(st.sampled_from(parents))
            nodes.append(draw(provider(uuid, parent, root, seq)))
            parents.append(uuid)
            seq += 1
    if draw(st.booleans()):
        nodes.append(draw(provider('shared', None, 'shared', seq,
                                   sharing=True)))
    return nodes


@st.composite
def requests(draw):
    """An unsuffixed group and/or one or two granular groups, with traits,
    member_of, group_policy and same_subtree."""
    groups = []
    if draw(st.booleans()):
        groups.append(domain.RequestGroup(
            resources={rc: draw(st.integers(1, 6)) for rc in draw(
                st.sets(st.sampled_from(CLASSES), min_size=1,
                        max_size=2))},
            required_traits=draw(st.lists(
                st.sampled_from(TRAITS).map(lambda t: {t}), max_size=1)),
            member_of=draw(st.lists(
                st.sampled_from(AGGREGATES).map(lambda a: {a}),
                max_size=1))))
    for suffix in ('1', '2')[:draw(st.integers(0 if groups else 1, 2))]:
        groups.append(domain.RequestGroup(
            suffix=suffix,
            resources={rc: draw(st.integers(1, 6)) for rc in draw(
                st.sets(st.sampled_from(CLASSES), min_size=1,
                        max_size=2))},
            required_traits=draw(st.lists(
                st.sampled_from(TRAITS).map(lambda t: {t}), max_size=1)),
            forbidden_traits=draw(st.sets(st.sampled_from(TRAITS),
                                          max_size=1))))
    suffixes = [group.suffix for group in groups if group.suffix]
    subtrees = []
    if len(suffixes) == 2 and draw(st.booleans()):
        subtrees = [set(suffixes)]
    wide = domain.RequestWide(
        group_policy=draw(st.sampled_from(('none', 'isolate'))),
        root_required=draw(st.sets(st.sampled_from(TRAITS), max_size=1)),
        same_subtrees=subtrees)
    return groups, wide


@settings(max_examples=400, deadline=None)
@given(clouds(), requests())
def test_the_count_is_the_claims(nodes, request):
    groups, wide = request
    capacity, counts = counted(nodes, groups, wide)
    # In total: the claims on the whole cloud.
    claims = claimed_until_full(nodes, groups, wide)
    assert capacity.total == sum(claims.values())
    assert capacity.claims == claims
    # Per host: the claims anchored at that host alone.
    roots = {node.root_uuid for node in nodes}
    for root in roots:
        alone = sum(claimed_until_full(nodes, groups, wide,
                                       anchors=[root]).values())
        assert capacity.hosts.get(root, 0) == alone, root
    # Per aggregate: the claims anchored at its hosts alone.
    for aggregate in AGGREGATES:
        members = {node.uuid for node in nodes
                   if node.parent_uuid is None
                   and aggregate in node.aggregates}
        alone = sum(claimed_until_full(nodes, groups, wide,
                                       anchors=members).values())
        assert counts.within(capacity, members) == alone


def _numa_host():
    """A host of two NUMA nodes of 8 VCPUs and 16 GiB."""
    inventory = {'VCPU': models.Inventory('VCPU', 8),
                 'MEMORY_MB': models.Inventory('MEMORY_MB', 16384)}
    return [domain.ProviderNode('host', seq=0)] + [
        domain.ProviderNode('numa%d' % n, parent_uuid='host',
                            root_uuid='host', seq=n + 1,
                            inventories=inventory) for n in (0, 1)]


def test_a_nested_tree():
    # A granular request of 3 VCPUs and 4 GiB takes 2 per node (VCPU runs
    # out first), 4 in all.
    nodes = _numa_host()
    groups = [domain.RequestGroup(suffix='1', resources={
        'VCPU': 3, 'MEMORY_MB': 4096})]
    wide = domain.RequestWide(group_policy='none')
    capacity, _counts = counted(nodes, groups, wide)
    assert capacity == counting.Capacity({'host': 4}, 4, {'host': 4}, False)
    # Nothing was claimed for real.
    assert all(not inv.used for inv in nodes[1].inventories.values())


def test_hosts_competing_for_a_sharing_provider():
    # Two hosts of 8 VCPUs share 10 GB of disk: each alone fits 5 of 1
    # VCPU + 2 GB, both together still only 5.
    disk = {'DISK_GB': models.Inventory('DISK_GB', 10)}
    nodes = [domain.ProviderNode(
        'h%d' % n, seq=n, aggregates={'agg'},
        inventories={'VCPU': models.Inventory('VCPU', 8)}) for n in (0, 1)]
    nodes.append(domain.ProviderNode('nfs', seq=2, aggregates={'agg'},
                                     traits={SHARING}, inventories=disk))
    groups = [domain.RequestGroup(resources={'VCPU': 1, 'DISK_GB': 2})]
    capacity, _counts = counted(nodes, groups, domain.RequestWide())
    assert capacity.hosts == {'h0': 5, 'h1': 5}
    assert capacity.total == 5 and capacity.shared
    assert capacity.claims == {'h0': 5}


def test_a_request_of_one_unit_on_a_large_provider_is_one_division():
    nodes = [domain.ProviderNode('host', seq=0, inventories={
        'MEMORY_MB': models.Inventory('MEMORY_MB', 10 ** 9)})]
    groups = [domain.RequestGroup(resources={'MEMORY_MB': 1})]
    capacity, _counts = counted(nodes, groups, domain.RequestWide())
    assert capacity.total == 10 ** 9
