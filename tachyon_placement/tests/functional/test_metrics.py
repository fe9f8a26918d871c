"""Tachyon's Prometheus metrics, scraped by a real Prometheus (Debian's
package) from the API under gunicorn with two workers, on the suite's
engine: the series a workload moved, every worker counted."""
import concurrent.futures
import glob
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import prometheus
from tachyon_placement.tests.functional import served

CONSUMER = '5ee0c0de-0000-4000-8000-00000000c001'
PROJECT = uuid.uuid4().hex
USER = uuid.uuid4().hex


def _ok(result, *statuses):
    status, body = result
    assert status in (statuses or (200, 201, 204)), (status, body)
    return body


def test_the_route_answers_404_while_metrics_are_off(api):
    status, content_type, text = served.scrape_metrics(api.url)
    assert status == 404, text
    assert content_type == 'application/json'
    assert '[metrics] enabled' in json.loads(text)['errors'][0]['detail']


@pytest.fixture
def metrics_api(tmp_path):
    """gunicorn, 2 workers, metrics on and served by the master on a port
    of their own; the multiprocess directory the test can look into."""
    port = served.free_port()
    values = tmp_path / 'metrics'
    values.mkdir()
    api = served.ServedGunicorn(
        tmp_path / 'api', workers=2,
        extra_conf='\n[metrics]\nenabled = true\nlisten_port = %d\n' % port,
        env={'PROMETHEUS_MULTIPROC_DIR': str(values)})
    api.metrics_port = port
    api.values = str(values)
    api.start()
    yield api
    api.stop()


def _writers(values):
    """The pids of the workers that wrote counters (prometheus-client's
    multiprocess files: counter_<pid>.db)."""
    return {re.search(r'_(\d+)\.db$', path).group(1)
            for path in glob.glob(os.path.join(values, 'counter_*.db'))}


def _eventually(prom, promql, expected, timeout=30):
    """The value of ``promql`` once it equals ``expected`` (Prometheus
    scrapes every SCRAPE_SECONDS); the last one seen otherwise."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        found = prom.query(promql)
        value = found[0][1] if found else None
        if value == expected:
            return value
        time.sleep(0.5)
    return value


def test_prometheus_scrapes_what_every_worker_counted(metrics_api, tmp_path):
    api = metrics_api
    rp = _ok(api.request('POST', '/resource_providers',
                         {'name': 'metrics-cn1'}), 200)['uuid']
    _ok(api.request('PUT', '/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 64}}}), 200)

    def search(_n):
        return api.request('GET', '/allocation_candidates?resources=VCPU:1')

    # Searches from several connections at once, at least 40 and until
    # both workers have answered requests (each worker builds its
    # application, and so starts recording, on its first request).
    searches = 0
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        while searches < 40 or (len(_writers(api.values)) < 2
                                and searches < 800):
            for result in pool.map(search, range(8)):
                assert len(_ok(result)['allocation_requests']) == 1
            searches += 8
    assert len(_writers(api.values)) == 2, 'one worker answered everything'

    claim = {'allocations': {rp: {'resources': {'VCPU': 2}}},
             'project_id': PROJECT, 'user_id': USER,
             'consumer_generation': None, 'consumer_type': 'INSTANCE'}
    _ok(api.request('PUT', '/allocations/%s' % CONSUMER, claim), 204)
    # The same claim again: the consumer exists now, a conflict.
    status, body = api.request('PUT', '/allocations/%s' % CONSUMER, claim)
    assert status == 409, body
    assert body['errors'][0]['code'] == 'placement.concurrent_update'

    prom = prometheus.Prometheus(tmp_path / 'prometheus', api.metrics_port,
                                 job='tachyon').start()
    try:
        # Every search counted once, whichever worker answered it.
        assert _eventually(prom, 'sum(tachyon_http_requests_total{'
                           'route="/allocation_candidates",method="GET",'
                           'status="200",microversion="1.39"})',
                           searches) == searches
        assert _eventually(
            prom, 'sum(tachyon_candidate_search_duration_seconds_count)',
            searches) == searches
        assert _eventually(
            prom, 'sum(tachyon_candidates_returned_sum)',
            searches) == searches
        assert _eventually(prom, 'sum(tachyon_http_errors_total{'
                           'route="/allocations/{consumer_uuid}",'
                           'status="409",'
                           'code="placement.concurrent_update"})', 1) == 1
        # The route's template, never the uuid.
        assert not prom.query('tachyon_http_requests_total{route=~".*%s.*"}'
                              % rp)
        assert _eventually(prom, 'max(tachyon_world_providers)', 1) == 1
        writes = prom.query('sum(tachyon_engine_round_trips_total{'
                            'engine="%s",kind="write"})' % engines.NAME)
        assert writes and writes[0][1] >= 3, writes
        # The median search time, from the buckets of every worker.
        latency = prom.query(
            'histogram_quantile(0.5, sum by (le) ('
            'tachyon_http_request_duration_seconds_bucket{'
            'route="/allocation_candidates"}))')
        assert latency and 0 < latency[0][1] < 60, latency
    finally:
        prom.stop()

    # The API route gives the same text to a caller with a token (any
    # worker: every worker's values).
    status, content_type, text = served.scrape_metrics(api.url)
    assert status == 200 and content_type.startswith('text/plain'), text
    assert re.search(r'tachyon_http_requests_total\{[^}]*route="'
                     r'/allocation_candidates"[^}]*\} %d\.0' % searches,
                     text), text[:2000]
    # What has not happened is exported at zero (every worker's files).
    for zero in (r'tachyon_engine_reconnects_total\{engine="%s"\} 0\.0'
                 % engines.NAME,
                 r'tachyon_feed_events_total\{event="busy"\} 0\.0'):
        assert re.search(zero, text), zero
    # Without a token: refused, like every Tachyon route; JSON only: 406.
    assert served.scrape_metrics(api.url, token=None)[0] == 401
    assert served.scrape_metrics(api.url, accept='application/json')[0] == 406
    # curl's */*, no Accept at all, or any that admits text/plain: the
    # text format (the API asks for JSON errors on their behalf only).
    for accept in ('*/*', None, 'text/*',
                   'application/json, text/plain;q=0.1'):
        status, content_type, text = served.scrape_metrics(api.url,
                                                           accept=accept)
        assert status == 200 and content_type.startswith('text/plain'), (
            accept, status, text[:300])

    # Requests of 300 distinct methods, no token: the series do not grow
    # per method (they did by ~21 each: 2,000 requests, 42,000 lines).
    before = _series(api)
    for number in range(300):
        sock = socket.create_connection(('127.0.0.1', api.port), timeout=30)
        try:
            # Letters only: gunicorn refuses other methods itself.
            method = 'MX' + ''.join(chr(65 + int(digit))
                                    for digit in '%05d' % number)
            sock.sendall(b'%s / HTTP/1.1\r\nHost: x\r\n'
                         b'Connection: close\r\n\r\n' % method.encode())
            assert sock.recv(4096).startswith(b'HTTP/1.1 ')
        finally:
            sock.close()
    after = _series(api)
    assert not any('MXA' in line for line in after), after - before
    assert len(after - before) <= 60, sorted(after - before)


def _series(api):
    """The request series of the metrics port (name and labels)."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                % api.metrics_port, timeout=30) as answer:
        text = answer.read().decode()
    return {line.rsplit(' ', 1)[0] for line in text.splitlines()
            if line.startswith('tachyon_http_')}


def _health(base):
    """(status, document) of GET /tachyon/health, without a token."""
    try:
        with urllib.request.urlopen(base + '/tachyon/health',
                                    timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_health_tells_whether_the_engine_answers_in_time(api):
    status, document = _health(api.url)
    assert status == 200, document
    assert (document['status'], document['engine']) == ('ok', engines.NAME)
    assert 'graph_version' not in document      # a write counter
    # The engine hangs (stopped, not dead): the probe says so in time, and
    # again while the first check still hangs.
    pid = api.engine_pid()
    with served.paused(pid):
        for _ in range(2):
            started = time.monotonic()
            status, document = _health(api.url)
            assert status == 503, (document, pid, served.command_line(pid))
            assert document['status'] == 'failed'
            # The probe's own time limit, or the engine's watch of a
            # server that stopped answering (falkordb_engine.HANG_CHECK),
            # whichever ends first.
            assert ('did not answer' in document['error']
                    or 'no answer for' in document['error']), document
            assert time.monotonic() - started < 10
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, document = _health(api.url)
        if status == 200:
            break
        time.sleep(0.5)
    assert status == 200, document


def test_prometheus_scrapes_the_feed_server_without_a_token(api, tmp_path):
    """The documented tachyon-feed job: the feed's route needs a token,
    which Prometheus cannot send (the job was down, 401); its own port
    serves the same values without one."""
    port = served.free_port()
    feed = served.ServedFeed(
        api, '[metrics]\nenabled = true\nfeed_listen_port = %d\n'
        % port).start()
    try:
        prom = prometheus.Prometheus(tmp_path / 'prometheus', port,
                                     job='tachyon-feed').start()
        try:
            assert _eventually(prom, 'max(up{job="tachyon-feed"})', 1) == 1
            assert _eventually(
                prom, 'count(tachyon_feed_events_total{event="busy"})',
                1) == 1
            assert prom.query('tachyon_feed_subscribers')
        finally:
            prom.stop()
    finally:
        feed.stop()
