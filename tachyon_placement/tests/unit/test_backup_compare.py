"""backup/compare.py: two graphs' contents told apart by what they hold,
not by their node ids."""
import collections

from tachyon_placement.backup import compare


def _content(version, nodes, edges):
    ids, counted = {}, collections.Counter()
    for node_id, labels, properties in nodes:
        identity = compare._identity(labels, properties)
        ids[node_id] = identity
        counted[(identity, compare._text(properties))] += 1
    return compare.Content(version, counted, collections.Counter(
        (ids[start], kind, ids[end], compare._text(properties))
        for start, kind, end, properties in edges))


PROVIDER = {'uuid': 'rp-1', 'name': 'cn1', 'generation': 3}
CLASS = {'name': 'VCPU'}


def test_the_same_graph_under_other_ids_is_equal():
    first = _content(7, [('1', ['ResourceProvider'], PROVIDER),
                         ('2', ['ResourceClass'], CLASS)],
                     [('1', 'PROVIDES', '2', {'total': 8})])
    second = _content(7, [('a', ['ResourceClass'], CLASS),
                          ('b', ['ResourceProvider'], PROVIDER)],
                      [('b', 'PROVIDES', 'a', {'total': 8})])
    assert compare.differences(first, second) == []
    labels, relationships = compare.summary(first)
    assert labels == {'ResourceProvider': 1, 'ResourceClass': 1}
    assert relationships == 1


def test_what_differs_is_named():
    first = _content(7, [('1', ['ResourceProvider'], PROVIDER),
                         ('2', ['ResourceClass'], CLASS),
                         ('3', ['Tombstone'], {'uuid': 'x', 'stamp': 1})],
                     [('1', 'PROVIDES', '2', {'total': 8})])
    second = _content(8, [('1', ['ResourceProvider'],
                           dict(PROVIDER, generation=4)),
                          ('2', ['ResourceClass'], CLASS)],
                      [('1', 'PROVIDES', '2', {'total': 16})])
    found = compare.differences(first, second)
    assert found[0] == 'graph version: 7 != 8'
    assert any(line.startswith('ResourceProvider uuid="rp-1": ')
               and '"generation": 3' in line and '"generation": 4' in line
               for line in found), found
    # Nodes without a key (several tombstones may share a uuid) are
    # compared whole.
    assert any(line.startswith('Tombstone ') and
               line.endswith('only in the first') for line in found), found
    assert sum('relationship' in line for line in found) == 2
