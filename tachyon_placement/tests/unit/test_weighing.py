"""The weighing room: scorers, normalisation, combined order."""
import dataclasses
import random
import types

import pytest

from tachyon_placement.domain import models
from tachyon_placement.weighing import model
from tachyon_placement.weighing import ranking
from tachyon_placement.weighing import scorers


def record(uuid, parent=None, traits=(), aggregates=(), **inventories):
    return types.SimpleNamespace(
        uuid=uuid, parent_uuid=parent, traits=frozenset(traits),
        aggregates=frozenset(aggregates),
        inventories={rc: models.Inventory(rc, **fields)
                     for rc, fields in inventories.items()})


def weigher(name, scorer, weight=1.0, **match):
    return model.Weigher.from_document(
        name, {'weight': weight, 'scorer': scorer, 'match': match})


# Three hosts: a busy one, a half-used one with an SSD, an idle one in a
# preferred aggregate with a NUMA child holding its memory.
TREES = {
    'busy': [record('busy', MEMORY_MB=dict(total=1000, used=900),
                    VCPU=dict(total=10, used=1))],
    'half': [record('half', traits={'STORAGE_DISK_SSD'},
                    MEMORY_MB=dict(total=1000, used=500),
                    VCPU=dict(total=10, used=5))],
    'idle': [record('idle', aggregates={'agg-fast'},
                    VCPU=dict(total=10, used=9)),
             record('idle-numa0', parent='idle',
                    MEMORY_MB=dict(total=2000, reserved=1000, used=0))],
}
PLACEMENT_ORDER = ['busy', 'half', 'idle']


def test_usage_spread_and_pack_count_the_whole_tree():
    spread = {'type': 'usage', 'resource_class': 'MEMORY_MB',
              'mode': 'spread'}
    pack = dict(spread, mode='pack')
    assert scorers.score(spread, TREES['busy'], {}) == pytest.approx(-0.9)
    # The NUMA child's memory counts, its reserved part does not.
    assert scorers.score(spread, TREES['idle'], {}) == 0.0
    assert scorers.score(pack, TREES['half'], {}) == pytest.approx(0.5)
    # No inventory of the class: nothing to score.
    assert scorers.score(dict(spread, resource_class='VGPU'),
                         TREES['busy'], {}) is None


def test_traits_and_aggregates_prefer_and_avoid():
    assert scorers.score({'type': 'traits', 'prefer': ['STORAGE_DISK_SSD'],
                          'avoid': ['CUSTOM_SLOW']}, TREES['half'], {}) == 1
    assert scorers.score({'type': 'traits', 'avoid': ['STORAGE_DISK_SSD']},
                         TREES['half'], {}) == -1
    assert scorers.score({'type': 'aggregates', 'prefer': ['agg-fast']},
                         TREES['idle'], {}) == 1
    assert scorers.score({'type': 'aggregates', 'prefer': ['agg-fast']},
                         TREES['busy'], {}) == 0


def test_normalize_like_nova():
    assert ranking.normalize({'a': 2.0, 'b': 4.0, 'c': 3.0, 'd': None}) == {
        'b': 1.0, 'c': 0.5}
    assert ranking.normalize({'a': 1.0, 'b': 1.0}) == {}
    assert ranking.normalize({'a': None}) == {}


def test_no_weigher_keeps_placements_order():
    assert ranking.Ranking((), TREES).order(PLACEMENT_ORDER) == (
        PLACEMENT_ORDER)


def test_spread_by_memory_puts_the_emptiest_first():
    spread = weigher('spread-ram', {'type': 'usage',
                                    'resource_class': 'MEMORY_MB',
                                    'mode': 'spread'})
    order = ranking.Ranking([spread], TREES).order(PLACEMENT_ORDER)
    assert order == ['idle', 'half', 'busy']
    pack = weigher('pack-ram', dict(spread.scorer, mode='pack'))
    assert ranking.Ranking([pack], TREES).order(PLACEMENT_ORDER) == [
        'busy', 'half', 'idle']


def test_weights_combine_and_a_negative_weight_inverts():
    spread_cpu = weigher('spread-cpu', {'type': 'usage',
                                        'resource_class': 'VCPU'})
    ssd = weigher('ssd', {'type': 'traits', 'prefer': ['STORAGE_DISK_SSD']},
                  weight=2.0)
    # CPU spread alone: busy (0.1 used) first, idle (0.9) last.
    assert ranking.Ranking([spread_cpu], TREES).order(PLACEMENT_ORDER) == [
        'busy', 'half', 'idle']
    # The SSD preference weighs twice as much: half (0.5 + 2) first.
    both = ranking.Ranking([spread_cpu, ssd], TREES)
    assert both.order(PLACEMENT_ORDER) == ['half', 'busy', 'idle']
    assert both.scores['half'] == pytest.approx(2.5)
    assert both.parts['ssd'] == {'half': 1.0}
    avoid = weigher('no-ssd', ssd.scorer, weight=-1.0)
    assert ranking.Ranking([avoid], TREES).order(PLACEMENT_ORDER) == [
        'busy', 'idle', 'half']


def test_ties_keep_placements_order_and_unknown_roots_rank_last():
    fast = weigher('fast', {'type': 'aggregates', 'prefer': ['agg-fast']})
    ranked = ranking.Ranking([fast], TREES)
    assert ranked.order(['half', 'new-host', 'idle', 'busy']) == [
        'idle', 'half', 'new-host', 'busy']


def test_match_selects_the_weighers_of_a_request():
    gpu_only = weigher('gpu', {'type': 'usage', 'resource_class': 'VGPU'},
                       resource_classes=['VGPU'])
    avx = weigher('avx', {'type': 'traits', 'prefer': ['X']},
                  required_traits=['HW_CPU_X86_AVX2'], max_groups=2)
    anywhere = weigher('all', {'type': 'traits', 'prefer': ['X']})
    plain = model.RequestSummary(resource_classes=frozenset({'VCPU'}))
    assert ranking.applicable([gpu_only, avx, anywhere], plain) == (anywhere,)
    avx_request = model.RequestSummary(
        resource_classes=frozenset({'VCPU', 'VGPU'}),
        required_traits=frozenset({'HW_CPU_X86_AVX2', 'OTHER'}), groups=2)
    assert ranking.applicable([gpu_only, avx, anywhere], avx_request) == (
        anywhere, avx, gpu_only)
    three_groups = dataclasses.replace(avx_request, groups=3)
    assert avx not in ranking.applicable([avx], three_groups)


def test_weighers_round_trip_their_documents_and_hash_by_content():
    document = {'weight': -1.5,
                'scorer': {'type': 'traits', 'prefer': ['A'], 'avoid': []},
                'match': {'member_of': ['agg'], 'min_groups': 2}}
    one = model.Weigher.from_document('w', document, generation=3)
    assert one.as_document() == dict(document, name='w', generation=3)
    assert one == model.Weigher.from_document('w', document, generation=3)
    assert hash(one) == hash(model.Weigher.from_document('w', document, 3))
    assert one != model.Weigher.from_document(
        'w', dict(document, scorer={'type': 'traits', 'prefer': ['B']}), 3)


def test_metric_lower_is_better_by_default_and_numa_values_average():
    cpu = {'type': 'metric', 'metric': 'cpu'}
    signals = {'cpu': {'busy': 90.0, 'half': 50.0, 'idle-numa0': 10.0}}
    assert scorers.score(cpu, TREES['busy'], signals) == -90.0
    # No value for the root: its providers' values count.
    assert scorers.score(cpu, TREES['idle'], signals) == -10.0
    assert scorers.score(dict(cpu, higher_is_better=True), TREES['half'],
                         signals) == 50.0
    # No fresh values of the metric at all: nothing to score.
    assert scorers.score(cpu, TREES['busy'], {}) is None
    coolest = weigher('coolest', cpu)
    assert ranking.Ranking([coolest], TREES, signals).order(
        PLACEMENT_ORDER) == ['idle', 'half', 'busy']
    # Stale (absent) values: Placement's order.
    assert ranking.Ranking([coolest], TREES, {}).order(PLACEMENT_ORDER) == (
        PLACEMENT_ORDER)


def test_an_updated_ranking_equals_one_made_anew():
    spread = weigher('spread-ram', {'type': 'usage',
                                    'resource_class': 'MEMORY_MB'})
    ssd = weigher('ssd', {'type': 'traits', 'prefer': ['STORAGE_DISK_SSD']})
    before = ranking.Ranking([spread, ssd], TREES)
    # busy empties out, idle goes away, a new host appears.
    after = dict(TREES)
    after['busy'] = [record('busy', MEMORY_MB=dict(total=1000, used=0))]
    del after['idle']
    after['new'] = [record('new', traits={'STORAGE_DISK_SSD'},
                           MEMORY_MB=dict(total=1000, used=999))]
    updated = before.updated(after, {}, {'busy', 'idle', 'new'})
    fresh = ranking.Ranking([spread, ssd], after)
    assert updated.scores == fresh.scores
    assert updated.raw == fresh.raw
    assert updated.order(['busy', 'half', 'new']) == fresh.order(
        ['busy', 'half', 'new'])
    # The earlier ranking is left as it was.
    assert 'idle' in before.raw['spread-ram']


@pytest.mark.parametrize('seed', range(8))
def test_a_chain_of_updates_stays_equal_to_rankings_made_anew(seed):
    # A scheduling loop: one host at a time takes or gives back memory
    # and CPU (its score moves inside the others' range, to an extreme,
    # or ties), now and then a host goes or comes; after every step the
    # updated ranking (patched when it can be) is the one made anew.
    rng = random.Random(seed)
    weighers = [weigher('spread-ram', {'type': 'usage',
                                       'resource_class': 'MEMORY_MB'}),
                weigher('pack-cpu', {'type': 'usage',
                                     'resource_class': 'VCPU',
                                     'mode': 'pack'}, weight=0.5),
                weigher('ssd', {'type': 'traits',
                                'prefer': ['STORAGE_DISK_SSD']})]
    if seed % 2:
        weighers = weighers[:1]
    if seed % 4 < 2:
        # Hosts past 80 % of their memory are never offered, past 6 of
        # 8 CPUs only when no other is: the exclusions follow too.
        weighers.append(weigher('memory-cap', {
            'type': 'usage', 'resource_class': 'MEMORY_MB',
            'threshold': {'max': 0.8}}, weight=0))
        weighers.append(weigher('cpu-cap', {
            'type': 'usage', 'resource_class': 'VCPU', 'mode': 'pack',
            'threshold': {'max': 0.75, 'mode': 'soft'}}, weight=0))

    def host(name):
        traits = {'STORAGE_DISK_SSD'} if rng.random() < 0.3 else ()
        return [record(name, traits=traits,
                       MEMORY_MB=dict(total=100, used=rng.randrange(101)),
                       VCPU=dict(total=8, used=rng.randrange(9)))]

    trees = {'h%02d' % n: host('h%02d' % n) for n in range(40)}
    base = sorted(trees)
    ranked = ranking.Ranking(weighers, trees)
    ranked.best_first(base)
    patched = 0
    for _step in range(60):
        trees = dict(trees)
        changed = set(rng.sample(sorted(trees), rng.choice((1, 1, 1, 2))))
        if rng.random() < 0.05:
            gone = changed.pop()
            del trees[gone]
            changed.add(gone)
            base = sorted(trees)
        for name in changed & set(trees):
            trees[name] = host(name)
        updated = ranked.updated(trees, {}, frozenset(changed))
        patched += updated._best_first is not None
        fresh = ranking.Ranking(weighers, trees)
        assert updated.raw == fresh.raw
        assert updated.parts == fresh.parts
        assert updated.scores == fresh.scores
        assert updated.excluded == fresh.excluded
        assert updated.avoided == fresh.avoided
        assert updated.best_first(base) == fresh.order(base)
        assert updated.order(base[::-1]) == fresh.order(base[::-1])
        ranked = updated
    # Most steps took the patched path (the test would not test it else).
    assert patched > 30


def test_new_metric_values_rescore_only_the_weighers_that_read_them():
    spread = weigher('spread-ram', {'type': 'usage',
                                    'resource_class': 'MEMORY_MB'})
    coolest = weigher('coolest', {'type': 'metric', 'metric': 'cpu'})
    before = ranking.Ranking([spread, coolest], TREES,
                             {'cpu': {'busy': 90.0, 'half': 50.0}})
    signals = {'cpu': {'busy': 5.0, 'half': 50.0, 'idle': 70.0}}
    rescored = before.with_signals(TREES, signals)
    fresh = ranking.Ranking([spread, coolest], TREES, signals)
    assert rescored.raw == fresh.raw
    assert rescored.scores == fresh.scores
    # The usage scores were not computed again: the same mapping.
    assert rescored.raw['spread-ram'] is before.raw['spread-ram']
    assert rescored.raw['coolest'] != before.raw['coolest']


def test_best_first_filters_one_order_of_every_root():
    spread = weigher('spread-ram', {'type': 'usage',
                                    'resource_class': 'MEMORY_MB'})
    ssd = weigher('ssd', {'type': 'traits', 'prefer': ['STORAGE_DISK_SSD']})
    ranked = ranking.Ranking([spread, ssd], TREES)
    best = ranked.best_first(PLACEMENT_ORDER)
    assert best == ranked.order(PLACEMENT_ORDER) == ['half', 'idle', 'busy']
    # Made once per base order.
    assert ranked.best_first(PLACEMENT_ORDER) is best
    # Ties keep the base order.
    tied = ranking.Ranking([weigher('t', {'type': 'traits',
                                          'prefer': ['CUSTOM_NONE']})],
                           TREES)
    assert tied.best_first(PLACEMENT_ORDER) == PLACEMENT_ORDER


def test_spread_shuffles_only_the_best_subset():
    ordered = ['a', 'b', 'c', 'd', 'e']
    assert ranking.spread(ordered, 1, random.Random(1)) == ordered
    seen = set()
    for seed in range(50):
        spread = ranking.spread(ordered, 3, random.Random(seed))
        assert sorted(spread[:3]) == ['a', 'b', 'c']
        assert spread[3:] == ['d', 'e']
        seen.add(spread[0])
    assert seen == {'a', 'b', 'c'}
    assert ranking.spread(['a'], 3, random.Random(1)) == ['a']


def test_option_key_orders_providers_of_a_slot_by_usage():
    spread = weigher('spread-ram', {'type': 'usage',
                                    'resource_class': 'MEMORY_MB'})
    pack_cpu = weigher('pack-cpu', {'type': 'usage', 'resource_class': 'PCPU',
                                    'mode': 'pack'}, weight=0.5)
    full, empty = TREES['busy'][0], TREES['idle'][1]
    key_for = ranking.option_key([spread, pack_cpu])
    key = key_for((('MEMORY_MB', 10),))
    assert sorted([full, empty], key=key) == [empty, full]
    # A slot that asks for no weighed class: no key, Placement's order.
    assert key_for((('VGPU', 1),)) is None
    traits = weigher('t', {'type': 'traits', 'prefer': ['X']})
    assert ranking.option_key([traits]) is None


def test_cypher_scorer_reads_what_the_collector_stored_for_its_query():
    query = 'MATCH (rp:ResourceProvider) RETURN rp.uuid AS uuid, 1 AS score'
    spec = {'type': 'cypher', 'query': query}
    signals = {model.cypher_signal(query): {'half': 3.0, 'busy': 1.0}}
    assert scorers.score(spec, TREES['half'], signals) == 3.0
    assert scorers.score(dict(spec, higher_is_better=False), TREES['half'],
                         signals) == -3.0
    assert scorers.score(spec, TREES['idle'], signals) is None
    # Another query text, another result set.
    assert scorers.score(dict(spec, query=query + ' LIMIT 1'),
                         TREES['half'], signals) is None


def test_metric_values_of_numa_nodes_order_providers_within_a_host():
    free = weigher('numa-free', {'type': 'metric', 'metric': 'numa_free',
                                 'higher_is_better': True})
    numa0, numa1 = (record('idle-numa0', parent='idle'),
                    record('idle-numa1', parent='idle'))
    trees = {'idle': [TREES['idle'][0], numa0, numa1]}
    signals = {'numa_free': {'idle-numa0': 100.0, 'idle-numa1': 900.0,
                             # a root's value says nothing of its children
                             'idle': 5.0}}
    ranked = ranking.Ranking([free], trees, signals)
    assert ranked.provider_scores() == {'idle-numa1': 1.0}
    key = ranking.option_key([free], ranked.provider_scores())(
        (('VGPU', 1),))
    assert sorted([numa0, numa1], key=key) == [numa1, numa0]
    # No usage weigher and no provider values: Placement's order.
    assert ranking.option_key([free], {}) is None


def test_a_host_without_a_value_ranks_as_its_weighers_policy_says():
    cpu = {'type': 'metric', 'metric': 'cpu'}
    # idle has no value at all (no series, an exporter down).
    signals = {'cpu': {'busy': 95.0, 'half': 50.0}}

    def order(**options):
        ranked = ranking.Ranking([weigher('coolest', dict(cpu, **options))],
                                 TREES, signals)
        return ranked.order(PLACEMENT_ORDER), ranked

    # Default: after every host with a value, even the one at 95 %.
    assert order()[0] == ['half', 'busy', 'idle']
    assert order(missing='worst')[0] == ['half', 'busy', 'idle']
    assert order(missing='neutral')[0] == ['half', 'idle', 'busy']
    # best: with the best (ties keep Placement's order).
    assert order(missing='best')[0] == ['half', 'idle', 'busy']
    found, ranked = order(missing='exclude')
    assert ranked.excluded == {'idle': [('coolest', 'no value')]}
    assert ranked.avoided == {}
    # No host has a value (an outage past the staleness limit): no policy
    # applies, nothing is excluded, Placement's order.
    for policy in model.MISSING:
        blind = ranking.Ranking([weigher('coolest', dict(
            cpu, missing=policy))], TREES, {})
        assert not blind.excluded and not blind.scores
        assert blind.order(PLACEMENT_ORDER) == PLACEMENT_ORDER
    # Scorers that always have a value have no policy.
    assert model.missing_policy({'type': 'usage'}) is None
    assert model.missing_policy(cpu) == 'worst'


def test_rank_normalisation_is_not_flattened_by_an_outlier():
    cpu = {'type': 'metric', 'metric': 'cpu'}
    signals = {'cpu': {'busy': 1e308, 'half': 50.1, 'idle-numa0': 50.0}}
    minmax = ranking.Ranking([weigher('coolest', cpu)], TREES, signals)
    # One host at 1e308 and the two others are all but equal.
    assert minmax.parts['coolest']['half'] == pytest.approx(1.0)
    assert minmax.parts['coolest']['idle'] == pytest.approx(1.0)
    ranked = ranking.Ranking(
        [weigher('coolest', dict(cpu, normalize='rank'))], TREES, signals)
    assert ranked.parts['coolest'] == {'idle': 1.0, 'half': 0.5}
    assert ranked.order(PLACEMENT_ORDER) == ['idle', 'half', 'busy']
    # Ties share the rank halfway.
    assert ranking.normalize({'a': 1, 'b': 1, 'c': 2, 'd': None},
                             model.RANK) == {'a': 0.25, 'b': 0.25, 'c': 1.0}


def test_thresholds_exclude_hard_or_soft_by_the_measured_value():
    # busy uses 90 % of its memory, half 50 %, idle 0 %.
    memory_cap = {'type': 'usage', 'resource_class': 'MEMORY_MB',
                  'threshold': {'max': 0.8}}
    ranked = ranking.Ranking([weigher('memory-cap', memory_cap, weight=0)],
                             TREES)
    assert ranked.excluded == {'busy': [('memory-cap', '0.9 above 0.8')]}
    soft = dict(memory_cap, threshold={'max': 0.4, 'mode': 'soft'})
    ranked = ranking.Ranking([weigher('memory-cap', soft, weight=0)], TREES)
    assert ranked.excluded == {}
    assert sorted(ranked.avoided) == ['busy', 'half']
    # A metric's own value, whichever way it is better.
    cpu = {'type': 'metric', 'metric': 'cpu', 'threshold': {'min': 20}}
    ranked = ranking.Ranking([weigher('cpu-floor', cpu)], TREES, {
        'cpu': {'busy': 90.0, 'half': 10.0}})
    assert ranked.excluded == {'half': [('cpu-floor', '10 below 20')]}
    # No threshold: no exclusion.
    assert not ranking.Ranking([weigher('m', dict(cpu, threshold=None))],
                               TREES, {'cpu': {'half': 1.0}}).excluded


def test_placements_since_the_sample_count_as_load():
    # Every host at 50 % CPU when sampled; 'half' (5 VCPUs used then) has
    # taken 2 more since: each counts 10 points, until the next sample.
    cpu = {'type': 'metric', 'metric': 'cpu',
           'placed_load': {'VCPU': 10.0}}
    then = {root: scorers.tree_usage(tree, {'VCPU'})
            for root, tree in TREES.items()}
    assert then['half'] == {'VCPU': 5}
    now = dict(TREES, half=[record('half', VCPU=dict(total=10, used=7))])
    signals = {'cpu': {'busy': 50.0, 'half': 50.0, 'idle': 50.0},
               model.USAGE_AT_SAMPLE: then}
    assert scorers.score(cpu, now['half'], signals) == -70.0
    assert scorers.score(cpu, now['busy'], signals) == -50.0
    compensated = ranking.Ranking([weigher('coolest', cpu)], now, signals)
    assert compensated.order(PLACEMENT_ORDER) == ['busy', 'idle', 'half']
    # Without the factor, or before any sample: the metric alone.
    plain = ranking.Ranking([weigher('coolest', dict(
        cpu, placed_load=None))], now, signals)
    assert plain.order(PLACEMENT_ORDER) == PLACEMENT_ORDER
    assert scorers.placed_load({'VCPU': 10.0}, now['half'], None) == 0.0
    # Freed units count nothing.
    freed = dict(TREES, half=[record('half', VCPU=dict(total=10, used=1))])
    assert scorers.score(cpu, freed['half'], signals) == -50.0
    # An updated ranking (a claim on one host) rescoring only it equals
    # one made anew.
    claimed = dict(now, busy=[record('busy', VCPU=dict(total=10, used=4))])
    updated = compensated.updated(claimed, signals, {'busy'})
    fresh = ranking.Ranking([weigher('coolest', cpu)], claimed, signals)
    assert updated.raw == fresh.raw and updated.scores == fresh.scores
    assert updated.order(PLACEMENT_ORDER) == ['idle', 'half', 'busy']
