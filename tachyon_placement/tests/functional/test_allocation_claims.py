"""Claims: allocations for new consumers planned on the providers' states
the process holds, written in one guarded statement (graph/allocations.py
CLAIM); whatever the graph became since, it writes only what a locked
read, check and write would have written, and otherwise that path
decides, with Placement's answer; and removals in one statement
(REMOVE)."""
A, B, C = ('1b9f3c2e-8a4d-4c61-9e0f-5d7a2b3c4e01',
           '2c8e4d3f-9b5e-4d72-8f1a-6e8b3c4d5f02',
           '3d7f5e4a-0c6f-4e83-9a2b-7f9c4d5e6a03')


def _recorded_writes(store, monkeypatch):
    """The names of the statements the engine writes from now on."""
    writes = []
    write = store.engine.write

    def recorded(statement, **params):
        writes.append(statement.name)
        return write(statement, **params)
    monkeypatch.setattr(store.engine, 'write', recorded)
    return writes


def _claim(consumer, host, vcpu, generation=None):
    return {'allocations': {host: {'resources': {'VCPU': vcpu}}},
            'project_id': 'p', 'user_id': 'u',
            'consumer_generation': generation,
            'consumer_type': 'INSTANCE'}


def test_a_claim_on_an_old_copy_writes_only_what_the_graph_allows(
        service, monkeypatch):
    store, seed = service.app.store, service.seed
    host = seed.create_provider('claimed')
    seed.add_inventory(host, 'VCPU', 4)
    # The copy of the graph this process plans claims on stays as it is
    # now: no VCPU used, 4 in all.
    old = store.worlds.current()
    monkeypatch.setattr(store.worlds, 'latest', lambda: old)
    writes = _recorded_writes(store, monkeypatch)

    def put(consumer, vcpu, generation=None, expect=(204,)):
        del writes[:]
        return seed.call('PUT', '/allocations/%s' % consumer,
                         _claim(consumer, host, vcpu, generation),
                         expect=expect)

    def used():
        return seed.call('GET', '/resource_providers/%s/usages' % host)[
            'usages']['VCPU']

    generation = seed.generation(host)
    put(A, 3)
    assert writes == ['alloc_claim']
    assert used() == 3 and seed.generation(host) == generation + 1

    # The copy says 4 are free; the graph has 1: the claim writes nothing
    # and the locked way answers as Placement does.
    refused = put(B, 2, expect=(409,))
    assert writes == ['alloc_claim']
    assert refused['errors'][0]['code'] == 'placement.undefined_code'
    assert ("Unable to allocate inventory: Unable to create allocation for "
            "'VCPU' on resource provider '%s'. The requested amount would "
            "exceed the capacity." % host) in refused['errors'][0]['detail']
    assert seed.call('GET', '/allocations/%s' % B)['allocations'] == {}
    assert used() == 3

    # The inventory changed since the copy (8 now): the claim does not
    # write on fields it was not checked against; the locked way does.
    seed.add_inventory(host, 'VCPU', 8)
    put(C, 4)
    assert writes == ['alloc_claim', 'alloc_write']
    assert used() == 7

    # A consumer that exists is no claim.
    put(A, 1, generation=1)
    assert writes == ['alloc_write']
    assert used() == 5
    # Nor is a consumer the client says is new that exists: the claim
    # finds it and the locked way answers 409.
    conflict = put(C, 1, expect=(409,))
    assert writes == ['alloc_claim']
    assert conflict['errors'][0]['code'] == 'placement.concurrent_update'
    assert used() == 5


def test_a_claim_takes_no_more_than_the_room_left_under_races(service):
    """Sixteen threads claim one host's last room on a copy that says it
    is free: exactly as many fit as there is room for."""
    import concurrent.futures
    import uuid as uuid_module
    store, seed = service.app.store, service.seed
    host = seed.create_provider('raced')
    seed.add_inventory(host, 'VCPU', 10)
    store.worlds.current()
    consumers = [str(uuid_module.uuid4()) for _ in range(16)]

    def claim(consumer):
        return seed.call('PUT', '/allocations/%s' % consumer,
                         _claim(consumer, host, 3), expect=(204, 409))

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(claim, consumers))
    usages = seed.call('GET', '/resource_providers/%s/usages' % host)
    held = [consumer for consumer in consumers
            if seed.call('GET', '/allocations/%s' % consumer)['allocations']]
    assert len(held) == 3
    assert usages['usages']['VCPU'] == 9


def test_delete_is_one_write_that_gives_back_what_the_consumer_held(
        service, monkeypatch):
    """DELETE /allocations/{consumer}: one statement (REMOVE) takes the
    allocations and the consumer away and gives the usage back on every
    provider it held; provider generations stay, the copy of the graph
    sees the usage at once; a consumer holding nothing is a 404 that
    writes nothing."""
    store, seed = service.app.store, service.seed
    hosts = [seed.create_provider(name) for name in ('left', 'right')]
    for host in hosts:
        seed.add_inventory(host, 'VCPU', 8)
    body = {'allocations': {host: {'resources': {'VCPU': 3}}
                            for host in hosts},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}
    seed.call('PUT', '/allocations/%s' % A, body)
    seed.call('PUT', '/allocations/%s' % B, _claim(B, hosts[0], 1))
    generations = [seed.generation(host) for host in hosts]
    writes = _recorded_writes(store, monkeypatch)

    seed.call('DELETE', '/allocations/%s' % A)
    assert writes == ['alloc_remove']
    assert [seed.call('GET', '/resource_providers/%s/usages' % host)[
        'usages']['VCPU'] for host in hosts] == [1, 0]
    assert [seed.generation(host) for host in hosts] == generations
    assert seed.call('GET', '/allocations/%s' % A)['allocations'] == {}
    assert seed.call('GET', '/allocations/%s' % B)['allocations'] == {
        hosts[0]: {'generation': generations[0], 'resources': {'VCPU': 1}}}
    # What candidates read (the process's copy) has the usage back.
    world = store.worlds.current()
    assert world.records[hosts[1]].inventories['VCPU'].used == 0

    del writes[:]
    missing = seed.call('DELETE', '/allocations/%s' % A, expect=(404,))
    assert ("No allocations for consumer '%s'" % A
            in missing['errors'][0]['detail'])
    assert writes == ['alloc_remove']
    assert seed.call('GET', '/resource_providers/%s/usages' % hosts[0])[
        'usages']['VCPU'] == 1


def test_deletes_racing_claims_leave_the_usage_the_held_allocations_make(
        service):
    """Threads claim and delete on one host at once: every DELETE gives
    back exactly what its consumer held."""
    import concurrent.futures
    import uuid as uuid_module
    seed = service.seed
    host = seed.create_provider('churned')
    seed.add_inventory(host, 'VCPU', 64)
    kept = [str(uuid_module.uuid4()) for _ in range(8)]

    def churn(index):
        consumer = str(uuid_module.uuid4())
        seed.call('PUT', '/allocations/%s' % consumer,
                  _claim(consumer, host, 1 + index % 3))
        seed.call('DELETE', '/allocations/%s' % consumer)
        if index < len(kept):
            seed.call('PUT', '/allocations/%s' % kept[index],
                      _claim(kept[index], host, 2))

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(churn, range(48)))
    usages = seed.call('GET', '/resource_providers/%s/usages' % host)
    assert usages['usages']['VCPU'] == 2 * len(kept)
    allocations = seed.call('GET', '/resource_providers/%s/allocations'
                            % host)['allocations']
    assert sorted(allocations) == sorted(kept)
