"""The change feed of one process: what changed after a cursor, and in
the feed server (feed/server.py) a ChangeLog filled as the process's copy
of the graph moves forward, with a watcher thread that moves it forward
while someone waits for changes.

In an API process (``keeps_log`` False) a read of the feed never waits
and is answered from the process's copy of the graph and the engine's
tombstones: nothing of the feed runs on the path of Placement's requests.
In the feed server waiting subscribers never query the database: one
watcher per process reads the graph version every ``poll_interval`` while
long polls wait (one indexed read, whatever the number of subscribers), or
once per stream interval, just before the streams read, while only streams
follow; the diff lands in the log, with the consumers written since.
"""
import collections
import contextlib
import threading
import time

from oslo_log import log as logging

from tachyon_placement.feed import changes as feed_changes

LOG = logging.getLogger(__name__)


class Feed:
    def __init__(self, store, capacity=100000, poll_interval=0.1):
        self.store = store
        self.log = feed_changes.ChangeLog(capacity)
        self.poll_interval = poll_interval
        # Filled only in the feed server (see the module's docstring).
        self.keeps_log = False
        self._pollers = 0       # long polls waiting for changes
        self._paces = collections.Counter()    # streams following, by pace
        self._hurry = threading.Event()     # a long poll came: poll now
        self._lock = threading.Lock()
        # What subscribers are sent, joined once per read for all of them
        # at one cursor with one filter: JSON for long polls, Server-Sent
        # Events for streams.
        self.json = feed_changes.Joined(feed_changes.Change.encoded, b',')
        self.events = feed_changes.Joined(feed_changes.Change.event)
        self._watcher = None
        # {consumer uuid: providers it held when last seen}: a consumer's
        # change reaches the filters of the hosts it left.
        self._seen = {}
        # {provider uuid: its record before a change that a copy of the
        # graph read past what it held whole (Neo4j's reads see commits
        # as they land): the log takes that change with the next copy,
        # which already holds the record; its diff is with this one.}
        self._before_late = {}
        # (the retention floor, when it was read): the log's answers check
        # it without a read of the engine each (see _recent_floor).
        self._floor = (0, None)
        store.worlds.listeners.append(self._observe)

    def forget(self):
        """Drop what the feed keeps for its subscribers (once they left):
        the log, the answers joined for them, the consumers seen and the
        copy of the graph; the next subscriber's read makes them anew, as
        after a restart."""
        self.log.forget()
        self.json.forget()
        self.events.forget()
        self._seen.clear()
        self.store.worlds.forget()

    # -- filled by WorldCache ---------------------------------------------

    def _observe(self, since, world, changed, deleted, hosts, previous):
        """A WorldCache listener: ``world`` is the copy now, whole up to
        ``world.complete``; the previous one (``previous``) was whole up to
        ``since`` (None: no previous); ``changed`` records and ``deleted``
        [(uuid, stamp)] read after ``since`` (None: a copy made anew),
        ``hosts`` [(name, stamp, state or None)] published or deleted
        since."""
        if not self.keeps_log:
            return
        if changed is None or since is None or previous is None:
            self._before_late.clear()
            self.log.reset(world.complete)
            return
        try:
            consumers = self.store.changes.consumers(since, world.complete)
            # A prune past ``since`` before that read took deletions the
            # log would then lack.
            pruned = self.floor() > since
        except Exception:   # noqa: BLE001 - complete from here on only
            self.log.reset(world.complete)
            return
        if pruned:
            self._before_late.clear()
            self.log.reset(world.complete)
            return
        named = feed_changes.topology_hosts(world)
        corrected = {}
        # What each provider was before this copy's changes.
        held = collections.ChainMap(corrected, previous.records)
        found = []
        for record in changed.values():
            old = held.get(record.uuid)
            if old is record and record.uuid in self._before_late:
                # Read by the previous copy past what it held whole: its
                # change waited for this copy, diffed with what it was.
                old = corrected[record.uuid] = self._before_late[record.uuid]
            if record.stamp > world.complete:
                self._before_late[record.uuid] = old
            else:
                self._before_late.pop(record.uuid, None)
            # The held record read again (the newest write of a copy that
            # was not known whole): what it changed, and what it was
            # before (in an aggregate it left?), is not known.
            found.append(feed_changes.Change(
                record.stamp, feed_changes.PROVIDER, record.uuid, record,
                feed_changes.UNKNOWN_PROVIDER if old is record else
                feed_changes.provider_scope(record, old, world.records,
                                            named)))
        for uuid, stamp in deleted:
            found.append(feed_changes.Change(
                stamp, feed_changes.PROVIDER, uuid, None,
                feed_changes.provider_scope(None, held.get(uuid),
                                            world.records, named)))
        found.extend(feed_changes.Change(
            stamp, feed_changes.HOST, name, state, feed_changes.host_scope(
                name, world.layout_roots.get(name)
                or previous.layout_roots.get(name)))
            for name, stamp, state in hosts)
        if len(self._seen) > SEEN_KEPT:
            self._seen.clear()
        found.extend(feed_changes.consumer_changes(
            consumers, world.records, named, self._seen, held))
        try:
            found.extend(self._entering(changed, held, world, named,
                                        consumers))
        except Exception:   # noqa: BLE001 - complete from here on only
            self.log.reset(world.complete)
            return
        try:
            drift = self.store.drift.since(since, world.complete)
        except Exception:   # noqa: BLE001 - complete from here on only
            self.log.reset(world.complete)
            return
        found.extend(feed_changes.drift_changes(drift, world.records,
                                                named))
        self.log.extend(since, world.complete, found)

    def _entering(self, changed, held, world, named, consumers):
        """Changes of the consumers (not written themselves) on providers
        that joined or left aggregates or trees, or whose root was
        renamed, in the copy ``world`` since ``held`` (the previous
        copy's records): they enter or leave those filters."""
        moved = {}
        for record in changed.values():
            old = held.get(record.uuid)
            if old is None:
                continue    # new: nobody holds allocations on it yet
            # The held record read again (see _observe): what it changed
            # is not known.
            if old is record or (old.aggregates != record.aggregates
                                 or old.root_uuid != record.root_uuid):
                moved[record.uuid] = record.stamp
            if record.parent_uuid is None and (
                    old.provider.name != record.provider.name):
                for uuid, member in world.records.items():
                    if member.root_uuid == record.uuid:
                        moved[uuid] = max(moved.get(uuid, 0), record.stamp)
        on = self.store.changes.consumers_on(moved)
        return feed_changes.entering_changes(
            {uuid: found for uuid, found in on.items()
             if uuid not in consumers}, moved, world.records, named, held)

    # -- read by requests -----------------------------------------------

    def floor(self):
        """The oldest cursor still answered (tombstones before it are
        pruned)."""
        floor = self.store.changes.floor()
        self._floor = (floor, time.monotonic())
        return floor

    def _recent_floor(self):
        """floor(), read again when older than FLOOR_FRESH seconds: the
        log holds what pruning took from the graph, and a cursor below
        the floor gets 410 from every process alike, not 200 from one
        whose log still holds it (the retention is the operator's), at
        one read of the engine a second however many subscribers read."""
        floor, read_at = self._floor
        if read_at is None or time.monotonic() - read_at > FLOOR_FRESH:
            floor = self.floor()
        return floor

    def head(self):
        """The cursor now: where a new subscriber starts."""
        return self._world(0).complete

    def _world(self, cursor):
        """The copy of the graph a read starts from: in the feed server,
        while its watcher keeps it fresh, the copy it holds (a subscriber
        costs the engine nothing: under a stream of writes a new
        subscriber's read of the engine queued behind the writes, and a
        thousand of them connecting were a thousand such reads), unless
        ``cursor`` is ahead of it (a client that read a newer cursor from
        another process: is it ahead of the graph, or of this copy?)."""
        if self.keeps_log and self._watching():
            world = self.store.worlds.latest()
            if world is not None and cursor <= world.version:
                return world
        return self.store.worlds.current(whole=True)

    def changes(self, cursor, limit=None, wanted=None, fresh=True):
        """(changes after ``cursor`` that pass ``wanted`` (a Filter), the
        resume cursor); CursorGone when the cursor is older than the
        retention floor, CursorAhead when it is ahead of the graph.
        ``fresh``: bring this process's copy of the graph (and so the log)
        up to date first (one version read) and check the cursor against
        it; a woken waiter need not, the watcher did."""
        world = self._world(cursor) if fresh else None
        if world is not None and cursor > world.version:
            world = self._caught_up(cursor, world)
            if world is None:
                # The replica has not reached the cursor yet: nothing
                # after it here for now, and the client keeps its cursor.
                return [], cursor
        if self.keeps_log:
            found = self.log.after(cursor, limit, wanted)
            if found is not None:
                floor = self._recent_floor()
                if cursor < floor:
                    raise feed_changes.CursorGone(floor)
                return found
        floor = self.floor()
        if cursor < floor:
            raise feed_changes.CursorGone(floor)
        # Older than this process's log (or no log): from its copy of the
        # graph and what the engine keeps of deletions and consumers.
        world = world or self.store.worlds.current(whole=True)
        tombstones, hosts, gone_hosts = self.store.changes.since(cursor)
        consumers = self.store.changes.consumers(cursor, world.complete)
        entering = {}
        if wanted is not None and any(
                field is not None for field in (
                    wanted.roots, wanted.hosts, wanted.aggregates)):
            # A provider changed since the cursor may have joined the
            # filter's aggregate or tree (what it was then is not kept):
            # its consumers may have entered the filter.
            changed = {uuid: record.stamp
                       for uuid, record in world.records.items()
                       if cursor < record.stamp <= world.complete}
            entering = feed_changes.entering_changes(
                {uuid: found for uuid, found in
                 self.store.changes.consumers_on(changed).items()
                 if uuid not in consumers}, changed, None, None, None)
        drift = ()
        if wanted is not None and wanted.kinds is not None and (
                'drift' in wanted.kinds):
            drift = self.store.drift.since(cursor, world.complete)
        # Pruning moves the floor and deletes the tombstones below it in
        # one write: a floor read again after the tombstones tells whether
        # some went between the two reads (a gap, not an answer).
        floor = self.floor()
        if cursor < floor:
            raise feed_changes.CursorGone(floor)
        everything = feed_changes.from_world(world, cursor, tombstones,
                                             hosts, gone_hosts, consumers,
                                             drift)
        if entering:
            everything = sorted(everything + entering,
                                key=lambda change: change.cursor)
        return feed_changes.select(everything, limit, world.complete, wanted)

    def _caught_up(self, cursor, world):
        """The copy of the graph at ``cursor`` or later, when ``world``
        is older: CursorAhead when the graph is older (restored, imported
        again); else (a write since ``world`` was read, or where reads lag
        the writes: the feed server's replica, graph/replica_reads.py) a
        copy read again until it reaches the cursor, or None after
        REPLICA_WAIT."""
        written = self.store.versions.written()
        if cursor > written:
            raise feed_changes.CursorAhead(0, written)
        deadline = time.monotonic() + REPLICA_WAIT
        while True:
            world = self.store.worlds.current(whole=True)
            if cursor <= world.version:
                return world
            if time.monotonic() > deadline:
                break
            time.sleep(REPLICA_PAUSE)
        LOG.warning('The change feed\'s replica of the graph is at %d, '
                    '%d writes behind a cursor', world.version,
                    cursor - world.version)
        return None

    @contextlib.contextmanager
    def polling(self):
        """Keeps the watcher polling every poll_interval for the duration
        (a long poll waiting)."""
        self._enter(None)
        try:
            yield
        finally:
            self._leave(None)

    @contextlib.contextmanager
    def following(self, pace=None):
        """Keeps the watcher on for the duration (a stream between its
        reads): the stream's reads then cost the database nothing.
        ``pace``: the stream reads at the marks of the clock ``pace``
        seconds apart (seconds_to_mark); while no long poll waits, the
        watcher then refreshes once per mark, shortly before it, rather
        than every poll_interval: under a stream of writes each refresh
        has a fixed cost (a copy of the graph, the reads of the changed
        providers), ten times a second for streams that read once a
        second was most of what following cost the process."""
        self._enter(pace)
        try:
            yield
        finally:
            self._leave(pace)

    # -- the watcher --------------------------------------------------------

    def _watching(self):
        watcher = self._watcher
        return watcher is not None and watcher.is_alive()

    def _enter(self, pace):
        with self._lock:
            if pace is None:
                self._pollers += 1
                self._hurry.set()
            else:
                self._paces[pace] += 1
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(
                    target=self._watch, name='tachyon-feed-watcher',
                    daemon=True)
                self._watcher.start()

    def _leave(self, pace):
        with self._lock:
            if pace is None:
                self._pollers -= 1
            else:
                self._paces[pace] -= 1
                if self._paces[pace] <= 0:
                    del self._paces[pace]

    def _watch(self):
        while True:
            with self._lock:
                if self._pollers <= 0 and not self._paces:
                    self._watcher = None
                    return
                pace = min(self._paces) if self._pollers <= 0 else None
                self._hurry.clear()
            try:
                self.store.worlds.current(whole=True)
            except Exception:       # the next poll tries again
                LOG.exception('The change feed could not follow the graph')
            if pace is None:
                pause = self.poll_interval
            else:
                # A quarter of the interval before the streams' next mark:
                # the refresh is done when they read.
                pause = seconds_to_mark(pace, lead=pace * MARK_LEAD)
            self._hurry.wait(pause)


# Consumers whose providers the feed remembers (a consumer's change reaches
# the filters of the hosts it left); forgotten all at once past this.
SEEN_KEPT = 1000000

# How long a read of a cursor that the feed server's replica has not
# reached yet waits for it (replication takes milliseconds; a replica
# copying the whole graph again, seconds), and how often it looks.
REPLICA_WAIT = 2.0
REPLICA_PAUSE = 0.02

# How long before the streams' marks the watcher refreshes, as a share of
# the interval between marks.
MARK_LEAD = 0.25

# How old the retention floor the log's answers check may be, in seconds.
FLOOR_FRESH = 1.0


def seconds_to_mark(pace, lead=0.0):
    """Seconds until ``lead`` seconds before the next multiple of ``pace``
    seconds of this process's monotonic clock (the moments at which every
    stream with that pace reads the log: streams at one cursor then read
    the same changes at once, joined once for all of them)."""
    now = time.monotonic()
    wait = pace - now % pace - lead
    while wait <= 0:
        wait += pace
    return wait


def start_pruning(store, keep, interval):
    """A daemon thread that forgets deletions older than the last ``keep``
    graph versions every ``interval`` seconds (every process runs one:
    pruning is idempotent); None when ``interval`` is 0."""
    if not interval:
        return None

    def prune():
        while True:
            time.sleep(interval)
            try:
                store.changes.prune(keep)
            except Exception:       # the next round tries again
                LOG.warning('Pruning the change feed failed',
                            exc_info=True)
    thread = threading.Thread(target=prune, name='tachyon-feed-pruning',
                              daemon=True)
    thread.start()
    return thread
