"""The metrics' WSGI layer reads what the inner layers left in the
environ; the recorder's series come out in Prometheus' text format."""
import pytest

from tachyon_placement.monitoring import metrics
from tachyon_placement.monitoring import middleware


def _layer(app):
    return middleware.RequestMetrics(
        app, route_key='route', version_keys=('tachyon.v', 'placement.v'),
        code_key='code')


def _recorded(monkeypatch):
    seen = []
    monkeypatch.setattr(metrics, 'request',
                        lambda *args: seen.append(args))
    return seen


def test_a_request_is_recorded_with_its_route_status_and_version(
        monkeypatch):
    seen = _recorded(monkeypatch)

    def app(environ, start_response):
        environ.update({'route': '/resource_providers/{uuid}',
                        'placement.v': '1.39', 'code': 'placement.x'})
        start_response('409 Conflict', [])
        return [b'{}']

    environ = {'REQUEST_METHOD': 'PUT'}
    assert _layer(app)(environ, lambda status, headers, exc=None: None) == [
        b'{}']
    (route, method, status, version, seconds, code), = seen
    assert (route, method, status, version, code) == (
        '/resource_providers/{uuid}', 'PUT', 409, '1.39', 'placement.x')
    assert 0 <= seconds < 5


def test_tachyon_version_first_unmatched_route_and_a_crash(monkeypatch):
    seen = _recorded(monkeypatch)

    def app(environ, start_response):
        environ.update({'tachyon.v': '1.0', 'placement.v': '1.39'})
        start_response('200 OK', [])
        return []

    _layer(app)({'REQUEST_METHOD': 'GET'}, lambda *args: None)
    assert seen[-1][:4] == (middleware.UNMATCHED, 'GET', 200, '1.0')

    def crash(environ, start_response):
        raise RuntimeError('boom')

    with pytest.raises(RuntimeError):
        _layer(crash)({'REQUEST_METHOD': 'GET'}, lambda *args: None)
    assert seen[-1][:4] == (middleware.UNMATCHED, 'GET', 500, '-')


def test_every_label_takes_a_bounded_set_of_values(monkeypatch):
    """Methods, statuses, versions and codes outside what the API can
    answer collapse into one value: 2,000 requests of distinct methods
    made 42,000 lines of exposition."""
    seen = _recorded(monkeypatch)

    def app(environ, start_response):
        environ.update({'placement.v': environ['test.version'],
                        'code': environ['test.code']})
        start_response(environ['test.status'], [])
        return []

    for number in range(2000):
        _layer(app)({'REQUEST_METHOD': 'M%05d' % number,
                     'test.version': '1.%d' % number,
                     'test.code': 'Bad Code %d' % number,
                     'test.status': '405 Method Not Allowed'},
                    lambda *args: None)
    assert {record[1] for record in seen} == {middleware.OTHER}
    assert {record[5] for record in seen} == {middleware.OTHER}
    _layer(app)({'REQUEST_METHOD': 'GET', 'test.version': '1.' + '9' * 50,
                 'test.code': 'placement.x', 'test.status': '999 Odd'},
                lambda *args: None)
    assert seen[-1][1:4] == ('GET', 0, middleware.OTHER)
    assert seen[-1][5] == 'placement.x'
    for method in middleware.METHODS:
        assert middleware.bounded_method(method) == method


def test_known_series_are_exported_at_zero_from_the_start():
    """Before anything happened: the engine's errors and reconnects, the
    feed's events; a dashboard or an absent() rule tells "none yet" from
    "not exported"."""
    metrics.enable('neo4j')
    text = metrics.exposition()[1].decode()
    for line in (
            'tachyon_engine_errors_total{engine="neo4j",kind="write"}',
            'tachyon_engine_reconnects_total{engine="neo4j"}',
            'tachyon_feed_events_total{event="slow_readers"}',
            'tachyon_feed_events_total{event="busy"}',
            'tachyon_world_refresh_duration_seconds_count{kind="reloaded"}'):
        assert line in text, line


def test_recorded_series_come_out_in_text_format():
    metrics.enable()
    assert metrics.enabled()
    metrics.request('/traits/{name}', 'PUT', 201, '1.39', 0.002)
    metrics.request('/traits/{name}', 'PUT', 400, '1.39', 0.001,
                    'placement.bad')
    metrics.candidate_search(True, 0.01, 7)
    metrics.world_refreshed('patched', 0.001, 3, 42, 1000)
    metrics.engine_call('falkordb', 'read', failed=True)
    metrics.write_retried()
    content_type, body = metrics.exposition()
    assert content_type.startswith('text/plain')
    text = body.decode()
    for line in (
            'tachyon_http_requests_total{method="PUT",microversion="1.39",'
            'route="/traits/{name}",status="201"}',
            'tachyon_http_errors_total{code="placement.bad",'
            'route="/traits/{name}",status="400"}',
            'tachyon_candidates_returned_sum{weighed="true"}',
            'tachyon_world_version 42.0', 'tachyon_world_version_lag 3.0',
            'tachyon_world_providers 1000.0',
            'tachyon_engine_errors_total{engine="falkordb",kind="read"}',
            'tachyon_allocation_write_retries_total'):
        assert line in text, line


def test_health_answers_another_method_in_placements_error_shape():
    import json

    from tachyon_placement.monitoring import health

    answered = []
    probe = health.Health(lambda environ, start: [b'app'],
                          check=lambda: {'graph_version': 7},
                          engine='falkordb')
    body = probe({'PATH_INFO': health.PATH, 'REQUEST_METHOD': 'POST',
                  'openstack.request_id': 'req-1'},
                 lambda status, headers, exc=None: answered.append(
                     (status, dict(headers))))
    status, headers = answered[0]
    assert status.startswith('405') and headers['Allow'] == 'GET, HEAD'
    error, = json.loads(b''.join(body))['errors']
    assert (error['status'], error['request_id']) == (405, 'req-1')
    body = probe({'PATH_INFO': health.PATH, 'REQUEST_METHOD': 'GET'},
                 lambda status, headers, exc=None: answered.append(
                     (status, dict(headers))))
    assert answered[-1][0].startswith('200')
    # Only the status: the graph's version is a write counter, and the
    # probe takes no token.
    assert json.loads(b''.join(body))['status'] == 'ok'
    assert 'graph_version' not in json.loads(b''.join(body))
    assert probe({'PATH_INFO': '/resource_providers'},
                 lambda *args: None) == [b'app']
