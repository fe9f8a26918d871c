"""World.evolve patches the indexes of the previous World; the result must
be exactly what building them from scratch gives."""
import logging
import random
import re
import time

from tachyon_placement.domain import models
from tachyon_placement.world import records as provider_records
from tachyon_placement.world import world as world_module
from tachyon_placement.tests.unit import test_provider_domain
from tachyon_placement.weighing import model as weighing_model

TRAITS = ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C', 'MISC_SHARES_VIA_AGGREGATE']
AGGS = ['agg-1', 'agg-2']
CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB']
TRAIT_SETS = [('CUSTOM_A',), ('CUSTOM_B', 'CUSTOM_C'), ('CUSTOM_D',)]
WEIGHERS = tuple(weighing_model.Weigher.from_document(name, document)
                 for name, document in (
    ('spread', {'weight': 1.0, 'scorer': {'type': 'usage',
                                          'resource_class': 'VCPU'}}),
    ('prefer-a', {'weight': 0.5, 'scorer': {'type': 'traits',
                                            'prefer': ['CUSTOM_A']}})))


def _record(rng, uuid, seq, root_uuid, parent_uuid):
    provider = models.Provider(uuid=uuid, name=uuid, generation=seq,
                               parent_uuid=parent_uuid, root_uuid=root_uuid)
    inventories = {rc: models.Inventory(resource_class=rc, total=8,
                                        used=rng.randrange(8))
                   for rc in rng.sample(CLASSES, rng.randrange(3))}
    return provider_records.ProviderRecord(
        provider, seq, frozenset(rng.sample(TRAITS, rng.randrange(3))),
        frozenset(rng.sample(AGGS, rng.randrange(2))), inventories)


def _indexes(world):
    def uuids(index):
        return {key: [record.uuid for record in records]
                for key, records in index.items()}
    return {'ordered': [record.uuid for record in world.ordered],
            'trees': uuids(world.trees), 'by_trait': uuids(world.by_trait),
            'by_aggregate': uuids(world.by_aggregate),
            'by_class': uuids(world.by_class),
            'roots': [record.uuid for record in world.roots],
            'sharing': [record.uuid for record in world.sharing],
            'root_uuids': list(world.root_uuids),
            'rc_roots': {(rc, amount): world.rc_roots(rc, amount)
                         for rc in CLASSES for amount in (1, 4, 7)},
            'trait_roots': {(names, roots_only): world.trait_roots(
                names, roots_only) for names in TRAIT_SETS
                for roots_only in (False, True)},
            'with_room': {(rc, amount): [record.uuid for record
                                         in world.with_room(rc, amount)]
                          for rc in CLASSES for amount in (1, 4, 7)},
            # Updated from the previous World's ranking after an evolve.
            'ranking': world.ranking(WEIGHERS, 0, 1000).scores}


def _cloud(rng, roots=30):
    records, seq = {}, 0
    for _root in range(roots):
        seq += 1
        root_uuid = 'rp-%03d' % seq
        records[root_uuid] = _record(rng, root_uuid, seq, root_uuid, None)
        for _child in range(rng.randrange(3)):
            seq += 1
            uuid = 'rp-%03d' % seq
            records[uuid] = _record(rng, uuid, seq, root_uuid, root_uuid)
    return records, seq


def _write(rng, records, seq, touches=3):
    """Changes ``records`` as a write would: (changed, deleted, seq)."""
    changed, deleted = {}, []
    for uuid in rng.sample(sorted(records), touches):
        old = records[uuid]
        if old.parent_uuid and rng.random() < 0.3:
            deleted.append(uuid)
            del records[uuid]
            continue
        # Same provider rewritten (traits, usage, ...) or moved under
        # another root.
        root_uuid = old.root_uuid
        parent_uuid = old.parent_uuid
        if old.parent_uuid and rng.random() < 0.3:
            root_uuid = parent_uuid = rng.choice(
                [r for r in records if records[r].parent_uuid is None])
        changed[uuid] = records[uuid] = _record(
            rng, uuid, old.seq, root_uuid, parent_uuid)
    if rng.random() < 0.5:
        seq += 1
        uuid = 'rp-%03d' % seq
        changed[uuid] = records[uuid] = _record(rng, uuid, seq, uuid, None)
    return changed, deleted, seq


def test_evolve_equals_a_rebuild():
    rng = random.Random(7)
    records, seq = _cloud(rng)
    world = world_module.World(1, dict(records))
    _indexes(world)                      # build them all
    for version in range(2, 40):
        before = _indexes(world)
        changed, deleted, seq = _write(rng, records, seq)
        evolved = world.evolve(version, changed, deleted)
        assert _indexes(evolved) == _indexes(
            world_module.World(version, dict(records)))
        # The World it came from is left as it was.
        assert _indexes(world) == before
        world = evolved


def test_indexes_follow_writes_they_were_not_used_in():
    """Copies of the graph whose indexes nobody reads carry the writes
    along (composed) and patch on first use; past a quarter of the cloud
    they forget them and build afresh: the same indexes either way."""
    rng = random.Random(5)
    records, seq = _cloud(rng, roots=400)
    world = world_module.World(1, dict(records))
    _indexes(world)
    kept = dropped = 0
    for version in range(2, 300):
        changed, deleted, seq = _write(rng, records, seq,
                                       touches=rng.randrange(1, 12))
        world = world.evolve(version, changed, deleted)
        kept += bool(world._pending)
        dropped += not world._pending
        # Read now and then, then not for long.
        if version < 100 and rng.random() < 0.1:
            assert _indexes(world) == _indexes(
                world_module.World(version, dict(records)))
    assert _indexes(world) == _indexes(
        world_module.World(version, dict(records)))
    # Both ways were taken: patched after many unread copies, and built
    # afresh once the changes outgrew a quarter of the cloud.
    assert kept > 50 and dropped > 0


def test_evolve_shares_untouched_trees():
    rng = random.Random(3)
    records = {uuid: _record(rng, uuid, seq, uuid, None)
               for seq, uuid in enumerate(['a', 'b', 'c'])}
    world = world_module.World(1, dict(records))
    trees = world.trees
    root_uuids = world.root_uuids
    evolved = world.evolve(2, {'b': _record(rng, 'b', 1, 'b', None)}, [])
    assert evolved.trees['a'] is trees['a']
    assert evolved.trees['b'] is not trees['b']
    # No root came or went: the very list of roots.
    assert evolved.root_uuids is root_uuids
    grown = evolved.evolve(3, {'d': _record(rng, 'd', 3, 'd', None)}, [])
    assert grown.root_uuids == ['a', 'b', 'c', 'd']
    assert root_uuids == ['a', 'b', 'c']
    # Indexes never built are left to be built on first use.
    assert 'by_class' not in evolved._built
    assert 'by_class' not in evolved._pending
    # Sets of roots carried over answer without the index they were
    # made from (patching it after every write cost a scheduling loop a
    # tenth of its server time).
    names = ('CUSTOM_A', 'CUSTOM_B')
    grown.rc_roots('VCPU', 1)
    grown.trait_roots(names)
    latest = grown.evolve(4, {'b': _record(rng, 'b', 1, 'b', None)}, [])
    fresh = world_module.World(4, dict(latest.records))
    assert latest.rc_roots('VCPU', 1) == fresh.rc_roots('VCPU', 1)
    assert latest.trait_roots(names) == fresh.trait_roots(names)
    assert 'by_class' not in latest._built
    assert 'by_trait' not in latest._built


def test_a_world_knows_which_trees_changed_since_an_earlier_one():
    """touched_since names every root whose tree changed, came or went
    since the earlier World, for the last _STEPS_KEPT versions of its own
    line, and nothing it cannot vouch for."""
    rng = random.Random(9)
    records, seq = _cloud(rng, roots=40)
    worlds = [world_module.World(1, dict(records))]
    for version in range(2, 40):
        changed, deleted, seq = _write(rng, records, seq,
                                       touches=rng.randrange(1, 5))
        worlds.append(worlds[-1].evolve(version, changed, deleted))
    world = worlds[-1]
    for earlier in worlds:
        touched = world.touched_since(earlier)
        if world.version - earlier.version > world_module._STEPS_KEPT:
            assert touched is None
            continue
        # Exactly those whose trees hold other records (records compare
        # by identity: a rewritten provider is a new record).
        differ = {root for root in set(earlier.trees) | set(world.trees)
                  if earlier.trees.get(root) != world.trees.get(root)}
        assert touched == differ
    # Another line of copies (another store, a copy made anew).
    assert world.touched_since(
        world_module.World(world.version - 1, dict(records))) is None
    assert world.touched_since(world) == frozenset()


def test_narrowed_keeps_every_match_in_creation_order():
    from tachyon_placement.domain import providers as domain
    rng = random.Random(11)
    records = {}
    for seq in range(200):
        uuid = 'rp-%03d' % seq
        records[uuid] = _record(rng, uuid, seq, uuid, None)
    world = world_module.World(1, records)
    everything = world.ordered
    narrower = 0
    for _case in range(300):
        filters = test_provider_domain.random_filters(rng, CLASSES, TRAITS,
                                                      AGGS)
        narrowed = world.narrowed(filters)
        # Exactly the records select() keeps, in its order.
        assert narrowed == domain.select(everything, filters)
        narrower += len(narrowed) < len(everything)
        # Asked again, from the sets the first answer kept.
        assert world.narrowed(filters) == narrowed
    # The indexes did narrow most of the searches.
    assert narrower > 150
    # The sets kept are bounded.
    assert len(world._member_sets) <= world_module._MEMBER_SETS_KEPT


def test_settle_collects_frozen_cycles_now_and_then(monkeypatch, caplog):
    """A cycle frozen while in use (another library's, in flight) is
    freed by the next sweep, not kept for ever."""
    import gc
    import weakref

    class Cycle:
        pass
    cycle = Cycle()
    cycle.me = cycle
    gone = weakref.ref(cycle)
    gc.freeze()
    del cycle
    monkeypatch.setattr(provider_records, '_swept', [time.monotonic()])
    monkeypatch.setattr(provider_records, '_sweep_share', [None])
    monkeypatch.setattr(provider_records, '_SWEEP_INTERVAL', 3600)
    provider_records.settle(10 ** 6, 1)
    assert gone() is not None       # frozen: the collector cannot see it
    monkeypatch.setattr(provider_records, '_SWEEP_INTERVAL', 0)
    with caplog.at_level(logging.DEBUG, logger=provider_records.__name__):
        provider_records.settle(10 ** 6, 1)
    assert gone() is None
    # Logged with its duration (a pause of every request of the process).
    assert any(re.fullmatch(r'Swept \d+ frozen objects in \d+\.\d\d s',
                            record.getMessage())
               for record in caplog.records)


def test_each_process_sweeps_after_its_own_share_of_the_interval(
        monkeypatch):
    """Workers started together do not all pause for a sweep at once: each
    waits its own draw of half to one and a half intervals."""
    monkeypatch.setattr(provider_records, '_SWEEP_INTERVAL', 100)
    now = time.monotonic()
    monkeypatch.setattr(provider_records, '_swept', [now - 60])
    monkeypatch.setattr(provider_records, '_sweep_share', [0.7])
    assert not provider_records._sweep_due()        # 60 s < 70 s
    assert provider_records._sweep_share == [0.7]   # the same share waits on
    provider_records._sweep_share[0] = 0.55
    assert provider_records._sweep_due()                # 60 s >= 55 s
    assert provider_records._sweep_share == [None]      # drawn again next time
    shares = set()
    for _draw in range(20):
        provider_records._sweep_share[0] = None
        provider_records._swept[0] = time.monotonic()
        assert not provider_records._sweep_due()
        assert 0.5 <= provider_records._sweep_share[0] <= 1.5
        shares.add(provider_records._sweep_share[0])
    assert len(shares) > 1


def test_a_key_brought_in_and_emptied_between_two_uses():
    """An aggregate that appears and goes again while the indexes are
    not used (osc-placement's inventory set --aggregate found it)."""
    rng = random.Random(1)
    records = {'a': _record(rng, 'a', 1, 'a', None)}
    world = world_module.World(1, dict(records))
    _indexes(world)
    new = _record(rng, 'b', 2, 'b', None)
    new.aggregates = frozenset(['agg-new'])
    world = world.evolve(2, {'b': new}, [])
    plain = _record(rng, 'b', 2, 'b', None)
    plain.aggregates = frozenset()
    world = world.evolve(3, {'b': plain}, [])
    world = world.evolve(4, {}, ['b'])
    records.pop('b', None)
    assert _indexes(world) == _indexes(world_module.World(4, dict(records)))


def test_lists_of_providers_with_room_are_bounded():
    """One list per (resource class, amount) asked for, up to
    _ROOMS_KEPT, then all forgotten (a client asking for ever new amounts
    does not grow the copy of the graph), and right either way."""
    rng = random.Random(13)
    records, seq = _cloud(rng, roots=50)
    world = world_module.World(1, dict(records))
    for asked in range(3 * world_module._ROOMS_KEPT):
        amount = asked % 20 + 1
        rooms = world.with_room('VCPU', amount)
        assert [record.uuid for record in rooms] == [
            record.uuid for record in world.ordered
            if 'VCPU' in record.inventories
            and record.inventories['VCPU'].used + amount <= 8]
        kept = [name for name in world._built if isinstance(name, tuple)]
        assert 0 < len(kept) <= world_module._ROOMS_KEPT


def test_probes_answer_the_very_sets_while_their_trees_keep_their_side():
    """A request's probe sets (the roots with room, with a trait, in an
    aggregate, and what is made of them) are the very objects the last
    request had, from one copy of the graph to the next, while a write
    leaves every tree on the same side: what the memo of intersections
    (domain.SET_OPERATIONS) needs to answer without intersecting again.
    And they are always what a fresh copy of the graph answers."""
    from tachyon_placement.domain import candidates as domain
    from tachyon_placement.world import candidates as world_candidates
    rng = random.Random(13)
    records, seq = _cloud(rng, roots=60)
    probes = [
        domain.Probe(key='t', kind='traits', group=0,
                     names=('CUSTOM_A', 'CUSTOM_B')),
        domain.Probe(key='root', kind='traits', names=('CUSTOM_C',),
                     roots_only=True),
        domain.Probe(key='a', kind='aggs', group=0, names=('agg-1',)),
        domain.Probe(key='r', kind='rc', group=0, rc='VCPU', amount=1),
        domain.Probe(key='r4', kind='rc', group=0, rc='DISK_GB', amount=4)]
    selective = [probe for probe in probes if probe.selective]
    resource = [probe for probe in probes if not probe.selective]

    def answers(world):
        reader = world_candidates.WorldReader(world, False)
        sharing = reader.sharing_providers()
        rows = reader.run_probes(selective, sharing)
        bound = domain.candidate_roots(selective, rows)
        rows.update(reader.run_probes(resource, sharing, roots=bound))
        return rows, bound

    world = world_module.World(1, dict(records))
    rows, bound = answers(world)
    assert bound
    same_world, same_bound = answers(world)
    assert same_bound is bound
    for key, result in rows.items():
        assert same_world[key].roots is result.roots
        assert same_world[key].reach is result.reach
    kept = 0
    for version in range(2, 30):
        before = world
        changed, deleted, seq = _write(rng, records, seq, touches=1)
        world = world.evolve(version, changed, deleted)
        now, now_bound = answers(world)
        fresh, fresh_bound = answers(
            world_module.World(version, dict(records)))
        assert now_bound == fresh_bound
        assert now == fresh
        touched = world.touched_since(before)
        for key in ('t', 'root'):
            probe = next(probe for probe in probes if probe.key == key)
            passing = {root for root in touched
                       if any(set(probe.names) & record.traits
                              and (record.parent_uuid is None
                                   or not probe.roots_only)
                              for record in world.trees.get(root, ()))}
            if passing == rows[key].roots & touched:
                # No tree changed sides.
                assert now[key].roots is rows[key].roots
                kept += 1
        rows = now
    # Writes of one provider mostly leave the trait sets as they were.
    assert kept > 10


def _changed_row(uuid, stamp, traits, aggregates):
    """A _CHANGED_PROVIDER map, as the engines answer it."""
    return {'uuid': uuid, 'name': uuid, 'generation': 1, 'parent_uuid': None,
            'root_uuid': uuid, 'seq': stamp, 'stamp': stamp,
            'labels_stamp': stamp, 'created_at': 0, 'updated_at': 0,
            'traits': list(traits), 'aggregates': list(aggregates),
            'inventories': []}


def test_records_with_equal_labels_share_one_set():
    records = provider_records.changed_records([
        _changed_row('a', 1, ['CUSTOM_A', 'CUSTOM_B'], ['agg-1']),
        _changed_row('b', 2, ['CUSTOM_B', 'CUSTOM_A'], ['agg-1']),
        _changed_row('c', 3, [], [])], 0, {})
    first, second = records['a'], records['b']
    assert first.traits == {'CUSTOM_A', 'CUSTOM_B'}
    assert isinstance(first.traits, frozenset)
    assert first.traits is second.traits
    assert first.aggregates is second.aggregates
    assert records['c'].traits == frozenset()
    # Labels read again (stamped after the copy) and unchanged: the very
    # sets of the record they replace.
    again = provider_records.changed_records(
        [_changed_row('a', 5, ['CUSTOM_B', 'CUSTOM_A'], ['agg-1'])], 4,
        records)
    assert again['a'] is not first
    assert again['a'].traits is first.traits


def test_a_label_set_goes_with_the_last_record_holding_it():
    label_sets = provider_records.LabelSets()
    held = label_sets(['CUSTOM_X'])
    assert label_sets({'CUSTOM_X'}) is held
    assert len(label_sets) == 1
    label_sets(['CUSTOM_Y'])    # held by nobody
    assert len(label_sets) == 1
    del held
    assert len(label_sets) == 0
