"""[weighing] host_subset_size: the best N hosts of a weighted order come
in random order, so concurrent schedulers spread their claims."""
import collections
import uuid as uuidlib

from tachyon_placement.tests.functional import served


def test_the_best_hosts_take_turns_first(tmp_path):
    api = served.ServedPlacement(
        tmp_path / 'api',
        extra_conf='[weighing]\nhost_subset_size = 2\n').start()
    try:
        hosts = {}
        for name, used in (('host-a', 0), ('host-b', 2), ('host-c', 6)):
            status, body = api.request('POST', '/resource_providers',
                                       {'name': name})
            assert status == 200, body
            hosts[body['uuid']] = name
            status, body = api.request(
                'PUT', '/resource_providers/%s/inventories' % body['uuid'],
                {'resource_provider_generation': 0,
                 'inventories': {'VCPU': {'total': 8}}})
            assert status == 200, body
            if used:
                provider = [uuid for uuid, host in hosts.items()
                            if host == name][0]
                status, body = api.request(
                    'PUT', '/allocations/%s' % uuidlib.uuid4(),
                    {'allocations': {provider: {'resources': {
                        'VCPU': used}}},
                     'project_id': 'p', 'user_id': 'u',
                     'consumer_generation': None,
                     'consumer_type': 'INSTANCE'})
                assert status == 204, body
        status, body = api.request('PUT', '/tachyon/weighers/spread-cpu', {
            'weight': 1, 'scorer': {'type': 'usage',
                                    'resource_class': 'VCPU'}})
        assert status == 201, body
        firsts = collections.Counter()
        for _ in range(40):
            status, body = api.request(
                'GET', '/allocation_candidates?resources=VCPU:1')
            assert status == 200, body
            order = [hosts[next(iter(item['allocations']))]
                     for item in body['allocation_requests']]
            assert sorted(order[:2]) == ['host-a', 'host-b']
            assert order[2] == 'host-c'
            firsts[order[0]] += 1
        # Both of the two best came first (40 draws: 2 ** -39 to fail).
        assert set(firsts) == {'host-a', 'host-b'}, firsts
    finally:
        api.stop()
