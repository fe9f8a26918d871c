"""The allocation candidate search, without a database."""
import collections
import dataclasses
import itertools
import random
import time

import pytest

from tachyon_placement.domain import candidates as domain
from tachyon_placement.domain.candidates import anchor_search
from tachyon_placement.domain.candidates import plan as search_plan
from tachyon_placement.domain import models
from tachyon_placement.domain import providers as provider_rules

SHARES = domain.SHARING_TRAIT


def inv(rc, total, **fields):
    fields.setdefault('max_unit', total)
    return models.Inventory(resource_class=rc, total=total, **fields)


class Cloud:
    """Builds a Snapshot; providers are created in call order."""

    def __init__(self):
        self.nodes = []

    def add(self, uuid, parent=None, traits=(), aggs=(), **inventories):
        root = uuid
        if parent is not None:
            root = next(n for n in self.nodes if n.uuid == parent).root_uuid
        invs = {}
        for rc, spec in inventories.items():
            if isinstance(spec, models.Inventory):
                invs[rc] = spec
            else:
                invs[rc] = inv(rc, spec)
        self.nodes.append(domain.ProviderNode(
            uuid, parent_uuid=parent, root_uuid=root, seq=len(self.nodes),
            traits=traits, aggregates=aggs, inventories=invs))
        return uuid

    def snapshot(self):
        # Fresh nodes each time: Snapshot fills derived fields in.
        return domain.Snapshot(
            domain.ProviderNode(n.uuid, n.parent_uuid, n.root_uuid, n.seq,
                                n.traits, n.aggregates, n.inventories)
            for n in self.nodes)


def group(suffix='', resources=None, required=(), forbidden=(),
          member_of=(), forbidden_aggs=(), in_tree=None):
    return domain.RequestGroup(
        suffix=suffix, resources=dict(resources or {}),
        required_traits=[set(s) if not isinstance(s, str) else {s}
                         for s in required],
        forbidden_traits=set(forbidden),
        member_of=[set(s) if not isinstance(s, str) else {s}
                   for s in member_of],
        forbidden_aggs=set(forbidden_aggs), in_tree=in_tree)


def search(cloud, groups, in_tree_roots=None, **wide):
    settings = wide.pop('settings', None)
    return domain.find_candidates(
        cloud.snapshot(), groups, domain.RequestWide(**wide), settings,
        in_tree_roots=in_tree_roots)


def allocations(result):
    return [request.allocations for request in result.allocation_requests]


def summary_uuids(result):
    return {s.provider.uuid for s in result.provider_summaries}


# -- fixtures shaped like Placement's --------------------------------------


def shared_storage():
    """Two computes (cn1 without disk) sharing two storage providers."""
    cloud = Cloud()
    cloud.add('cn1', traits=('HW_CPU_X86_SSE',), aggs=('agg',),
              VCPU=inv('VCPU', 24, allocation_ratio=16.0),
              MEMORY_MB=inv('MEMORY_MB', 131072, allocation_ratio=1.5))
    cloud.add('cn2', aggs=('agg',),
              VCPU=inv('VCPU', 24, allocation_ratio=16.0),
              MEMORY_MB=inv('MEMORY_MB', 131072, allocation_ratio=1.5),
              DISK_GB=inv('DISK_GB', 2000, reserved=100))
    for name in ('ss', 'ss2'):
        cloud.add(name, traits=(SHARES,), aggs=('agg',),
                  DISK_GB=inv('DISK_GB', 2000, reserved=100))
    for cn in ('cn1', 'cn2'):
        for number in (1, 2):
            numa = cloud.add('numa%s_%d' % (cn[-1], number), parent=cn)
            cloud.add('pf%s_%d' % (cn[-1], number), parent=numa,
                      SRIOV_NET_VF=8)
    return cloud


def numa_aggregates():
    """Placement's NUMAAggregateFixture (bug 1792503)."""
    cloud = Cloud()
    cloud.add('cn1', aggs=('aggA',))
    cloud.add('cn2', aggs=('aggA', 'aggB'))
    cloud.add('ss1', traits=(SHARES,), aggs=('aggA',),
              DISK_GB=inv('DISK_GB', 2000, reserved=100))
    cloud.add('ss2', traits=(SHARES,), aggs=('aggC',),
              DISK_GB=inv('DISK_GB', 2000, reserved=100))
    cloud.add('numa1_1', parent='cn1', aggs=('aggC',),
              VCPU=inv('VCPU', 24, allocation_ratio=16.0))
    cloud.add('numa1_2', parent='cn1',
              VCPU=inv('VCPU', 24, allocation_ratio=16.0))
    cloud.add('numa2_1', parent='cn2',
              VCPU=inv('VCPU', 24, allocation_ratio=16.0))
    cloud.add('numa2_2', parent='cn2',
              VCPU=inv('VCPU', 24, allocation_ratio=16.0))
    return cloud


def granular():
    """Placement's GranularFixture."""
    cloud = Cloud()
    cloud.add('cn_left', aggs=('aggA',),
              traits=('HW_CPU_X86_AVX', 'CUSTOM_FOO'),
              VCPU=8, MEMORY_MB=4096, DISK_GB=500, VGPU=8, SRIOV_NET_VF=8,
              CUSTOM_NET_MBPS=4000)
    cloud.add('cn_middle', aggs=('aggA', 'aggB'),
              traits=('HW_CPU_X86_AVX', 'HW_CPU_X86_SSE'),
              VCPU=8, MEMORY_MB=4096, SRIOV_NET_VF=8, CUSTOM_NET_MBPS=4000)
    cloud.add('cn_right', aggs=('aggB', 'aggC'),
              traits=('HW_CPU_X86_MMX', 'CUSTOM_DISK_SSD'),
              VCPU=8, MEMORY_MB=4096, DISK_GB=500,
              VGPU=inv('VGPU', 8, max_unit=2))
    cloud.add('shr_disk_1', aggs=('aggA',), traits=(SHARES, 'CUSTOM_DISK_SSD'),
              DISK_GB=1000)
    cloud.add('shr_disk_2', aggs=('aggA', 'aggB'), traits=(SHARES,),
              DISK_GB=1000)
    cloud.add('shr_net', aggs=('aggC',), traits=(SHARES,),
              SRIOV_NET_VF=16, CUSTOM_NET_MBPS=40000)
    return cloud


def numa_network():
    """The cn1 half of Placement's NUMANetworkFixture, enough for
    same_subtree."""
    cloud = Cloud()
    cloud.add('cn1', traits=('COMPUTE_VOLUME_MULTI_ATTACH',))
    cloud.add('numa0', parent='cn1', traits=('HW_NUMA_ROOT',),
              VCPU=inv('VCPU', 4, used=2))
    cloud.add('numa1', parent='cn1', traits=('HW_NUMA_ROOT', 'CUSTOM_FOO'),
              VCPU=4)
    cloud.add('fpga0', parent='numa0', FPGA=1)
    cloud.add('fpga1_0', parent='numa1', FPGA=1)
    cloud.add('fpga1_1', parent='numa1', FPGA=1)
    cloud.add('cn2', traits=('CUSTOM_FOO',), VCPU=inv('VCPU', 8, used=3))
    for nic in (1, 2):
        cloud.add('nic%d' % nic, parent='cn2', traits=('CUSTOM_HW_NIC_ROOT',))
    cloud.add('pf1_1', parent='nic1', traits=('CUSTOM_PHYSNET1',),
              CUSTOM_VF=4)
    cloud.add('pf1_2', parent='nic1', traits=('CUSTOM_PHYSNET2',),
              CUSTOM_VF=4)
    for number in range(4):
        cloud.add('pf2_%d' % (number + 1), parent='nic2',
                  traits=('CUSTOM_PHYSNET%d' % (number % 2 + 1),),
                  CUSTOM_VF=2)
    return cloud


# -- the unsuffixed group ---------------------------------------------------


def test_unsuffixed_spreads_over_tree_and_sharing_providers():
    result = search(shared_storage(), [group(resources={
        'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 100})])
    got = sorted(sorted(a) for a in allocations(result))
    assert got == [['cn1', 'ss'], ['cn1', 'ss2'], ['cn2'], ['cn2', 'ss'],
                   ['cn2', 'ss2']]
    assert summary_uuids(result) >= {'cn1', 'cn2', 'ss', 'ss2'}
    # Whole trees are summarized (1.29+), with capacity and usage.
    assert 'pf1_1' in summary_uuids(result)
    cn1 = next(s for s in result.provider_summaries
               if s.provider.uuid == 'cn1')
    assert cn1.resources['VCPU'] == {'capacity': 384, 'used': 0}
    assert cn1.resources['MEMORY_MB'] == {'capacity': 196608, 'used': 0}


def test_unsuffixed_traits_are_collective_over_resource_providers():
    cloud = shared_storage()
    result = search(cloud, [group(resources={'VCPU': 1, 'DISK_GB': 100},
                                  required=['HW_CPU_X86_SSE'])])
    assert sorted(sorted(a) for a in allocations(result)) == [
        ['cn1', 'ss'], ['cn1', 'ss2']]
    result = search(cloud, [group(resources={'VCPU': 1, 'DISK_GB': 100},
                                  forbidden=['HW_CPU_X86_SSE'])])
    assert len(result.allocation_requests) == 3


def test_nested_children_combine_in_one_tree():
    result = search(shared_storage(), [group(
        resources={'VCPU': 1, 'SRIOV_NET_VF': 4})])
    assert sorted(sorted(a) for a in allocations(result)) == [
        ['cn1', 'pf1_1'], ['cn1', 'pf1_2'], ['cn2', 'pf2_1'],
        ['cn2', 'pf2_2']]
    assert len(result.provider_summaries) == 10


def test_old_microversions_do_not_combine_providers_of_a_tree():
    old = domain.Settings(nested_aware=False)
    result = search(shared_storage(), [group(
        resources={'VCPU': 1, 'SRIOV_NET_VF': 4})], settings=old)
    assert result.allocation_requests == []
    result = search(shared_storage(), [group(
        resources={'SRIOV_NET_VF': 4})], settings=old)
    assert len(result.allocation_requests) == 4
    # Only the providers in the requests, not their trees.
    assert summary_uuids(result) == {'pf1_1', 'pf1_2', 'pf2_1', 'pf2_2'}
    result = search(shared_storage(), [group(
        resources={'DISK_GB': 10, 'SRIOV_NET_VF': 4})], settings=old)
    assert len(result.allocation_requests) == 8
    assert len(result.provider_summaries) == 6


def test_old_microversions_summarize_used_providers_of_kept_trees():
    # Placement drops nested candidates first and lists the providers
    # used by any remaining one, then the limit keeps the trees of the
    # returned candidates.
    old = domain.Settings(nested_aware=False)
    result = search(shared_storage(), [group(
        resources={'SRIOV_NET_VF': 4})], settings=old, limit=1)
    assert allocations(result) == [{'pf1_1': {'SRIOV_NET_VF': 4}}]
    assert summary_uuids(result) == {'pf1_1', 'pf1_2'}


def test_in_tree_excludes_sharing_providers_of_other_trees():
    cloud = shared_storage()
    result = search(cloud, [group(resources={'VCPU': 1, 'DISK_GB': 10},
                                  in_tree='cn1')], in_tree_roots={0: 'cn1'})
    assert result.allocation_requests == []
    result = search(cloud, [group(resources={'VCPU': 1, 'DISK_GB': 10},
                                  in_tree='cn2')], in_tree_roots={0: 'cn2'})
    assert allocations(result) == [{'cn2': {'VCPU': 1, 'DISK_GB': 10}}]


def test_granular_in_tree_of_a_sharing_provider_reaches_its_anchors():
    result = search(shared_storage(), [
        group(resources={'VCPU': 1}),
        group('1', resources={'DISK_GB': 10}, in_tree='ss')],
        in_tree_roots={1: 'ss'})
    assert sorted(sorted(a) for a in allocations(result)) == [
        ['cn1', 'ss'], ['cn2', 'ss']]


def test_missing_in_tree_provider_finds_nothing():
    result = search(shared_storage(), [
        group(resources={'VCPU': 1}, in_tree='gone')])
    assert result.allocation_requests == []


# -- aggregates (bug 1792503) ---------------------------------------------


@pytest.mark.parametrize('member_of,forbidden,expected', [
    ((), (), 6),
    (('aggA',), (), 4),
    (('aggB',), (), 0),
    (('aggC',), (), 1),
    ((), ('aggA',), 0),
    ((), ('aggB',), 4),
    ((), ('aggC',), 3),
    ((('aggA', 'aggB'),), ('aggC',), 3),
    (('aggA',), ('aggB', 'aggC'), 1),
])
def test_unsuffixed_member_of_holds_for_provider_or_root(member_of, forbidden,
                                                         expected):
    result = search(numa_aggregates(), [group(
        resources={'VCPU': 1, 'DISK_GB': 1000}, member_of=member_of,
        forbidden_aggs=forbidden)])
    assert len(result.allocation_requests) == expected


def test_granular_member_of_holds_for_the_provider_itself():
    cloud = numa_aggregates()
    assert search(cloud, [group('1', resources={'VCPU': 1},
                                member_of=['aggA'])]).allocation_requests == []
    result = search(cloud, [group('1', resources={'VCPU': 1},
                                  member_of=['aggC'])])
    assert allocations(result) == [{'numa1_1': {'VCPU': 1}}]
    result = search(cloud, [group(resources={'VCPU': 1},
                                  member_of=['aggB'])])
    assert sorted(sorted(a) for a in allocations(result)) == [
        ['numa2_1'], ['numa2_2']]


# -- granular groups ---------------------------------------------------------


def test_isolate_and_none():
    cloud = granular()
    groups = [group('1', resources={'VCPU': 1}),
              group('2', resources={'MEMORY_MB': 1024})]
    assert len(search(cloud, groups, group_policy='none')
               .allocation_requests) == 3
    assert search(cloud, groups,
                  group_policy='isolate').allocation_requests == []
    groups = [group('1', resources={'VCPU': 1, 'MEMORY_MB': 1024}),
              group('2', resources={'DISK_GB': 100})]
    isolated = search(cloud, groups, group_policy='isolate')
    assert len(isolated.allocation_requests) == 5
    assert len(isolated.provider_summaries) == 5
    assert len(search(cloud, groups, group_policy='none')
               .allocation_requests) == 7


def test_sharing_only_candidates_are_not_repeated_per_anchor():
    result = search(granular(), [group('1', resources={'DISK_GB': 800})])
    assert sorted(allocations(result), key=sorted) == [
        {'shr_disk_1': {'DISK_GB': 800}}, {'shr_disk_2': {'DISK_GB': 800}}]
    assert summary_uuids(result) == {'shr_disk_1', 'shr_disk_2'}


def test_merged_amounts_respect_capacity_and_max_unit():
    cloud = granular()
    result = search(cloud, [group(resources={'VGPU': 1}),
                            group('1', resources={'VGPU': 1}),
                            group('2', resources={'VGPU': 1})],
                    group_policy='none')
    assert allocations(result) == [{'cn_left': {'VGPU': 3}}]
    result = search(cloud, [
        group(resources={'VCPU': 2, 'MEMORY_MB': 2048, 'SRIOV_NET_VF': 1,
                         'CUSTOM_NET_MBPS': 2000}),
        group('1', resources={'SRIOV_NET_VF': 1, 'CUSTOM_NET_MBPS': 3000})])
    assert allocations(result) == [{
        'cn_right': {'VCPU': 2, 'MEMORY_MB': 2048},
        'shr_net': {'SRIOV_NET_VF': 2, 'CUSTOM_NET_MBPS': 5000}}]


def test_many_groups_many_providers():
    result = search(granular(), [
        group('1', resources={'VCPU': 1}),
        group('2', resources={'VGPU': 1}, required=['HW_GPU_API_DXVA']),
        group('3', resources={'MEMORY_MB': 1024}),
        group('4', resources={'DISK_GB': 100}, required=['CUSTOM_DISK_SSD']),
        group('5', resources={'DISK_GB': 50}, forbidden=['CUSTOM_DISK_SSD']),
        group('6', resources={'SRIOV_NET_VF': 1, 'CUSTOM_NET_MBPS': 1000}),
        group('7', resources={'SRIOV_NET_VF': 2, 'CUSTOM_NET_MBPS': 2000}),
    ], group_policy='none')
    # No provider here has HW_GPU_API_DXVA: the trait filters everything.
    assert result.allocation_requests == []


def test_mappings_name_the_providers_of_each_group():
    result = search(granular(), [
        group(resources={'VCPU': 1}, required=['HW_CPU_X86_SSE']),
        group('_A', resources={'DISK_GB': 1}),
        group('_B', resources={'DISK_GB': 1})], group_policy='isolate')
    mappings = sorted(
        (r.mappings[''], r.mappings['_A'], r.mappings['_B'])
        for r in result.allocation_requests)
    assert mappings == [(['cn_middle'], ['shr_disk_1'], ['shr_disk_2']),
                        (['cn_middle'], ['shr_disk_2'], ['shr_disk_1'])]


# -- same_subtree and resourceless groups ------------------------------------


def test_same_subtree_with_resourceless_group():
    cloud = numa_network()
    result = search(cloud, [
        group(resources={'VCPU': 1}),
        group('_NIC', required=['CUSTOM_HW_NIC_ROOT']),
        group('_PORT1', resources={'CUSTOM_VF': 2},
              required=['CUSTOM_PHYSNET1']),
        group('_PORT2', resources={'CUSTOM_VF': 2},
              required=['CUSTOM_PHYSNET2']),
    ], same_subtrees=[{'_NIC', '_PORT1', '_PORT2'}], group_policy='none')
    assert len(result.allocation_requests) == 5
    for request in result.allocation_requests:
        assert request.mappings['_NIC'] in (['nic1'], ['nic2'])
        # The resourceless group maps a provider it allocates nothing from.
        assert request.mappings['_NIC'][0] not in request.allocations


def test_same_subtree_needs_an_ancestor_among_the_providers():
    cloud = numa_network()
    groups = [group('_COMPUTE', resources={'VCPU': 1}),
              group('_ACCEL', resources={'FPGA': 1})]
    assert len(search(cloud, groups, group_policy='none')
               .allocation_requests) == 6
    result = search(cloud, groups, group_policy='none',
                    same_subtrees=[{'_COMPUTE', '_ACCEL'}])
    assert sorted((r.mappings['_COMPUTE'][0], r.mappings['_ACCEL'][0])
                  for r in result.allocation_requests) == [
        ('numa0', 'fpga0'), ('numa1', 'fpga1_0'), ('numa1', 'fpga1_1')]


def test_same_provider_is_its_own_subtree_unless_isolated():
    cloud = numa_network()
    groups = [group('_COMPUTE1', resources={'VCPU': 1}),
              group('_COMPUTE2', required=['CUSTOM_FOO']),
              group('_COMPUTE3', required=['HW_NUMA_ROOT'])]
    subtree = [{'_COMPUTE1', '_COMPUTE2', '_COMPUTE3'}]
    result = search(cloud, groups, group_policy='none',
                    same_subtrees=subtree)
    assert [r.mappings for r in result.allocation_requests] == [{
        '_COMPUTE1': ['numa1'], '_COMPUTE2': ['numa1'],
        '_COMPUTE3': ['numa1']}]
    assert search(cloud, groups, group_policy='isolate',
                  same_subtrees=subtree).allocation_requests == []


# -- what nodes share --------------------------------------------------------
# A worker holds a node per provider of the cloud and remembers the
# requests found at each root: what is equal is one object.


def test_nodes_of_a_tree_share_one_anchors_set_and_keep_given_inventories():
    cloud = numa_aggregates()
    snapshot = cloud.snapshot()
    cn1, numa1_1, numa1_2 = (snapshot.by_uuid[uuid]
                             for uuid in ('cn1', 'numa1_1', 'numa1_2'))
    assert cn1.anchors == {'cn1'}
    assert numa1_1.anchors is cn1.anchors and numa1_2.anchors is cn1.anchors
    assert snapshot.by_uuid['cn2'].anchors == {'cn2'}
    # A sharing provider's reach is its own: its root and its mates'.
    assert snapshot.by_uuid['ss1'].anchors == {'ss1', 'cn1', 'cn2'}
    assert snapshot.by_uuid['ss2'].anchors == {'ss2', 'cn1'}
    assert numa1_1.ancestors == ('numa1_1', 'cn1')
    given = {'VCPU': inv('VCPU', 24, allocation_ratio=16.0, used=5)}
    node = domain.ProviderNode('n', inventories=given,
                               traits=frozenset({'CUSTOM_A'}))
    assert node.inventories is given
    assert node.room('VCPU') == (24 * 16 - 5, 24)
    summary = domain.summarize(node)
    assert summary.resources == {'VCPU': {'capacity': 384, 'used': 5}}
    assert summary.traits == ['CUSTOM_A']


def test_requests_within_one_tree_share_its_set_of_roots():
    cloud = numa_aggregates()
    snapshot = cloud.snapshot()
    result = domain.find_candidates(
        snapshot, [group(resources={'VCPU': 1, 'DISK_GB': 10})],
        domain.RequestWide())
    alone = domain.find_candidates(
        snapshot, [group(resources={'VCPU': 1})], domain.RequestWide())
    spanning = within = 0
    for request in result.allocation_requests + alone.allocation_requests:
        roots = {snapshot.by_uuid[rp].root_uuid for rp in request.allocations}
        assert request.roots == roots
        if roots == {request.anchor}:
            assert request.roots is snapshot.by_uuid[request.anchor].anchors
            within += 1
        else:
            spanning += 1
    assert spanning and within


# -- root_required --------------------------------------------------------


def test_root_required_filters_anchors():
    cloud = numa_network()
    result = search(cloud, [group(resources={'VCPU': 1})],
                    root_required={'CUSTOM_FOO'})
    assert allocations(result) == [{'cn2': {'VCPU': 1}}]
    result = search(cloud, [group(resources={'VCPU': 1})],
                    root_forbidden={'CUSTOM_FOO'})
    assert sorted(sorted(a) for a in allocations(result)) == [
        ['numa0'], ['numa1']]
    # A trait on children only is no root trait.
    assert search(cloud, [group(resources={'VCPU': 1})],
                  root_required={'HW_NUMA_ROOT'}).allocation_requests == []


# -- limits, strategies, randomization ---------------------------------------


def wide_trees(computes=2, children=8, per_child=8):
    cloud = Cloud()
    for host in range(computes):
        compute = cloud.add('cn%d' % host, VCPU=8)
        for number in range(children):
            cloud.add('cn%d_pf%d' % (host, number), parent=compute,
                      SRIOV_NET_VF=per_child)
    return cloud


def vf_groups(count, amount=1):
    return [group('_P%d' % n, resources={'SRIOV_NET_VF': amount})
            for n in range(count)]


def test_limit_and_depth_first_order():
    result = search(wide_trees(), vf_groups(2), group_policy='isolate',
                    limit=5)
    assert len(result.allocation_requests) == 5
    assert {r.anchor for r in result.allocation_requests} == {'cn0'}
    assert len(result.provider_summaries) == 9


def test_breadth_first_alternates_roots():
    settings = domain.Settings(strategy=domain.BREADTH_FIRST)
    result = search(wide_trees(computes=3), vf_groups(2),
                    group_policy='isolate', limit=6, settings=settings)
    assert [r.anchor for r in result.allocation_requests] == [
        'cn0', 'cn1', 'cn2', 'cn0', 'cn1', 'cn2']
    assert len(result.provider_summaries) == 27


def test_max_allocation_candidates_bounds_generation():
    settings = domain.Settings(max_candidates=10)
    result = search(wide_trees(), vf_groups(3), group_policy='isolate',
                    settings=settings)
    assert len(result.allocation_requests) == 10
    result = search(wide_trees(), vf_groups(3), group_policy='isolate',
                    settings=settings, limit=4)
    assert len(result.allocation_requests) == 4


def test_deterministic_unless_randomized():
    first = search(wide_trees(computes=3), vf_groups(2),
                   group_policy='isolate', limit=20)
    again = search(wide_trees(computes=3), vf_groups(2),
                   group_policy='isolate', limit=20)
    assert first.allocation_requests == again.allocation_requests
    settings = domain.Settings(randomize=True, rng=random.Random(7))
    shuffled = search(wide_trees(computes=3), vf_groups(2),
                      group_policy='isolate', limit=20, settings=settings)
    assert len(shuffled.allocation_requests) == 20
    assert shuffled.allocation_requests != first.allocation_requests
    # A limited random answer spreads over the hosts, as a sample would.
    assert {r.anchor for r in shuffled.allocation_requests} == {
        'cn0', 'cn1', 'cn2'}
    everything = search(wide_trees(computes=3), vf_groups(2),
                        group_policy='isolate')
    keys = {str(r.mappings) for r in everything.allocation_requests}
    assert {str(r.mappings) for r in shuffled.allocation_requests} <= keys


# -- the explosion ----------------------------------------------------------


def test_eight_groups_over_eight_identical_children():
    cloud = wide_trees(computes=1, per_child=1)
    started = time.perf_counter()
    result = search(cloud, vf_groups(8), group_policy='isolate', limit=1000)
    assert time.perf_counter() - started < 1.0
    assert len(result.allocation_requests) == 1000
    assert all(len(r.allocations) == 8 for r in result.allocation_requests)
    # Every permutation is a candidate of its own: 8!.
    result = search(cloud, vf_groups(8), group_policy='isolate')
    assert len(result.allocation_requests) == 40320
    assert len({str(r.mappings) for r in result.allocation_requests}) == (
        40320)


def test_infeasible_wide_requests_fail_fast():
    cloud = wide_trees(computes=1, per_child=1)
    for policy in ('isolate', 'none'):
        started = time.perf_counter()
        result = search(cloud, vf_groups(9), group_policy=policy)
        assert result.allocation_requests == []
        assert time.perf_counter() - started < 0.5


def test_symmetry_pruning_alone_keeps_infeasible_search_small(monkeypatch):
    # Without the up-front counting checks the search itself must not
    # walk the 8! dead ends.
    monkeypatch.setattr(anchor_search.AnchorSearch, 'plausible',
                        lambda self: True)
    cloud = wide_trees(computes=1, per_child=1)
    started = time.perf_counter()
    assert search(cloud, vf_groups(9), group_policy='isolate'
                  ).allocation_requests == []
    assert time.perf_counter() - started < 0.5


def test_six_groups_over_two_computes_of_eight_pfs():
    cloud = wide_trees(computes=2, per_child=8)
    started = time.perf_counter()
    for policy in ('isolate', 'none'):
        result = search(cloud, vf_groups(6), group_policy=policy,
                        limit=1000)
        assert len(result.allocation_requests) == 1000
    assert time.perf_counter() - started < 1.0
    result = search(cloud, vf_groups(6), group_policy='isolate')
    assert len(result.allocation_requests) == 2 * 8 * 7 * 6 * 5 * 4 * 3


# -- probes and Placement's order of failures ---------------------------


def test_probes_bound_the_anchors():
    groups = [group(resources={'VCPU': 1}, required=['CUSTOM_A']),
              group('1', resources={'DISK_GB': 5}, member_of=[{'a1', 'a2'}])]
    probes = domain.plan_probes(groups, domain.RequestWide(
        root_required={'CUSTOM_R'}))
    kinds = sorted((p.group, p.kind) for p in probes if p.group is not None)
    assert kinds == [(0, 'rc'), (0, 'traits'), (1, 'aggs'), (1, 'rc')]
    found = domain.ProbeResult
    rows = {p.key: found() for p in probes}
    rows['root:CUSTOM_R'] = found(roots=frozenset({'r1', 'r2', 'r3'}),
                                  reach=frozenset({'elsewhere'}))
    rows['g0:t0'] = found(roots=frozenset({'r1', 'r2'}))
    rows['g0:r:VCPU'] = found(roots=frozenset({'r1', 'r2', 'r3'}))
    # a sharing provider in its own tree reaching r2 and r3
    rows['g1:a0'] = found(roots=frozenset({'s1'}),
                          reach=frozenset({'s1', 'r2', 'r3'}),
                          uuids=frozenset({'s1'}))
    rows['g1:r:DISK_GB'] = found(roots=frozenset({'s1', 'r1'}),
                                 reach=frozenset({'s1', 'r2', 'r3'}))
    assert domain.candidate_roots(probes, rows) == {'r2'}


def test_check_request_reports_in_placement_order():
    groups = [group('1', resources={'VCPU': 1}, required=['CUSTOM_X']),
              group('2', resources={'BOGUS': 1})]
    probes = domain.plan_probes(groups, domain.RequestWide())
    found = {p.key: domain.ProbeResult(roots=frozenset({'c'}))
             for p in probes}
    with pytest.raises(domain.UnknownTrait):
        domain.check_request(groups, domain.RequestWide(), {'BOGUS'},
                             {'CUSTOM_X'}, {}, probes, found)
    with pytest.raises(domain.UnknownResourceClass):
        domain.check_request(groups, domain.RequestWide(), {'BOGUS'},
                             set(), {}, probes, found)
    # A first group that matches nothing hides the second one's error.
    nothing = dict(found, **{'g0:r:VCPU': domain.ProbeResult()})
    assert domain.check_request(groups, domain.RequestWide(), {'BOGUS'},
                                set(), {}, probes, nothing) is False


# -- cross-check against a brute force product -------------------------------


def brute_force(snapshot, groups, wide):
    """Placement's definition, literally: per anchor, the product of every
    group's options, filtered.  Returns a set of (allocations, mappings)."""
    def anchors(node):
        found = {node.root_uuid}
        if node.sharing:
            for other in snapshot.providers:
                if other.aggregates & node.aggregates:
                    found.add(other.root_uuid)
        return found

    def anchor_ok(root):
        node = snapshot.by_uuid[root]
        return (wide.root_required <= node.traits
                and not wide.root_forbidden & node.traits)

    def fits(node, rc, amount):
        return provider_rules.has_capacity(node.inventories.get(rc), amount)

    results = set()
    roots = [n.uuid for n in snapshot.providers if n.parent_uuid is None]
    for root in roots:
        if not anchor_ok(root):
            continue
        per_group = []
        for g in groups:
            options = []
            if g.use_same_provider:
                for node in snapshot.providers:
                    if root not in anchors(node):
                        continue
                    if not all(s & node.traits for s in g.required_traits):
                        continue
                    if g.forbidden_traits & node.traits:
                        continue
                    if not all(s & node.aggregates for s in g.member_of):
                        continue
                    if g.forbidden_aggs & node.aggregates:
                        continue
                    if not all(fits(node, rc, a)
                               for rc, a in g.resources.items()):
                        continue
                    options.append(
                        ([(node, rc, a) for rc, a in g.resources.items()],
                         {g.suffix: {node.uuid}}))
            else:
                members = {n.uuid for n in snapshot.providers
                           if all(s & n.aggregates for s in g.member_of)}
                per_rc = []
                for rc, amount in g.resources.items():
                    choices = []
                    for node in snapshot.providers:
                        if not fits(node, rc, amount):
                            continue
                        if node.root_uuid == root:
                            pass
                        elif not (node.sharing and root in anchors(node)
                                  and (not g.member_of
                                       or node.uuid in members)):
                            continue
                        if g.member_of and not (node.uuid in members
                                                or root in members):
                            continue
                        if g.forbidden_aggs & (
                                node.aggregates
                                | snapshot.by_uuid[root].aggregates):
                            continue
                        choices.append(node)
                    per_rc.append([(node, rc, amount) for node in choices])
                for combo in itertools.product(*per_rc):
                    traits = set()
                    for node, _rc, _a in combo:
                        traits |= node.traits
                    if any(node.traits & g.forbidden_traits
                           for node, _rc, _a in combo):
                        continue
                    if not all(s & traits for s in g.required_traits):
                        continue
                    options.append((list(combo), {'': {
                        node.uuid for node, _rc, _a in combo}}))
            per_group.append(options)
        for choice in itertools.product(*per_group):
            if wide.group_policy == 'isolate':
                granular_rps = [next(iter(m.values())) for (_r, m), g
                                in zip(choice, groups) if g.use_same_provider]
                if len(set().union(*granular_rps)) != len(granular_rps):
                    continue
            mappings = {}
            for _resources, mapping in choice:
                for suffix, rps in mapping.items():
                    mappings.setdefault(suffix, set()).update(rps)
            if not all(domain.same_subtree(
                    {snapshot.by_uuid[rp] for s in subtree
                     for rp in mappings.get(s, ())})
                    for subtree in wide.same_subtrees):
                continue
            merged = collections.Counter()
            for resources, _mapping in choice:
                for node, rc, amount in resources:
                    merged[(node.uuid, rc)] += amount
            if any(snapshot.by_uuid[rp].inventories[rc].used + amount
                   > domain.int_capacity(snapshot.by_uuid[rp].inventories[rc])
                   or amount > snapshot.by_uuid[rp].inventories[rc].max_unit
                   for (rp, rc), amount in merged.items()):
                continue
            results.add((frozenset((rp, rc, a)
                                   for (rp, rc), a in merged.items()),
                         frozenset((s, frozenset(rps))
                                   for s, rps in mappings.items())))
    return results


def random_cloud(rng):
    cloud = Cloud()
    for host in range(rng.randint(1, 3)):
        root = cloud.add('r%d' % host, **random_inventory(rng),
                         traits=random_traits(rng),
                         aggs=rng.sample(['x', 'y'], rng.randint(0, 1)))
        previous = None
        for child in range(rng.randint(0, 5)):
            name = 'r%d_%d' % (host, child)
            if previous is not None and rng.random() < 0.5:
                # an identical sibling: what symmetry pruning is about
                cloud.add(name, parent=previous.parent_uuid,
                          traits=previous.traits, **previous.inventories)
                continue
            parent = root
            if child and rng.random() < 0.3:
                parent = 'r%d_%d' % (host, rng.randrange(child))
            cloud.add(name, parent=parent, traits=random_traits(rng),
                      **random_inventory(rng))
            previous = cloud.nodes[-1]
    if rng.random() < 0.6:
        cloud.add('share', traits=(SHARES,) + random_traits(rng),
                  aggs=rng.sample(['x', 'y'], rng.randint(1, 2)),
                  **random_inventory(rng))
    return cloud


def random_inventory(rng):
    found = {}
    for rc in rng.sample(['VCPU', 'VF'], rng.randint(1, 2)):
        total = rng.randint(1, 4)
        found[rc] = inv(rc, total, used=rng.randint(0, 1) if total > 1
                        else 0, max_unit=rng.randint(1, total))
    return found


def random_traits(rng):
    return tuple(rng.sample(['CUSTOM_A', 'CUSTOM_B'], rng.randint(0, 2)))


def random_groups(rng):
    groups = []
    if rng.random() < 0.6:
        groups.append(group(
            resources=random_amounts(rng, 2),
            required=['CUSTOM_A'] if rng.random() < 0.3 else [],
            member_of=['x'] if rng.random() < 0.2 else []))
    for number in range(rng.randint(1 if not groups else 0, 5)):
        resourceless = rng.random() < 0.15
        groups.append(group(
            '_%d' % number,
            resources={} if resourceless else random_amounts(rng, 1),
            required=(['CUSTOM_B'] if resourceless
                      else ['CUSTOM_A'] if rng.random() < 0.2 else []),
            forbidden=(['CUSTOM_B'] if not resourceless
                       and rng.random() < 0.2 else ())))
    return groups


def random_amounts(rng, count):
    classes = rng.sample(['VCPU', 'VF'], rng.randint(1, count))
    return {rc: rng.randint(1, 2) for rc in classes}


@pytest.mark.parametrize('seed', range(300))
def test_search_matches_brute_force(seed):
    rng = random.Random(seed)
    cloud = random_cloud(rng)
    groups = random_groups(rng)
    suffixes = [g.suffix for g in groups if g.suffix]
    subtrees = []
    if len(suffixes) > 1 and rng.random() < 0.4:
        subtrees = [set(rng.sample(suffixes, rng.randint(2, len(suffixes))))]
    resourceless = {g.suffix for g in groups if not g.resources}
    if resourceless - set().union(*subtrees):
        subtrees.append(resourceless | set(suffixes[:1]))
    wide = domain.RequestWide(
        group_policy=rng.choice(['none', 'isolate']),
        same_subtrees=subtrees,
        root_forbidden={'CUSTOM_B'} if rng.random() < 0.2 else set())
    snapshot = cloud.snapshot()
    expected = brute_force(snapshot, groups, wide)
    result = domain.find_candidates(cloud.snapshot(), groups, wide)
    got = [(frozenset((rp, rc, a) for rp, amounts in r.allocations.items()
                      for rc, a in amounts.items()),
            frozenset((s, frozenset(rps)) for s, rps in r.mappings.items()))
           for r in result.allocation_requests]
    assert len(got) == len(set(got))
    assert set(got) == expected


def random_request(rng, limit):
    """(groups, wide) of a random request; a resourceless group in a
    same_subtree; ``limit`` or none."""
    groups = random_groups(rng)
    suffixes = [g.suffix for g in groups if g.suffix]
    subtrees = []
    resourceless = {g.suffix for g in groups if not g.resources}
    if resourceless:
        subtrees.append(resourceless | set(suffixes[:1]))
    return groups, domain.RequestWide(
        group_policy=rng.choice(['none', 'isolate']), same_subtrees=subtrees,
        limit=rng.choice([None, None, limit]))


def compare_free_slots(seed, monkeypatch):
    """Search a random request with and without the replay of free slots
    and the product of independent ones; which of the two it used."""
    rng = random.Random(seed)
    cloud = random_cloud(rng)
    groups, wide = random_request(rng, limit=4)

    def ordered():
        result = domain.find_candidates(cloud.snapshot(), groups, wide)
        return [(r.anchor, r.allocations, r.mappings)
                for r in result.allocation_requests]

    used = set()
    replay = anchor_search.AnchorSearch._extend_free
    product = anchor_search.AnchorSearch._product

    def replaying(search, depth):
        used.add('replay')
        return replay(search, depth)

    def multiplying(search):
        used.add('product')
        return product(search)
    monkeypatch.setattr(anchor_search.AnchorSearch, '_extend_free', replaying)
    monkeypatch.setattr(anchor_search.AnchorSearch, '_product', multiplying)
    fast = ordered()
    monkeypatch.setattr(search_plan, '_mark_free', lambda slots, plan: None)
    monkeypatch.setattr(anchor_search.AnchorSearch, '_product',
                        lambda search: search._extend(0))
    assert fast == ordered()
    return used


@pytest.mark.parametrize('seed', range(300))
def test_free_slots_keep_the_search_order(seed, monkeypatch):
    """Slots nothing depends on are searched once and replayed: the same
    candidates in the same order as a plain search."""
    compare_free_slots(seed, monkeypatch)


def tally(compare, seeds):
    """The counts ``compare(seed, monkeypatch)`` returns, summed."""
    counts = collections.Counter()
    for seed in seeds:
        with pytest.MonkeyPatch.context() as monkeypatch:
            counts.update(compare(seed, monkeypatch))
    return counts


def test_cross_check_exercises_replay_and_product():
    used = tally(compare_free_slots, range(300))
    assert used['replay'] >= 10
    assert used['product'] >= 10


def flattened(pieces):
    return [item for piece in pieces
            for item in (piece.items if isinstance(piece, domain.Run)
                         else (piece,))]


def answer(result):
    # The pieces the renderer joins are the very lists, in order.
    if result.request_pieces is not None:
        assert flattened(result.request_pieces) == result.allocation_requests
    if result.summary_pieces is not None:
        assert flattened(result.summary_pieces) == result.provider_summaries
    return ([(r.anchor, r.allocations, r.mappings)
             for r in result.allocation_requests],
            [s.provider.uuid for s in result.provider_summaries])


def compare_remembered(seed, monkeypatch):
    """Candidates are remembered per anchor and search on the anchor's
    node: asked again on the same snapshot, or on one extended after some
    trees changed (usage moved, the sharing provider joined an
    aggregate), a search answers what a search on a fresh snapshot does.
    Returns how many anchors were searched by the first and by the second
    of two equal requests."""
    rng = random.Random(seed)
    cloud = random_cloud(rng)
    requests = [random_request(rng, limit=2) for _request in range(3)]
    searched = []
    run = anchor_search.AnchorSearch.run

    def counting(search):
        searched.append(search.anchor)
        return run(search)
    monkeypatch.setattr(anchor_search.AnchorSearch, 'run', counting)

    counts = collections.Counter()
    snapshot = domain.Snapshot(mates=None)
    snapshot.add(cloud.snapshot().providers)
    for _step in range(4):
        for groups, wide in requests:
            expected = answer(domain.find_candidates(cloud.snapshot(),
                                                     groups, wide))
            for ask in ('first', 'second'):
                del searched[:]
                result = domain.find_candidates(snapshot, groups, wide)
                assert answer(result) == expected
                counts[ask] += len(searched)
                counts[ask + ' runs'] += sum(
                    isinstance(piece, domain.Run)
                    for piece in result.request_pieces or ())
        # A write: a host's usage moves, or the sharing provider joins
        # the other aggregate.  Its tree (and the sharing provider's,
        # whose reach depends on the others) is made anew.
        changed = rng.choice([node for node in cloud.nodes
                              if node.parent_uuid is None])
        if changed.uuid == 'share':
            changed.aggregates = frozenset(['x', 'y'])
        else:
            changed.inventories = {
                rc: dataclasses.replace(inventory, used=rng.randint(
                    0, min(1, inventory.total)))
                for rc, inventory in changed.inventories.items()}
        dropped = {changed.root_uuid, 'share'}
        fresh = [node for node in cloud.snapshot().providers
                 if node.root_uuid in dropped]
        mates = {node.uuid: {other.root_uuid for other in cloud.nodes
                             if other.aggregates & node.aggregates}
                 for node in cloud.nodes if node.sharing}
        snapshot = domain.Snapshot.extend(snapshot, dropped, fresh, mates)
    return counts


@pytest.mark.parametrize('seed', range(100))
def test_remembered_candidates_are_what_a_fresh_search_finds(
        seed, monkeypatch):
    compare_remembered(seed, monkeypatch)


def test_a_search_asked_again_searches_fewer_anchors():
    # Not all: anchors that sharing providers reach, or whose candidates
    # a limit cut, are searched again.
    counts = tally(compare_remembered, range(100))
    assert counts['first'] > 100
    assert counts['second'] < counts['first'] * 0.7
    # What was remembered comes back whole, as Runs.
    assert counts['second runs'] > counts['first runs']


def test_an_extended_snapshot_indexes_what_a_fresh_one_would():
    """Snapshot.extend keeps the earlier snapshot's kept trees (the very
    nodes), drops the others, adds the fresh ones: the same indexes as a
    snapshot made of those nodes at once."""
    rng = random.Random(5)
    for _case in range(50):
        cloud = Cloud()
        for host in range(rng.randint(2, 8)):
            root = cloud.add('h%d' % host, **random_inventory(rng))
            for child in range(rng.randint(0, 3)):
                cloud.add('h%d_%d' % (host, child), parent=root,
                          **random_inventory(rng))
        earlier = domain.Snapshot(mates={})
        earlier.add(cloud.nodes)
        roots = list(earlier.trees)
        kept = rng.sample(roots, rng.randrange(len(roots) + 1))
        # The others changed (fresh nodes, maybe fewer) or are gone; and
        # a new tree came.
        fresh = []
        for root in roots:
            if root in kept or rng.random() < 0.3:
                continue
            fresh.extend(domain.ProviderNode(
                node.uuid, node.parent_uuid, node.root_uuid, node.seq,
                node.traits, node.aggregates, node.inventories)
                for node in earlier.trees[root] if rng.random() < 0.8
                or node.uuid == root)
        fresh.append(domain.ProviderNode('new', seq=99,
                                         inventories=random_inventory(rng)))
        dropped = set(roots).difference(kept)
        extended = domain.Snapshot.extend(earlier, dropped, fresh, mates={})
        whole = domain.Snapshot(mates={})
        whole.add([node for root in kept for node in earlier.trees[root]]
                  + fresh)
        assert extended.by_uuid == whole.by_uuid
        assert extended.trees == whole.trees
        assert extended.tree_classes == whole.tree_classes
        for root in kept:
            assert extended.trees[root] is earlier.trees[root]


def test_identity_memo_answers_the_very_operands_only():
    memo = domain.IdentityMemo(size=2)
    calls = []

    def union(one, other):
        calls.append((one, other))
        return one | other
    a, b = frozenset('ab'), frozenset('bc')
    first = memo(union, a, b)
    assert first == frozenset('abc')
    assert memo(union, a, b) is first and len(calls) == 1
    # Equal but other objects: computed again (never a stale answer for
    # an id reused by another object: the memo holds its operands).
    assert memo(union, frozenset('ab'), b) == first and len(calls) == 2
    memo(union, b, a)
    memo(union, a, a)           # over size: forgets, still right
    assert memo(union, a, b) == first
