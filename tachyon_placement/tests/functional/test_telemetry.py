"""Telemetry-weighted candidates against real components: Prometheus
(Debian's package) scraping an exporter the test controls, a served
Tachyon whose collector queries it in the background."""
import http.server
import json
import os
import threading
import time

import pytest

from tachyon_placement.tests.functional import prometheus
from tachyon_placement.tests.functional import served

REFRESH = 2
STALENESS = 6
HOSTS = ('host-a', 'host-b', 'host-c')
UUIDS = {'host-a': 'cccccccc-0000-4000-8000-00000000000a',
         'host-b': 'cccccccc-0000-4000-8000-00000000000b',
         'host-c': 'cccccccc-0000-4000-8000-00000000000c'}


@pytest.fixture
def exporter():
    exported = prometheus.Exporter()
    yield exported
    exported.stop()


@pytest.fixture
def prom(tmp_path, exporter):
    server = prometheus.Prometheus(tmp_path / 'prometheus', exporter.port)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def api(tmp_path, prom):
    served_api = served.ServedPlacement(
        tmp_path / 'api', extra_conf=(
            '[telemetry]\nurl = %s\nrefresh_interval = %d\n'
            'staleness_limit = %d\nquery_timeout = 2\n'
            '[metrics]\nenabled = true\n'
            % (prom.url, REFRESH, STALENESS))).start()
    yield served_api
    served_api.stop()


def _log(api):
    with open(os.path.join(api.workdir, 'api.log'), encoding='utf-8',
              errors='replace') as log:
        return log.read()


def _ok(result, expected=(200, 201, 204)):
    status, body = result
    assert status in expected, body
    return body


def _create_hosts(api):
    for host in HOSTS:
        _ok(api.request('POST', '/resource_providers',
                        {'name': host, 'uuid': UUIDS[host]}))
        _ok(api.request('PUT', '/resource_providers/%s/inventories'
                        % UUIDS[host],
                        {'resource_provider_generation': 0,
                         'inventories': {'VCPU': {'total': 8}}}))


def _order(api):
    body = _ok(api.request('GET', '/allocation_candidates?resources=VCPU:1'))
    by_uuid = {uuid: host for host, uuid in UUIDS.items()}
    return [by_uuid[next(iter(item['allocations']))]
            for item in body['allocation_requests']]


def _tachyon(api, method, path, body=None):
    return api.request(method, path, body, version='latest')


def _status(api, name):
    """GET /tachyon/telemetry/status's entry of source ``name``."""
    sources = _ok(api.request('GET', '/tachyon/telemetry/status'))['sources']
    return next(source for source in sources if source['name'] == name)


def _metric_lines(api):
    """The lines of the service's Prometheus metrics (an admin's view)."""
    status, _content_type, text = served.scrape_metrics(api.url)
    assert status == 200, text
    return text.splitlines()


def _wait_for_order(api, wanted, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if _order(api) == wanted:
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError('order still %s, not %s after %ss'
                         % (_order(api), wanted, timeout))


def test_exported_load_orders_candidates_and_an_outage_degrades(
        api, prom, exporter):
    _create_hosts(api)
    for host, cpu in (('host-a', 90), ('host-b', 50), ('host-c', 10)):
        exporter.set_cpu(host, cpu)
    # No weigher: Placement's order (creation).
    assert _order(api) == ['host-a', 'host-b', 'host-c']
    # node_exporter-style instance="host:9100", rewritten to the host name.
    _ok(api.request('PUT', '/tachyon/metrics/cpu', {
        'query': 'host_cpu_utilisation', 'label': 'instance',
        'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}}))
    _ok(api.request('PUT', '/tachyon/weighers/coolest', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
    _wait_for_order(api, ['host-c', 'host-b', 'host-a'], 30)
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    assert explained['weighers'] == ['coolest']
    coolest = explained['hosts'][0]
    assert coolest['name'] == 'host-c'
    assert coolest['weighers'][0]['metric']['value'] == 10.0
    assert 0 <= coolest['weighers'][0]['metric']['age_seconds'] < 3 * REFRESH
    assert coolest['weighers'][0]['metric']['stale'] is False
    assert [host['score'] for host in explained['hosts']] == [1.0, 0.5, 0.0]

    # The load moves: the order follows within a refresh interval of
    # Prometheus having scraped it.
    exporter.set_cpu('host-a', 5)
    exporter.set_cpu('host-c', 95)
    took = _wait_for_order(api, ['host-a', 'host-b', 'host-c'],
                           REFRESH + prometheus.SCRAPE_SECONDS + 5)
    print('\norder followed the exported load in %.1f s (refresh %d s, '
          'scrape %d s)' % (took, REFRESH, prometheus.SCRAPE_SECONDS))
    assert took <= REFRESH + prometheus.SCRAPE_SECONDS + 1.5
    # What the collector found, for an operator: three series, each
    # naming a host, no error.
    status = _status(api, 'cpu')
    assert (status['kind'], status['error'], status['series'],
            status['providers_matched'], status['unmatched_series'],
            status['providers_stale']) == ('metric', None, 3, 3, 0, 0)
    assert status['last_success'] == status['last_run']
    assert 0 <= status['duration_seconds'] < 2
    assert 'tachyon_telemetry_source_failing{kind="metric",source="cpu"} ' \
           '0.0' in _metric_lines(api)

    # Prometheus goes away: candidates still answer; the last values
    # count until they are older than the staleness limit, then
    # Placement's order (here the same as the coolest first, so the
    # exporter flips it first).
    exporter.set_cpu('host-a', 99)
    exporter.set_cpu('host-c', 1)
    _wait_for_order(api, ['host-c', 'host-b', 'host-a'],
                    REFRESH + prometheus.SCRAPE_SECONDS + 5)
    prom.stop()
    down = time.monotonic()
    assert _order(api) == ['host-c', 'host-b', 'host-a']
    _wait_for_order(api, ['host-a', 'host-b', 'host-c'], STALENESS + 10)
    assert time.monotonic() - down >= STALENESS - REFRESH - 1
    started = time.monotonic()
    assert _order(api) == ['host-a', 'host-b', 'host-c']
    assert time.monotonic() - started < 2  # never waits on Prometheus
    # Explain says the values it shows no longer count.
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    for host in explained['hosts']:
        metric = host['weighers'][0]['metric']
        assert metric['stale'] is True, host
        assert metric['age_seconds'] > STALENESS
    # The status says why, since when the values are old, and (from the
    # first run after they went past the limit) that the three providers'
    # values no longer count; so do the metrics.
    deadline = time.monotonic() + REFRESH + 5
    status = _status(api, 'cpu')
    while status['providers_stale'] != 3 and time.monotonic() < deadline:
        time.sleep(0.2)
        status = _status(api, 'cpu')
    assert status['error'] and status['last_success'] < status['last_run']
    assert (status['series'], status['providers_matched'],
            status['providers_stale']) == (3, 3, 3)
    lines = _metric_lines(api)
    assert 'tachyon_telemetry_source_failing{kind="metric",source="cpu"} ' \
           '1.0' in lines
    assert 'tachyon_telemetry_providers_stale{kind="metric",source="cpu"} ' \
           '3.0' in lines
    log = _log(api)
    # One warning for the outage, not one per cycle.
    assert log.count('metric cpu cannot be collected') == 1
    assert 'Traceback' not in log

    # It comes back: so does the metric.
    prom.start()
    _wait_for_order(api, ['host-c', 'host-b', 'host-a'], 30)
    assert 'metric cpu is collected again' in _log(api)


class _Garbage(http.server.BaseHTTPRequestHandler):
    """A metrics endpoint that answers nonsense: not JSON, then a result
    that is no vector, then a vector with a malformed sample, in turn."""
    answers = [b'<html>oops</html>',
               b'{"status": "success", "data": {"resultType": "scalar", '
               b'"result": [1, "2"]}}',
               b'{"status": "success", "data": {"resultType": "vector", '
               b'"result": [{"metric": {"instance": "host-a:9100"}, '
               b'"value": [1, "7"]}, {"metric": {}, "value": "x"}]}}']
    served = 0

    def do_GET(self):
        body = self.answers[_Garbage.served % len(self.answers)]
        _Garbage.served += 1
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_garbage_from_the_metrics_endpoint_changes_nothing(tmp_path):
    garbage = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Garbage)
    threading.Thread(target=garbage.serve_forever, daemon=True).start()
    api = served.ServedPlacement(tmp_path / 'api', extra_conf=(
        '[telemetry]\nurl = http://127.0.0.1:%d\nrefresh_interval = 1\n'
        % garbage.server_address[1])).start()
    try:
        _create_hosts(api)
        _ok(api.request('PUT', '/tachyon/metrics/cpu', {
            'query': 'host_cpu_utilisation',
            'rewrite': {'pattern': ':[0-9]+$'}}))
        _ok(api.request('PUT', '/tachyon/weighers/coolest', {
            'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
        deadline = time.monotonic() + 5
        while _Garbage.served < 4 and time.monotonic() < deadline:
            assert _order(api) == ['host-a', 'host-b', 'host-c']
            time.sleep(0.1)
        assert _Garbage.served >= 4
        assert _order(api) == ['host-a', 'host-b', 'host-c']
        log = _log(api)
        assert log.count('metric cpu cannot be collected') == 1, log
        assert 'Traceback' not in log
    finally:
        api.stop()
        garbage.shutdown()


def test_through_aetos(tmp_path, prom, exporter):
    aetos = prometheus.Aetos(tmp_path / 'aetos', prom.port).start()
    api = served.ServedPlacement(tmp_path / 'api', extra_conf=(
        '[telemetry]\nurl = %s\nrefresh_interval = %d\n'
        % (aetos.url, REFRESH))).start()
    try:
        _create_hosts(api)
        for host, cpu in (('host-a', 70), ('host-b', 10), ('host-c', 40)):
            exporter.set_cpu(host, cpu)
        _ok(api.request('PUT', '/tachyon/metrics/cpu', {
            'query': 'avg_over_time(host_cpu_utilisation[10s])',
            'rewrite': {'pattern': ':[0-9]+$'}}))
        _ok(api.request('PUT', '/tachyon/weighers/coolest', {
            'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
        _wait_for_order(api, ['host-b', 'host-c', 'host-a'], 30)
        exporter.set_cpu('host-a', 0)
        exporter.set_cpu('host-b', 100)
        # The average over 10 s moves on within a few scrapes.
        _wait_for_order(api, ['host-a', 'host-c', 'host-b'], 20)
        assert 'cannot be collected' not in _log(api)
    finally:
        api.stop()
        aetos.stop()


def test_a_cypher_scorer_orders_candidates(tmp_path):
    """The collector runs a weigher's read-only Cypher query in the
    background (no Prometheus needed) and the order follows it."""
    api = served.ServedPlacement(tmp_path / 'api', extra_conf=(
        '[telemetry]\nrefresh_interval = 1\n')).start()
    try:
        _create_hosts(api)
        # Score each host by the VCPU it has left: host-b gets busy.
        status, body = api.request(
            'PUT', '/allocations/dddddddd-0000-4000-8000-000000000001',
            {'allocations': {UUIDS['host-b']: {'resources': {'VCPU': 6}}},
             'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
             'consumer_type': 'INSTANCE'})
        assert status == 204, body
        query = ('MATCH (rp:ResourceProvider)-[inv:PROVIDES]->'
                 "(:ResourceClass {name: 'VCPU'}) "
                 'RETURN rp.uuid AS uuid, '
                 'inv.total - coalesce(inv.used, 0) AS score')
        _ok(api.request('PUT', '/tachyon/weighers/most-vcpu-left', {
            'weight': 1, 'scorer': {'type': 'cypher', 'query': query}}))
        # host-a and host-c tie (Placement's order between them).
        _wait_for_order(api, ['host-a', 'host-c', 'host-b'], 15)
        _ok(api.request('PUT', '/tachyon/weighers/most-vcpu-left', {
            'weight': 1, 'generation': 0,
            'scorer': {'type': 'cypher', 'query': query,
                       'higher_is_better': False}}))
        _wait_for_order(api, ['host-b', 'host-a', 'host-c'], 15)
        # A threshold on the Cypher score: never a host with fewer than 4
        # VCPUs left (host-b has 2).
        _ok(api.request('PUT', '/tachyon/weighers/most-vcpu-left', {
            'weight': 1, 'generation': 1,
            'scorer': {'type': 'cypher', 'query': query,
                       'threshold': {'min': 4}}}))
        _wait_for_order(api, ['host-a', 'host-c'], 15)
        explained = _ok(api.request(
            'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
        assert [(host['name'], host['reasons'][0]['why'])
                for host in explained['excluded']] == [('host-b',
                                                        '2 below 4')]
        assert 'cannot be collected' not in _log(api)
    finally:
        api.stop()


def test_numa_metrics_choose_the_numa_node_within_a_host(api, exporter):
    """A metric per NUMA node (target provider) orders the candidates of
    one host: the NUMA node with the most free memory comes first."""
    root = 'cccccccc-0000-4000-8000-0000000000f0'
    numa = ['cccccccc-0000-4000-8000-0000000000f%d' % n for n in (1, 2)]
    _ok(api.request('POST', '/resource_providers',
                    {'name': 'numa-host', 'uuid': root}))
    for number, uuid in enumerate(numa):
        _ok(api.request('POST', '/resource_providers', {
            'name': 'numa-host_NUMA%d' % number, 'uuid': uuid,
            'parent_provider_uuid': root}))
        _ok(api.request('PUT', '/resource_providers/%s/inventories' % uuid,
                        {'resource_provider_generation': 0,
                         'inventories': {'MEMORY_MB': {'total': 4096}}}))
    exporter.set_numa_free(numa[0], 100)
    exporter.set_numa_free(numa[1], 3000)

    def first_numa():
        body = _ok(api.request(
            'GET', '/allocation_candidates?resources1=MEMORY_MB:64'))
        return [next(iter(item['allocations']))
                for item in body['allocation_requests']]

    assert first_numa() == numa  # Placement's order
    _ok(api.request('PUT', '/tachyon/metrics/numa_free', {
        'query': 'numa_free_megabytes', 'label': 'provider',
        'target': 'provider'}))
    _ok(api.request('PUT', '/tachyon/weighers/most-free-numa', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'numa_free',
                                'higher_is_better': True}}))
    deadline = time.monotonic() + 30
    while first_numa() != numa[::-1] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first_numa() == numa[::-1]
    exporter.set_numa_free(numa[0], 4000)
    deadline = time.monotonic() + 15
    while first_numa() != numa and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first_numa() == numa


def test_per_numa_free_memory_is_the_room_of_a_flat_hosts_nodes(
        tmp_path, prom, exporter):
    """A flat host (CPUs and memory on the compute node) with a GPU on
    each of its two NUMA nodes, a rule requiring the GPU on the
    instance's node: by the nodes' sizes both GPUs are offered; with
    node_exporter-style free memory per NUMA node (a metric of target
    numa, [telemetry] numa_free_memory_metric) only the GPU on the node
    with room, and it follows the values."""
    served_api = served.ServedPlacement(
        tmp_path / 'api', extra_conf=(
            '[telemetry]\nurl = %s\nrefresh_interval = %d\n'
            'staleness_limit = %d\nquery_timeout = 2\n'
            'numa_free_memory_metric = numa_node_free\n'
            % (prom.url, REFRESH, STALENESS))).start()
    try:
        api = served_api
        root = 'dddddddd-0000-4000-8000-000000000000'
        gpus = ['dddddddd-0000-4000-8000-00000000000%d' % n for n in (1, 2)]
        _ok(api.request('PUT', '/resource_classes/CUSTOM_GPU'))
        _ok(api.request('POST', '/resource_providers',
                        {'name': 'flat-host', 'uuid': root}))
        _ok(api.request('PUT', '/resource_providers/%s/inventories' % root,
                        {'resource_provider_generation': 0, 'inventories': {
                            'VCPU': {'total': 16},
                            'MEMORY_MB': {'total': 32768}}}))
        for number, uuid in enumerate(gpus):
            _ok(api.request('POST', '/resource_providers', {
                'name': 'flat-host_0000:0%d:00.0' % (number + 1),
                'uuid': uuid, 'parent_provider_uuid': root}))
            _ok(api.request(
                'PUT', '/resource_providers/%s/inventories' % uuid,
                {'resource_provider_generation': 0,
                 'inventories': {'CUSTOM_GPU': {'total': 1}}}))
        _ok(_tachyon(api, 'PUT', '/tachyon/topology/hosts/flat-host', {
            'sockets': [{'id': 0}],
            'numa_nodes': [
                {'id': n, 'socket': 0, 'cpus': list(range(8 * n, 8 * n + 8)),
                 'memory_mb': 16384} for n in (0, 1)],
            'pci_devices': [
                {'address': '0000:0%d:00.0' % (n + 1), 'vendor_id': '10de',
                 'product_id': '1eb8', 'class': '030200', 'numa_node': n}
                for n in (0, 1)]}))
        _ok(_tachyon(api, 'PUT', '/tachyon/pci_affinity/gpus',
                     {'resource_class': 'CUSTOM_GPU', 'policy': 'required'}))

        def offered():
            body = _ok(api.request(
                'GET', '/allocation_candidates?resources=VCPU:2,'
                'MEMORY_MB:8192&resources1=CUSTOM_GPU:1&group_policy=none'))
            return sorted(item['mappings']['1'][0]
                          for item in body['allocation_requests'])

        def wait_for(wanted, timeout=30):
            deadline = time.monotonic() + timeout
            while offered() != wanted and time.monotonic() < deadline:
                time.sleep(0.2)
            assert offered() == wanted

        assert offered() == gpus        # both nodes big enough
        exporter.set_numa_node_free('flat-host', 0, 1024)
        exporter.set_numa_node_free('flat-host', 1, 12000)
        _ok(_tachyon(api, 'PUT', '/tachyon/metrics/numa_node_free', {
            'query': 'node_numa_free_megabytes', 'target': 'numa',
            'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}}))
        wait_for([gpus[1]])
        exporter.set_numa_node_free('flat-host', 0, 15000)
        exporter.set_numa_node_free('flat-host', 1, 100)
        wait_for([gpus[0]])

        # Without the rule both GPUs are offered; a weigher on the same
        # per-NUMA metric puts first the GPU on the node with the most
        # free memory, and follows the values.
        _ok(_tachyon(api, 'DELETE', '/tachyon/pci_affinity/gpus'))
        _ok(_tachyon(api, 'PUT', '/tachyon/weighers/roomiest-node', {
            'weight': 1, 'scorer': {'type': 'metric',
                                    'metric': 'numa_node_free',
                                    'higher_is_better': True}}))

        def first_gpu():
            body = _ok(api.request(
                'GET', '/allocation_candidates?resources=VCPU:2,'
                'MEMORY_MB:8192&resources1=CUSTOM_GPU:1&group_policy=none'))
            return [item['mappings']['1'][0]
                    for item in body['allocation_requests']]

        assert first_gpu() == gpus
        exporter.set_numa_node_free('flat-host', 0, 100)
        exporter.set_numa_node_free('flat-host', 1, 15000)
        deadline = time.monotonic() + 30
        while first_gpu() != gpus[::-1] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first_gpu() == gpus[::-1]
        explained = _ok(api.request(
            'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:2,'
            'MEMORY_MB:8192&resources1=CUSTOM_GPU:1&group_policy=none'))
        # The host scores by the mean of its devices' nodes.
        assert explained['hosts'][0]['weighers'][0]['value'] == 7550.0
    finally:
        served_api.stop()


def test_a_dry_run_shows_how_series_map_and_refuses_several_per_host(
        api, exporter):
    _create_hosts(api)
    for host, cpu in (('host-a', 90), ('host-b', 50), ('host-c', 10),
                      ('elsewhere', 70)):
        exporter.set_cpu(host, cpu)
    definition = {'query': 'host_cpu_utilisation', 'label': 'instance',
                  'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}}
    deadline = time.monotonic() + 30
    while True:
        report = _ok(api.request('PUT', '/tachyon/metrics/cpu?dry_run=true',
                                 definition))
        if report['series'] == 4 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report['series'] == 4
    assert report['providers_matched'] == 3
    assert report['unmatched_series'] == 1
    assert report['unmatched_examples'][0]['instance'] == 'elsewhere:9100'
    assert report['refused'] is None
    # Nothing stored by a dry run.
    assert api.request('GET', '/tachyon/metrics/cpu')[0] == 404
    # Every series relabelled to host-a: three series name one provider.
    several = dict(definition, query=(
        'label_replace(label_replace(host_cpu_utilisation, "origin", "$1", '
        '"instance", "(.*)"), "instance", "host-a:9100", "instance", '
        '"host-[abc].*")'))
    report = _ok(api.request('PUT', '/tachyon/metrics/cpu?dry_run=true',
                             several))
    assert report['several_series'] == {UUIDS['host-a']: 3}
    assert 'combine' in report['refused']
    report = _ok(api.request('PUT', '/tachyon/metrics/cpu?dry_run=true',
                             dict(several, combine='max')))
    assert report['refused'] is None
    # Stored without a way to combine: the answer says what the dry run
    # says (it was a silent 201); never "the last one wins", the metric
    # fails collection (and says so once in the log).
    stored = _ok(api.request('PUT', '/tachyon/metrics/cpu', several))
    assert stored['check']['state'] == 'refused', stored
    assert 'combine' in stored['check']['reason'], stored
    _ok(api.request('PUT', '/tachyon/weighers/coolest', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
    deadline = time.monotonic() + 20
    while 'combine' not in _log(api):
        assert time.monotonic() < deadline, 'no warning logged'
        time.sleep(0.3)
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    for host in explained['hosts']:
        assert host['weighers'][0]['metric']['value'] is None
    # With a combination: the hottest of the three.
    metric = _ok(api.request('GET', '/tachyon/metrics/cpu'))
    _ok(api.request('PUT', '/tachyon/metrics/cpu', dict(
        several, combine='max', generation=metric['generation'])))
    deadline = time.monotonic() + 20
    while True:
        explained = _ok(api.request(
            'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
        values = {host['name']: host['weighers'][0]['metric']['value']
                  for host in explained['hosts']}
        if values.get('host-a') == 90.0:
            break
        assert time.monotonic() < deadline, values
        time.sleep(0.3)


def _order_of(api, query='resources=VCPU:1'):
    body = _ok(api.request('GET', '/allocation_candidates?' + query))
    names = {uuid: name for name, uuid in OUTLIER_UUIDS.items()}
    return [names[next(iter(item['allocations']))]
            for item in body['allocation_requests']]


OUTLIER_UUIDS = {name: 'cccccccc-0000-4000-8000-0000000001%02d' % number
                 for number, name in enumerate(
                     ('busy', 'half', 'huge', 'negative', 'silent'))}


def test_missing_values_outliers_and_ranks(api, exporter):
    """Hosts without a value, with one past the metric's bounds (1e308, a
    negative percentage), and hosts 0.1 % apart, with a real Prometheus."""
    for name, uuid in OUTLIER_UUIDS.items():
        _ok(api.request('POST', '/resource_providers',
                        {'name': name, 'uuid': uuid}))
        _ok(api.request('PUT', '/resource_providers/%s/inventories' % uuid,
                        {'resource_provider_generation': 0,
                         'inventories': {'VCPU': {'total': 8}}}))
    for name, cpu in (('busy', 95), ('half', 50), ('huge', 1e308),
                      ('negative', -50)):
        exporter.set_cpu(name, cpu)     # 'silent' exports nothing
    _ok(api.request('PUT', '/tachyon/metrics/cpu', {
        'query': 'host_cpu_utilisation', 'label': 'instance',
        'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''},
        'bounds': {'min': 0, 'max': 100}}))
    # Bounds the wrong way round are refused.
    status, body = api.request('PUT', '/tachyon/metrics/bad', {
        'query': 'host_cpu_utilisation', 'bounds': {'min': 1, 'max': 0}})
    assert status == 400 and 'min 1 is above max 0' in str(body), body
    _ok(api.request('PUT', '/tachyon/weighers/coolest', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
    # The values past the bounds are dropped: those hosts, and the one
    # without a series, rank after every host with a value (the default
    # missing policy), among themselves in Placement's order.
    deadline = time.monotonic() + 30
    while _order_of(api)[:2] != ['half', 'busy'] and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert _order_of(api) == ['half', 'busy', 'huge', 'negative', 'silent']
    status = _status(api, 'cpu')
    assert (status['series'], status['providers_matched'],
            status['out_of_bounds_values']) == (4, 2, 2), status
    assert any(line.startswith(
        'tachyon_telemetry_values_dropped_total{kind="metric",'
        'reason="out_of_bounds",source="cpu"} ') and
        float(line.split()[-1]) >= 2 for line in _metric_lines(api))
    assert "2 values outside the metric's bounds dropped" in _log(api)
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    parts = {host['name']: host['weighers'][0] for host in
             explained['hosts']}
    assert parts['busy']['value'] == 95.0 and parts['busy']['raw'] == -95.0
    assert parts['silent']['value'] is None
    assert parts['silent']['missing'] == 'worst'
    assert parts['silent']['normalized'] == -1.0

    def stored(scorer):
        current = _ok(api.request('GET', '/tachyon/weighers/coolest'))
        _ok(api.request('PUT', '/tachyon/weighers/coolest', {
            'weight': 1, 'scorer': scorer,
            'generation': current['generation']}))
        return _order_of(api)

    def silent_part():
        explained = _ok(api.request(
            'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
        return next(host['weighers'][0]['normalized']
                    for host in explained['hosts']
                    if host['name'] == 'silent')

    cpu = {'type': 'metric', 'metric': 'cpu'}
    # best: with the best (half), ties in Placement's order.
    assert stored(dict(cpu, missing='best')) == [
        'half', 'huge', 'negative', 'silent', 'busy']
    assert silent_part() == 1.0
    assert stored(dict(cpu, missing='neutral')) == [
        'half', 'huge', 'negative', 'silent', 'busy']
    assert silent_part() == 0.5
    assert stored(dict(cpu, missing='exclude')) == ['half', 'busy']
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    assert sorted(host['name'] for host in explained['excluded']) == [
        'huge', 'negative', 'silent']
    assert {reason['why'] for host in explained['excluded']
            for reason in host['reasons']} == {'no value'}

    # 50.0 against 50.1 %: min-max makes it the whole range; rank makes
    # it one step among the hosts, and an outlier changes nothing.
    exporter.set_cpu('busy', 50.1)
    exporter.set_cpu('half', 50.0)
    exporter.set_cpu('huge', 50.05)
    deadline = time.monotonic() + 30
    while _order_of(api)[:3] != ['half', 'huge', 'busy'] and \
            time.monotonic() < deadline:
        stored(dict(cpu, missing='exclude'))
        time.sleep(0.2)
    stored(dict(cpu, missing='exclude', normalize='rank'))
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    assert [(host['name'], host['weighers'][0]['normalized'])
            for host in explained['hosts']] == [
        ('half', 1.0), ('huge', 0.5), ('busy', 0.0)]


GUIDE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                     'source', 'admin', 'telemetry.rst')


def _guide_examples():
    """The JSON examples of the telemetry guide, in their order."""
    examples, block = [], None
    with open(GUIDE) as guide:
        for line in guide:
            if line.startswith('.. code-block:: json'):
                block = []
            elif block is not None:
                if line.strip() and not line.startswith('    '):
                    examples.append(json.loads(''.join(block)))
                    block = None
                else:
                    block.append(line)
    if block:
        examples.append(json.loads(''.join(block)))
    return examples


def test_the_guides_examples_do_what_it_says(api, exporter):
    metric, soft_cap, placed, risk, pack = _guide_examples()
    _create_hosts(api)
    for host, cpu in (('host-a', 95), ('host-b', 50), ('host-c', 10)):
        exporter.set_cpu(host, cpu)
    _ok(api.request('PUT', '/tachyon/metrics/cpu', metric))
    _ok(api.request('PUT', '/tachyon/weighers/coolest', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'cpu'}}))
    _wait_for_order(api, ['host-c', 'host-b', 'host-a'], 30)

    # Above 90 % only when nothing else fits.
    _ok(api.request('PUT', '/tachyon/weighers/cpu-cap', soft_cap))
    assert _order(api) == ['host-c', 'host-b']
    only_a = 'resources=VCPU:1&in_tree=%s' % UUIDS['host-a']
    body = _ok(api.request('GET', '/allocation_candidates?' + only_a))
    assert len(body['allocation_requests']) == 1
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?' + only_a))
    assert [(host['name'], host['mode'], host['offered'],
             host['reasons'][0]['why']) for host in explained['excluded']] \
        == [('host-a', 'soft', True, '95 above 90')]
    _ok(api.request('DELETE', '/tachyon/weighers/cpu-cap'))

    # Placements count before the next sample: every host at 50 %, a
    # claim of 2 VCPUs on host-b puts it last at once.
    for host in HOSTS:
        exporter.set_cpu(host, 50)
    coolest = _ok(api.request('GET', '/tachyon/weighers/coolest'))
    _ok(api.request('PUT', '/tachyon/weighers/coolest', dict(
        placed, generation=coolest['generation'])))
    _wait_for_order(api, ['host-a', 'host-b', 'host-c'], 30)
    _ok(api.request('PUT', '/allocations/%s' % UUIDS['host-c'].replace(
        'cccc', 'dddd', 1), {
        'allocations': {UUIDS['host-b']: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}))
    assert _order(api)[-1] == 'host-b'
    explained = _ok(api.request(
        'GET', '/tachyon/explain/allocation_candidates?resources=VCPU:1'))
    assert explained['hosts'][-1]['weighers'][0]['value'] == 75.0
    _ok(api.request('DELETE', '/tachyon/weighers/coolest'))

    # Risk: host-b swings between 20 and 80 % (a mean of 50, like
    # host-a), host-c is steady at 30.
    exporter.set_cpu('host-c', 30)
    _ok(api.request('PUT', '/tachyon/metrics/risk', risk))
    _ok(api.request('PUT', '/tachyon/weighers/least-risk', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'risk'}}))
    for swing in range(8):
        exporter.set_cpu('host-b', 80 if swing % 2 else 20)
        time.sleep(prometheus.SCRAPE_SECONDS + 0.2)
    exporter.set_cpu('host-b', 50)
    _wait_for_order(api, ['host-c', 'host-a', 'host-b'], 30)
    _ok(api.request('DELETE', '/tachyon/weighers/least-risk'))

    # Pack to 70 %, then spread.
    for host, cpu in (('host-a', 30), ('host-b', 75), ('host-c', 65)):
        exporter.set_cpu(host, cpu)
    _ok(api.request('PUT', '/tachyon/metrics/pack', pack))
    _ok(api.request('PUT', '/tachyon/weighers/pack-to-70', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'pack',
                                'higher_is_better': True}}))
    _wait_for_order(api, ['host-c', 'host-a', 'host-b'], 30)
