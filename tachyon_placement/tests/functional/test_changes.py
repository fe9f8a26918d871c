"""The change feed over HTTP against a served Tachyon: a long poll wakes
when a write lands, Server-Sent Events resume after Last-Event-ID, a
pruned cursor gets 410, and the documented mirror example keeps one
aggregate's hosts in sync."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import webob

from tachyon_placement.tests.functional.fixtures import gabbits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
AGG = 'a9900000-0000-4000-8000-000000000001'


def _ok(result):
    status, body = result
    assert status in (200, 201, 204), (status, body)
    return body


def feed(api, query):
    request = urllib.request.Request(
        api.url + '/tachyon/changes' + query,
        headers={'X-Auth-Token': 'admin', 'Accept': 'application/json',
                 'OpenStack-API-Version': 'tachyon 1.0'})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_a_long_poll_wakes_when_a_write_lands(api):
    cursor = feed(api, '')['cursor']
    answer = {}

    def poll():
        start = time.monotonic()
        answer['body'] = feed(api, '?since=%d&wait=20' % cursor)
        answer['seconds'] = time.monotonic() - start
    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(1.0)
    created = _ok(api.request('POST', '/resource_providers',
                              {'name': 'woken'}))
    thread.join(30)
    assert answer['body']['changes'][0]['uuid'] == created['uuid']
    # Woken by the write, not by the end of the wait.
    assert answer['seconds'] < 5
    # Nothing new: the poll waits its time and answers empty.
    start = time.monotonic()
    empty = feed(api, '?since=%d&wait=1' % answer['body']['cursor'])
    assert empty['changes'] == [] and time.monotonic() - start >= 0.9


def _sse(api, headers=None, query=''):
    """(socket file, first lines) of a Server-Sent Events stream."""
    sock = socket.create_connection(('127.0.0.1', api.port), timeout=30)
    lines = ['GET /tachyon/changes/stream%s HTTP/1.1' % query,
             'Host: 127.0.0.1', 'X-Auth-Token: admin',
             'Accept: text/event-stream',
             'OpenStack-API-Version: tachyon 1.0']
    lines += ['%s: %s' % item for item in (headers or {}).items()]
    sock.sendall(('\r\n'.join(lines) + '\r\n\r\n').encode())
    stream = sock.makefile('rb')
    status = stream.readline().decode()
    assert ' 200 ' in status, (status, api.log_tail())
    while True:
        line = stream.readline()
        assert line, ('the stream closed in its headers', api.log_tail())
        if line in (b'\r\n', b'\n'):
            return sock, stream


def _next_event(api, stream):
    """The next event's (id, data), skipping comments and chunk sizes;
    fails (with the server's log) if the stream ends first."""
    event = {}
    while True:
        raw = stream.readline()
        assert raw, ('the stream ended before an event', event,
                     api.log_tail())
        line = raw.decode().rstrip('\r\n')
        if line.startswith('id: '):
            event['id'] = int(line[4:])
        elif line.startswith('data: '):
            event['data'] = json.loads(line[6:])
        elif line == '' and 'data' in event:
            return event['id'], event['data']


def test_server_sent_events_resume_after_the_last_event_id(api):
    start = feed(api, '')['cursor']
    sock, stream = _sse(api, query='?since=%d' % start)
    first = _ok(api.request('POST', '/resource_providers', {'name': 'one'}))
    event_id, data = _next_event(api, stream)
    assert data['uuid'] == first['uuid'] and event_id > start
    sock.close()
    # Disconnected: two more changes happen meanwhile.
    second = _ok(api.request('POST', '/resource_providers', {'name': 'two'}))
    _ok(api.request('DELETE', '/resource_providers/%s' % first['uuid']))
    sock, stream = _sse(api, headers={'Last-Event-ID': str(event_id)})
    got = [_next_event(api, stream)[1] for _ in range(2)]
    sock.close()
    assert [(c['uuid'], c['deleted']) for c in got] == [
        (second['uuid'], False), (first['uuid'], True)]


def _tachyon_get(app, url):
    request = webob.Request.blank(url)
    request.headers['x-auth-token'] = 'admin'
    request.headers['openstack-api-version'] = 'tachyon 1.0'
    request.headers['accept'] = 'application/json'
    response = request.get_response(app)
    return response.status_int, response.json


def test_a_cursor_older_than_the_retention_gets_410():
    fixture = gabbits.APIFixture()
    fixture.start_fixture()
    try:
        store, seed = fixture.app.store, fixture.seed
        # A process that keeps one change in memory ([changes] log_size):
        # older cursors are answered from the graph, while it keeps the
        # deletions.
        store.feed.log.capacity = 1
        old = store.worlds.current().version
        gone = seed.create_provider('short-lived')
        seed.create_provider('another')
        seed.call('DELETE', '/resource_providers/%s' % gone)
        status, body = _tachyon_get(fixture.app,
                                    '/tachyon/changes?since=%d' % old)
        assert status == 200
        assert [(c['type'], c['deleted']) for c in body['changes']] == [
            ('resource_provider', False), ('resource_provider', True)]
        assert store.changes.prune(keep=0) == store.worlds.current().version
        status, body = _tachyon_get(fixture.app,
                                    '/tachyon/changes?since=%d' % old)
        assert status == 410
        assert body['errors'][0]['code'] == 'tachyon.changes.gone'
        # From the floor on, the feed answers.
        status, body = _tachyon_get(
            fixture.app, '/tachyon/changes?since=%d' % store.changes.floor())
        assert status == 200
    finally:
        fixture.stop_fixture()


def _host(api, name, aggregates):
    rp = _ok(api.request('POST', '/resource_providers', {'name': name}))
    _ok(api.request('PUT', '/resource_providers/%s/aggregates' % rp['uuid'],
                    {'resource_provider_generation': 0,
                     'aggregates': aggregates}))
    return rp['uuid']


class Lines:
    """The lines a process prints, read in a thread."""

    def __init__(self, process):
        self.lines = []
        self._thread = threading.Thread(target=self._read,
                                        args=(process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line.decode().rstrip())

    def wait_for(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            time.sleep(0.05)
        raise AssertionError('%r never came: %s' % (text, self.lines[-20:]))


def test_the_documented_mirror_follows_an_aggregate_across_a_restart(api):
    """doc/examples/aggregate_mirror.py (the package's client) lists the
    aggregate, follows its changes, and keeps doing so when Tachyon
    restarts (it reconnects with backoff; finding 6 of the issue was a
    traceback)."""
    inside = _host(api, 'inside', [AGG])
    _host(api, 'outside', [])
    example = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, 'doc', 'examples',
                                      'aggregate_mirror.py'),
         api.url, AGG], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        lines = Lines(example)
        lines.wait_for('listed: 1 hosts: inside')
        _host(api, 'joining', [AGG])
        lines.wait_for('2 hosts: inside, joining')
        api.stop()
        time.sleep(1.0)
        assert example.poll() is None, lines.lines[-30:]
        api.start()
        _ok(api.request('DELETE', '/resource_providers/%s' % inside))
        lines.wait_for('1 hosts: joining')
        _host(api, 'after-restart', [AGG])
        lines.wait_for('2 hosts: after-restart, joining')
        assert example.poll() is None
        assert not any('Traceback' in line for line in lines.lines)
    finally:
        example.kill()
        example.wait()
