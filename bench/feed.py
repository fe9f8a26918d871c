"""The change feed under load (``python -m bench --feed``): do subscribers
slow the candidate requests?

A writer drives ``--feed-events`` provider changes per second through
Tachyon's API: batches of POST /allocations, each claiming (then, the next
batch, releasing) a little on many hosts at once, so each write changes
many providers. A second Tachyon process on the same engine serves the
feed (``tachyon-placement-api``, a thread per connection, as the README
recommends: long polls must not hold the API's gunicorn threads).  The
flat candidate request is measured twice under the same write load: with
no subscriber, then with ``--feed-subscribers`` clients long-polling
``/tachyon/changes`` and counting what they receive.
"""
import os
import random
import sys
import threading
import time
import uuid

from bench import client as http
from bench import services as svcs
from bench import workloads as wl

BATCH_HOSTS = 50
# Writer threads sharing the rate (one POST of 50 consumers takes tens of
# milliseconds: one thread alone cannot write 1000 changes/s).
WRITERS = 4


class FeedServer:
    """tachyon-placement-api on the bench's Tachyon configuration (and so
    on its engine)."""

    name = 'tachyon-feed'

    def __init__(self, tachyon):
        self.tachyon = tachyon
        self.port = svcs.free_port()
        self.proc = None

    def start(self, timeout=120):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
        self.proc = svcs.Proc(
            'tachyon-feed', [self.tachyon.python, '-m',
                             'tachyon_placement.cmd.api', '--config-file',
                             self.tachyon.conf_path, '--port',
                             str(self.port)],
            env=env, cwd=self.tachyon.dir)
        client = http.Client('feed', '127.0.0.1', self.port, timeout=10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise svcs.SetupError('the feed server exited (log: %s)'
                                      % self.proc.log_path)
            if client.request('GET', '/').status == 200:
                return
            time.sleep(0.5)
        raise svcs.SetupError('the feed server did not start (log: %s)'
                              % self.proc.log_path)

    def pids(self):
        return [self.proc.pid] if self.proc and self.proc.alive() else []

    def stop(self):
        if self.proc:
            self.proc.stop()


class Writer(threading.Thread):
    """About ``rate`` provider changes per second: POST /allocations with
    BATCH_HOSTS consumers on distinct hosts, alternately claiming and
    releasing (so the cloud ends as it began)."""

    def __init__(self, client, cloud, rate, seed):
        super().__init__(name='feed-writer', daemon=True)
        self.client = client
        # Hosts with room: one full host would fail a whole batch.
        self.hosts = [h for h in cloud.hosts if not h.race and h.fill < 0.7]
        self.project, self.user = cloud.projects[0], cloud.users[0]
        self.rate = rate
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.changes = 0
        self.errors = 0
        self.error_samples = []
        self.started = None

    def run(self):
        self.started = time.monotonic()
        interval = BATCH_HOSTS / float(self.rate)
        held = {}
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            if held:
                body = {consumer: {'allocations': {},
                                   'project_id': self.project,
                                   'user_id': self.user,
                                   'consumer_generation': generation,
                                   'consumer_type': 'INSTANCE'}
                        for consumer, generation in held.items()}
                held = {}
            else:
                body = {}
                for host in self.rng.sample(self.hosts, BATCH_HOSTS):
                    consumer = str(uuid.uuid4())
                    body[consumer] = {
                        'allocations': {host.root.uuid: {
                            'resources': {'VCPU': 1}}},
                        'project_id': self.project, 'user_id': self.user,
                        'consumer_generation': None,
                        'consumer_type': 'INSTANCE'}
                    held[consumer] = 1
            response = self.client.request('POST', '/allocations', body)
            if response.status == 204:
                self.changes += BATCH_HOSTS
            else:
                self.errors += 1
                if len(self.error_samples) < 3:
                    self.error_samples.append(response.describe())
                if not any(entry['allocations'] for entry in body.values()):
                    held = {c: 1 for c in body}     # release again
                else:
                    held = {}
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_at = time.monotonic()
        if held:    # leave the cloud as it was
            self.client.request('POST', '/allocations', {
                consumer: {'allocations': {}, 'project_id': self.project,
                           'user_id': self.user,
                           'consumer_generation': generation,
                           'consumer_type': 'INSTANCE'}
                for consumer, generation in held.items()})

    def per_second(self):
        return self.changes / max(1e-9, time.monotonic() - self.started)

    def stop(self):
        self.stop_event.set()
        self.join(30)


class StreamSubscriber(threading.Thread):
    """Follows the feed's Server-Sent Events stream, counting the changes
    it receives (one connection; the server writes each batch once)."""

    def __init__(self, port, index):
        super().__init__(name='feed-stream-%d' % index, daemon=True)
        self.port = port
        self.stop_event = threading.Event()
        self.received = 0
        self.polls = 0
        self.errors = 0

    def run(self):
        from http import client as http_client
        last_id = None
        while not self.stop_event.is_set():
            conn = http_client.HTTPConnection('127.0.0.1', self.port,
                                              timeout=30)
            headers = {'Accept': 'text/event-stream',
                       'X-Auth-Token': http.TOKEN,
                       'OpenStack-API-Version': 'tachyon 1.0'}
            if last_id is not None:
                headers['Last-Event-ID'] = last_id
            try:
                conn.request('GET', '/tachyon/changes/stream',
                             headers=headers)
                response = conn.getresponse()
                if response.status != 200:
                    self.errors += 1
                    time.sleep(0.5)
                    continue
                self.polls += 1
                while not self.stop_event.is_set():
                    line = response.fp.readline()
                    if not line:
                        break
                    if line.startswith(b'id: '):
                        self.received += 1
                        last_id = line[4:].strip().decode()
            except OSError:
                self.errors += 1
            finally:
                conn.close()

    def stop(self):
        self.stop_event.set()


class Subscriber(threading.Thread):
    """Long-polls the feed, counting the changes it receives."""

    def __init__(self, port, index):
        super().__init__(name='feed-subscriber-%d' % index, daemon=True)
        self.client = http.Client('feed', '127.0.0.1', port, timeout=90)
        self.stop_event = threading.Event()
        self.received = 0
        self.polls = 0
        self.errors = 0

    def run(self):
        cursor = self.client.request('GET', '/tachyon/changes').json()[
            'cursor']
        while not self.stop_event.is_set():
            response = self.client.request(
                'GET', '/tachyon/changes?since=%d&wait=5' % cursor)
            self.polls += 1
            if response.status != 200:
                self.errors += 1
                time.sleep(0.5)
                continue
            # Counted, not parsed: the subscribers share the machine with
            # the service, and parsing thousands of changes a second would
            # weigh on it more than the service's own work.
            self.received += response.body.count(b'"cursor":') - 1
            cursor = int(response.body[10:response.body.index(b',')])

    def stop(self):
        self.stop_event.set()


def _measure(client, workload, requests, seconds):
    stats = wl.run_read(workload, {'tachyon': client}, requests, seconds)
    return stats['tachyon']


def run(client, tachyon, cloud, args, record, started, say):
    """Candidates under the write load without, then with, subscribers;
    records feed_none and feed_N entries."""
    server = FeedServer(tachyon)
    started.append(server)
    server.start()
    say('feed: served on 127.0.0.1:%d' % server.port)
    flat = wl.read_workloads(cloud)[0]
    results = {}
    for subscribers in (0, args.feed_subscribers):
        writers = [Writer(http.Client('tachyon-writer', '127.0.0.1',
                                      client.port), cloud,
                          args.feed_events / float(WRITERS), args.seed + i)
                   for i in range(WRITERS)]
        kind = StreamSubscriber if args.feed_mode == 'sse' else Subscriber
        subs = [kind(server.port, i) for i in range(subscribers)]
        for sub in subs:
            sub.start()
        for writer in writers:
            writer.start()
        time.sleep(3)       # the write rate and the polls settle
        stats = _measure(client, flat, args.requests, args.read_seconds)
        rate = sum(writer.per_second() for writer in writers)
        for writer in writers:
            writer.stop()
        for sub in subs:
            sub.stop()
        errors = sum(writer.errors for writer in writers)
        samples = [s for writer in writers for s in writer.error_samples]
        received = [sub.received for sub in subs]
        name = 'feed_%d_subscribers' % subscribers + (
            '_%s' % args.feed_mode if subscribers else '')
        entry = record(name, '%s under %d provider changes/s, %d '
                       'subscribers long-polling the feed' % (
                           flat.description, args.feed_events,
                           subscribers), {'tachyon': stats}, 'read')
        entry['feed'] = {
            'changes_per_s': round(rate, 1), 'write_errors': errors,
            'write_error_samples': samples[:3],
            'subscribers': subscribers,
            'received_min': min(received) if received else None,
            'received_max': max(received) if received else None,
            'poll_errors': sum(sub.errors for sub in subs)}
        results[subscribers] = entry
        say('  %s: p50 %s ms, %.0f changes/s written, subscribers got '
            '%s-%s changes' % (name, (entry['tachyon']['latency'] or {}).get(
                'p50_ms'), rate, entry['feed']['received_min'],
                entry['feed']['received_max']))
    plain, loaded = results[0], results[args.feed_subscribers]
    loaded['feed']['mode'] = args.feed_mode
    from bench import report
    loaded['versus'] = dict({
        q: report.ratio(report.latency(loaded['tachyon'], q),
                        report.latency(plain['tachyon'], q))
        for q in ('p50_ms', 'p95_ms', 'p99_ms')},
        base='same writes, no subscriber')
    return results


if __name__ == '__main__':
    sys.exit('run it through python -m bench --feed')
