"""capacity/counting.py: the closed form gives what claiming the request
again and again gives, on generated providers and requests."""
import dataclasses

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tachyon_placement.capacity import counting
from tachyon_placement.domain import candidates as domain
from tachyon_placement.domain import models

CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


@st.composite
def inventories(draw):
    found = {}
    for rc in draw(st.sets(st.sampled_from(CLASSES), min_size=1)):
        total = draw(st.integers(1, 300))
        reserved = draw(st.integers(0, total))
        ratio = draw(st.sampled_from((1.0, 1.5, 4.0, 0.5)))
        min_unit = draw(st.integers(1, 8))
        max_unit = draw(st.integers(min_unit, 64))
        step = draw(st.sampled_from((1, 1, 2, 4)))
        capacity = int((total - reserved) * ratio)
        used = draw(st.integers(0, max(0, capacity)))
        found[rc] = models.Inventory(rc, total, reserved, min_unit,
                                     max_unit, step, ratio, used)
    return found


@st.composite
def requests(draw):
    resources = {rc: draw(st.integers(1, 40)) for rc in draw(
        st.sets(st.sampled_from(CLASSES), min_size=1, max_size=2))}
    suffix = draw(st.sampled_from(('', '1')))
    required = draw(st.lists(st.just({'CUSTOM_FAST'}), max_size=1))
    return [domain.RequestGroup(suffix=suffix, resources=resources,
                                required_traits=required)]


@settings(max_examples=300, deadline=None)
@given(inventories(), requests(), st.booleans())
def test_a_flat_hosts_closed_form_is_the_claims(inventory, groups, fast):
    traits = {'CUSTOM_FAST'} if fast else set()
    nodes = [domain.ProviderNode('host', seq=0, traits=traits,
                                 inventories=inventory)]
    wide = domain.RequestWide(group_policy='none')
    closed = counting.closed_form(nodes, groups, wide)
    assert closed is not None
    assert closed == counting.claimed_until_full(nodes, groups, wide)


def test_a_nested_tree_is_counted_by_its_claims():
    # Two NUMA nodes of 8 VCPUs and 16 GiB: a granular request of 3 VCPUs
    # and 4 GiB takes 2 per node (VCPU runs out), 4 in all; the closed
    # form does not apply.
    inventory = {'VCPU': models.Inventory('VCPU', 8),
                 'MEMORY_MB': models.Inventory('MEMORY_MB', 16384)}
    nodes = [domain.ProviderNode('host', seq=0)] + [
        domain.ProviderNode('numa%d' % n, parent_uuid='host',
                            root_uuid='host', seq=n + 1,
                            inventories=inventory) for n in (0, 1)]
    groups = [domain.RequestGroup(suffix='1', resources={
        'VCPU': 3, 'MEMORY_MB': 4096})]
    wide = domain.RequestWide(group_policy='none')
    assert counting.closed_form(nodes, groups, wide) is None
    assert counting.count(nodes, groups, wide) == counting.Count(4)
    # The usage each claim leaves: nothing changed in place.
    assert all(not inv.used for inv in nodes[1].inventories.values())


def test_a_count_stops_at_its_bound():
    nodes = [domain.ProviderNode('host', seq=0, inventories={
        'VCPU': models.Inventory('VCPU', 50)})]
    groups = [domain.RequestGroup(suffix='1', resources={'VCPU': 1})]
    wide = domain.RequestWide()
    assert counting.claimed_until_full(nodes, groups, wide,
                                       max_claims=10) == counting.Count(
        10, exact=False)
    assert counting.count(nodes, groups, wide) == counting.Count(50)
    assert dataclasses.replace(wide, limit=1).limit == 1
