"""Every write that changes a provider moves the graph version and stamps
that provider (the contract the per-process graph snapshot relies on)."""
import pytest

from tachyon_placement.graph.cypher import Statement
from tachyon_placement.tests.functional.fixtures import gabbits

STAMPS = Statement('test_stamps', common="""
MATCH (rp:ResourceProvider)
RETURN rp.name AS name, rp.stamp AS stamp
""")
TOMBSTONES = Statement('test_tombstones', common="""
MATCH (t:Tombstone) RETURN t.uuid AS uuid, t.stamp AS stamp
""")


@pytest.fixture
def service():
    fixture = gabbits.APIFixture()
    fixture.start_fixture()
    yield fixture
    fixture.stop_fixture()


def _stamps(service):
    return {row['name']: row['stamp']
            for row in service.engine.read(STAMPS)}


def test_writes_move_the_version_and_stamp_what_they_change(service):
    store, seed = service.app.store, service.seed
    version = store.graph_version()[0]

    def moved(*names):
        nonlocal version
        new_version = store.graph_version()[0]
        assert new_version > version
        stamps = _stamps(service)
        for name in names:
            assert stamps[name] == new_version, name
        version = new_version

    cn = seed.create_provider('cn')
    moved('cn')
    child = seed.create_provider('child', parent=cn)
    moved('child')
    seed.add_inventory(cn, 'VCPU', 8)
    moved('cn')
    seed.set_traits(child, 'CUSTOM_GOLD')
    moved('child')
    seed.set_aggregates(cn, 'c0c4d3f8-6a3f-4a4e-9a52-5f3b1b3d7f6a')
    moved('cn')
    seed.call('PUT', '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f', {
        'allocations': {cn: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    moved('cn')
    seed.call('DELETE',
              '/allocations/9d7c4f2a-0c0e-4b7e-8a86-1b8c2a3d4e5f')
    moved('cn')
    # Un-parenting moves the child's whole subtree to a new root.
    grandchild = seed.create_provider('grandchild', parent=child)
    moved('grandchild')
    seed.call('PUT', '/resource_providers/%s' % child,
              {'name': 'child', 'parent_provider_uuid': None})
    moved('child', 'grandchild')
    seed.call('DELETE', '/resource_providers/%s' % grandchild)
    new_version = store.graph_version()[0]
    assert new_version > version
    assert {row['uuid']: row['stamp']
            for row in service.engine.read(TOMBSTONES)} == {
        grandchild: new_version}


def test_a_failed_guard_moves_nothing(service):
    store, seed = service.app.store, service.seed
    cn = seed.create_provider('cn')
    version = store.graph_version()[0]
    seed.call('PUT', '/resource_providers/%s/inventories' % cn,
              {'resource_provider_generation': 42,
               'inventories': {'VCPU': {'total': 1}}}, expect=(409,))
    assert store.graph_version()[0] == version
