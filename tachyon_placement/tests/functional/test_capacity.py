"""GET /tachyon/capacity's bound on the candidates it enumerates ([capacity]
max_candidates), served by gunicorn on the suite's engine: a host of eight
identical children asked for isolated granular groups (8 x 7 x ... of
them: every permutation is its own candidate)."""
import uuid

import pytest

from tachyon_placement.tests.functional import served

MOST = 1000


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    served_api = served.ServedGunicorn(
        tmp_path_factory.mktemp('capacity'),
        extra_conf='[capacity]\nmax_candidates = %d\n' % MOST).start()
    yield served_api
    served_api.stop()


@pytest.fixture(scope='module')
def wide_host(api):
    host = str(uuid.uuid4())
    status, _ = api.request('POST', '/resource_providers',
                            {'name': 'wide', 'uuid': host})
    assert status == 200
    for number in range(8):
        child = str(uuid.uuid4())
        status, _ = api.request('POST', '/resource_providers', {
            'name': 'wide-gpu%d' % number, 'uuid': child,
            'parent_provider_uuid': host})
        assert status == 200
        status, _ = api.request(
            'PUT', '/resource_providers/%s/inventories' % child,
            {'resource_provider_generation': 0,
             'inventories': {'VGPU': {'total': 1}}})
        assert status == 200
    return host


def _groups(count):
    return '&'.join('resources%d=VGPU:1' % number
                    for number in range(1, count + 1)) + (
        '&group_policy=isolate')


def test_within_the_bound_the_count_is_made(api, wide_host):
    # 3 groups: 8 x 7 x 6 = 336 candidates; 8 GPUs take 2 instances.
    status, body = api.request('GET', '/tachyon/capacity?' + _groups(3),
                               service='tachyon', version='1.0')
    assert status == 200, body
    assert body['total'] == 2
    assert body['hosts'][0]['root_provider_uuid'] == wide_host


def test_past_the_bound_the_request_is_refused(api, wide_host):
    # 4 groups: 8 x 7 x 6 x 5 = 1,680 candidates.
    status, body = api.request('GET', '/tachyon/capacity?' + _groups(4),
                               service='tachyon', version='1.0')
    assert status == 400, body
    error = body['errors'][0]
    assert error['code'] == 'tachyon.capacity.too_many_candidates'
    assert 'more than 1000 allocation candidates' in error['detail']
    # The service answers on.
    status, body = api.request('GET', '/tachyon/capacity?' + _groups(2),
                               service='tachyon', version='1.0')
    assert status == 200 and body['total'] == 4
