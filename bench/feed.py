"""The change feed under load (``python -m bench --feed``): do subscribers
slow the candidate requests?

A writer drives ``--feed-events`` provider changes per second through
Tachyon's API: batches of POST /allocations, each claiming (then, the next
batch, releasing) a little on many hosts at once, so each write changes
many providers. A second Tachyon process on the same engine serves the
feed (``tachyon-placement-api``, a thread per connection, as the README
recommends: long polls must not hold the API's gunicorn threads).  The
flat candidate request is measured twice under the same write load: with
no subscriber, then with ``--feed-subscribers`` clients following the feed
(a Server-Sent Events stream each, or long polls) and counting what they
receive. Writers and subscribers run in processes of their own, apart
from the measuring one.
"""
import os
import random
import re
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
# Seconds between subscribers connecting (or disconnecting) and the turn's
# first measured request.
SETTLE = 2


class FeedServer:
    """tachyon-placement-api on the bench's Tachyon configuration (and so
    on its engine)."""

    name = 'tachyon-feed'

    def __init__(self, tachyon, nice=0):
        self.tachyon = tachyon
        self.nice = nice
        self.port = svcs.free_port()
        self.proc = None

    def start(self, timeout=120):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
        niced = ['nice', '-n', str(self.nice)] if self.nice else []
        command = niced + [
            self.tachyon.python, '-m', 'tachyon_placement.cmd.api',
            '--config-file', self.tachyon.conf_path, '--port', str(self.port)]
        self.proc = svcs.Proc('tachyon-feed', command, env=env,
                              cwd=self.tachyon.dir)
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

    def __init__(self, client, hosts, project, user, rate, seed,
                 written=None):
        super().__init__(name='feed-writer', daemon=True)
        self.written = written      # a counter shared with the bench
        self.client = client
        self.hosts = hosts          # root provider uuids with room
        self.project, self.user = project, user
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
                        'allocations': {host: {
                            'resources': {'VCPU': 1}}},
                        'project_id': self.project, 'user_id': self.user,
                        'consumer_generation': None,
                        'consumer_type': 'INSTANCE'}
                    held[consumer] = 1
            response = self.client.request('POST', '/allocations', body)
            if response.status == 204:
                self.changes += BATCH_HOSTS
                if self.written is not None:
                    with self.written.get_lock():
                        self.written.value += BATCH_HOSTS
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


EVENT_ID = re.compile(rb'\nid: ([0-9]+)\n')


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
        self.last = None
        self.disordered = 0

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
                last_id = self._follow(response) or last_id
            except OSError:
                self.errors += 1
            finally:
                conn.close()

    def _follow(self, response):
        """Reads one stream by chunks (a line at a time would cost the
        subscribers' process more than the server's writing them),
        counting its events and any that comes out of cursor order; the
        last event id, to resume from."""
        leftover, last_id = b'\n', None
        while not self.stop_event.is_set():
            chunk = response.read1(65536)
            if not chunk:
                break
            text = leftover + chunk
            end = text.rfind(b'\n')
            # Whole lines up to the last newline; the rest (from that
            # newline on) waits for the next chunk.
            ids = EVENT_ID.findall(text, 0, end + 1)
            leftover = text[end:]
            for found in ids:
                cursor = int(found)
                if self.last is not None and cursor < self.last:
                    self.disordered += 1
                self.last = cursor
            self.received += len(ids)
            if ids:
                last_id = ids[-1].decode()
        return last_id

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


def _writers(port, hosts, project, user, rate, seed, written, stop, out):
    """A child process: WRITERS threads sharing ``rate``, counting into
    ``written``; puts their (changes/s, errors, error samples) on ``out``
    once ``stop`` is set."""
    writers = [Writer(http.Client('tachyon-writer', '127.0.0.1', port),
                      hosts, project, user, rate / float(WRITERS), seed + i,
                      written)
               for i in range(WRITERS)]
    for writer in writers:
        writer.start()
    stop.wait()
    rate = sum(writer.per_second() for writer in writers)
    for writer in writers:
        writer.stop()
    out.put((rate, sum(w.errors for w in writers),
             [s for w in writers for s in w.error_samples][:3]))


def _subscribers(port, count, mode, nice, commands, out):
    """A child process: ``count`` subscribers of the feed, following it
    during each subscribed turn.  Commands: 'follow' (connect them all,
    answer 'following' once every one has its first answer), 'halt'
    (disconnect them all, answer the changes each received, the errors
    and the changes out of order), 'exit'.  Spawned once for the whole
    run, so that neither starting the process nor connecting and
    disconnecting lands in a measured turn.  ``nice``: they stand for
    other machines' clients (--feed-subscriber-nice), so they may yield
    the CPU to the service they measure."""
    if nice:
        os.nice(nice)
    kind = StreamSubscriber if mode == 'sse' else Subscriber
    while commands.get() == 'follow':
        subs = [kind(port, i) for i in range(count)]
        for sub in subs:
            sub.start()
        deadline = time.monotonic() + 60
        while (any(sub.polls == 0 for sub in subs)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        out.put('following')
        commands.get()      # 'halt'
        for sub in subs:
            sub.stop()
        for sub in subs:
            sub.join(30)
        out.put(([sub.received for sub in subs],
                 sum(s.errors for s in subs),
                 sum(getattr(s, 'disordered', 0) for s in subs)))


class Load:
    """Writers, and subscribers, each in a process of their own: in the
    measuring process their threads would hold its interpreter lock and
    lengthen the very latencies measured."""

    def __init__(self):
        import multiprocessing
        self.context = multiprocessing.get_context('spawn')
        self.stop = self.context.Event()
        self.children = []

    def start(self, target, *args):
        out = self.context.Queue()
        child = self.context.Process(target=target,
                                     args=args + (self.stop, out),
                                     daemon=True)
        child.start()
        self.children.append((child, out))

    def finish(self):
        self.stop.set()
        results = [out.get(timeout=120) for child, out in self.children]
        for child, out in self.children:
            child.join(30)
        return results


def turns(count):
    """``count`` turns without and with subscribers, in ABBA order (drift
    of the machine, and of the graph under the writes, weighs on both
    alike); one set of writers runs through them all, on the same
    connections."""
    pattern = (False, True, True, False)
    return tuple(pattern[i % 4] for i in range(max(4, count // 4 * 4)))


def run(client, tachyon, cloud, args, record, started, say):
    """Candidates under the write load, in turns without and with
    subscribers; records feed_0_subscribers and feed_N_subscribers_MODE
    (the latter with its latencies over the former's)."""
    from bench import report
    server = FeedServer(tachyon, args.feed_nice)
    started.append(server)
    server.start()
    say('feed: served on 127.0.0.1:%d' % server.port)
    flat = wl.read_workloads(cloud)[0]
    # Hosts with room: one full host would fail a whole batch.
    hosts = [h.root.uuid for h in cloud.hosts
             if not h.race and h.fill < 0.7]
    writing = Load()
    written = writing.context.Value('q', 0)
    writing.start(_writers, client.port, hosts, cloud.projects[0],
                  cloud.users[0], args.feed_events, args.seed, written)
    time.sleep(5)       # the process starts, the rate settles
    merged = {False: wl.Stats(), True: wl.Stats()}
    rates = {False: [], True: []}
    turn_p50 = {False: [], True: []}
    received, poll_errors, disordered = [], 0, 0
    order = turns(args.feed_turns)
    per_turn = max(1, args.requests * 2 // len(order))
    import multiprocessing
    spawning = multiprocessing.get_context('spawn')
    commands, answers = spawning.Queue(), spawning.Queue()
    subscribers = spawning.Process(
        target=_subscribers, daemon=True,
        args=(server.port, args.feed_subscribers, args.feed_mode,
              args.feed_subscriber_nice, commands, answers))
    subscribers.start()
    try:
        for subscribed in order:
            if subscribed:
                commands.put('follow')
                answers.get(timeout=120)
            # Connections made (or closed) and the first catch-up done:
            # the turn measures subscribers that follow, not connecting.
            time.sleep(SETTLE)
            before, began = written.value, time.monotonic()
            stats = _measure(client, flat, per_turn, args.read_seconds)
            rates[subscribed].append(
                (written.value - before) / (time.monotonic() - began))
            turn_p50[subscribed].append(round(
                report.percentile(stats.latencies, 50) * 1000, 1))
            merged[subscribed].merge(stats)
            merged[subscribed].wall += stats.wall
            if merged[subscribed].first_body is None:
                merged[subscribed].first_body = stats.first_body
            if subscribed:
                commands.put('halt')
                counts, errors, out_of_order = answers.get(timeout=120)
                received.extend(counts)
                poll_errors += errors
                disordered += out_of_order
    finally:
        commands.put('exit')
        subscribers.join(30)
        _rate, write_errors, samples = writing.finish()[0]
    results = {}
    for subscribed in (False, True):
        subscribers = args.feed_subscribers if subscribed else 0
        name = 'feed_%d_subscribers' % subscribers + (
            '_%s' % args.feed_mode if subscribed else '')
        entry = record(name, '%s under %d provider changes/s, %d '
                       'subscribers following the feed (in turns)' % (
                           flat.description, args.feed_events,
                           subscribers), {'tachyon': merged[subscribed]},
                       'read')
        rate = sum(rates[subscribed]) / len(rates[subscribed])
        entry['feed'] = {
            'changes_per_s': round(rate, 1), 'write_errors': write_errors,
            'write_error_samples': samples,
            'subscribers': subscribers, 'mode': args.feed_mode,
            'nice': args.feed_nice,
            'subscriber_nice': args.feed_subscriber_nice,
            'turn_p50_ms': turn_p50[subscribed]}
        if subscribed:
            entry['feed'].update(
                received_min=min(received), received_max=max(received),
                poll_errors=poll_errors, out_of_order=disordered)
        results[subscribed] = entry
        p50 = (entry['tachyon']['latency'] or {}).get('p50_ms')
        say('  %s: p50 %s ms (per turn: %s), %.0f changes/s written%s' % (
            name, p50, ', '.join(map(str, turn_p50[subscribed])), rate,
            '' if not subscribed else
            ', each subscriber got %d-%d changes per turn (%d out of '
            'order, %d errors)' % (min(received), max(received),
                                   disordered, poll_errors)))
    plain, loaded = results[False], results[True]
    loaded['versus'] = dict({
        q: report.ratio(report.latency(loaded['tachyon'], q),
                        report.latency(plain['tachyon'], q))
        for q in ('p50_ms', 'p95_ms', 'p99_ms')},
        changes_per_s=report.ratio(loaded['feed']['changes_per_s'],
                                   plain['feed']['changes_per_s']),
        base='same writes, no subscriber')
    return results


if __name__ == '__main__':
    sys.exit('run it through python -m bench --feed')
