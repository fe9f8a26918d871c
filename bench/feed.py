"""The change feed under load (``python -m bench --feed``): do subscribers
slow Placement's requests?

A writer drives ``--feed-events`` provider changes per second through
Tachyon's API: batches of POST /allocations, each claiming (then, the next
batch, releasing) a little on many hosts at once, so each write changes
many providers. The feed is served by ``tachyon-feed`` (feed/server.py),
a process of its own on the same engine, as deployed.  The flat candidate
request and a PUT /allocations are measured in turns under the same write
load: with no subscriber, and with ``--feed-subscribers`` clients: of
them ``--feed-stalled`` open a stream and never read it (a hung
controller), ``--feed-everything`` follow the whole feed, the others each
follow one host (``host=``, as a per-host agent would).  Writers and
subscribers run in processes of their own, apart from the measuring one;
the subscribers on one asyncio loop.  A probe renames a provider twice
a second with the wall clock in its name: the subscribers that
follow everything measure the delivery latency (write sent -> event
read).  ``--feed-capacity N`` instead connects idle streams by thousands
up to N and records the feed server's memory at each step.
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
# After the last turn the feed server's RSS is read again once it holds
# no subscriber (the streams of readers that stalled are cut up to its
# GRACE, 60 s, after their last event) and LEFT_SETTLE seconds more (it
# gives memory back in its pool); LEFT_WAIT at most.
LEFT_SETTLE = 5
LEFT_WAIT = 120
# After a subscribed turn the next turn waits for tachyon-feed's start
# anew (2 s after the crowd left, then a new replica's copy of the graph
# from the engine on the API's core) to end: the turns compare the API
# with and without subscribers held, not with the start anew's copy.
# Seconds for the start to be logged (past the GRACE after which it cuts
# stalled streams), and for all of it at most.
RESTART_NOTICE = 70
RESTART_WAIT = 120


class Pinning:
    """Processes pinned to CPUs, every thread of each (as ``taskset -a``):
    {cpu: function giving the pids}."""

    def __init__(self, parts):
        self.parts = parts

    def apply(self):
        for cpu, pids in self.parts.items():
            for pid in pids():
                try:
                    tasks = os.listdir('/proc/%d/task' % pid)
                except OSError:
                    continue
                for task in tasks:
                    try:
                        os.sched_setaffinity(int(task), {cpu})
                    except OSError:     # gone meanwhile
                        pass


class FeedServer:
    """tachyon-feed on the bench's Tachyon configuration (and so on its
    engine)."""

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
            self.tachyon.python, '-m', 'tachyon_placement.cmd.feed',
            '--config-file', self.tachyon.conf_path, '--port', str(self.port)]
        self.log_start = os.path.getsize(os.path.join(
            svcs.LOG_DIR, 'tachyon-feed.log')) if os.path.exists(
                os.path.join(svcs.LOG_DIR, 'tachyon-feed.log')) else 0
        self.proc = svcs.Proc('tachyon-feed', command, env=env,
                              cwd=self.tachyon.dir)
        client = http.Client('feed', '127.0.0.1', self.port, timeout=10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise svcs.SetupError('the feed server exited (log: %s)'
                                      % self.proc.log_path)
            if client.request('GET', '/tachyon/changes').status == 200:
                return
            time.sleep(0.5)
        raise svcs.SetupError('the feed server did not start (log: %s)'
                              % self.proc.log_path)

    def pids(self):
        return [self.proc.pid] if self.proc and self.proc.alive() else []

    def replica_pids(self):
        """Its replica of the graph server (graph/replica_reads.py), a
        redis-server it started; none with Neo4j or read_replica off."""
        return [pid for pid in _engine_pids()
                if self.proc and _parent(pid) == self.proc.pid]

    def connections(self):
        """Connections it holds open (the kernel's table: its metrics
        route is off in the bench's configuration)."""
        held = 0
        for table in ('/proc/net/tcp', '/proc/net/tcp6'):
            try:
                with open(table) as lines:
                    next(lines)
                    for line in lines:
                        fields = line.split()
                        port = int(fields[1].rsplit(':', 1)[1], 16)
                        # Neither listening (0A) nor closed (06 TIME_WAIT,
                        # 07 CLOSE).
                        if port == self.port and fields[3] not in (
                                '0A', '06', '07'):
                            held += 1
            except OSError:
                pass
        return held

    def left(self):
        """Waits until it holds no connection, then LEFT_SETTLE seconds;
        (seconds waited, its RSS every second meanwhile, in MiB)."""
        began = time.monotonic()
        series = []
        settled = None
        while time.monotonic() - began < LEFT_WAIT:
            series.append(round(sum(svcs.rss_kib(pid) or 0
                                    for pid in self.pids()) / 1024.0, 1))
            if settled is None and not self.connections():
                settled = time.monotonic() + LEFT_SETTLE
            if settled is not None and time.monotonic() >= settled:
                break
            time.sleep(1)
        return round(time.monotonic() - began, 1), series

    def log_mark(self):
        """Where its log ends now (for after())."""
        return os.path.getsize(self.proc.log_path)

    def restarted_after(self, mark, timeout=RESTART_WAIT):
        """Waits, ``timeout`` seconds at most, for the start anew that
        follows a crowd's leaving ([changes] restart_after_subscribers)
        logged after ``mark``, and for its new replica; the seconds it
        took, None when it did not start anew."""
        began = time.monotonic()
        restarting = None
        while time.monotonic() - began < timeout:
            with open(self.proc.log_path, 'rb') as log:
                log.seek(mark)
                text = log.read()
            at = text.find(b'starting anew')
            if at >= 0:
                restarting = restarting or time.monotonic()
                if (b'reads a replica' in text[at:]
                        or b'reads the graph server itself' in text[at:]):
                    return round(time.monotonic() - restarting, 1)
            elif time.monotonic() - began > RESTART_NOTICE:
                return None
            time.sleep(0.2)
        return None

    def slow_readers(self):
        """Subscribers it cut for not reading since it started (its log,
        which earlier runs appended to, says so)."""
        with open(self.proc.log_path, 'rb') as log:
            log.seek(self.log_start)
            return log.read().count(b'disconnected a slow reader')

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


def _probe(client, probe, stop):
    """Renames the probe provider twice a second, the wall clock of the
    request in its name (the subscribers read it off the event)."""
    while not stop.is_set():
        client.request('PUT', '/resource_providers/%s' % probe,
                       {'name': 'probe-%d' % time.time_ns()})
        stop.wait(0.5)


def _writers(port, hosts, project, user, rate, seed, probe, written, stop,
             out):
    """A child process: WRITERS threads sharing ``rate``, counting into
    ``written``, and the probe; puts their (changes/s, errors, error
    samples) on ``out`` once ``stop`` is set."""
    writers = [Writer(http.Client('tachyon-writer', '127.0.0.1', port),
                      hosts, project, user, rate / float(WRITERS), seed + i,
                      written)
               for i in range(WRITERS)]
    for writer in writers:
        writer.start()
    probing = threading.Thread(target=_probe, daemon=True, args=(
        http.Client('tachyon-probe', '127.0.0.1', port), probe, stop))
    probing.start()
    stop.wait()
    rate = sum(writer.per_second() for writer in writers)
    for writer in writers:
        writer.stop()
    out.put((rate, sum(w.errors for w in writers),
             [s for w in writers for s in w.error_samples][:3]))


PROBE = re.compile(rb'"name":"probe-([0-9]+)"')
STATUS = re.compile(rb'^HTTP/1\.[01] ([0-9]{3})')


class Crowd:
    """Subscribers of one process on one asyncio loop: ``stalled`` streams
    opened and never read, followers of everything, followers of one host
    each (``hosts``: host names to pick from)."""

    def __init__(self, port, count, stalled, everything, hosts, seed):
        self.port = port
        self.count, self.stalled = count, stalled
        self.everything = everything
        self.hosts = hosts
        self.rng = random.Random(seed)
        self.received = []          # per follower
        self.errors = 0
        self.disordered = 0
        self.refused = 0            # 503s
        self.ended = 0              # streams ended by the server
        self.probe_latencies = []   # seconds, write sent -> event read
        self.connected = 0
        self._tasks = []
        self._sockets = []

    def request(self, query):
        return ('GET /tachyon/changes/stream%s HTTP/1.1\r\nHost: bench\r\n'
                'X-Auth-Token: %s\r\nAccept: text/event-stream\r\n'
                'OpenStack-API-Version: tachyon 1.0\r\n\r\n'
                % (query, http.TOKEN)).encode()

    async def start(self):
        import asyncio
        import socket
        loop = asyncio.get_running_loop()
        for index in range(self.count):
            if index < self.stalled:
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.setblocking(False)
                try:
                    await loop.sock_connect(sock, ('127.0.0.1', self.port))
                    await loop.sock_sendall(sock, self.request(''))
                    self.connected += 1
                except OSError:
                    self.errors += 1
                self._sockets.append(sock)
                continue
            if index < self.stalled + self.everything:
                query, probes = '', True
            else:
                query = '?host=%s' % self.rng.choice(self.hosts)
                probes = False
            self.received.append(0)
            self._tasks.append(asyncio.ensure_future(self.follow(
                len(self.received) - 1, query, probes)))
        # Every follower connected (or refused) before the turn starts.
        deadline = loop.time() + 120
        while (self.connected + self.errors + self.refused < self.count
               and loop.time() < deadline):
            await asyncio.sleep(0.05)

    async def follow(self, index, query, probes):
        import asyncio
        first, last = True, None
        while True:
            try:
                reader, writer = await asyncio.open_connection(
                    '127.0.0.1', self.port, limit=2 ** 20)
            except OSError:
                self.errors += 1
                await asyncio.sleep(1)
                continue
            try:
                resumed = query if last is None else (
                    query + ('&' if query else '?') + 'since=%d' % last)
                writer.write(self.request(resumed))
                head = await reader.readuntil(b'\r\n\r\n')
                status = STATUS.match(head)
                if status is None or status.group(1) != b'200':
                    if status is not None and status.group(1) == b'503':
                        self.refused += 1
                    else:
                        self.errors += 1
                    await asyncio.sleep(1)
                    continue
                if first:
                    self.connected += 1
                    first = False
                last = await self._read(index, reader, probes, last)
                self.ended += 1
            except (OSError, asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError):
                self.errors += 1
            finally:
                writer.close()

    async def _read(self, index, reader, probes, last):
        """Counts events (and any out of cursor order) until the stream
        ends; the last cursor seen."""
        leftover = b'\n'
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return last
            text = leftover + chunk
            end = text.rfind(b'\n')
            ids = EVENT_ID.findall(text, 0, end + 1)
            if probes:
                now = time.time()
                for sent in PROBE.findall(text, 0, end + 1):
                    self.probe_latencies.append(now - int(sent) / 1e9)
            leftover = text[end:]
            for found in ids:
                cursor = int(found)
                if last is not None and cursor < last:
                    self.disordered += 1
                last = cursor
            self.received[index] += len(ids)

    def stop(self):
        for task in self._tasks:
            task.cancel()
        for sock in self._sockets:
            sock.close()


def _subscribers(port, count, mode, nice, stalled, everything, hosts,
                 commands, out):
    """A child process: ``count`` subscribers of the feed, following it
    during each subscribed turn.  Commands: 'follow' (connect them all,
    answer 'following' once every one has its first answer), 'halt'
    (disconnect them all, answer what they counted), 'exit'.  Spawned
    once for the whole run, so that neither starting the process nor
    connecting and disconnecting lands in a measured turn.  ``nice``: they
    stand for other machines' clients (--feed-subscriber-nice), so they
    may yield the CPU to the service they measure."""
    import asyncio
    import resource
    if nice:
        os.nice(nice)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if mode != 'sse':
        return _pollers(port, count, commands, out)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    seed = 0
    while loop.run_until_complete(
            loop.run_in_executor(None, commands.get)) == 'follow':
        seed += 1
        crowd = Crowd(port, count, stalled, everything, hosts, seed)
        loop.run_until_complete(crowd.start())
        out.put(('following', crowd.connected, crowd.refused))
        loop.run_until_complete(loop.run_in_executor(None, commands.get))
        crowd.stop()
        loop.run_until_complete(asyncio.sleep(0.5))
        out.put((crowd.received, crowd.errors, crowd.disordered,
                 crowd.probe_latencies, crowd.refused))
    loop.close()


def _pollers(port, count, commands, out):
    """--feed-mode poll: long-polling threads."""
    while commands.get() == 'follow':
        subs = [Subscriber(port, i) for i in range(count)]
        for sub in subs:
            sub.start()
        deadline = time.monotonic() + 60
        while (any(sub.polls == 0 for sub in subs)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        out.put(('following', count, 0))
        commands.get()      # 'halt'
        for sub in subs:
            sub.stop()
        for sub in subs:
            sub.join(30)
        out.put(([sub.received for sub in subs],
                 sum(s.errors for s in subs), 0, [], 0))


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


def _measure_puts(client, hosts, project, user, requests, rng):
    """Stats of ``requests`` PUT /allocations (a new consumer claiming one
    VCPU on a host with room), each released again (not measured)."""
    stats = wl.Stats()
    began = time.monotonic()
    for _ in range(requests):
        consumer = str(uuid.uuid4())
        response = client.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {rng.choice(hosts): {'resources': {'VCPU': 1}}},
            'project_id': project, 'user_id': user,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        stats.requests += 1
        if response.status == 204:
            stats.latencies.append(response.elapsed)
            client.request('DELETE', '/allocations/%s' % consumer)
        else:
            stats.error('PUT /allocations', response)
    stats.wall = time.monotonic() - began
    return stats


def _engine_pids():
    """Every redis-server process on the machine, found by its command
    line: the embedded engine and any scorer sandbox (the bench machine
    runs no other while it measures)."""
    pids = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % name, 'rb') as f:
                command = f.read()
        except OSError:
            continue
        if b'redis-server' in command:
            pids.append(int(name))
    return pids


def _parent(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as stat:
            return int(stat.read().rsplit(b')', 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _cpu_by_part(parts):
    """{part: CPU seconds its processes used so far} for parts given as
    {name: callable returning pids}, plus the machine's busy seconds."""
    used = {name: sum(map(svcs.cpu_seconds, pids()))
            for name, pids in parts.items()}
    used['machine'] = svcs.machine_cpu_seconds()[0]
    return used


class Sampler(threading.Thread):
    """The feed server's RSS (with its replica's), sampled every half
    second: the largest."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = pids
        self.most = 0
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.wait(0.5):
            self.most = max(self.most, sum(svcs.rss_kib(pid) or 0
                                           for pid in self.pids()))

    def stop(self):
        self.stop_event.set()
        self.join(5)
        return self.most


def run(client, tachyon, cloud, args, record, started, say):
    """Candidates and PUT /allocations under the write load, in turns
    without and with subscribers; records feed_0_subscribers(_put) and
    feed_N_subscribers_MODE(_put) (the latter with their latencies over
    the former's)."""
    from bench import report
    server = FeedServer(tachyon, args.feed_nice)
    started.append(server)
    server.start()
    say('feed: tachyon-feed on 127.0.0.1:%d' % server.port)
    flat = wl.read_workloads(cloud)[0]
    # Hosts with room: one full host would fail a whole batch.
    hosts = [h.root.uuid for h in cloud.hosts
             if not h.race and h.fill < 0.7]
    names = [h.root.name for h in cloud.hosts]
    probe = client.request('POST', '/resource_providers',
                           {'name': 'probe-0'}).json()['uuid']
    writing = Load()
    written = writing.context.Value('q', 0)
    writing.start(_writers, client.port, hosts, cloud.projects[0],
                  cloud.users[0], args.feed_events, args.seed, probe,
                  written)
    time.sleep(5)       # the process starts, the rate settles
    merged = {False: wl.Stats(), True: wl.Stats()}
    puts = {False: wl.Stats(), True: wl.Stats()}
    rates = {False: [], True: []}
    turn_p50 = {False: [], True: []}
    received, poll_errors, disordered, refused = [], 0, 0, 0
    probe_latencies, feed_rss, connected = [], [], []
    # Seconds each start anew took after a subscribed turn (None: none).
    restarts = []
    order = turns(args.feed_turns)
    per_turn = max(1, args.requests * 2 // len(order))
    rng = random.Random(args.seed)
    import multiprocessing
    spawning = multiprocessing.get_context('spawn')
    commands, answers = spawning.Queue(), spawning.Queue()
    subscribers = spawning.Process(
        target=_subscribers, daemon=True,
        args=(server.port, args.feed_subscribers, args.feed_mode,
              args.feed_subscriber_nice, args.feed_stalled,
              args.feed_everything, names, commands, answers))
    subscribers.start()

    def feed_pids():
        # The feed server and its replica of the engine.
        return server.pids() + server.replica_pids()
    idle_rss = sum(svcs.rss_kib(pid) or 0 for pid in feed_pids())
    replica_rss = sum(svcs.rss_kib(pid) or 0
                      for pid in server.replica_pids())
    engine_pids = [pid for pid in _engine_pids()
                   if pid not in server.replica_pids()]

    def api_pids():
        return [pid for pid in tachyon.pids() if pid not in engine_pids]
    parts = {'api': api_pids, 'engine': lambda: engine_pids,
             'feed': server.pids, 'feed_replica': server.replica_pids,
             'subscribers': lambda: [subscribers.pid],
             'writers': lambda: [child.pid for child, _ in writing.children]}
    # {subscribed: [{part: cores used during a turn's measurement}]}
    cores = {False: [], True: []}
    pinning = None
    if args.feed_pin:
        # The API (and the engine it waits on, and this measuring
        # process) on the first core; the feed server, its replica, the
        # writers and the subscribers on the second.
        pinning = Pinning({
            0: lambda: api_pids() + engine_pids + [os.getpid()],
            1: lambda: (feed_pids() + [subscribers.pid] + [
                child.pid for child, _ in writing.children])})
    # The feed server's RSS before the first subscriber came (its log of
    # recent changes still empty: it fills for subscribers), and once the
    # last had left (and it forgot what it kept for them).
    feed_rss_before = feed_rss_after = None
    try:
        for subscribed in order:
            if pinning is not None:
                # Again each turn: processes restarted, threads started.
                pinning.apply()
            sampler = Sampler(feed_pids)
            sampler.start()
            if subscribed:
                if feed_rss_before is None:
                    feed_rss_before = sum(svcs.rss_kib(pid) or 0
                                          for pid in server.pids())
                commands.put('follow')
                _following, holding, _refused = answers.get(timeout=300)
                connected.append(holding)
            # Connections made (or closed) and the first catch-up done:
            # the turn measures subscribers that follow, not connecting.
            time.sleep(SETTLE)
            before, began = written.value, time.monotonic()
            cpu_before = _cpu_by_part(parts)
            stats = _measure(client, flat, per_turn, args.read_seconds)
            put_stats = _measure_puts(client, hosts, cloud.projects[0],
                                      cloud.users[0], per_turn, rng)
            cpu_after, wall = _cpu_by_part(parts), time.monotonic() - began
            cores[subscribed].append({
                part: round((cpu_after[part] - cpu_before[part]) / wall, 3)
                for part in cpu_after})
            rates[subscribed].append(
                (written.value - before) / (time.monotonic() - began))
            turn_p50[subscribed].append(round(
                report.percentile(stats.latencies, 50) * 1000, 1))
            for into, measured in ((merged, stats), (puts, put_stats)):
                into[subscribed].merge(measured)
                into[subscribed].wall += measured.wall
                if into[subscribed].first_body is None:
                    into[subscribed].first_body = measured.first_body
            if subscribed:
                mark = server.log_mark()
                commands.put('halt')
                (counts, errors, out_of_order, latencies,
                 turned_away) = answers.get(timeout=300)
                received.extend(counts)
                poll_errors += errors
                disordered += out_of_order
                refused += turned_away
                probe_latencies.extend(latencies)
                feed_rss.append(sampler.stop())
                restarts.append(server.restarted_after(mark))
            else:
                sampler.stop()
        left_seconds, left_series = server.left()
        feed_rss_after = sum(svcs.rss_kib(pid) or 0
                             for pid in server.pids())
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
        put_entry = record(name + '_put', 'PUT /allocations (one VCPU) '
                           'under %d provider changes/s, %d subscribers' % (
                               args.feed_events, subscribers),
                           {'tachyon': puts[subscribed]}, 'read')
        rate = sum(rates[subscribed]) / len(rates[subscribed])
        entry['feed'] = {
            'changes_per_s': round(rate, 1), 'write_errors': write_errors,
            'write_error_samples': samples,
            'subscribers': subscribers, 'mode': args.feed_mode,
            'nice': args.feed_nice,
            'subscriber_nice': args.feed_subscriber_nice,
            'turn_p50_ms': turn_p50[subscribed],
            # Cores each part used while the turns measured (mean of the
            # turns); "machine" is every process's.
            'cores': {part: round(sum(turn[part] for turn in
                                      cores[subscribed]) /
                                  len(cores[subscribed]), 3)
                      for part in cores[subscribed][0]}}
        if subscribed:
            delivery = report.latency_summary(probe_latencies) or {}
            entry['feed'].update(
                stalled=args.feed_stalled, everything=args.feed_everything,
                connected=connected, refused=refused,
                received_min=min(received), received_max=max(received),
                errors=poll_errors, out_of_order=disordered,
                slow_readers_cut=server.slow_readers(),
                feed_rss_idle_mib=round(idle_rss / 1024.0, 1),
                replica_rss_idle_mib=round(replica_rss / 1024.0, 1),
                feed_rss_max_mib=round(max(feed_rss) / 1024.0, 1),
                feed_rss_before_mib=round(feed_rss_before / 1024.0, 1),
                feed_rss_after_leaving_mib=round(
                    feed_rss_after / 1024.0, 1),
                feed_left_after_s=left_seconds,
                feed_rss_while_leaving_mib=left_series,
                pinned=bool(pinning), starts_anew_s=restarts,
                delivery_ms=delivery, probes=len(probe_latencies))
        results[subscribed] = (entry, put_entry)
        p50 = (entry['tachyon']['latency'] or {}).get('p50_ms')
        say('  %s: candidates p50 %s ms, PUT p50 %s ms, %.0f changes/s '
            'written%s' % (
                name, p50, (put_entry['tachyon']['latency'] or {}).get(
                    'p50_ms'), rate, '' if not subscribed else
                ', followers got %d-%d changes per turn (%d out of order, '
                '%d errors, %d refused), %d slow readers cut, feed RSS '
                '%s MiB (idle %s; %s before the first subscriber, %s once '
                'the last had left, %s s after the last turn), delivery %s'
                % (
                    min(received), max(received), disordered, poll_errors,
                    refused, entry['feed']['slow_readers_cut'],
                    entry['feed']['feed_rss_max_mib'],
                    entry['feed']['feed_rss_idle_mib'],
                    entry['feed']['feed_rss_before_mib'],
                    entry['feed']['feed_rss_after_leaving_mib'],
                    entry['feed']['feed_left_after_s'], delivery)))
    say('  tachyon-feed started anew after each subscribed turn in %s s '
        '(waited for before the next turn)' % restarts)
    say('  cores used while measuring, without and with subscribers: '
        '%s; %s' % (results[False][0]['feed']['cores'],
                    results[True][0]['feed']['cores']))
    for index in (0, 1):
        plain, loaded = results[False][index], results[True][index]
        loaded['versus'] = dict({
            q: report.ratio(report.latency(loaded['tachyon'], q),
                            report.latency(plain['tachyon'], q))
            for q in ('p50_ms', 'p95_ms', 'p99_ms')},
            base='same writes, no subscriber')
        say('  %s with subscribers over without: %s' % (
            ('candidates', 'PUT /allocations')[index], loaded['versus']))
    return results


def run_capacity(client, tachyon, args, record, started, say):
    """Idle streams connected ``--feed-step`` at a time up to
    ``--feed-capacity``: the feed server's RSS at each step, and what it
    held; one probe change at the end reaches them all."""
    import asyncio
    import resource
    server = FeedServer(tachyon, args.feed_nice)
    started.append(server)
    server.start()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    loop = asyncio.new_event_loop()
    steps = []
    crowds = []
    base = svcs.rss_kib(server.proc.pid)
    held = 0
    try:
        while held < args.feed_capacity:
            count = min(args.feed_step, args.feed_capacity - held)
            crowd = Crowd(server.port, count, 0, count, [], held)
            loop.run_until_complete(crowd.start())
            crowds.append(crowd)
            held += crowd.connected
            loop.run_until_complete(asyncio.sleep(2))
            rss = svcs.rss_kib(server.proc.pid)
            steps.append({'subscribers': held, 'rss_mib': round(
                rss / 1024.0, 1), 'refused': crowd.refused,
                'errors': crowd.errors})
            say('feed capacity: %d subscribers, RSS %.1f MiB (%d refused, '
                '%d errors)' % (held, rss / 1024.0, crowd.refused,
                                crowd.errors))
            if crowd.connected < count:
                break
        # One change, to everyone.
        client.request('POST', '/resource_providers',
                       {'name': 'probe-%d' % time.time_ns()})
        loop.run_until_complete(asyncio.sleep(5))
        reached = sum(1 for crowd in crowds for got in crowd.received
                      if got >= 1)
        latencies = [value for crowd in crowds
                     for value in crowd.probe_latencies]
    finally:
        for crowd in crowds:
            crowd.stop()
        loop.run_until_complete(asyncio.sleep(0.5))
        loop.close()
    from bench import report
    # The slope from the first step to the last: what start-up loaded (the
    # copy of the graph) is not the subscribers'.
    first, last = steps[0], steps[-1]
    per = ((last['rss_mib'] - first['rss_mib']) * 1024.0 / max(
        1, last['subscribers'] - first['subscribers'])) if len(steps) > 1 \
        else (last['rss_mib'] - base / 1024.0) * 1024.0 / max(1, held)
    entry = {'name': 'feed_capacity', 'held': held, 'steps': steps,
             'rss_idle_mib': round(base / 1024.0, 1),
             'kib_per_subscriber': round(per, 1), 'reached': reached,
             'fan_out_ms': report.latency_summary(latencies)}
    say('feed capacity: held %d, %.1f KiB per subscriber, one change '
        'reached %d (%s)' % (held, per, reached, entry['fan_out_ms']))
    return entry


if __name__ == '__main__':
    sys.exit('run it through python -m bench --feed')
