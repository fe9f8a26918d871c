"""Kill -9 the service and its engine in the middle of allocation writes.

On either engine: the embedded FalkorDB server, or the Neo4j JVM.

After a restart every write that was acknowledged with a 2xx is there,
every write is either wholly applied or not at all (each claim spans two
providers), and usages equal the sum of allocations.
"""
import json
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid as uuidlib

from tachyon_placement.graph import falkordb_engine
from tachyon_placement.graph import neo4j_engine
from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import served

WRITERS = 6


def _allocations_of(api, consumer):
    status, body = api.request('GET', '/allocations/%s' % consumer)
    assert status == 200, body
    return {rp: alloc['resources']
            for rp, alloc in body['allocations'].items()}


def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path):
    api = served.ServedPlacement(tmp_path, appendfsync='always').start()
    providers = []
    for number in range(2):
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'crash%d' % number})
        assert status == 200, body
        providers.append(body['uuid'])
        status, body = api.request(
            'PUT', '/resource_providers/%s/inventories' % body['uuid'],
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': 100000,
                                      'max_unit': 100000}}})
        assert status == 200, body

    acknowledged = {}
    attempted = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(number):
        sequence = 0
        while not stop.is_set():
            sequence += 1
            consumer = str(uuidlib.uuid4())
            wanted = {providers[0]: {'VCPU': 1 + sequence % 3},
                      providers[1]: {'VCPU': 1 + number}}
            with lock:
                attempted[consumer] = wanted
            try:
                status, _body = api.request(
                    'PUT', '/allocations/%s' % consumer, {
                        'allocations': {rp: {'resources': res}
                                        for rp, res in wanted.items()},
                        'project_id': 'p', 'user_id': 'u',
                        'consumer_generation': None,
                        'consumer_type': 'INSTANCE'})
            except OSError:
                return  # the service is gone
            if status == 204:
                with lock:
                    acknowledged[consumer] = wanted

    threads = [threading.Thread(target=writer, args=(n,))
               for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 150 and time.monotonic() < deadline:
        time.sleep(0.05)
    # Both at once, mid-stream: the API first, then its engine.
    api.process.send_signal(signal.SIGKILL)
    api.kill_engine()
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    api.process.wait(timeout=30)
    assert len(acknowledged) >= 150

    api.revive_engine()
    api.start()
    try:
        for consumer, wanted in acknowledged.items():
            assert _allocations_of(api, consumer) == wanted, consumer
        for consumer, wanted in attempted.items():
            if consumer not in acknowledged:
                assert _allocations_of(api, consumer) in ({}, wanted)
        for rp in providers:
            status, body = api.request(
                'GET', '/resource_providers/%s/allocations' % rp)
            assert status == 200
            total = sum(alloc['resources'].get('VCPU', 0)
                        for alloc in body['allocations'].values())
            status, usages = api.request(
                'GET', '/resource_providers/%s/usages' % rp)
            assert usages['usages'] == {'VCPU': total}
    finally:
        api.stop()


def _raw(api, method, path, body=None):
    """(status, headers, JSON body) of one request."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(api.url + path, data=data, method=method)
    req.add_header('x-auth-token', 'admin')
    req.add_header('openstack-api-version', 'placement 1.39')
    if data is not None:
        req.add_header('content-type', 'application/json')
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            text = response.read()
            return response.status, response.headers, (
                json.loads(text) if text else None)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read())


def test_a_lost_engine_is_503_in_placements_shape_never_500(tmp_path):
    """The engine killed under a served API: a write that lost its
    connection (it may or may not have happened) and, on Neo4j, every
    request until the engine is back, answer 503 with Retry-After and
    Placement's error document; then the service goes on."""
    api = served.ServedPlacement(tmp_path).start()
    try:
        status, _ = api.request('POST', '/resource_providers',
                                {'name': 'before'})
        assert status == 200
        api.kill_engine()
        status, headers, body = _raw(api, 'POST', '/resource_providers',
                                     {'name': 'during'})
        assert status == 503, body
        assert headers['Retry-After'] == '2'
        [error] = body['errors']
        assert error['code'] == 'tachyon.graph.unavailable'
        assert error['title'] == 'Service Unavailable'
        assert set(error) == {'status', 'title', 'detail', 'code',
                              'request_id'}
        api.revive_engine()
        deadline = time.monotonic() + 120
        while True:
            status, _, body = _raw(api, 'POST', '/resource_providers',
                                   {'name': 'after'})
            if status != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200, body
    finally:
        api.stop()


def _engine_errors(api):
    status, _, text = served.scrape_metrics(api.url)
    assert status == 200, text
    return sum(float(line.rsplit(' ', 1)[1]) for line in text.splitlines()
               if line.startswith('tachyon_engine_errors_total{'))


def test_a_stopped_engine_is_503_within_seconds(tmp_path):
    """SIGSTOP of the engine (the embedded server, or Neo4j's JVM: a
    frozen process or VM, whose socket still accepts while nothing
    answers): reads and writes answer 503 tachyon.graph.unavailable with
    Retry-After within the documented bound (HANG_CHECK + HANG_PING, 3.5 s
    on FalkorDB; 5 s and a watch period on Neo4j; plus the request's own
    work), each counted as an engine error, and the service answers again
    as soon as the server runs again."""
    if engines.NEO4J_URI:
        bound = (neo4j_engine.HANG_CHECK + neo4j_engine.HANG_PING
                 + neo4j_engine.WATCH_EVERY + 3.0)
    else:
        bound = falkordb_engine.HANG_CHECK + falkordb_engine.HANG_PING + 3.0
    api = served.ServedPlacement(
        tmp_path, extra_conf='\n[metrics]\nenabled = true\n').start()
    try:
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'before'})
        assert status == 200, body
        before = body['uuid']
        errors_before = _engine_errors(api)
        with served.paused(api.engine_pid()):
            for method, path, body in (
                    ('GET', '/resource_providers/%s' % before, None),
                    ('POST', '/resource_providers', {'name': 'during'}),
                    ('GET', '/resource_providers', None)):
                started = time.monotonic()
                status, headers, answer = _raw(api, method, path, body)
                took = time.monotonic() - started
                assert status == 503, (method, path, answer)
                assert took < bound, (method, path, took)
                assert headers['Retry-After'] == '2'
                [error] = answer['errors']
                assert error['code'] == 'tachyon.graph.unavailable'
        assert _engine_errors(api) >= errors_before + 3
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'after'})
        assert status == 200, body
        status, body = api.request('GET', '/resource_providers')
        assert sorted(rp['name'] for rp in body['resource_providers']) == [
            'after', 'before']
    finally:
        api.stop()
