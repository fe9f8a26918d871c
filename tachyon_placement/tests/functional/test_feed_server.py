"""tachyon-feed as a deployment runs it: a process of its own beside the
API (here the built-in server; gunicorn in bench/feed.py), on the suite's
engine.  Its caps answer 503 with Retry-After, a reader that stops
reading is disconnected with a last event saying why, a stream ends at
its time limit with the cursor to resume from, filters pick the changes
on the server, and consumers and allocations come through."""
import json
import os
import signal
import socket
import threading
import time

import pytest

from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional import served

AGG = 'a9900000-0000-4000-8000-000000000002'


def _feed(api, extra_conf=''):
    return served.ServedFeed(api, '[changes]\n' + extra_conf).start()


@pytest.fixture
def feed_server(api, request):
    server = _feed(api, getattr(request, 'param', ''))
    yield server
    server.stop()


def _ok(result):
    status, body = result
    assert status in (200, 201, 204), (status, body)
    return body


def _open(feed, query='', headers=None, path='/tachyon/changes/stream',
          accept='text/event-stream', receive_buffer=None):
    """(socket, file, status line, headers) of a request to the feed."""
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(30)
    sock.connect(('127.0.0.1', feed.port))
    lines = ['GET %s%s HTTP/1.1' % (path, query), 'Host: 127.0.0.1',
             'X-Auth-Token: admin', 'Accept: %s' % accept,
             'OpenStack-API-Version: tachyon 1.0']
    lines += ['%s: %s' % item for item in (headers or {}).items()]
    sock.sendall(('\r\n'.join(lines) + '\r\n\r\n').encode())
    stream = sock.makefile('rb')
    status = stream.readline().decode()
    found = {}
    while True:
        line = stream.readline()
        if line in (b'\r\n', b'\n', b''):
            break
        name, _sep, value = line.decode().partition(':')
        found[name.strip().lower()] = value.strip()
    if found.get('transfer-encoding') == 'chunked':
        stream = Dechunked(stream)
    return sock, stream, status, found


class Dechunked:
    """The body of a chunked response, read by lines."""

    def __init__(self, raw):
        self.raw = raw
        self.pending = b''
        self.ended = False

    def _more(self):
        size = self.raw.readline()
        if not size.strip():
            self.ended = True
            return
        size = int(size.split(b';')[0], 16)
        if size == 0:
            self.ended = True
            return
        self.pending += self.raw.read(size)
        self.raw.readline()     # the chunk's CRLF

    def readline(self):
        while b'\n' not in self.pending and not self.ended:
            self._more()
        line, sep, self.pending = self.pending.partition(b'\n')
        if not sep:
            line, self.pending = self.pending, b''
            return line
        return line + sep

    def read(self, size=-1):
        while not self.ended and (size < 0 or len(self.pending) < size):
            self._more()
        if size < 0:
            data, self.pending = self.pending, b''
        else:
            data, self.pending = self.pending[:size], self.pending[size:]
        return data

    def close(self):
        self.raw.close()


def _close(opened):
    """Close a request's socket for real (its file holds the descriptor
    open otherwise)."""
    sock, stream = opened[0], opened[1]
    stream.close()
    sock.close()


def _events(stream, until):
    """Server-Sent Events (event, data) read from a chunked stream until
    ``until(events)``, the stream ends or a read times out."""
    events, event, data = [], 'message', None
    while not until(events):
        try:
            raw = stream.readline()
        except socket.timeout:
            break
        if not raw:
            break
        line = raw.decode().rstrip('\r\n')
        if line.startswith('event: '):
            event = line[7:]
        elif line.startswith('data: '):
            data = json.loads(line[6:])
        elif line == '' and data is not None:
            events.append((event, data))
            event, data = 'message', None
    return events


def _body(stream, headers):
    """The JSON body of a non-streamed answer."""
    if 'content-length' in headers:
        return json.loads(stream.read(int(headers['content-length'])))
    return json.loads(stream.read())


def _metric_lines(feed):
    """The feed server's own Prometheus metrics, as lines."""
    sock, stream, status, headers = _open(
        feed, path='/tachyon/monitoring/metrics', accept='text/plain')
    assert ' 200 ' in status, status
    if 'content-length' in headers:
        text = stream.read(int(headers['content-length']))
    else:
        text = stream.read()
    _close((sock, stream))
    return text.decode().splitlines()


@pytest.mark.parametrize('feed_server', [
    'max_subscribers = 3\nmax_subscribers_per_client = 2\n'
    'trusted_proxies = 127.0.0.1\nretry_after = 7\n'
    '[metrics]\nenabled = true\n'], indirect=True)
def test_caps_answer_503_with_retry_after(api, feed_server):
    held = [_open(feed_server) for _ in range(2)]
    assert all(' 200 ' in status for _s, _f, status, _h in held)
    # A third from the same address, stream or long poll alike: 503.
    for path, accept, query in (
            ('/tachyon/changes/stream', 'text/event-stream', ''),
            ('/tachyon/changes', 'application/json', '?since=0&wait=5')):
        sock, stream, status, headers = _open(
            feed_server, query, path=path, accept=accept)
        assert ' 503 ' in status, status
        assert headers['retry-after'] == '7'
        error = _body(stream, headers)['errors'][0]
        assert error['code'] == 'tachyon.changes.busy'
        assert error['status'] == 503 and error['retry_after'] == 7
        assert 'from this address' in error['detail']
        _close((sock, stream))
    # Behind a trusted proxy, the client is X-Forwarded-For's: another
    # client gets the third place, a fourth is past the server's cap.
    third = _open(feed_server, headers={'X-Forwarded-For': '10.0.0.9'})
    assert ' 200 ' in third[2]
    sock, stream, status, headers = _open(
        feed_server, headers={'X-Forwarded-For': '10.0.0.10'})
    assert ' 503 ' in status
    assert 'of this server' in _body(stream, headers)['errors'][0]['detail']
    _close((sock, stream))
    # The server's metrics (a scrape is no subscriber): three held, three
    # refused, how far its log reached.
    lines = _metric_lines(feed_server)
    assert 'tachyon_feed_subscribers 3.0' in lines
    assert 'tachyon_feed_events_total{event="busy"} 3.0' in lines
    # A write: the log's head (the streams keep it following) reaches it.
    _ok(api.request('POST', '/resource_providers', {'name': 'feed-head'}))
    cursor = _ok(api.request('GET', '/tachyon/changes', version='1.0',
                             service='tachyon'))['cursor']
    deadline = time.monotonic() + 10
    while True:
        head = float(next(
            line for line in _metric_lines(feed_server)
            if line.startswith('tachyon_feed_head_version ')).split()[1])
        if head >= cursor or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert head >= cursor > 0
    # A subscriber that leaves gives its place back.
    _close(held[0])
    deadline = time.monotonic() + 10
    while True:
        again = _open(feed_server)
        if ' 200 ' in again[2] or time.monotonic() > deadline:
            break
        _close(again)
        time.sleep(0.1)
    assert ' 200 ' in again[2]
    for opened in [again, third] + held[1:]:
        _close(opened)


@pytest.mark.parametrize('feed_server', [
    'max_stream_seconds = 2\n'], indirect=True)
def test_a_stream_ends_at_its_limit_with_where_to_resume(api, feed_server):
    sock, stream, status, _headers = _open(feed_server)
    assert ' 200 ' in status
    created = _ok(api.request('POST', '/resource_providers',
                              {'name': 'during'}))
    events = _events(stream, lambda found: any(
        event == 'end' for event, _data in found))
    sock.close()
    event, data = events[-1]
    assert event == 'end' and data['reason'] == 'stream_limit'
    assert data['cursor'] >= events[0][1]['cursor']
    # The change came in the stream, or (written as its time ran out, on a
    # busy machine) comes first to who resumes at the end's cursor.
    seen = [change['uuid'] for kind, change in events if kind == 'change']
    status, body = served.json_request(
        feed_server.url, 'GET', '/tachyon/changes?since=%d&wait=%d'
        % (data['cursor'], 0 if seen else 5), version='1.0',
        service='tachyon')
    assert status == 200, body
    seen += [change['uuid'] for change in body['changes']]
    assert seen == [created['uuid']], (events, body)


@pytest.mark.parametrize('feed_server', [
    'write_timeout = 1\nsubscriber_buffer = 65536\n'], indirect=True)
def test_a_reader_that_stops_reading_is_cut_with_a_last_event(
        api, feed_server):
    """Finding 2: a subscriber that never reads held its thread (and 2.8
    MB of queued changes) past the stream limit.  Here it is sent a last
    event (reason slow_reader) and disconnected once its writes stop
    draining, and a reader that keeps up is not."""
    hosts = [_ok(api.request('POST', '/resource_providers',
                             {'name': 'big%d' % n}))['uuid']
             for n in range(300)]
    stalled = _open(feed_server, receive_buffer=4096)
    assert ' 200 ' in stalled[2]
    stalled_file = stalled[1]
    reader = _open(feed_server)
    assert ' 200 ' in reader[2]
    received = []
    reading = threading.Thread(target=lambda: received.extend(_events(
        reader[1], lambda found: found and (found[-1][1].get(
            'resource_provider') or {}).get('name') == 'marker')),
        daemon=True)
    reading.start()
    # Changes of about 40 KB each (a provider in 1,000 aggregates; each to
    # another provider, as changes to one provider between two of a
    # stream's reads come once) until the stalled subscriber's buffers
    # are full and it is cut.
    for number, host in enumerate(hosts):
        aggregates = ['%08x-0000-4000-8000-%012x' % (number, n)
                      for n in range(1000)]
        _ok(api.request('PUT', '/resource_providers/%s/aggregates' % host,
                        {'resource_provider_generation': 0,
                         'aggregates': aggregates}))
        if 'slow reader' in feed_server.log_tail(2000):
            break
    else:
        pytest.fail('the stalled subscriber was never cut: %s'
                    % feed_server.log_tail())
    # It reads again only later (longer than it took to cut it): what it
    # was sent is whole events, then the last event, then the end.
    time.sleep(8)
    events = _events(stalled_file, lambda found: bool(found) and (
        found[-1][0] == 'end'))
    assert events and events[-1][0] == 'end', events[-3:]
    assert events[-1][1]['reason'] == 'slow_reader'
    assert all(event == 'change' for event, _data in events[:-1])
    assert stalled_file.read() == b''        # then it is closed
    assert 'Traceback' not in feed_server.log_tail(20000)
    _close(stalled)
    # The reader that keeps up was not cut: it got every change.
    _ok(api.request('POST', '/resource_providers', {'name': 'marker'}))
    reading.join(60)
    assert all(event == 'change' for event, _data in received), [
        (event, data.get('reason')) for event, data in received][-5:]
    # Each aggregate change, in order, then the marker; the stream may
    # begin with the last of the 300 creations (it starts at the head of
    # the feed server's replica, which may be a few writes behind).
    changed = [data['uuid'] for _event, data in received
               if (data.get('resource_provider') or {}).get('aggregates')]
    assert changed == hosts[:number + 1], (len(changed), number)
    assert received[-1][1]['resource_provider']['name'] == 'marker'
    assert {data['uuid'] for _event, data in received[:-1]} <= set(hosts)
    _close(reader)


def test_filters_pick_changes_on_the_server(api, feed_server):
    """Every subscriber received every change of the cloud (finding 7):
    the stream sends what its filter asks for, consumers and allocations
    included (finding 5)."""
    def host(name, aggregates=()):
        rp = _ok(api.request('POST', '/resource_providers', {'name': name}))
        _ok(api.request('PUT', '/resource_providers/%s/inventories'
                        % rp['uuid'], {'resource_provider_generation': 0,
                                       'inventories': {
                                           'VCPU': {'total': 8},
                                           'MEMORY_MB': {'total': 4096}}}))
        if aggregates:
            _ok(api.request('PUT', '/resource_providers/%s/aggregates'
                            % rp['uuid'], {'resource_provider_generation': 1,
                                           'aggregates': list(aggregates)}))
        return rp['uuid']
    cn1, cn2 = host('cn1', [AGG]), host('cn2')
    streams = {
        'usage-and-consumers-on-cn1': '?host=cn1&kind=usage,consumer',
        'aggregate': '?member_of=%s' % AGG,
        'consumers-of-memory': '?kind=allocation&resource_class=MEMORY_MB',
        'root-cn2': '?root=%s&kind=usage' % cn2,
    }
    opened = {name: _open(feed_server, query)
              for name, query in streams.items()}
    instance = 'c0000000-0000-4000-8000-000000000001'
    on_cn2 = 'c0000000-0000-4000-8000-000000000002'
    _ok(api.request('PUT', '/allocations/%s' % instance, {
        'allocations': {cn1: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}))
    _ok(api.request('PUT', '/allocations/%s' % on_cn2, {
        'allocations': {cn2: {'resources': {'VCPU': 1, 'MEMORY_MB': 512}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}))
    _ok(api.request('PUT', '/resource_providers/%s/traits' % cn2, {
        'resource_provider_generation': 2, 'traits': ['HW_CPU_X86_AVX2']}))
    # The instance moves to cn2: cn1's subscriber sees it leave.
    _ok(api.request('PUT', '/allocations/%s' % instance, {
        'allocations': {cn2: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1,
        'consumer_type': 'INSTANCE'}))
    _ok(api.request('DELETE', '/allocations/%s' % on_cn2))

    def seen(name, required, allowed=()):
        """{(type, uuid): deleted} of what the stream sent: until it sent
        ``required`` (or 60 s), then until it was quiet for 2 s.  Changes
        to an object between two of the feed's reads come once, as it is
        then: a consumer created and moved on between them never was on
        its first host for the feed (hence ``allowed``, what may come)."""
        sock, stream, status, _headers = opened[name]
        assert ' 200 ' in status, status
        found = {}
        deadline = time.monotonic() + 60

        def keep(events):
            for _event, data in events[len(kept):]:
                found[(data['type'], data['uuid'])] = data['deleted']
            kept[:] = events
            return time.monotonic() > deadline or all(
                found.get(key) == value for key, value in required.items())
        kept = []
        sock.settimeout(60)
        keep(_events(stream, keep))
        kept = []
        sock.settimeout(2)
        keep(_events(stream, lambda events: keep(events) and False))
        _close(opened[name])
        assert all(found.get(key) == value
                   for key, value in required.items()), (name, found)
        assert set(found) <= set(required) | set(allowed), (name, found)
        return found
    provider, consumer = 'resource_provider', 'consumer'
    # A consumer written twice between two of the feed's reads (made and
    # moved, made and deleted) may not be placed where it was: it passes
    # every filter but kind's (so a filter it left is told), hence the
    # consumers allowed.
    seen('usage-and-consumers-on-cn1', {(provider, cn1): False},
         [(consumer, instance), (consumer, on_cn2)])
    # A consumer's aggregates are its providers'.
    seen('aggregate', {(provider, cn1): False},
         [(consumer, instance), (consumer, on_cn2)])
    seen('consumers-of-memory', {(consumer, on_cn2): True},
         [(consumer, instance)])
    # The trait change is not usage (unless it came with one).
    seen('root-cn2', {(provider, cn2): False})


def _replicas(pid):
    """The redis-server processes ``pid`` started (its graph replicas)."""
    return [child for child, name, _line in served.children(pid)
            if name == b'redis-server']


def _change_of(uuid):
    return lambda found: any(
        event == 'change' and data.get('uuid') == uuid
        for event, data in found)


def test_the_feed_server_reads_a_replica_of_falkordb(api, feed_server):
    """The feed server's reads (following the graph once per stream
    interval) held FalkorDB's graph while Placement's writes waited: PUT
    /allocations' p95 grew by 40 % with one subscriber (bench/feed.py).
    With FalkorDB it reads a replica of its own (graph/replica_reads.py,
    processes.Kept): changes come through it; killed, another one is
    made and the stream goes on; a cursor read from the API, ahead of the
    replica by the replication delay, is answered, never 410.  Neo4j's
    reads do not block its writes: no replica there."""
    replicas = _replicas(feed_server.process.pid)
    if engines.NEO4J_URI:
        assert replicas == []
        return
    assert len(replicas) == 1, replicas
    assert 'reads a replica of the graph server' in feed_server.log_tail()
    sock, stream, status, _headers = _open(feed_server)
    assert ' 200 ' in status
    first = _ok(api.request('POST', '/resource_providers',
                            {'name': 'through-the-replica'}))
    assert _events(stream, _change_of(first['uuid']))
    os.kill(replicas[0], signal.SIGKILL)
    second = _ok(api.request('POST', '/resource_providers',
                             {'name': 'after-a-new-replica'}))
    events = _events(stream, _change_of(second['uuid']))
    assert _change_of(second['uuid'])(events), events
    _close((sock, stream))
    again = _replicas(feed_server.process.pid)
    assert len(again) == 1 and again != replicas, (replicas, again)
    # Cursors written a moment ago through the API, followed at once.
    for number in range(20):
        _ok(api.request('POST', '/resource_providers',
                        {'name': 'fresh-%d' % number}))
        head = _ok(api.request('GET', '/tachyon/changes', version='1.0',
                               service='tachyon'))['cursor']
        status, body = served.json_request(
            feed_server.url, 'GET', '/tachyon/changes?since=%d&wait=1'
            % head, version='1.0', service='tachyon')
        assert status == 200 and body['cursor'] >= head, (status, body)


@pytest.mark.parametrize('feed_server', ['read_replica = false\n'],
                         indirect=True)
def test_without_a_replica_the_feed_reads_the_server(api, feed_server):
    assert _replicas(feed_server.process.pid) == []
    sock, stream, status, _headers = _open(feed_server)
    created = _ok(api.request('POST', '/resource_providers',
                              {'name': 'from-the-server'}))
    assert _change_of(created['uuid'])(_events(
        stream, _change_of(created['uuid'])))
    _close((sock, stream))


def test_a_cursor_below_the_retention_gets_410_from_every_log(tmp_path):
    """[changes] retention_versions = 5, pruned every second by the API:
    a cursor whose deletions were pruned gets 410 from the feed server and
    from the API's own feed alike, though both still hold those changes
    in their logs (one answered 200 from its log for as long as it ran,
    the other 410)."""
    retention = '[changes]\nretention_versions = 5\nprune_interval = 1\n'
    api = served.ServedPlacement(tmp_path / 'api',
                                 extra_conf=retention).start()
    try:
        feed = served.ServedFeed(api, retention).start()
        try:
            start = _ok(api.request('GET', '/tachyon/changes',
                                    service='tachyon', version='1.0'))
            gone = [_ok(api.request('POST', '/resource_providers',
                                    {'name': 'gone%d' % number}))['uuid']
                    for number in range(2)]
            query = '/tachyon/changes?since=%d' % start['cursor']
            # Both logs hold the changes now (the first read fills them).
            for base in (api.url, feed.url):
                status, body = served.json_request(
                    base, 'GET', query, version='1.0', service='tachyon')
                assert status == 200, body
            for uuid in gone:
                _ok(api.request('DELETE', '/resource_providers/%s' % uuid))
            for number in range(8):
                _ok(api.request('POST', '/resource_providers',
                                {'name': 'after%d' % number}))
            answers = {}
            told_gone = set()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                answers = {base: served.json_request(
                    base, 'GET', query, version='1.0',
                    service='tachyon') for base in (api.url, feed.url)}
                # Until a log sees the prune, the whole of it up to its
                # cursor (never a gap; a log whose replica of the graph is
                # behind answers up to where it is: the test's writes are
                # the graph's versions one by one, the deletions the
                # 3rd and 4th after the start); the two logs see the
                # prune at different moments, and neither answers 200
                # again once it said 410.
                for base, (status, body) in answers.items():
                    if status == 410:
                        told_gone.add(base)
                        continue
                    assert base not in told_gone, (base, body)
                    assert status == 200, (base, body)
                    reached = body['cursor'] - start['cursor']
                    assert reached <= 2 + len(gone) + 8, (base, body)
                    assert {change['uuid'] for change in body['changes']
                            if change['deleted']} >= {
                        uuid for number, uuid in enumerate(gone)
                        if reached >= 3 + number}, (base, body)
                if len(told_gone) == len(answers):
                    break
                time.sleep(0.3)
            for status, body in answers.values():
                assert status == 410, body
                assert body['errors'][0]['code'] == 'tachyon.changes.gone'
        finally:
            feed.stop()
    finally:
        api.stop()


@pytest.mark.parametrize('feed_server', [
    'restart_after_subscribers = 3\n'], indirect=True)
def test_the_feed_server_starts_anew_once_a_crowd_has_left(api, feed_server):
    """What a crowd of subscribers took is given back whole by starting
    anew (exec, the same process id and listening socket): a request made
    meanwhile waits in the socket's backlog and is answered, and a cursor
    read before goes on after it (the log is read anew, as after any
    restart)."""
    pid = feed_server.process.pid
    replicas = _replicas(pid)
    cursor = _ok(api.request('GET', '/tachyon/changes', version='1.0',
                             service='tachyon'))['cursor']
    crowd = [_open(feed_server) for _ in range(3)]
    assert all(' 200 ' in opened[2] for opened in crowd)
    before = _ok(api.request('POST', '/resource_providers',
                             {'name': 'before-the-crowd-left'}))
    for opened in crowd:
        assert _events(opened[1], _change_of(before['uuid']))
        _close(opened)
    # Asked again and again while it starts anew: each is answered (none
    # refused, none cut).
    answered, deadline = 0, time.monotonic() + 60
    while feed_server.log_tail(20000).count('open files allowed') < 2:
        assert time.monotonic() < deadline, feed_server.log_tail()
        status, body = served.json_request(
            feed_server.url, 'GET', '/tachyon/changes?since=%d' % cursor,
            version='1.0', service='tachyon')
        assert status == 200, (status, body)
        answered += 1
        time.sleep(0.05)
    assert answered
    assert 'starting anew to give their memory back' in (
        feed_server.log_tail(20000))
    assert feed_server.process.poll() is None
    assert feed_server.process.pid == pid
    # Its replica was stopped with it and made anew (FalkorDB).
    if not engines.NEO4J_URI:
        again = _replicas(pid)
        assert len(again) == 1 and set(again).isdisjoint(replicas), (
            replicas, again)
    after = _ok(api.request('POST', '/resource_providers',
                            {'name': 'after-it-started-anew'}))
    deadline = time.monotonic() + 30
    while True:
        status, body = served.json_request(
            feed_server.url, 'GET', '/tachyon/changes?since=%d&wait=5'
            % cursor, version='1.0', service='tachyon')
        assert status == 200, body
        seen = [change['uuid'] for change in body['changes']]
        if after['uuid'] in seen or time.monotonic() > deadline:
            break
    assert seen == [before['uuid'], after['uuid']], body
