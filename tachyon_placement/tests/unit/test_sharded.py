"""ShardedDict: a dict whose copies share what they do not change."""
import random

from tachyon_placement.domain import sharded


def test_copies_behave_as_dict_copies():
    rng = random.Random(3)
    original, mirror = sharded.ShardedDict(), {}
    for number in range(2000):
        original['k%d' % number] = mirror['k%d' % number] = number
    copies = [(original, mirror)]
    for _round in range(30):
        source, source_mirror = rng.choice(copies)
        twin, twin_mirror = source.copy(), dict(source_mirror)
        copies.append((twin, twin_mirror))
        # Writes into either side after the copy, as Snapshot.extend and
        # a later load would.
        for target, target_mirror in ((twin, twin_mirror),
                                      (source, source_mirror)):
            for _write in range(rng.randrange(20)):
                key = 'k%d' % rng.randrange(2500)
                action = rng.random()
                if action < 0.4:
                    target[key] = target_mirror[key] = rng.random()
                elif action < 0.6:
                    assert target.pop(key, None) == target_mirror.pop(key,
                                                                      None)
                elif action < 0.7:
                    if key in target_mirror:
                        del target[key], target_mirror[key]
                else:
                    assert (target.setdefault(key, [])
                            == target_mirror.setdefault(key, []))
        for mapping, expected in copies:
            assert dict(mapping) == expected
            assert len(mapping) == len(expected)
            assert all(mapping.get(key) == value and key in mapping
                       for key, value in expected.items())
            assert 'missing' not in mapping
            assert mapping.get('missing', 7) == 7


def test_a_copy_copies_only_the_shards_it_changes():
    original = sharded.ShardedDict()
    for number in range(1000):
        original[number] = number
    twin = original.copy()
    twin[5] = 'changed'
    del twin[6]
    shared = sum(a is b for a, b in zip(original._shards, twin._shards))
    assert shared >= sharded._SHARDS - 2
    assert original[5] == 5 and original[6] == 6
    assert twin[5] == 'changed' and 6 not in twin
    assert (len(original), len(twin)) == (1000, 999)
