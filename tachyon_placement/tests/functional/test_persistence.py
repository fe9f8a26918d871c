"""Data survives a restart of the service and of its embedded engine."""
import signal

from tachyon_placement.tests.functional import served


def test_providers_survive_restart(tmp_path):
    api = served.ServedPlacement(tmp_path).start()
    try:
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'cn1'})
        assert status == 200, body
        uuid = body['uuid']
        status, _ = api.request('PUT', '/resource_classes/CUSTOM_GOLD')
        assert status == 201
    finally:
        api.stop()
    # The embedded engine stopped with the service (last user released it).
    api.start()
    try:
        status, body = api.request('GET', '/resource_providers/%s' % uuid)
        assert status == 200, body
        assert body['name'] == 'cn1'
        status, _ = api.request('GET', '/resource_classes/CUSTOM_GOLD')
        assert status == 200
    finally:
        api.stop()


def test_providers_survive_sigkill(tmp_path):
    api = served.ServedPlacement(tmp_path).start()
    try:
        created = []
        for number in range(20):
            status, body = api.request('POST', '/resource_providers',
                                       {'name': 'host%d' % number})
            assert status == 200, body
            created.append(body['uuid'])
    finally:
        api.stop(signal.SIGKILL)
    api.start()
    try:
        status, body = api.request('GET', '/resource_providers')
        assert status == 200
        assert sorted(rp['uuid'] for rp in body['resource_providers']) == (
            sorted(created))
    finally:
        api.stop()
