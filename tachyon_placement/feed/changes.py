"""The change feed: what changed in the graph, after a cursor.

The cursor is the graph version (graph/versioning.py). Every write that
changes a provider (tree, inventories, usage through allocations, traits,
aggregates) bumps it once and stamps the providers it changed; an
allocation write also stamps its consumers; a deleted provider or
consumer leaves a tombstone with the version; a host's topology carries
the version of its last publication (a deleted one a tombstone). So "what
changed after cursor c" is every provider, consumer, tombstone and host
stamped after c, each in its state now: a client that applies the changes
in cursor order keeps an exact mirror. An object changed several times
after c comes once, at the cursor of its last change, in its state now
(``coalesced``): what a mirror needs, and what the documentation says.

The feed server (feed/server.py) keeps the recent changes in memory (a
ChangeLog filled from its copy of the graph as it moves forward, see
WorldCache listeners), so subscribers read memory, not the database. A
cursor older than what the log holds is answered from the copy of the
graph and the tombstones; one older than the retention floor (tombstones
pruned), or ahead of the graph (a restore, a re-import), is gone: 410, and
the client lists everything again.

Each change carries its Scope (what about the object changed, the roots,
host names, aggregates and resource classes it touches, now or before the
change) so that a subscriber's Filter picks its changes without looking
at their state.
"""
import bisect
import collections
import threading

import orjson

PROVIDER = 'resource_provider'
HOST = 'host_topology'
CONSUMER = 'consumer'
# A consumer's drift as the watcher recorded it (usecases/drift.py):
# sent only to subscribers that ask for kind ``drift``.
DRIFT = 'consumer_drift'

# What a subscriber may ask for (?kind=), and the kinds of object each
# concerns: a provider's changes are told apart by what changed.
PROVIDER_ASPECTS = frozenset(
    ('provider', 'inventory', 'usage', 'trait', 'aggregate'))
CONSUMER_ASPECTS = frozenset(('consumer', 'allocation'))
HOST_ASPECTS = frozenset(('topology',))
DRIFT_ASPECTS = frozenset(('drift',))
KINDS = PROVIDER_ASPECTS | CONSUMER_ASPECTS | HOST_ASPECTS | DRIFT_ASPECTS
_EMPTY = frozenset()


class Scope(collections.namedtuple(
        'Scope', 'aspects roots hosts aggregates classes')):
    """What a change touches, each a frozenset: ``aspects`` (of KINDS),
    provider tree ``roots``, ``hosts`` (names of those roots and of
    hosts' topologies), ``aggregates`` and resource ``classes``; for a
    change, what the object touched before it and touches after it."""
    __slots__ = ()

    def union(self, other):
        # Of a change of its own and one that only enters filters: the
        # change of its own (everyone gets it).
        kind = Scope if type(self) is not type(other) else type(self)
        return kind(*(None if mine is None or theirs is None
                      else mine | theirs
                      for mine, theirs in zip(self, other)))


class EnteringScope(Scope):
    """The Scope of a consumer's change that is not a change of its own:
    a provider it holds allocations on joined or left an aggregate or a
    tree (or its root was renamed), so it enters or leaves those filters.
    Sent only to subscribers that filter by roots, hosts or aggregates:
    the others hold it as it is already."""
    __slots__ = ()


class Change(collections.namedtuple('Change', 'cursor kind key state scope')):
    """One change.  ``state``: a provider's record of the copy of the
    graph (immutable, rendered only when read, so filling the log costs
    writes next to nothing), a consumer's ConsumerState, a host's
    published topology, or None for a deletion; ``scope``: its Scope
    (None: unknown, matches every filter)."""
    __slots__ = ()

    def __new__(cls, cursor, kind, key, state, scope=None):
        return super().__new__(cls, cursor, kind, key, state, scope)

    def encoded(self):
        """The change as JSON bytes, encoded once however many
        subscribers read it (kept in ENCODINGS while there is room)."""
        identity = self[:3]     # (cursor, kind, key): one change
        found = ENCODINGS.json.get(identity)
        if found is None:
            # Sized to fit: orjson's bytes keep the 4 KiB buffer they
            # were written in.
            found = ENCODINGS.keep('json', identity, bytes(
                memoryview(orjson.dumps(render(self)))))
        return found

    def event(self):
        """The change as one Server-Sent Event (``id`` its cursor), framed
        once however many streams carry it."""
        identity = self[:3]
        found = ENCODINGS.events.get(identity)
        if found is None:
            found = ENCODINGS.keep(
                'events', identity,
                b'id: %d\nevent: change\ndata: %s\n\n' % (
                    self.cursor, self.encoded()))
        return found


class Encodings:
    """(cursor, kind, key) -> a change's JSON bytes (``json``) and its
    Server-Sent Event (``events``), shared by every subscriber that reads
    it: bounded by ``most_bytes`` in all (both emptied when full:
    encoding again is only a cost; a whole log's encodings were 1.1 GiB
    at the bench's 1,000 hosts), and emptied when the subscribers have
    gone (``forget``)."""

    def __init__(self, most_bytes):
        self.most_bytes = most_bytes
        self.json = {}
        self.events = {}
        self.size = 0

    def keep(self, which, identity, encoded):
        """``encoded`` kept under ``identity`` in ``which`` (json or
        events); returns it."""
        if self.size + len(encoded) > self.most_bytes:
            self.forget()
        getattr(self, which)[identity] = encoded
        self.size += len(encoded)
        return encoded

    def forget(self):
        # New dicts: emptied ones keep their tables' size.
        self.json, self.events, self.size = {}, {}, 0


ENCODINGS = Encodings(64 * 1024 * 1024)


class Joined:
    """The bytes of the changes read after one cursor, joined once
    however many subscribers read them: under a stream of writes the
    subscribers that keep up all ask for the same changes after the same
    cursor, and joining a thousand changes per subscriber was most of
    what 50 of them cost the server."""

    def __init__(self, frame, separator=b'', kept=32,
                 most_bytes=32 * 1024 * 1024):
        self._frame = frame         # Change -> bytes
        self._separator = separator
        self._kept = collections.OrderedDict()
        self._most = kept
        # Bytes kept in all: a catch-up of a follower of everything joins
        # tens of megabytes (32 of them held 1.5 GiB in the bench).
        self._most_bytes = most_bytes
        self._size = 0
        self._lock = threading.Lock()

    def forget(self):
        """Keep nothing (the subscribers have gone)."""
        with self._lock:
            self._kept = collections.OrderedDict()
            self._size = 0

    def of(self, cursor, changes, wanted=None):
        """The framed ``changes`` (read after ``cursor`` through the
        Filter ``wanted``), joined."""
        if not changes:
            return b''
        first, last = changes[0], changes[-1]
        key = (cursor, last.cursor, len(changes), wanted)
        with self._lock:
            found = self._kept.get(key)
        # The same read gives the same Change objects (the log's); an
        # answer made from the copy of the graph is joined anew.
        if found is not None and found[0] is first and found[1] is last:
            return found[2]
        joined = self._separator.join(map(self._frame, changes))
        if len(joined) > self._most_bytes // 4:
            # Read by one slow follower, most likely: not kept.
            return joined
        with self._lock:
            replaced = self._kept.pop(key, None)
            if replaced is not None:
                self._size -= len(replaced[2])
            self._kept[key] = (first, last, joined)
            self._size += len(joined)
            while len(self._kept) > self._most or (
                    self._size > self._most_bytes):
                _key, (_first, _last, dropped) = self._kept.popitem(
                    last=False)
                self._size -= len(dropped)
        return joined


class CursorGone(Exception):
    """The cursor is older than the retention floor."""

    def __init__(self, floor):
        super().__init__(floor)
        self.floor = floor


class CursorAhead(CursorGone):
    """The cursor is ahead of the graph (the graph was restored or
    imported again since the client read it)."""

    def __init__(self, floor, head):
        super().__init__(floor)
        self.head = head


def render(change):
    """The JSON document of a Change (the event schema, version 1:
    api-ref/source/changes.inc)."""
    document = {'cursor': change.cursor, 'type': change.kind,
                'deleted': change.state is None}
    if change.kind == PROVIDER:
        document['uuid'] = change.key
        document['resource_provider'] = (
            change.state.as_document() if change.state is not None
            else None)
    elif change.kind == CONSUMER:
        document['uuid'] = change.key
        document['consumer'] = (
            consumer_document(change.state) if change.state is not None
            else None)
    elif change.kind == DRIFT:
        # deleted: its drift ended.
        document['uuid'] = change.key
        document['drift'] = change.state
    else:
        document['host'] = change.key
        document['topology'] = change.state
    return document


def consumer_document(state):
    """A consumer as the feed shows it: GET /allocations/{consumer}'s
    shape (1.38) with the consumer's uuid."""
    return {
        'uuid': state.uuid,
        'consumer_generation': state.generation,
        'project_id': state.project_id,
        'user_id': state.user_id,
        'consumer_type': state.consumer_type,
        'allocations': {
            rp: {'resources': dict(sorted(resources.items()))}
            for rp, resources in sorted(state.allocations.items())},
    }


def coalesced(changes):
    """``changes`` (in cursor order) with one entry per object: its last
    change (cursor and state), whose scope is the union of its changes'
    (a host filter sees a consumer leave the host), in cursor order."""
    latest = {}
    for change in changes:
        identity = (change.kind, change.key)
        before = latest.get(identity)
        if before is not None and before.scope is not None and (
                change.scope is not None):
            change = change._replace(scope=before.scope.union(change.scope))
        elif before is not None:
            change = change._replace(scope=None)
        latest[identity] = change
    if len(latest) == len(changes):
        return changes
    return sorted(latest.values(), key=lambda change: change.cursor)


class Filter(collections.namedtuple(
        'Filter', 'kinds roots hosts aggregates classes')):
    """A subscriber's filter: each field a frozenset of what it accepts,
    or None for anything; a change passes when it touches one of each
    given field (kinds: aspects)."""
    __slots__ = ()

    def matches(self, change):
        if change.kind == DRIFT and (
                self.kinds is None or 'drift' not in self.kinds):
            # Asked for by name only: the feed's documents of version 1
            # have three types.
            return False
        scope = change.scope
        if isinstance(scope, EnteringScope) and not self.places:
            return False
        if scope is None:
            return True
        for wanted, touched in zip(self, scope):
            if wanted is not None and touched is not None and (
                    wanted.isdisjoint(touched)):
                return False
        return True

    @property
    def everything(self):
        return all(field is None for field in self)

    @property
    def places(self):
        """Whether it filters by where objects are (roots, hosts or
        aggregates): what a change of place makes objects enter."""
        return not (self.roots is None and self.hosts is None
                    and self.aggregates is None)


EVERYTHING = Filter(None, None, None, None, None)
# The Scope field each Filter field is matched against (the same order).
SCOPE_OF_FILTER = ('aspects', 'roots', 'hosts', 'aggregates', 'classes')


def provider_scope(record, old, records, roots_named):
    """The Scope of a provider's change from ``old`` (None: new) to
    ``record`` (None: deleted); ``records`` the copy of the graph's {uuid:
    record}, ``roots_named`` {root uuid: topology host name}."""
    if record is None and old is None:
        return None     # forgotten with the provider: passes every filter
    if record is None or old is None:
        aspects = PROVIDER_ASPECTS
    else:
        aspects = set()
        was, now = old.provider, record.provider
        if (was.name, was.parent_uuid, was.root_uuid) != (
                now.name, now.parent_uuid, now.root_uuid):
            aspects.add('provider')
        if old.traits != record.traits:
            aspects.add('trait')
        if old.aggregates != record.aggregates:
            aspects.add('aggregate')
        before, after = old.inventories, record.inventories
        if before.keys() != after.keys() or any(
                _inventory_fields(before[rc]) != _inventory_fields(
                    after[rc]) for rc in after):
            aspects.add('inventory')
        if any(before.get(rc) is None or before[rc].used != inv.used
               for rc, inv in after.items()):
            aspects.add('usage')
        # Only its generation moved: what changed and changed back between
        # the two copies (a claim and its release) is not known.
        aspects = frozenset(aspects) if aspects else PROVIDER_ASPECTS
    roots, aggregates, classes, hosts = set(), set(), set(), set()
    for state in (old, record):
        if state is not None:
            roots.add(state.root_uuid)
            aggregates.update(state.aggregates)
            classes.update(state.inventories)
            if state.parent_uuid is None:
                hosts.add(state.provider.name)
    hosts.update(_host_names(roots, records, roots_named))
    return Scope(aspects, frozenset(roots), frozenset(hosts),
                 frozenset(aggregates), frozenset(classes))


def _inventory_fields(inventory):
    return (inventory.total, inventory.reserved, inventory.min_unit,
            inventory.max_unit, inventory.step_size,
            inventory.allocation_ratio)


def _host_names(roots, records, roots_named):
    for root in roots:
        record = records.get(root)
        if record is not None:
            yield record.provider.name
        if root in roots_named:
            yield roots_named[root]


def consumer_scope(providers, classes, records, roots_named, before=None):
    """The Scope of a consumer's change that touches ``providers`` (held
    before or now) and resource ``classes``; ``records`` the copy of the
    graph's {uuid: record}, ``before`` the previous copy's: a provider
    that left an aggregate (or a tree) in the same write batch still
    brings it, so the consumer's move reaches that filter too."""
    roots, aggregates = set(), set()
    for uuid in providers:
        for copy in (records, before or {}):
            record = copy.get(uuid)
            if record is not None:
                roots.add(record.root_uuid)
                aggregates.update(record.aggregates)
    hosts = set(_host_names(roots, records, roots_named))
    return Scope(CONSUMER_ASPECTS, frozenset(roots), frozenset(hosts),
                 frozenset(aggregates),
                 None if classes is None else frozenset(classes))


def host_scope(name, root):
    """The Scope of a host topology's change (``root``: the provider tree
    it is linked to, or None)."""
    roots = frozenset((root,)) if root else _EMPTY
    return Scope(HOST_ASPECTS, roots, frozenset((name,)), _EMPTY, _EMPTY)


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
        # Called with the head after each move, outside the lock (the feed
        # server wakes its subscribers on its event loop).
        self.watchers = []
        self._segments = collections.OrderedDict()

    def _tell(self):
        head = self.head
        for watcher in list(self.watchers):
            watcher(head)

    def reset(self, version):
        """A copy of the graph made anew (no diff known): complete only
        from ``version`` on."""
        with self.changed:
            self._changes, self._cursors = [], []
            self.start = self.head = version
            self.changed.notify_all()
        self._tell()

    def forget(self):
        """Drop what the log keeps (once its subscribers left: what it
        held was theirs): complete from its head on, older cursors are
        answered from the copy of the graph, as after a restart."""
        with self.changed:
            self._changes, self._cursors = [], []
            self._segments = collections.OrderedDict()
            if self.start is not None:
                self.start = self.head

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
        self._tell()

    def covers(self, cursor):
        return self.start is not None and cursor >= self.start

    def after(self, cursor, limit=None, wanted=None):
        """(changes after ``cursor``, the cursor to resume from), when the
        log covers ``cursor``; None otherwise: see select()."""
        with self.changed:
            if not self.covers(cursor):
                return None
            first = bisect.bisect_right(self._cursors, cursor)
            head = self.head
            if first == len(self._changes):
                return [], head
            key = (cursor, head, id(self._changes[first]),
                   id(self._changes[-1]))
            segment = self._segments.get(key)
            if segment is None:
                segment = Segment(self._changes[first:])
                if len(segment.changes) <= SEGMENT_CHANGES_KEPT // 4:
                    self._segments[key] = segment
                    while len(self._segments) > SEGMENTS_KEPT or sum(
                            len(kept.changes) for kept in
                            self._segments.values()) > SEGMENT_CHANGES_KEPT:
                        self._segments.popitem(last=False)
        return cut(segment.passing(wanted), limit, head)


# Segments of the log (the changes after one cursor up to the head) kept
# for the subscribers that read them: under a stream of writes those that
# keep up all read the same one at each mark of the clock.
SEGMENTS_KEPT = 16
# The changes those segments hold at most, together (a segment is a copy:
# the catch-ups of 16 lagging subscribers at distinct cursors of a full
# log held 1.5 GiB); a catch-up larger than a quarter of it is made for
# its reader alone and not kept.
SEGMENT_CHANGES_KEPT = 40000


class Segment:
    """The changes after one cursor, coalesced once for every subscriber
    that reads them, with an index per filter field built on first use:
    a subscriber that follows one host of ten thousand finds its changes
    without testing every change of the cloud (a thousand such
    subscribers at a thousand changes a second would otherwise test a
    million changes a second)."""

    def __init__(self, changes):
        self.changes = coalesced(changes)
        # What a subscriber that names no kind is sent (drift only to
        # those that ask for it).
        self.plain = self.changes
        if any(change.kind == DRIFT or isinstance(change.scope,
                                                  EnteringScope)
               for change in self.changes):
            self.plain = [change for change in self.changes
                          if change.kind != DRIFT and not isinstance(
                              change.scope, EnteringScope)]
        self._index = {}
        self._lock = threading.Lock()

    def _positions(self, field):
        """({value: [positions]}, [positions of changes whose field is
        not known]) for a Scope field."""
        with self._lock:
            found = self._index.get(field)
            if found is None:
                by_value, unknown = {}, []
                column = Scope._fields.index(field)
                for position, change in enumerate(self.changes):
                    scope = change.scope
                    values = None if scope is None else scope[column]
                    if values is None:
                        unknown.append(position)
                        continue
                    for value in values:
                        by_value.setdefault(value, []).append(position)
                found = self._index[field] = (by_value, unknown)
        return found

    def passing(self, wanted):
        """The changes that pass the Filter ``wanted``, in order."""
        if wanted is None or wanted.everything:
            return self.plain
        if len(self.changes) < INDEXED_FROM:
            return [change for change in self.changes
                    if wanted.matches(change)]
        best = None
        for field, values in zip(SCOPE_OF_FILTER, wanted):
            if values is None:
                continue
            by_value, unknown = self._positions(field)
            positions = set(unknown)
            for value in values:
                positions.update(by_value.get(value, ()))
            if best is None or len(positions) < len(best):
                best = positions
        return [self.changes[position] for position in sorted(best)
                if wanted.matches(self.changes[position])]


# Below this many changes a segment is filtered change by change.
INDEXED_FROM = 64


def select(changes, limit, head, wanted=None):
    """(what a subscriber is sent of ``changes`` (in cursor order), the
    cursor to resume from): one entry per object (coalesced), those that
    pass ``wanted`` (a Filter; None: all), at most ``limit`` (more only to
    finish the last write's), resuming at the last cursor given, or at
    ``head`` when everything was given."""
    return cut(Segment(changes).passing(wanted), limit, head)


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


# The scopes of changes whose object is not known as it was at the
# reader's cursor (read from the graph: from_world; or read again):
# they pass every filter but kind's.
UNKNOWN_PROVIDER = Scope(PROVIDER_ASPECTS, None, None, None, None)
UNKNOWN_CONSUMER = Scope(CONSUMER_ASPECTS, None, None, None, None)


def from_world(world, cursor, tombstones, hosts, gone_hosts,
               consumers=None, drift=()):
    """Every change after ``cursor`` from a copy of the graph (records
    carry their stamps) and what the engine keeps of deletions:
    ``tombstones`` [(uuid, stamp)], ``hosts`` [(name, stamp, state)],
    ``gone_hosts`` [(name, stamp)], all after ``cursor``; ``consumers``
    {uuid: (stamp, ConsumerState or None, providers)} up to
    ``world.complete``; ``drift`` the recorded drift changes up to it
    (drift_changes)."""
    # Nothing stamped after the version up to which the copy is whole (see
    # ChangeLog.extend): the answer resumes there and the rest comes after.
    last = world.complete
    named = topology_hosts(world)
    # What an object was at ``cursor`` is not kept (only its state now and
    # the stamp of its last change): a provider that left an aggregate or
    # a host, a consumer that moved, may have passed the filter then.  So
    # each object changed after the cursor passes every filter of roots,
    # hosts, aggregates and classes, and every kind of its type: the
    # subscriber's mirror drops what no longer passes (its state says).
    changes = [Change(record.stamp, PROVIDER, uuid, record, UNKNOWN_PROVIDER)
               for uuid, record in world.records.items()
               if cursor < record.stamp <= last]
    alive = set(world.records)
    # What a deleted provider touched is forgotten with it: its deletion
    # passes every filter (a mirror drops a uuid it does not hold).
    changes.extend(Change(stamp, PROVIDER, uuid, None)
                   for uuid, stamp in tombstones
                   if uuid not in alive and stamp <= last)
    latest = {}
    for name, stamp, state in hosts:
        latest[name] = (stamp, state)
    for name, stamp in gone_hosts:
        if stamp > latest.get(name, (-1, None))[0]:
            latest[name] = (stamp, None)
    changes.extend(Change(stamp, HOST, name, state,
                          Scope(HOST_ASPECTS, None, frozenset((name,)),
                                _EMPTY, _EMPTY))
                   for name, (stamp, state) in latest.items()
                   if stamp <= last)
    changes.extend(consumer_changes(consumers or {}, world.records, named))
    changes.extend(drift_changes(drift, world.records, named))
    changes.sort(key=lambda change: change.cursor)
    return changes


def drift_changes(drift, records, named):
    """Changes of the recorded drift ``drift`` [(stamp, consumer, root,
    reasons or None when it ended)] (graph/drift.py DriftStore.since)."""
    found = []
    for stamp, consumer, root, reasons in drift:
        roots = frozenset((root,))
        found.append(Change(
            stamp, DRIFT, consumer,
            None if reasons is None else {'root_provider_uuid': root,
                                          'reasons': reasons},
            Scope(DRIFT_ASPECTS, roots,
                  frozenset(_host_names(roots, records, named)), None,
                  None)))
    return found


def consumer_changes(consumers, records, named, seen=None,
                     previous=None):
    """Changes of ``consumers`` {uuid: (stamp, ConsumerState or None,
    providers)}; ``seen`` {uuid: (providers, classes) when last seen},
    which a consumer's scope includes (and which is brought up to date);
    ``previous`` the previous copy's records (see consumer_scope).
    The classes a deleted consumer held, when not seen, are not known."""
    found = []
    for uuid, written in consumers.items():
        stamp, state, providers = written[:3]
        made_again = len(written) > 3
        touched = set(providers)
        classes = set()
        if state is not None:
            for resources in state.allocations.values():
                classes.update(resources)
        before = seen.pop(uuid, None) if seen is not None else None
        # Whether where it was at the reader's cursor is known: a filter
        # it left must still get it.
        known = True
        if seen is None:
            # Read from the graph: it may have moved, been deleted and
            # made again since the cursor; only where it is now is kept.
            known = False
        elif before is not None:
            touched.update(before[0])
            classes.update(before[1])
        elif state is None or made_again or (
                state.generation != FIRST_GENERATION):
            # Not seen since the log began, and it had allocations before
            # its last write (it may also have moved since the last copy:
            # the copies come a batch of writes at a time): where it was
            # at a reader's cursor is not known.
            known = False
        if seen is not None and state is not None:
            seen[uuid] = (tuple(providers), frozenset(classes))
        found.append(Change(stamp, CONSUMER, uuid, state, consumer_scope(
            touched, classes, records, named, previous)
            if known else UNKNOWN_CONSUMER))
    return found


# A consumer's generation after the first write that gave it allocations
# (domain/allocations.py: it held none before; one emptied is deleted,
# and FeedStore.consumers says when one was deleted and made again): it
# left nothing.
FIRST_GENERATION = 1


def entering_changes(consumers, moved, records, named, previous):
    """Changes of ``consumers`` {uuid: (stamp, ConsumerState, providers)}
    that were not written themselves but hold allocations on ``moved``
    providers {uuid: stamp of the provider's change} (joined or left an
    aggregate or a tree): each at the latest of those stamps, with the
    scope of its providers before and now (``records`` None: not known,
    read from the graph).  In cursor order."""
    found = []
    for uuid, (_stamp, state, providers) in consumers.items():
        stamp = max(moved[provider] for provider in providers
                    if provider in moved)
        if records is None:
            scope = UNKNOWN_CONSUMER
        else:
            classes = {rc for resources in state.allocations.values()
                       for rc in resources}
            scope = consumer_scope(providers, classes, records, named,
                                   previous)
        found.append(Change(stamp, CONSUMER, uuid, state,
                            EnteringScope(*scope)))
    found.sort(key=lambda change: change.cursor)
    return found


def topology_hosts(world):
    """{root uuid: the name of the host topology linked to it} of a copy
    of the graph."""
    return {root: name for name, root in world.layout_roots.items()}
