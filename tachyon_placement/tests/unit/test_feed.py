"""The change feed's log: complete from its start, cut between writes."""
import os
import threading
import time
import types

import hypothesis
import pytest

from tachyon_placement.feed import changes


def C(cursor, key, state='x'):
    return changes.Change(cursor, changes.PROVIDER, key, state)


def test_log_answers_only_what_it_covers():
    log = changes.ChangeLog()
    assert log.after(0) is None            # nothing seen yet
    log.reset(10)
    assert log.after(9) is None            # before the first copy
    assert log.after(10) == ([], 10)
    log.extend(10, 12, [C(12, 'b'), C(11, 'a')])
    assert log.after(10) == ([C(11, 'a'), C(12, 'b')], 12)
    assert log.after(11) == ([C(12, 'b')], 12)
    assert log.after(12) == ([], 12)
    # A gap (a copy that did not follow the last one): complete from the
    # new start only.
    log.extend(20, 21, [C(21, 'c')])
    assert log.after(12) is None
    assert log.after(20) == ([C(21, 'c')], 21)


def test_log_forgets_the_oldest_beyond_its_capacity():
    log = changes.ChangeLog(capacity=2)
    log.reset(0)
    log.extend(0, 3, [C(1, 'a'), C(2, 'b'), C(3, 'c')])
    assert log.after(0) is None
    assert log.after(1) == ([C(2, 'b'), C(3, 'c')], 3)


def test_log_trims_a_quarter_at_a_time():
    log = changes.ChangeLog(capacity=8)
    log.reset(0)
    log.extend(0, 9, [C(n, str(n)) for n in range(1, 10)])
    # One over: a quarter of the capacity goes at once.
    assert log.after(1) is None
    assert log.after(2) == ([C(n, str(n)) for n in range(3, 10)], 9)
    log.extend(9, 10, [C(10, '10')])
    assert log.after(8) == ([C(9, '9'), C(10, '10')], 10)


def test_a_write_after_the_copys_version_comes_with_the_next_copy():
    # The copy named version 5 read a write stamped 7 that committed
    # after its version read: given now, it would come again (out of
    # order) with the copy that reads everything after 5.
    log = changes.ChangeLog()
    log.reset(0)
    log.extend(0, 5, [C(3, 'a'), C(7, 'b')])
    assert log.after(0) == ([C(3, 'a')], 5)
    log.extend(5, 8, [C(7, 'b'), C(8, 'c')])
    assert log.after(0) == ([C(3, 'a'), C(7, 'b'), C(8, 'c')], 8)
    assert log.after(5) == ([C(7, 'b'), C(8, 'c')], 8)


def test_limit_cuts_between_writes():
    found = [C(1, 'a'), C(2, 'b'), C(2, 'c'), C(3, 'd')]
    assert changes.cut(found, 2, 9) == (found[:3], 2)
    assert changes.cut(found, 1, 9) == (found[:1], 1)
    assert changes.cut(found, 4, 9) == (found, 9)


def test_waiters_wake_when_the_log_moves():
    log = changes.ChangeLog()
    log.reset(5)
    woke = threading.Event()

    def waiter():
        with log.changed:
            while log.head <= 5:
                log.changed.wait(5)
        woke.set()
    thread = threading.Thread(target=waiter)
    thread.start()
    log.extend(5, 6, [C(6, 'a')])
    thread.join(5)
    assert woke.is_set()


def test_subscribers_at_the_same_place_share_one_join():
    framed = []

    def frame(change):
        framed.append(change.cursor)
        return b'<%d>' % change.cursor
    joined = changes.Joined(frame, b',', kept=2)
    log = changes.ChangeLog()
    log.reset(0)
    log.extend(0, 3, [C(1, 'a'), C(2, 'b'), C(3, 'c')])
    first = joined.of(0, log.after(0)[0])
    assert first == b'<1>,<2>,<3>'
    # Every other subscriber after cursor 0 gets the same bytes, framed
    # once.
    assert joined.of(0, log.after(0)[0]) is first
    assert framed == [1, 2, 3]
    assert joined.of(1, log.after(1)[0]) == b'<2>,<3>'
    # Other changes over the same cursors (an answer made from the copy
    # of the graph, not the log) are joined anew.
    assert joined.of(0, [C(1, 'a'), C(2, 'b'), C(3, 'c')]) == first
    assert framed == [1, 2, 3, 2, 3, 1, 2, 3]
    assert joined.of(5, []) == b''


def test_a_stream_keeps_one_watcher_reading_for_every_reader():
    """While streams follow, one watcher brings the copy of the graph up
    to date; their reads do not touch the database."""
    from tachyon_placement.feed import service

    class Store:
        def __init__(self):
            self.worlds = self
            self.listeners = []
            self.reads = 0

        def current(self, whole=False):
            self.reads += 1

    store = Store()
    feed = service.Feed(store, poll_interval=0.01)
    feed.log.reset(0)
    with feed.following(), feed.following():
        time.sleep(0.2)
        watched = store.reads
        assert watched >= 5            # the watcher polls
        for _ in range(20):            # the streams read the log only
            assert feed.log.after(0) == ([], 0)
        assert store.reads - watched < 10
    time.sleep(0.1)
    stopped = store.reads
    time.sleep(0.1)
    assert store.reads == stopped      # nobody follows: it stopped


def test_streams_alone_have_the_watcher_refresh_once_per_mark():
    """Streams that read once per ``pace`` have the watcher refresh once
    per mark, a little before it; a long poll makes it poll at once and
    every poll_interval while it waits."""
    from tachyon_placement.feed import service

    class Store:
        def __init__(self):
            self.worlds = self
            self.listeners = []
            self.reads = []

        def current(self, whole=False):
            self.reads.append(time.monotonic())

    store = Store()
    feed = service.Feed(store, poll_interval=0.01)
    feed.log.reset(0)
    pace = 0.5
    with feed.following(pace):
        time.sleep(2.0)
        # About one refresh per mark (4 in two seconds), not one per poll
        # interval (200).
        assert 2 <= len(store.reads) <= 8, store.reads
        # Each a quarter of the interval before a mark, or a little after
        # that on a busy machine (a thread wakes late, never early).
        for moment in store.reads[1:]:
            late = moment % pace - pace * (1 - service.MARK_LEAD)
            assert -0.01 < late < 0.1, late
        start = time.monotonic()
        with feed.polling():
            time.sleep(0.3)
        # The long poll woke the watcher: it polled at once and then
        # every poll_interval while the poll waited.
        during = [moment for moment in store.reads if moment >= start]
        assert during and during[0] - start < 0.1
        assert len(during) >= 3
    time.sleep(0.6)
    stopped = len(store.reads)
    time.sleep(0.6)
    assert len(store.reads) == stopped


def test_seconds_to_mark_points_at_the_shared_marks(monkeypatch):
    from tachyon_placement.feed import service
    now = [100.3]
    monkeypatch.setattr(service.time, 'monotonic', lambda: now[0])
    assert abs(service.seconds_to_mark(1.0) - 0.7) < 1e-9
    # A quarter before the mark: 100.75.
    assert abs(service.seconds_to_mark(1.0, lead=0.25) - 0.45) < 1e-9
    # Already past that moment of this interval: the next one.
    now[0] = 100.8
    assert abs(service.seconds_to_mark(1.0, lead=0.25) - 0.95) < 1e-9
    now[0] = 100.5
    assert abs(service.seconds_to_mark(0.5) - 0.5) < 1e-9


class FakeStore:
    """The store's worlds, versions and changes (all this object)."""

    def __init__(self, consumers=None):
        self.worlds = self.versions = self.changes = self
        self.listeners = []
        self.written_consumers = consumers or {}
        # No drift recorded (graph/drift.py DriftStore.since).
        self.drift = types.SimpleNamespace(since=lambda since, upto: [])

    def current(self, whole=False):
        return None

    def forget(self):
        self.forgotten = True

    def written(self):
        return self.current().version

    def floor(self):
        # Nothing pruned.
        return 0

    def consumers(self, since, upto):
        return {uuid: found for uuid, found
                in self.written_consumers.items() if since < found[0] <= upto}

    def consumers_on(self, providers):
        return {uuid: found for uuid, found
                in self.written_consumers.items()
                if found[1] is not None and set(found[2]) & set(providers)}


class FakeWorld:
    def __init__(self, version, records=()):
        self.version = self.complete = version
        self.records = {record.uuid: record for record in records}
        self.layout_roots = {}


def record(uuid, stamp, name=None, root=None, traits=(), aggregates=(),
           **inventories):
    provider = types.SimpleNamespace(uuid=uuid, name=name or uuid,
                                     parent_uuid=None if root is None
                                     else root, root_uuid=root or uuid)
    return types.SimpleNamespace(
        uuid=uuid, stamp=stamp, provider=provider,
        root_uuid=provider.root_uuid, parent_uuid=provider.parent_uuid,
        traits=frozenset(traits), aggregates=frozenset(aggregates),
        inventories={rc: inventory(**fields)
                     for rc, fields in inventories.items()})


def inventory(total=8, used=0):
    return types.SimpleNamespace(total=total, reserved=0, min_unit=1,
                                 max_unit=total, step_size=1,
                                 allocation_ratio=1.0, used=used)


def test_api_processes_keep_no_log_the_feed_server_does():
    """An API worker's feed reads never wait and are answered from its
    copy of the graph: it keeps no log (the records of the last changes,
    alive for nothing); the feed server's Feed does."""
    from tachyon_placement.feed import service

    store = FakeStore()
    feed = service.Feed(store)
    observe = store.listeners[0]
    before = FakeWorld(1)
    observe(1, FakeWorld(2), {'a': record('a', 2)}, [], [], before)
    assert feed.log.start is None and feed.log.after(1) is None
    feed.keeps_log = True       # what the feed server sets
    observe(2, FakeWorld(3), {'b': record('b', 3)}, [], [], before)
    # The first diff it sees starts the log.
    observe(3, FakeWorld(4), {'c': record('c', 4)}, [], [], FakeWorld(3))
    found, cursor = feed.log.after(2)
    assert [change.key for change in found] == ['b', 'c'] and cursor == 4
    # Older cursors are not the log's to answer (the copy of the graph
    # answers them).
    assert feed.log.after(1) is None


def test_an_object_changed_three_times_comes_once_as_it_is_now():
    """The issue's finding 4: a provider changed three times came twice,
    the first time with its old state."""
    log = changes.ChangeLog()
    log.reset(0)
    log.extend(0, 1, [C(1, 'a', 'first')])
    log.extend(1, 3, [C(2, 'b', 'other'), C(3, 'a', 'third')])
    log.extend(3, 4, [C(4, 'a', 'now')])
    found, cursor = log.after(0)
    assert [(change.key, change.state, change.cursor)
            for change in found] == [('b', 'other', 2), ('a', 'now', 4)]
    assert cursor == 4
    # Cut by a limit: what is given is given once, in its state now.
    found, cursor = log.after(0, limit=1)
    assert [(change.key, change.state) for change in found] == [
        ('b', 'other')]
    assert cursor == 2
    found, cursor = log.after(cursor)
    assert [(change.key, change.state) for change in found] == [
        ('a', 'now')]


def _log_from(world):
    """(FakeStore, the feed server's Feed over it) whose log begins at
    ``world``."""
    from tachyon_placement.feed import service
    store = FakeStore()
    feed = service.Feed(store)
    feed.keeps_log = True
    store.listeners[0](None, world, None, [], [], None)
    return store, feed


def _observed(feed, store, before, after, changed, deleted=()):
    observe = store.listeners[0]
    observe(before.complete, after, changed, list(deleted), [], before)
    return feed.log.after(before.complete)[0]


def test_provider_changes_say_what_changed_and_where():
    from tachyon_placement.feed import service
    store = FakeStore()
    feed = service.Feed(store)
    feed.keeps_log = True
    host = record('h', 1, name='cn1', VCPU={'total': 8})
    child = record('n', 1, root='h', aggregates=['agg'],
                   MEMORY_MB={'total': 64})
    before = FakeWorld(1, [host, child])
    store.listeners[0](None, before, None, [], [], None)
    used = record('h', 2, name='cn1', VCPU={'total': 8, 'used': 2})
    traited = record('n', 2, root='h', aggregates=['agg'], traits=['T'],
                     MEMORY_MB={'total': 64})
    after = FakeWorld(2, [used, traited])
    found = _observed(feed, store, before, after,
                      {'h': used, 'n': traited})
    scopes = {change.key: change.scope for change in found}
    assert scopes['h'].aspects == {'usage'}
    assert scopes['n'].aspects == {'trait'}
    assert scopes['n'].roots == {'h'} and scopes['n'].hosts == {'cn1'}
    assert scopes['n'].aggregates == {'agg'}
    assert scopes['n'].classes == {'MEMORY_MB'}

    def passing(**fields):
        wanted = changes.Filter(**{
            name: frozenset(fields[name]) if name in fields else None
            for name in changes.Filter._fields})
        return sorted(change.key for change in found
                      if wanted.matches(change))
    assert passing(kinds=['usage']) == ['h']
    assert passing(kinds=['trait', 'usage']) == ['h', 'n']
    assert passing(kinds=['inventory']) == []
    assert passing(hosts=['cn1']) == ['h', 'n']
    assert passing(hosts=['cn2']) == []
    assert passing(roots=['h']) == ['h', 'n']
    assert passing(aggregates=['agg']) == ['n']
    assert passing(classes=['VCPU']) == ['h']
    assert passing(classes=['VCPU'], kinds=['trait']) == []


def test_a_consumer_that_moves_reaches_the_host_it_left():
    from tachyon_placement.domain import allocations
    a = record('a', 1, name='cn1', VCPU={'total': 8})
    b = record('b', 1, name='cn2', VCPU={'total': 8})
    world = FakeWorld(1, [a, b])
    store, feed = _log_from(world)
    on_a = allocations.ConsumerState('c', 1, 'p', 'u', 'INSTANCE',
                                     {'a': {'VCPU': 2}})
    store.written_consumers = {'c': (2, on_a, ['a'])}
    world2 = FakeWorld(2, [a, b])
    found = _observed(feed, store, world, world2, {})
    assert found[0].kind == changes.CONSUMER
    assert found[0].scope.hosts == {'cn1'}
    on_b = allocations.ConsumerState('c', 2, 'p', 'u', 'INSTANCE',
                                     {'b': {'VCPU': 2}})
    store.written_consumers = {'c': (3, on_b, ['b'])}
    world3 = FakeWorld(3, [a, b])
    found = _observed(feed, store, world2, world3, {})
    # Where it is now and where it was: cn1's mirror drops it.
    assert found[0].scope.hosts == {'cn1', 'cn2'}
    document = changes.render(found[0])
    assert document['consumer']['allocations'] == {
        'b': {'resources': {'VCPU': 2}}}
    assert document['consumer']['consumer_generation'] == 2
    store.written_consumers = {'c': (4, None, ['b'])}
    world4 = FakeWorld(4, [a, b])
    found = _observed(feed, store, world3, world4, {})
    assert found[0].state is None and found[0].scope.hosts == {'cn2'}
    assert changes.render(found[0])['deleted'] is True


def test_a_cursor_ahead_of_the_graph_is_gone():
    """The issue's finding 3: after a restore the graph is behind the
    client's cursor; waiting on it would skip every change up to it."""
    from tachyon_placement.feed import service

    class Store(FakeStore):
        def current(self, whole=False):
            return FakeWorld(135)
    feed = service.Feed(Store())
    with pytest.raises(changes.CursorAhead) as gone:
        feed.changes(1135)
    assert gone.value.head == 135


def test_a_cursor_ahead_of_a_lagging_replica_waits_for_it(monkeypatch):
    """In the feed server reads go to a replica (graph/replica_reads.py):
    a cursor read from the API can be ahead of it by the replication
    delay.  The read waits for the replica; if it has not come after
    REPLICA_WAIT the client is told nothing new at its own cursor (never
    410, never a cursor past changes it did not get)."""
    from tachyon_placement.feed import service
    monkeypatch.setattr(service, 'REPLICA_PAUSE', 0.001)

    class Store(FakeStore):
        def __init__(self, versions):
            super().__init__()
            self.read_versions = list(versions)

        def current(self, whole=False):
            if len(self.read_versions) > 1:
                return FakeWorld(self.read_versions.pop(0))
            return FakeWorld(self.read_versions[0])

        def written(self):
            return 140

        def floor(self):
            return 0

        def since(self, cursor):
            return [], [], []

    feed = service.Feed(Store([135, 136, 138, 140]))
    found, cursor = feed.changes(139)
    assert (found, cursor) == ([], 140)
    monkeypatch.setattr(service, 'REPLICA_WAIT', 0.05)
    feed = service.Feed(Store([135]))
    assert feed.changes(139) == ([], 139)
    # Ahead of the writes too: gone, with the graph's head.
    with pytest.raises(changes.CursorAhead) as gone:
        feed.changes(141)
    assert gone.value.head == 140


_VALUES = ('a', 'b', 'c', 'd')
_SCOPES = hypothesis.strategies.one_of(
    hypothesis.strategies.none(),
    hypothesis.strategies.builds(
        changes.Scope, *[hypothesis.strategies.one_of(
            hypothesis.strategies.none(),
            hypothesis.strategies.frozensets(
                hypothesis.strategies.sampled_from(_VALUES)))
            for _field in changes.Scope._fields]))
_FILTERS = hypothesis.strategies.builds(
    changes.Filter, *[hypothesis.strategies.one_of(
        hypothesis.strategies.none(),
        hypothesis.strategies.frozensets(
            hypothesis.strategies.sampled_from(_VALUES), min_size=1))
        for _field in changes.Filter._fields])


@hypothesis.given(
    scopes=hypothesis.strategies.lists(_SCOPES, min_size=0, max_size=150),
    wanted=_FILTERS)
@hypothesis.settings(max_examples=200, deadline=None)
def test_an_indexed_segment_passes_what_the_filter_passes(scopes, wanted):
    found = [changes.Change(cursor, changes.PROVIDER, 'p%d' % cursor, 'x',
                            scope)
             for cursor, scope in enumerate(scopes, 1)]
    expected = [change for change in found if wanted.matches(change)]
    assert changes.Segment(found).passing(wanted) == expected


def test_a_provider_whose_change_was_undone_between_two_copies():
    """A claim and its release between two copies leave only the
    generation moved: what changed is not known, so every provider kind
    is told (a usage follower must not miss it)."""
    before = record('h', 1, VCPU={'total': 8})
    after = record('h', 2, VCPU={'total': 8})
    after.provider.generation = 7
    scope = changes.provider_scope(after, before, {}, {})
    assert scope.aspects == changes.PROVIDER_ASPECTS


def _policy_in_a_thread(policy, niceness):
    """share_cpu applied in a thread of its own (Linux schedules threads:
    the test's own thread keeps its policy): (what share_cpu said, the
    thread's scheduling policy, its niceness)."""
    from tachyon_placement.cmd import feed as feed_cmd
    seen = {}

    def run():
        seen['said'] = feed_cmd.share_cpu(policy, niceness)
        # Applied again (the process started anew): the same.
        feed_cmd.share_cpu(policy, niceness)
        seen['policy'] = os.sched_getscheduler(0)
        seen['nice'] = os.getpriority(os.PRIO_PROCESS, 0)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    return seen['said'], seen['policy'], seen['nice']


def test_the_feed_server_takes_only_idle_cpu_by_default():
    if not hasattr(os, 'SCHED_IDLE'):
        pytest.skip('this platform has no SCHED_IDLE')
    said, policy, _nice = _policy_in_a_thread('idle', 10)
    assert (said, policy) == ('idle', os.SCHED_IDLE)
    assert os.sched_getscheduler(0) != os.SCHED_IDLE


def test_the_feed_server_can_be_niced_instead():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    said, policy, nice = _policy_in_a_thread('nice', 7)
    assert said == 'nice 7'
    assert policy == os.SCHED_OTHER
    assert nice == max(base, 7)


def test_drift_is_sent_to_those_who_ask_for_it_only():
    """kind=drift is asked for by name: a subscriber with no kind filter,
    or other kinds, gets the feed's three types of version 1."""
    from tachyon_placement.feed import changes

    provider = changes.Change(5, changes.PROVIDER, 'a', None, changes.Scope(
        changes.PROVIDER_ASPECTS, frozenset(['a']), frozenset(['a']),
        frozenset(), frozenset()))
    drifted = changes.drift_changes(
        [(6, 'vm', 'a', [{'kind': 'threshold', 'weigher': 'cap',
                          'mode': 'hard'}]), (7, 'gone-vm', 'a', None)],
        {}, {})
    everything = [provider] + drifted
    assert changes.select(everything, None, 7)[0] == [provider]
    asked = changes.Filter(frozenset(['drift']), None, None, None, None)
    found, cursor = changes.select(everything, None, 7, asked)
    assert [(change.key, change.state is None) for change in found] == [
        ('vm', False), ('gone-vm', True)] and cursor == 7
    assert changes.render(found[0])['drift'] == {
        'root_provider_uuid': 'a',
        'reasons': [{'kind': 'threshold', 'weigher': 'cap',
                     'mode': 'hard'}]}
    other = changes.Filter(frozenset(['usage']), None, None, None, None)
    assert changes.select(everything, None, 7, other)[0] == [provider]
    on_root = changes.Filter(frozenset(['drift']), frozenset(['b']), None,
                             None, None)
    assert changes.select(everything, None, 7, on_root)[0] == []


def test_a_consumer_changed_as_its_host_leaves_an_aggregate_reaches_it():
    """The issue's finding: in one batch of writes host cn1 leaves
    aggregate agg and its consumer d is deleted: d's deletion still passes
    member_of=agg (d was there at the follower's cursor)."""
    from tachyon_placement.domain import allocations
    a = record('a', 1, name='cn1', aggregates=('agg',), VCPU={'total': 8})
    world = FakeWorld(1, [a])
    store, feed = _log_from(world)
    on_a = allocations.ConsumerState('d', 1, 'p', 'u', 'INSTANCE',
                                     {'a': {'VCPU': 2}})
    store.written_consumers = {'d': (2, on_a, ['a'])}
    world2 = FakeWorld(2, [a])
    _observed(feed, store, world, world2, {})
    left = record('a', 3, name='cn1', VCPU={'total': 8})
    store.written_consumers = {'d': (4, None, ['a'])}
    world3 = FakeWorld(4, [left])
    found = _observed(feed, store, world2, world3, {'a': left})
    wanted = changes.Filter(None, None, None, frozenset(['agg']), None)
    passing = {(change.kind, change.key) for change in found
               if wanted.matches(change)}
    assert passing == {(changes.PROVIDER, 'a'), (changes.CONSUMER, 'd')}


def test_a_prune_between_the_floor_and_the_tombstones_is_410():
    """The issue's finding: pruning (floor moved and tombstones deleted
    in one write) between a reader's floor check and its read of the
    tombstones answered 200 with a deletion missing; the floor read again
    after the tombstones says 410."""
    from tachyon_placement.feed import service

    class Pruned(FakeStore):
        def __init__(self):
            super().__init__()
            self.floors = iter([0, 10])

        def current(self, whole=False):
            return FakeWorld(20)

        def floor(self):
            return next(self.floors)

        def since(self, since):
            return [], [], []

    feed = service.Feed(Pruned())
    try:
        feed.changes(5)
    except changes.CursorGone as exc:
        assert exc.floor == 10
    else:
        raise AssertionError('a gap answered 200')


def test_consumers_on_a_host_that_joins_an_aggregate_enter_its_filter():
    """Found by test_feed_model.py: consumer c on cn1, which then joins
    aggregate agg (c itself unchanged): c passes member_of=agg, at the
    cursor of cn1's change, as it is (its follower's view now has it)."""
    from tachyon_placement.domain import allocations
    a = record('a', 1, name='cn1', VCPU={'total': 8})
    world = FakeWorld(1, [a])
    store, feed = _log_from(world)
    on_a = allocations.ConsumerState('c', 1, 'p', 'u', 'INSTANCE',
                                     {'a': {'VCPU': 2}})
    store.written_consumers = {'c': (2, on_a, ['a'])}
    world2 = FakeWorld(2, [a])
    _observed(feed, store, world, world2, {})
    joined = record('a', 3, name='cn1', aggregates=('agg',),
                    VCPU={'total': 8})
    world3 = FakeWorld(3, [joined])
    everything = _observed(feed, store, world2, world3, {'a': joined})
    # Not a change of c's own: a subscriber without a filter of places
    # holds it as it is already.
    assert [change.key for change in everything] == ['a']
    wanted = changes.Filter(None, None, None, frozenset(['agg']), None)
    passing = feed.log.after(2, wanted=wanted)[0]
    assert [(change.kind, change.key, change.cursor)
            for change in passing] == [(changes.PROVIDER, 'a', 3),
                                       (changes.CONSUMER, 'c', 3)]


def test_a_consumer_not_seen_before_its_move_passes_every_filter():
    """Found by test_feed_model.py: after the feed server starts, a
    consumer it has not seen moves (generation 2: it held something
    before, where is not known): it passes every host filter, so the host
    it left gets it; one at its first allocating write (generation 1)
    held nothing before: only where it is now."""
    from tachyon_placement.domain import allocations
    a = record('a', 1, name='cn1', VCPU={'total': 8})
    b = record('b', 1, name='cn2', VCPU={'total': 8})
    world = FakeWorld(1, [a, b])
    store, feed = _log_from(world)
    moved = allocations.ConsumerState('m', 2, 'p', 'u', 'INSTANCE',
                                      {'b': {'VCPU': 2}})
    new = allocations.ConsumerState('n', 1, 'p', 'u', 'INSTANCE',
                                    {'b': {'VCPU': 2}})
    store.written_consumers = {'m': (2, moved, ['b']), 'n': (2, new, ['b'])}
    found = _observed(feed, store, world, FakeWorld(2, [a, b]), {})
    on_cn1 = changes.Filter(None, None, frozenset(['cn1']), None, None)
    assert [change.key for change in found if on_cn1.matches(change)] == [
        'm']


def _feed_with_a_log():
    """(store, a feed server's Feed whose log holds 'b' after 2)."""
    from tachyon_placement.feed import service

    store = FakeStore()
    feed = service.Feed(store)
    feed.keeps_log = True
    observe = store.listeners[0]
    observe(1, FakeWorld(2), {'a': record('a', 2)}, [], [], FakeWorld(1))
    observe(2, FakeWorld(3), {'b': record('b', 3)}, [], [], FakeWorld(2))
    return store, feed


def test_a_prune_past_the_log_while_it_reads_starts_it_again():
    """The deletions after the previous copy are read after the copy
    moved: a prune in between may have taken some (their tombstones), so
    the log starts again at the new copy rather than keep a gap (older
    cursors go to the graph, whose floor then answers 410)."""
    store, feed = _feed_with_a_log()
    observe = store.listeners[0]
    assert feed.log.after(2)[1] == 3
    store.floor = lambda: 4
    observe(3, FakeWorld(5), {'c': record('c', 5)}, [], [], FakeWorld(3))
    assert feed.log.after(3) is None
    assert feed.log.after(5) == ([], 5)


def test_the_changes_encodings_are_bounded_in_bytes():
    """The encodings shared by subscribers are kept up to their budget
    (the whole log's, 200,000 entries, were 1.1 GiB at 1,000 hosts), and
    forgotten when the subscribers leave."""
    encodings = changes.Encodings(most_bytes=10000)
    for number in range(100):
        encodings.keep('json', (number, 'p', 'u'), b'x' * 900)
        encodings.keep('events', (number, 'p', 'u'), b'y' * 950)
        assert encodings.size <= 10000
        assert encodings.size == sum(map(len, encodings.json.values())) + \
            sum(map(len, encodings.events.values()))
    assert encodings.json and encodings.events
    encodings.forget()
    assert encodings.size == 0 and not encodings.json and not encodings.events


def test_joined_answers_are_bounded_in_bytes():
    """Answers joined for many subscribers are kept up to their budget
    (32 catch-ups of a follower of everything held 1.5 GiB), one larger
    than a quarter of it not at all, and none once forgotten."""
    joined = changes.Joined(lambda change: b'z' * change.cursor,
                            most_bytes=4000)
    made = [changes.Change(cursor, changes.PROVIDER, 'p%d' % cursor, None)
            for cursor in range(1, 200)]
    for start in range(0, 150, 5):
        batch = made[start:start + 5]
        assert joined.of(start, batch) == b''.join(
            b'z' * change.cursor for change in batch)
        assert joined._size <= 4000
        assert joined._size == sum(len(kept[2]) for kept in
                                   joined._kept.values())
    # Kept: the same bytes object for the same read.
    recent = made[10:13]
    assert joined.of(10, recent) is joined.of(10, recent)
    large = made[190:199]
    assert joined.of(190, large) is not joined.of(190, large)
    joined.forget()
    assert joined._size == 0 and not joined._kept


def test_a_forgotten_log_is_complete_from_its_head_on():
    """Once its subscribers left the log keeps nothing: older cursors go
    to the copy of the graph (as after a restart), the next copies extend
    it from its head."""
    log = changes.ChangeLog()
    log.reset(0)
    log.extend(0, 3, [C(1, 'a'), C(2, 'b'), C(3, 'c')])
    assert log.after(1) == ([C(2, 'b'), C(3, 'c')], 3)
    assert log._segments
    log.forget()
    assert log.after(0) is None and log.after(2) is None
    assert log.after(3) == ([], 3)
    assert not log._changes and not log._cursors and not log._segments
    log.extend(3, 4, [C(4, 'd')])
    assert log.after(3) == ([C(4, 'd')], 4)
    # A log never started stays so.
    fresh = changes.ChangeLog()
    fresh.forget()
    assert fresh.start is None and fresh.after(0) is None


def test_giving_back_memory_forgets_what_the_subscribers_held():
    from tachyon_placement.feed import server

    store, feed = _feed_with_a_log()
    assert [change.key for change in feed.log.after(2)[0]] == ['b']
    changes.ENCODINGS.keep('json', ('b', 3), b'{}')
    feed._seen['m'] = (('a',), frozenset(['VCPU']))
    server.give_back_memory(feed)
    assert feed.log.after(2) is None and feed.log.after(3) == ([], 3)
    assert changes.ENCODINGS.size == 0
    # The copy of the graph and the consumers seen go too (made anew by
    # the next read).
    assert store.forgotten and not feed._seen


def test_the_segments_kept_are_bounded_in_changes(monkeypatch):
    """Segments are copies of the log after a cursor: those kept for the
    subscribers hold SEGMENT_CHANGES_KEPT changes at most together, and a
    catch-up over a quarter of it is answered without being kept."""
    monkeypatch.setattr(changes, 'SEGMENT_CHANGES_KEPT', 40)
    log = changes.ChangeLog()
    log.reset(0)
    log.extend(0, 100, [C(n, 'p%d' % n) for n in range(1, 101)])
    # A long catch-up: answered whole, not kept.
    found, head = log.after(0)
    assert len(found) == 100 and head == 100 and not log._segments
    for cursor in range(90, 100):
        assert [change.cursor for change in log.after(cursor)[0]] == list(
            range(cursor + 1, 101))
        assert sum(len(kept.changes) for kept in
                   log._segments.values()) <= 40
    # The latest are kept (the oldest go first).
    assert (99, 100) in {key[:2] for key in log._segments}
