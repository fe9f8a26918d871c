"""Drift recorded as it happens: the telemetry collector that holds the
lease records what drifted each refresh (usecases/drift.py DriftRecorder),
and GET /tachyon/drift/changes and the change feed (kind ``drift``, asked
for by name) tell a controller what drifted or stopped drifting after its
cursor.  Served by gunicorn on the suite's engine, with a refresh every
second, and tachyon-feed beside it."""
import time
import uuid

import pytest

from tachyon_placement.tests.functional import served


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    served_api = served.ServedGunicorn(
        tmp_path_factory.mktemp('drift'), workers=2,
        extra_conf='[telemetry]\nrefresh_interval = 1\n').start()
    yield served_api
    served_api.stop()


@pytest.fixture(scope='module')
def feed(api):
    # The graph made first (gunicorn's workers sync it on their first
    # request).
    assert api.request('GET', '/resource_providers')[0] == 200
    server = served.ServedFeed(api.config).start()
    yield server
    server.stop()


def _feed(base, since, kind=None, wait=0):
    query = 'since=%d' % since
    if kind:
        query += '&kind=%s' % kind
    if wait:
        query += '&wait=%d' % wait
    status, body = served.json_request(base, 'GET',
                                       '/tachyon/changes?' + query,
                                       version='1.0', service='tachyon',
                                       timeout=wait + 30)
    assert status == 200, body
    return body


def _tachyon(api, method, path, body=None):
    return api.request(method, path, body, service='tachyon', version='1.0')


def _host(api, name):
    host = str(uuid.uuid4())
    assert api.request('POST', '/resource_providers',
                       {'name': name, 'uuid': host})[0] == 200
    assert api.request('PUT', '/resource_providers/%s/inventories' % host,
                       {'resource_provider_generation': 0,
                        'inventories': {'MEMORY_MB': {'total': 1000}}}
                       )[0] == 200
    return host


def _changes_after(api, cursor, timeout=20):
    """The first drift changes recorded after ``cursor``, waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = _tachyon(api, 'GET',
                                '/tachyon/drift/changes?since=%d' % cursor)
        assert status == 200, body
        if body['changes']:
            return body
        time.sleep(0.3)
    raise AssertionError('no drift change recorded after %d' % cursor)


def test_drift_is_recorded_and_told_after_a_cursor(api, feed):
    full, spare = _host(api, 'drift-full'), _host(api, 'drift-spare')
    consumer = str(uuid.uuid4())
    claim = {'allocations': {full: {'resources': {'MEMORY_MB': 950}}},
             'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
             'consumer_type': 'INSTANCE'}
    assert api.request('PUT', '/allocations/%s' % consumer, claim)[0] == 204
    status, start = _tachyon(api, 'GET', '/tachyon/drift/changes')
    assert status == 200 and start['changes'] == [], start

    # A threshold the host is past: the consumer drifts.
    status, body = _tachyon(api, 'PUT', '/tachyon/weighers/memory-cap', {
        'weight': 0, 'match': {'resource_classes': ['MEMORY_MB']},
        'scorer': {'type': 'usage', 'resource_class': 'MEMORY_MB',
                   'threshold': {'max': 0.9}}})
    assert status == 201, body
    drifted = _changes_after(api, start['cursor'])
    assert [(change['consumer_uuid'], change['drifted'], change['host'])
            for change in drifted['changes']] == [
        (consumer, True, 'drift-full')]
    assert drifted['changes'][0]['reasons'] == [
        {'kind': 'threshold', 'mode': 'hard', 'weigher': 'memory-cap'}]
    assert drifted['changes'][0]['cursor'] <= drifted['cursor']
    status, held = _tachyon(api, 'GET', '/tachyon/drift/changes')
    assert [change['consumer_uuid'] for change in held['changes']] == [
        consumer]
    # On the change feed, for those that ask for it: from an API process
    # (the copy of the graph) and from tachyon-feed (its log, a long poll).
    for base, wait in ((api.url, 0), (feed.url, 20)):
        told = _feed(base, start['cursor'], 'drift', wait)
        assert [(change['type'], change['uuid'], change['deleted'])
                for change in told['changes']] == [
            ('consumer_drift', consumer, False)], told
        assert told['changes'][0]['drift'] == {
            'root_provider_uuid': full,
            'reasons': [{'kind': 'threshold', 'mode': 'hard',
                         'weigher': 'memory-cap'}]}
        everything = _feed(base, start['cursor'])
        assert 'consumer_drift' not in {
            change['type'] for change in everything['changes']}, everything

    # Nothing more while it stays (a second refresh records nothing).
    time.sleep(2.5)
    status, same = _tachyon(api, 'GET', '/tachyon/drift/changes?since=%d'
                            % drifted['cursor'])
    assert status == 200 and same['changes'] == [], same

    # Moved to the spare host: its drift ends.
    claim['allocations'] = {spare: {'resources': {'MEMORY_MB': 500}}}
    claim['consumer_generation'] = 1
    assert api.request('PUT', '/allocations/%s' % consumer, claim)[0] == 204
    ended = _changes_after(api, same['cursor'])
    assert [(change['consumer_uuid'], change['drifted'])
            for change in ended['changes']] == [(consumer, False)]
    told = _feed(feed.url, same['cursor'], 'drift', 20)
    assert [(change['type'], change['deleted'])
            for change in told['changes']] == [('consumer_drift', True)], \
        told
    status, held = _tachyon(api, 'GET', '/tachyon/drift/changes')
    assert held['changes'] == []
    # From the first cursor: the last change of the consumer only.
    status, since_start = _tachyon(api, 'GET', '/tachyon/drift/changes?'
                                   'since=%d' % start['cursor'])
    assert [(change['consumer_uuid'], change['drifted'])
            for change in since_start['changes']] == [(consumer, False)]


def test_a_cursor_ahead_of_the_graph_is_gone(api):
    status, body = _tachyon(api, 'GET',
                            '/tachyon/drift/changes?since=999999999999')
    assert status == 410
    assert body['errors'][0]['code'] == 'tachyon.changes.gone'
    status, body = _tachyon(api, 'GET', '/tachyon/drift/changes?since=x')
    assert status == 400
