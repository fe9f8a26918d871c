"""The change feed: what changed in the graph, after a cursor.

The cursor is the graph version (graph/versioning.py). Every write that
changes a provider (tree, inventories, usage through allocations, traits,
aggregates) bumps it once and stamps the providers it changed; a deleted
provider leaves a tombstone with the version; a host's topology carries
the version of its last publication (a deleted one a tombstone). So "what
changed after cursor c" is every provider, tombstone and host stamped
after c, each in its state now: a client that applies the changes in
cursor order keeps an exact mirror (an object changed twice after c comes
once, with the later cursor), which is what a mirror needs.

Each API process keeps the recent changes in memory (a ChangeLog filled
from its copy of the graph as it moves forward, see WorldCache listeners),
so subscribers read memory, not the database. A cursor older than what
the log holds is answered from the copy of the graph and the tombstones;
one older than the retention floor (tombstones pruned) is gone: 410, and
the client lists everything again.
"""
import bisect
import collections
import threading

import orjson

PROVIDER = 'resource_provider'
HOST = 'host_topology'


class Change(collections.namedtuple('Change', 'cursor kind key state')):
    """One change.  ``state``: a provider's record of the copy of the
    graph (immutable, rendered only when read, so filling the log costs
    writes next to nothing), a host's published topology, or None for a
    deletion."""
    __slots__ = ()

    def encoded(self):
        """The change as JSON bytes, encoded once however many
        subscribers read it (kept in ENCODED while the change is alive)."""
        identity = self[:3]     # (cursor, kind, key): one change
        found = ENCODED.get(identity)
        if found is None:
            if len(ENCODED) >= ENCODED_KEPT:
                ENCODED.clear()
            # Sized to fit: orjson's bytes keep the 4 KiB buffer they
            # were written in.
            found = ENCODED[identity] = bytes(memoryview(
                orjson.dumps(render(self))))
        return found

    def event(self):
        """The change as one Server-Sent Event (``id`` its cursor), framed
        once however many streams carry it."""
        identity = self[:3]
        found = EVENTS.get(identity)
        if found is None:
            if len(EVENTS) >= ENCODED_KEPT:
                EVENTS.clear()
            found = EVENTS[identity] = (
                b'id: %d\nevent: change\ndata: %s\n\n' % (
                    self.cursor, self.encoded()))
        return found


# (cursor, kind, key) -> the change's JSON bytes, and its Server-Sent
# Event, for every subscriber; bounded (cleared when full: encoding again
# is only a cost).
ENCODED = {}
EVENTS = {}
ENCODED_KEPT = 200000


class Joined:
    """The bytes of the changes read after one cursor, joined once
    however many subscribers read them: under a stream of writes the
    subscribers that keep up all ask for the same changes after the same
    cursor, and joining a thousand changes per subscriber was most of
    what 50 of them cost the server."""

    def __init__(self, frame, separator=b'', kept=32):
        self._frame = frame         # Change -> bytes
        self._separator = separator
        self._kept = collections.OrderedDict()
        self._most = kept
        self._lock = threading.Lock()

    def of(self, cursor, changes):
        """The framed ``changes`` (read after ``cursor``), joined."""
        if not changes:
            return b''
        first, last = changes[0], changes[-1]
        key = (cursor, last.cursor, len(changes))
        with self._lock:
            found = self._kept.get(key)
        # The same read gives the same Change objects (the log's); an
        # answer made from the copy of the graph is joined anew.
        if found is not None and found[0] is first and found[1] is last:
            return found[2]
        joined = self._separator.join(map(self._frame, changes))
        with self._lock:
            self._kept[key] = (first, last, joined)
            while len(self._kept) > self._most:
                self._kept.popitem(last=False)
        return joined


class CursorGone(Exception):
    """The cursor is older than the retention floor."""

    def __init__(self, floor):
        super().__init__(floor)
        self.floor = floor


def render(change):
    """The JSON document of a Change."""
    document = {'cursor': change.cursor, 'type': change.kind,
                'deleted': change.state is None}
    if change.kind == PROVIDER:
        document['uuid'] = change.key
        document['resource_provider'] = (
            change.state.as_document() if change.state is not None
            else None)
    else:
        document['host'] = change.key
        document['topology'] = change.state
    return document


class ChangeLog:
    """The changes of the last ``capacity`` ... versions this process saw,
    oldest first, and a condition that waiters wait on.

    Kept in lists (not deques) so that a reader finds its cursor by
    bisection and copies only the changes after it: every subscriber
    reads the log several times a second."""

    def __init__(self, capacity=100000):
        self.capacity = capacity
        self._changes = []
        self._cursors = []      # cursor of each change, ascending
        # The log is complete for cursors >= start: every change after
        # ``start`` up to ``head`` is in it.
        self.start = None
        self.head = 0
        self.changed = threading.Condition()

    def reset(self, version):
        """A copy of the graph made anew (no diff known): complete only
        from ``version`` on."""
        with self.changed:
            self._changes, self._cursors = [], []
            self.start = self.head = version
            self.changed.notify_all()

    def extend(self, from_version, to_version, changes):
        """The changes between two copies of the graph, those with cursors
        in (from_version, to_version].

        A copy of the graph can hold a write committed after the version
        read that named it (its reads come after that one): such a change
        is left out here and comes again, in order, with the next copy,
        which reads everything stamped after ``to_version``."""
        changes = [change for change in changes
                   if change.cursor <= to_version]
        with self.changed:
            if self.start is None or from_version != self.head:
                # A gap (or the first copy): complete from here on only.
                self._changes, self._cursors = [], []
                self.start = from_version
            for change in sorted(changes, key=lambda c: c.cursor):
                self._changes.append(change)
                self._cursors.append(change.cursor)
            self.head = max(self.head, to_version)
            # Trimmed by a quarter at a time: one slice now and then
            # rather than a pop per change.
            excess = len(self._changes) - self.capacity
            if excess > 0:
                excess = max(excess, self.capacity // 4)
                self.start = self._cursors[excess - 1]
                del self._changes[:excess]
                del self._cursors[:excess]
            self.changed.notify_all()

    def covers(self, cursor):
        return self.start is not None and cursor >= self.start

    def after(self, cursor, limit=None):
        """(changes after ``cursor``, the cursor to resume from), when the
        log covers ``cursor``; None otherwise.  ``limit`` cuts between
        cursors, never inside one write's changes."""
        with self.changed:
            if not self.covers(cursor):
                return None
            first = bisect.bisect_right(self._cursors, cursor)
            return cut(self._changes[first:], limit, self.head)


def cut(changes, limit, head):
    """(changes, resume cursor): at most ``limit`` changes (more only to
    finish the last write's), resuming at the last cursor given, or at
    ``head`` when everything was given."""
    if limit is None or len(changes) <= limit:
        return changes, head
    last = changes[limit - 1].cursor
    end = limit
    while end < len(changes) and changes[end].cursor == last:
        end += 1
    return changes[:end], last


def from_world(world, cursor, tombstones, hosts, gone_hosts):
    """Every change after ``cursor`` from a copy of the graph (records
    carry their stamps) and what the engine keeps of deletions:
    ``tombstones`` [(uuid, stamp)], ``hosts`` [(name, stamp, state)],
    ``gone_hosts`` [(name, stamp)], all after ``cursor``."""
    # Nothing stamped after the version up to which the copy is whole (see
    # ChangeLog.extend): the answer resumes there and the rest comes after.
    last = world.complete
    changes = [Change(record.stamp, PROVIDER, uuid, record)
               for uuid, record in world.records.items()
               if cursor < record.stamp <= last]
    alive = set(world.records)
    changes.extend(Change(stamp, PROVIDER, uuid, None)
                   for uuid, stamp in tombstones
                   if uuid not in alive and stamp <= last)
    latest = {}
    for name, stamp, state in hosts:
        latest[name] = (stamp, state)
    for name, stamp in gone_hosts:
        if stamp > latest.get(name, (-1, None))[0]:
            latest[name] = (stamp, None)
    changes.extend(Change(stamp, HOST, name, state)
                   for name, (stamp, state) in latest.items()
                   if stamp <= last)
    changes.sort(key=lambda change: change.cursor)
    return changes
