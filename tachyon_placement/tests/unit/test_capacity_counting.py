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


def place_of(nodes, request):
    """Where a candidate's claims land: the oldest root among its
    providers' trees when it is made of sharing providers alone (it takes
    nothing from the root it is anchored at), else its anchor."""
    by_uuid = {node.uuid: node for node in nodes}
    providers = [by_uuid[uuid] for uuid in request.allocations]
    if all(SHARING in node.traits for node in providers):
        roots = {node.root_uuid for node in providers}
        return min(roots, key=lambda root: (by_uuid[root].seq, root))
    return request.anchor


def claimed_until_full(nodes, groups, wide, places=None, most=2000):
    """The brute force: {place: claims} of the claims that succeed one
    after the other on ``nodes``, each taking the first candidate a search
    gives (the first placed at one of ``places``, when given)."""
    claims = {}
    for _ in range(most):
        if places is None:
            found = domain.find_candidates(
                domain.Snapshot(nodes), groups,
                dataclasses.replace(wide, limit=1),
                domain.Settings(max_candidates=1))
            listed = found.allocation_requests
        else:
            listed = [request for request in domain.find_candidates(
                domain.Snapshot(nodes), groups,
                dataclasses.replace(wide, limit=None),
                domain.Settings()).allocation_requests
                if place_of(nodes, request) in places]
        if not listed:
            return claims
        request = listed[0]
        place = place_of(nodes, request)
        claims[place] = claims.get(place, 0) + 1
        nodes = with_claim(nodes, request.allocations)
    raise AssertionError('more than %d claims: draw smaller clouds' % most)


def counted(nodes, groups, wide):
    """(Capacity, Counting) as the use case counts them."""
    snapshot = domain.Snapshot(nodes)
    wide = dataclasses.replace(wide, limit=None)

    def search():
        return domain.find_candidates(snapshot, groups, wide,
                                      domain.Settings())

    # The first search makes the requests one by one; the next ones give
    # the Runs the first remembered, the last the counts kept on them.
    passes = []
    for _ in range(3):
        found = search()
        counts = counting.Counting(
            snapshot, found.request_pieces or found.allocation_requests)
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
    and up to two sharing providers of DISK_GB in aggregates, made before,
    between or after the hosts (the oldest root anchors first)."""
    hosts = draw(st.integers(1, 3))
    pools = draw(st.lists(st.integers(0, hosts), max_size=2))
    nodes = []
    seq = 0
    for host in range(hosts + 1):
        for pool, before in enumerate(pools):
            if before == host:
                uuid = 'shared%d' % pool
                nodes.append(draw(provider(uuid, None, uuid, seq,
                                           sharing=True)))
                seq += 1
        if host == hosts:
            break
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
    assert_counts_are_the_claims(
        nodes, groups, wide, {node.root_uuid for node in nodes})


def assert_counts_are_the_claims(nodes, groups, wide, roots):
    """The count against the brute force: in total, where the claims
    land, on each of ``roots`` alone and on each aggregate's hosts."""
    capacity, counts = counted(nodes, groups, wide)
    # In total: the claims on the whole cloud.
    claims = claimed_until_full(nodes, groups, wide)
    assert capacity.total == sum(claims.values())
    assert capacity.claims == claims
    # Per host: the claims of the candidates placed there alone.
    for root in roots:
        alone = sum(claimed_until_full(nodes, groups, wide,
                                       places={root}).values())
        assert capacity.hosts.get(root, 0) == alone, root
    # Per aggregate: the claims of the candidates placed at its hosts.
    for aggregate in AGGREGATES:
        members = {node.uuid for node in nodes
                   if node.parent_uuid is None
                   and aggregate in node.aggregates}
        alone = sum(claimed_until_full(nodes, groups, wide,
                                       places=members).values())
        assert counts.within(capacity, members) == alone, aggregate


@st.composite
def numa_clouds(draw):
    """10 to 30 hosts of 1 to 4 NUMA nodes (small, uneven VCPU and memory
    inventories, some partly used), some with a local disk, and up to two
    shared disk pools in aggregates, made anywhere among the hosts."""
    hosts = draw(st.integers(10, 30))
    pools = draw(st.lists(st.integers(0, hosts), max_size=2))
    nodes = []
    seq = 0

    def small(rc, most):
        # Half the providers unused: the count of options per group then
        # changes as claims are made (a search that orders groups by it
        # reorders the candidates).
        total = draw(st.integers(1, most))
        used = draw(st.integers(0, total // 2)) if draw(
            st.booleans()) else 0
        return models.Inventory(rc, total, used=used)

    for host in range(hosts + 1):
        for pool, before in enumerate(pools):
            if before == host:
                uuid = 'shared%d' % pool
                nodes.append(domain.ProviderNode(
                    uuid, seq=seq, traits={SHARING},
                    aggregates=draw(st.sets(st.sampled_from(AGGREGATES),
                                            min_size=1, max_size=2)),
                    inventories={'DISK_GB': small('DISK_GB', 40)}))
                seq += 1
        if host == hosts:
            break
        root = 'h%d' % host
        local = {'DISK_GB': small('DISK_GB', 12)} if draw(
            st.booleans()) else {}
        nodes.append(domain.ProviderNode(
            root, seq=seq, inventories=local,
            aggregates=draw(st.sets(st.sampled_from(AGGREGATES),
                                    max_size=1))))
        seq += 1
        for numa in range(draw(st.integers(1, 4))):
            nodes.append(domain.ProviderNode(
                '%s-n%d' % (root, numa), parent_uuid=root, root_uuid=root,
                seq=seq, inventories={'VCPU': small('VCPU', 6),
                                      'MEMORY_MB': small('MEMORY_MB', 8)}))
            seq += 1
    return nodes


@st.composite
def numa_requests(draw):
    """Granular groups of VCPU (and memory) as Nova asks for NUMA guests,
    isolated or not, with or without a disk; or a disk alone (which only
    a pool or a local disk can give)."""
    if draw(st.integers(0, 4)) == 0:
        return ([domain.RequestGroup(
            resources={'DISK_GB': draw(st.integers(1, 6))})],
            domain.RequestWide())
    groups = []
    if draw(st.booleans()):
        groups.append(domain.RequestGroup(
            resources={'DISK_GB': draw(st.integers(1, 4))}))
    for suffix in ('1', '2', '3')[:draw(st.integers(1, 3))]:
        resources = {'VCPU': draw(st.integers(1, 3))}
        if draw(st.booleans()):
            resources['MEMORY_MB'] = draw(st.integers(1, 3))
        groups.append(domain.RequestGroup(suffix=suffix,
                                          resources=resources))
    return groups, domain.RequestWide(
        group_policy=draw(st.sampled_from(('none', 'isolate'))))


@settings(max_examples=40, deadline=None)
@given(numa_clouds(), numa_requests(), st.randoms(use_true_random=False))
def test_the_count_is_the_claims_on_larger_clouds(nodes, request, rng):
    """The claims in total and where they land on every host; the count
    of a few hosts and of each aggregate alone (each a brute force of
    its own)."""
    groups, wide = request
    roots = sorted({node.root_uuid for node in nodes})
    assert_counts_are_the_claims(nodes, groups, wide,
                                 rng.sample(roots, 3))


@settings(max_examples=150, deadline=None)
@given(numa_clouds(), numa_requests(), st.integers(0, 50))
def test_a_claim_only_takes_candidates_away(nodes, request, pick):
    """What the count relies on (the docs' "the candidates do not depend
    on usage"): after a claim the candidates are those before it that
    still fit, in the same order, whichever candidate was claimed."""
    groups, wide = request

    def listed(nodes):
        return [(request.anchor, request.allocations)
                for request in domain.find_candidates(
                    domain.Snapshot(nodes), groups, wide,
                    domain.Settings()).allocation_requests]

    before = listed(nodes)
    for _ in range(4):
        if not before:
            return
        nodes = with_claim(nodes, before[pick % len(before)][1])
        after = listed(nodes)
        remaining = iter(before)
        assert all(candidate in remaining for candidate in after), (
            'a claim reordered the candidates')
        before = after


def test_isolated_groups_keep_their_order_as_claims_are_made():
    # NUMA nodes of 1, 4 and 4 VCPUs; groups of 1 and 2 VCPUs, isolated.
    # The search ordered the groups by how many nodes could take each now:
    # after the first claim the groups tied and swapped, the candidates
    # came in another order, and the count (2) was not the claims' (3).
    nodes = [domain.ProviderNode('host', seq=0)] + [
        domain.ProviderNode('n%d' % index, parent_uuid='host',
                            root_uuid='host', seq=index + 1,
                            inventories={'VCPU': models.Inventory('VCPU',
                                                                  total)})
        for index, total in enumerate((1, 4, 4))]
    groups = [domain.RequestGroup(suffix='1', resources={'VCPU': 1}),
              domain.RequestGroup(suffix='2', resources={'VCPU': 2})]
    wide = domain.RequestWide(group_policy='isolate')
    capacity, _counts = counted(nodes, groups, wide)
    assert capacity.total == sum(claimed_until_full(
        nodes, groups, wide).values()) == 2


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


def test_a_disk_only_request_counts_where_the_claims_land():
    # A host with 140 GB of local disk and two shared pools (910 and 500
    # GB) in its aggregate, made after it: the first candidates are the
    # pools' (listed at the host, the oldest root reaching them), but
    # their claims take nothing from the host: each pool counts its own.
    disk = lambda total: {'DISK_GB': models.Inventory('DISK_GB', total)}
    nodes = [domain.ProviderNode('host', seq=0, aggregates={'agg'},
                                 inventories=disk(140)),
             domain.ProviderNode('pool', seq=1, aggregates={'agg'},
                                 traits={SHARING}, inventories=disk(910)),
             domain.ProviderNode('pool2', seq=2, aggregates={'agg'},
                                 traits={SHARING}, inventories=disk(500))]
    groups = [domain.RequestGroup(resources={'DISK_GB': 10})]
    capacity, counts = counted(nodes, groups, domain.RequestWide())
    assert capacity.total == 155
    assert capacity.claims == claimed_until_full(
        nodes, groups, domain.RequestWide()) == {
            'host': 14, 'pool': 91, 'pool2': 50}
    # Each pool alone: its own disk, not the other pool's (the pools
    # reach each other through the aggregate).
    assert capacity.hosts == {'host': 14, 'pool': 91, 'pool2': 50}
    assert counts.within(capacity, {'host', 'pool'}) == 105
