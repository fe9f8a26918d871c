"""Writers on distinct consumers of one provider rarely see a 409.

Each claim bumps the provider's generation, so concurrent claims on one
provider collide and retry (``allocation_conflict_retry_count``).  Within
one API process writers on the same provider take turns; across processes
(API workers sharing one engine) they race, and a randomised, growing
pause between attempts spreads them apart.  Either way nearly every claim
succeeds, as it would one after the other (the capacity is ample).  Nova
counts each 409 ``placement.concurrent_update`` as a failed claim.
"""
import collections
import threading
import uuid as uuidlib

import pytest

from tachyon_placement.tests.functional import served

WRITERS = 16
CLAIMS_EACH = 40
MAX_CONFLICT_RATE = 0.005


@pytest.mark.parametrize('processes', [1, 4, 16])
def test_sixteen_writers_on_one_provider(tmp_path, processes):
    api = served.ServedPlacement(tmp_path / 'api0').start()
    workers = [api]
    for number in range(1, processes):
        workers.append(served.ServedPlacement(
            tmp_path / ('api%d' % number), data_dir=api.data_dir).start())
    try:
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'busy-host'})
        assert status == 200, body
        provider = body['uuid']
        status, body = api.request(
            'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': 100000, 'max_unit': 8},
                             'MEMORY_MB': {'total': 10 ** 7,
                                           'max_unit': 4096}}})
        assert status == 200, body

        outcomes = collections.Counter()
        lock = threading.Lock()
        start = threading.Barrier(WRITERS)

        def writer(worker):
            start.wait()
            for _claim in range(CLAIMS_EACH):
                status, body = worker.request(
                    'PUT', '/allocations/%s' % uuidlib.uuid4(),
                    {'allocations': {provider: {'resources': {
                        'VCPU': 1, 'MEMORY_MB': 256}}},
                     'project_id': 'p', 'user_id': 'u',
                     'consumer_generation': None,
                     'consumer_type': 'INSTANCE'})
                code = body['errors'][0].get('code') if body else None
                with lock:
                    outcomes[(status, code)] += 1

        threads = [threading.Thread(target=writer,
                                    args=(workers[number % processes],))
                   for number in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        total = WRITERS * CLAIMS_EACH
        conflicts = outcomes[(409, 'placement.concurrent_update')]
        print('\n%d writers in %d processes, %d PUTs: %s; '
              'concurrent_update rate %.2f %%'
              % (WRITERS, processes, total, dict(outcomes),
                 100.0 * conflicts / total))
        assert sum(outcomes.values()) == total
        assert set(outcomes) <= {(204, None),
                                 (409, 'placement.concurrent_update')}, \
            outcomes
        assert conflicts <= MAX_CONFLICT_RATE * total, outcomes
        status, body = api.request(
            'GET', '/resource_providers/%s/usages' % provider)
        assert body['usages']['VCPU'] == outcomes[(204, None)], body
    finally:
        for worker in reversed(workers):
            worker.stop()
