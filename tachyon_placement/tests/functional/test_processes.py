"""Two API processes on one engine, each with its own copy of the graph.

What one process writes, the other reads at once (its in-memory copy is
checked against the graph version on every request), and clients racing
through both never allocate more than there is.  On the embedded engine the
two share a data directory (as the workers of a WSGI server do); on Neo4j
they share the server.
"""
import threading
import uuid as uuidlib

import pytest

from tachyon_placement.tests.functional import served

VCPU_TOTAL = 12


@pytest.fixture(scope='module')
def pair(tmp_path_factory):
    workdir = tmp_path_factory.mktemp('processes')
    first = served.ServedPlacement(workdir / 'first').start()
    second = served.ServedPlacement(workdir / 'second',
                                    data_dir=first.data_dir).start()
    yield first, second
    second.stop()
    first.stop()


def _provider(api, name, vcpus):
    status, body = api.request('POST', '/resource_providers', {'name': name})
    assert status == 200, body
    rp = body['uuid']
    status, body = api.request(
        'PUT', '/resource_providers/%s/inventories' % rp,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': vcpus, 'max_unit': vcpus}}})
    assert status == 200, body
    return rp


def _claim(api, consumer, rp, vcpus):
    return api.request('PUT', '/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': vcpus}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})


def _candidate_providers(api, vcpus):
    status, body = api.request(
        'GET', '/allocation_candidates?resources=VCPU:%d' % vcpus)
    assert status == 200, body
    return {rp for request in body['allocation_requests']
            for rp in request['allocations']}


def _listed(api, vcpus):
    status, body = api.request(
        'GET', '/resource_providers?resources=VCPU:%d' % vcpus)
    assert status == 200, body
    return {rp['uuid'] for rp in body['resource_providers']}


def test_each_process_reads_the_other_ones_writes(pair):
    first, second = pair
    # Warm both copies of the graph first, so what follows are updates.
    assert _candidate_providers(first, 1) == _candidate_providers(second, 1)
    for step in range(10):
        writer, reader = (first, second) if step % 2 else (second, first)
        rp = _provider(writer, 'ryw-%d' % step, 4)
        assert rp in _listed(reader, 4)
        assert rp in _candidate_providers(reader, 4)
        status, body = _claim(writer, str(uuidlib.uuid4()), rp, 3)
        assert status == 204, body
        # Only 1 VCPU left: the other process must know at once.
        assert rp not in _listed(reader, 2)
        assert rp not in _candidate_providers(reader, 2)
        assert rp in _candidate_providers(reader, 1)
        status, body = reader.request('DELETE', '/resource_providers/%s' % rp)
        assert status == 409, body      # it has allocations
        status, body = writer.request(
            'GET', '/resource_providers/%s/usages' % rp)
        assert body['usages'] == {'VCPU': 3}


def test_clients_racing_through_both_never_over_allocate(pair):
    first, second = pair
    providers = [_provider(first, 'race-%d' % n, VCPU_TOTAL)
                 for n in range(2)]
    granted = {rp: 0 for rp in providers}
    lock = threading.Lock()
    statuses = []

    def client(api, number):
        for attempt in range(10):
            rp = providers[(number + attempt) % len(providers)]
            vcpus = 1 + (number + attempt) % 2
            status, _body = _claim(api, str(uuidlib.uuid4()), rp, vcpus)
            with lock:
                statuses.append(status)
                if status == 204:
                    granted[rp] += vcpus

    threads = [threading.Thread(target=client,
                                args=(first if n % 2 else second, n))
               for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    # 16 clients asked for 240 VCPU of 24: most were refused, the rest
    # got exactly the capacity's worth at most.
    assert len(statuses) == 160 and set(statuses) == {204, 409}
    for rp in providers:
        for api in pair:
            status, body = api.request(
                'GET', '/resource_providers/%s/usages' % rp)
            assert status == 200, body
            assert body['usages']['VCPU'] == granted[rp] <= VCPU_TOTAL
        # The first provider gets the 1-VCPU claims, the second the
        # 2-VCPU ones: 80 claims each fill them exactly.
        assert granted[rp] == VCPU_TOTAL
