"""Each data fixture the gabbi files name starts, and built what it should.

A broken fixture otherwise shows up only as the first test of some YAML
file erroring; here it fails by name, with a few counts checked through
the API.
"""
import os

from oslo_utils.fixture import uuidsentinel as uuids
import pytest

# Imported through gabbits, as the gabbi runner finds them.
from tachyon_placement.tests.functional.fixtures import gabbits
from tachyon_placement.tests.functional.fixtures import seed


class Api:
    def __init__(self, app):
        self.app = app

    def get(self, url, version='latest'):
        return seed.Seeder(self.app, version=version).call('GET', url)

    def providers(self):
        return self.get('/resource_providers')['resource_providers']

    def provider(self, uuid):
        return self.get('/resource_providers/%s' % uuid)

    def usages(self, uuid):
        return self.get('/resource_providers/%s/usages' % uuid)['usages']

    def inventory(self, uuid, rc):
        return self.get('/resource_providers/%s/inventories' % uuid)[
            'inventories'][rc]

    def traits(self, uuid):
        return set(self.get('/resource_providers/%s/traits' % uuid)['traits'])

    def aggregates(self, uuid):
        return set(self.get('/resource_providers/%s/aggregates' % uuid)[
            'aggregates'])

    def roots(self):
        return sorted(rp['name'] for rp in self.providers()
                      if rp['root_provider_uuid'] == rp['uuid'])


def env(name):
    return os.environ[name]


def check_allocation(api):
    assert len(api.providers()) == 1
    rp = env('RP_UUID')
    assert api.provider(rp)['name'] == env('RP_NAME')
    # Two inventory writes and three allocation writes, as upstream
    # (with-allocations.yaml and reshaper.yaml hard-code it).
    assert api.provider(rp)['generation'] == 5
    assert api.usages(rp) == {'DISK_GB': 1020, 'VCPU': 7}
    assert api.inventory(rp, 'DISK_GB')['step_size'] == 10
    first = api.get('/allocations/%s' % env('CONSUMER_0'), '1.38')
    assert first['allocations'][rp]['resources'] == {'DISK_GB': 1000}
    assert first['consumer_type'] == 'unknown'
    assert first['consumer_generation'] == 1
    assert first['user_id'] == env('USER_ID')
    alt = api.get('/allocations/%s' % env('ALT_CONSUMER_ID'))
    assert alt['allocations'][rp]['resources'] == {'DISK_GB': 20, 'VCPU': 1}
    assert alt['user_id'] == env('ALT_USER_ID')
    assert alt['project_id'] == env('PROJECT_ID')
    assert api.get('/allocations/%s' % env('CONSUMER_ID'))[
        'allocations'][rp]['resources'] == {'VCPU': 6}
    assert env('ALT_RP_UUID') not in {rp['uuid'] for rp in api.providers()}


def check_shared_storage(api):
    assert len(api.providers()) == 12
    assert api.roots() == ['cn1', 'cn2', 'ss', 'ss2']
    for name in ('CN1_UUID', 'CN2_UUID', 'SS_UUID', 'SS2_UUID'):
        assert api.aggregates(env(name)) == {env('AGG_UUID')}
    assert 'MISC_SHARES_VIA_AGGREGATE' in api.traits(env('SS2_UUID'))
    assert api.inventory(env('CN1_UUID'), 'VCPU')['allocation_ratio'] == 16.0
    assert api.inventory(env('SS_UUID'), 'DISK_GB')['reserved'] == 100
    pf = api.provider(env('PF2_2_UUID'))
    assert pf['parent_provider_uuid'] == env('NUMA2_2_UUID')
    assert pf['root_provider_uuid'] == env('CN2_UUID')
    assert api.inventory(env('PF2_2_UUID'), 'SRIOV_NET_VF')['total'] == 8


def check_numa_aggregate(api):
    assert len(api.providers()) == 8
    assert api.aggregates(env('CN2_UUID')) == {env('AGGA_UUID'),
                                               env('AGGB_UUID')}
    assert api.aggregates(env('NUMA1_1_UUID')) == {env('AGGC_UUID')}
    assert api.aggregates(env('NUMA1_2_UUID')) == set()
    assert api.aggregates(env('SS2_UUID')) == {env('AGGC_UUID')}
    assert api.inventory(env('NUMA2_1_UUID'), 'VCPU')['total'] == 24


def check_numa_network(api, total=24):
    assert len(api.providers()) == total
    assert api.usages(env('NUMA0_UUID')) == {'VCPU': 2, 'MEMORY_MB': 0}
    assert api.usages(env('CN2_UUID'))['VCPU'] == 3
    memory = api.inventory(env('NUMA0_UUID'), 'MEMORY_MB')
    assert (memory['min_unit'], memory['step_size']) == (512, 256)
    assert api.inventory(env('NUMA1_UUID'), 'MEMORY_MB')['max_unit'] == 1024
    assert api.traits(env('NUMA1_UUID')) == {'HW_NUMA_ROOT', 'CUSTOM_FOO'}
    assert api.aggregates(env('CN1_UUID')) == {env('AGGA_UUID')}
    pf = api.provider(env('PF2_4_UUID'))
    assert pf['parent_provider_uuid'] == env('NIC2_UUID')
    assert api.traits(env('PF2_4_UUID')) == {'CUSTOM_PHYSNET2'}
    assert api.inventory(env('PF3_1_UUID'), 'CUSTOM_VF')['total'] == 8
    assert api.provider(env('ESN2_UUID'))[
        'parent_provider_uuid'] == env('SRIOV_AGENT_UUID')
    assert api.provider(env('FPGA1_1_UUID'))[
        'parent_provider_uuid'] == env('NUMA1_UUID')


def check_deep_numa_network(api):
    check_numa_network(api, total=27)
    assert api.roots() == ['gp1', 'ss1']
    cn1 = api.provider(env('CN1_UUID'))
    assert cn1['parent_provider_uuid'] == uuids.p1
    assert cn1['root_provider_uuid'] == uuids.gp1
    assert api.provider(env('PF3_1_UUID'))['root_provider_uuid'] == uuids.gp1


def check_non_shared_storage(api):
    assert api.roots() == ['cn1', 'cn2', 'cn3']
    assert env('AGGA_UUID') != env('AGGB_UUID')
    assert api.aggregates(env('CN3_UUID')) == set()
    assert api.inventory(env('CN3_UUID'), 'MEMORY_MB')['total'] == 131072


def check_granular(api):
    assert len(api.providers()) == 6
    assert env('AGGB') == uuids.aggB
    assert api.aggregates(env('CN_MIDDLE')) == {uuids.aggA, uuids.aggB}
    assert api.aggregates(env('SHR_NET')) == {uuids.aggC}
    assert api.inventory(env('CN_RIGHT'), 'VGPU')['max_unit'] == 2
    assert api.inventory(env('SHR_NET'), 'CUSTOM_NET_MBPS')['total'] == 40000
    assert api.traits(env('SHR_DISK_1')) == {'MISC_SHARES_VIA_AGGREGATE',
                                             'CUSTOM_DISK_SSD'}


def check_neutron_qos(api):
    assert len(api.providers()) == 22
    assert api.roots() == ['compute0', 'compute1', 'compute2', 'compute3']
    bridge = api.provider(env('compute3:br_ex2'))
    assert bridge['name'] == 'compute3:Open vSwitch agent:br-ex2'
    assert bridge['parent_provider_uuid'] == env('compute3:ovs_agent')
    assert 'CUSTOM_PHYSNET_MSN_S2' in api.traits(env('compute3:pf1'))
    assert api.inventory(env('compute1:pf0'),
                         'NET_BW_IGR_KILOBIT_PER_SEC')['total'] == 10000
    assert api.inventory(env('compute2:ovs_agent'),
                         'NET_PACKET_RATE_KILOPACKET_PER_SEC')['total'] == 1000


CHECKS = {
    'AllocationFixture': check_allocation,
    'SharedStorageFixture': check_shared_storage,
    'NUMAAggregateFixture': check_numa_aggregate,
    'NUMANetworkFixture': check_numa_network,
    'DeepNUMANetworkFixture': check_deep_numa_network,
    'NonSharedStorageFixture': check_non_shared_storage,
    'GranularFixture': check_granular,
    'NeutronQoSMultiSegmentFixture': check_neutron_qos,
}


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_fixture_builds_its_topology(name):
    fixture = getattr(gabbits, name)()
    fixture.start_fixture()
    try:
        CHECKS[name](Api(fixture.app))
    finally:
        fixture.stop_fixture()
