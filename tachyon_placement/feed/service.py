"""The change feed of one API process: its ChangeLog, filled as the
process's copy of the graph moves forward, and a watcher thread that moves
it forward while someone waits for changes.

Waiting requests (long polls, Server-Sent Events streams) never query the
database: one watcher per process reads the graph version every
``poll_interval`` while long polls wait (one indexed read, whatever the
number of subscribers), or once per stream interval, just before the
streams read, while only streams follow; the copy of the graph refreshes
as it does for any request, and the diff lands in the log; writes and
candidate requests do not know subscribers exist.
"""
import collections
import contextlib
import threading
import time

from tachyon_placement.feed import changes as feed_changes


class Feed:
    def __init__(self, store, capacity=100000, poll_interval=0.1,
                 linger=0.2):
        self.store = store
        self.log = feed_changes.ChangeLog(capacity)
        self.poll_interval = poll_interval
        # A woken waiter lingers this long for more changes before it
        # answers: under a stream of writes every subscriber then answers
        # a few times a second, not once per write.
        self.linger = linger
        self._pollers = 0       # long polls waiting for changes
        self._paces = collections.Counter()    # streams following, by pace
        self._hurry = threading.Event()     # a long poll came: poll now
        self._lock = threading.Lock()
        # What subscribers are sent, joined once per read for all of them:
        # JSON for long polls, Server-Sent Events for streams.
        self.json = feed_changes.Joined(feed_changes.Change.encoded, b',')
        self.events = feed_changes.Joined(feed_changes.Change.event)
        self._watcher = None
        # The log is kept from the first read of the feed in this process
        # on: a process nobody asked for changes (most API workers) would
        # otherwise hold the records of the last ``capacity`` changes
        # alive for nothing (a tenth of a worker's memory at 10,000 hosts,
        # and its live records scattered among them).  Before that, and
        # for cursors older than the log, changes are read from the copy
        # of the graph (changes()).
        self._filling = False
        store.worlds.listeners.append(self._observe)

    # -- filled by WorldCache ---------------------------------------------

    def _observe(self, since, world, changed, deleted, hosts):
        """A WorldCache listener: ``world`` is the copy now, whole up to
        ``world.complete``; the previous one was whole up to ``since``
        (None: no previous); ``changed`` records and ``deleted`` [(uuid,
        stamp)] read after ``since`` (None: a copy made anew), ``hosts``
        [(name, stamp, state or None)] published or deleted since."""
        if not self._filling:
            return
        if changed is None or since is None:
            self.log.reset(world.complete)
            return
        found = [feed_changes.Change(record.stamp, feed_changes.PROVIDER,
                                     record.uuid, record)
                 for record in changed.values()]
        found.extend(feed_changes.Change(stamp, feed_changes.PROVIDER, uuid,
                                         None) for uuid, stamp in deleted)
        found.extend(feed_changes.Change(stamp, feed_changes.HOST, name,
                                         state)
                     for name, stamp, state in hosts)
        self.log.extend(since, world.complete, found)

    # -- read by requests -----------------------------------------------

    def floor(self):
        """The oldest cursor still answered (tombstones before it are
        pruned)."""
        return self.store.feed_floor()

    def changes(self, cursor, limit=None, fresh=True):
        """(changes after ``cursor``, resume cursor); CursorGone when the
        cursor is older than the retention floor.  ``fresh``: bring this
        process's copy of the graph (and so the log) up to date first
        (one version read); a woken waiter need not, the watcher did."""
        # From now on the log follows the copies of the graph (complete
        # from the first copy made after this, see ChangeLog.extend).
        self._filling = True
        world = self.store.worlds.current(whole=True) if fresh else None
        found = self.log.after(cursor, limit)
        if found is not None:
            return found
        floor = self.floor()
        if cursor < floor:
            raise feed_changes.CursorGone(floor)
        # Older than this process's log: from its copy of the graph.
        world = world or self.store.worlds.current(whole=True)
        tombstones, hosts, gone_hosts = self.store.feed_since(cursor)
        everything = feed_changes.from_world(world, cursor, tombstones,
                                             hosts, gone_hosts)
        return feed_changes.cut(everything, limit, world.complete)

    def wait(self, cursor, timeout, limit=None):
        """changes(), waiting up to ``timeout`` seconds for some."""
        deadline = time.monotonic() + timeout
        # While the watcher runs, the copy of the graph is at most one poll
        # interval old: subscribers then cost the database nothing.
        found = self.changes(cursor, limit, fresh=not self._watching())
        if found[0] or timeout <= 0:
            return found
        self._enter(None)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return found
                with self.log.changed:
                    if self.log.head <= cursor:
                        self.log.changed.wait(remaining)
                if self.log.head > cursor and self.linger:
                    time.sleep(min(self.linger, max(
                        0.0, deadline - time.monotonic())))
                found = self.changes(cursor, limit, fresh=False)
                if found[0]:
                    return found
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
                pass
            if pace is None:
                pause = self.poll_interval
            else:
                # A quarter of the interval before the streams' next mark:
                # the refresh is done when they read.
                pause = seconds_to_mark(pace, lead=pace * MARK_LEAD)
            self._hurry.wait(pause)


# How long before the streams' marks the watcher refreshes, as a share of
# the interval between marks.
MARK_LEAD = 0.25


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
                store.prune_feed(keep)
            except Exception:       # the next round tries again
                pass
    thread = threading.Thread(target=prune, name='tachyon-feed-pruning',
                              daemon=True)
    thread.start()
    return thread
