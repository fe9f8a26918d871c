"""Many clients racing for the last units of capacity never over-allocate.

A real served instance (its console script, embedded engine), 16 client
threads, several rounds: each client claims random amounts on random
providers with PUT /allocations (or POST /allocations for two consumers at
once), sometimes moves or drops its claims.  Afterwards every inventory is
within capacity, every 2xx claim is present exactly as written, every 409
left nothing behind, and usages equal the sum of allocations.
"""
import collections
import random
import threading
import uuid as uuidlib

from tachyon_placement.tests.functional import served

CLIENTS = 16
ROUNDS = 12
PROVIDERS = 3
VCPU_TOTAL = 10


def test_racing_claims_never_over_allocate(tmp_path):
    api = served.ServedPlacement(tmp_path).start()
    try:
        providers = []
        for number in range(PROVIDERS):
            status, body = api.request('POST', '/resource_providers',
                                       {'name': 'race%d' % number})
            assert status == 200, body
            rp = body['uuid']
            status, body = api.request(
                'PUT', '/resource_providers/%s/inventories' % rp,
                {'resource_provider_generation': 0,
                 'inventories': {
                     'VCPU': {'total': VCPU_TOTAL, 'max_unit': VCPU_TOTAL},
                     'MEMORY_MB': {'total': 4096, 'max_unit': 4096}}})
            assert status == 200, body
            providers.append(rp)

        lock = threading.Lock()
        expected = {}      # consumer -> {rp: {rc: used}} after last 2xx
        outcomes = collections.Counter()
        errors = []

        def claim_body(allocations, generation):
            return {'allocations': {rp: {'resources': res}
                                    for rp, res in allocations.items()},
                    'project_id': 'race-project', 'user_id': 'race-user',
                    'consumer_generation': generation,
                    'consumer_type': 'INSTANCE'}

        def client(seed):
            rnd = random.Random(seed)
            mine = {}   # consumer -> generation
            for _round in range(ROUNDS):
                choice = rnd.random()
                if choice < 0.6 or not mine:
                    consumer = str(uuidlib.UUID(int=rnd.getrandbits(128)))
                    allocations = {rnd.choice(providers): {
                        'VCPU': rnd.randint(1, 4),
                        'MEMORY_MB': rnd.choice([256, 512])}}
                    status, body = api.request(
                        'PUT', '/allocations/%s' % consumer,
                        claim_body(allocations, None))
                    key = 'claim'
                elif choice < 0.8:
                    consumer = rnd.choice(sorted(mine))
                    allocations = {rnd.choice(providers): {
                        'VCPU': rnd.randint(1, 3)}}
                    status, body = api.request(
                        'PUT', '/allocations/%s' % consumer,
                        claim_body(allocations, mine[consumer]))
                    key = 'move'
                else:
                    consumer = rnd.choice(sorted(mine))
                    allocations = {}
                    status, body = api.request(
                        'DELETE', '/allocations/%s' % consumer)
                    key = 'delete'
                with lock:
                    outcomes['%s %s' % (key, status)] += 1
                    if status == 204:
                        if allocations:
                            expected[consumer] = allocations
                            mine[consumer] = mine.get(consumer, 0) + 1
                        else:
                            expected.pop(consumer, None)
                            mine.pop(consumer, None)
                    elif status != 409:
                        errors.append((key, status, body))

        threads = [threading.Thread(target=client, args=(seed,))
                   for seed in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not errors, errors[:5]
        # The race really happened: some claims won, some lost.
        assert outcomes['claim 204'] > 0, outcomes
        assert outcomes['claim 409'] > 0, outcomes

        totals = collections.defaultdict(collections.Counter)
        for consumer, allocations in expected.items():
            status, body = api.request('GET', '/allocations/%s' % consumer)
            assert status == 200
            got = {rp: alloc['resources']
                   for rp, alloc in body['allocations'].items()}
            assert got == allocations, consumer
            for rp, resources in allocations.items():
                totals[rp].update(resources)
        for rp in providers:
            status, body = api.request(
                'GET', '/resource_providers/%s/usages' % rp)
            assert status == 200
            usages = body['usages']
            assert usages['VCPU'] <= VCPU_TOTAL
            assert usages == {'VCPU': totals[rp]['VCPU'],
                              'MEMORY_MB': totals[rp]['MEMORY_MB']}
            status, body = api.request(
                'GET', '/resource_providers/%s/allocations' % rp)
            listed = {consumer for consumer in body['allocations']}
            assert listed == {consumer for consumer, allocations
                              in expected.items() if rp in allocations}
    finally:
        api.stop()
