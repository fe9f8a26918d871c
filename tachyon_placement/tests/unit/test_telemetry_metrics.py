"""How a metric's series map to providers."""
from tachyon_placement.telemetry import metrics

ROOTS = {'host-a': 'uuid-a', 'host-b.example.org': 'uuid-b'}
PROVIDERS = {'uuid-a': None, 'uuid-b': None, 'uuid-numa': None}


def series(value, **labels):
    return {'metric': labels, 'value': [1700000000.0, value]}


def test_root_names_with_a_rewrite():
    cpu = metrics.Metric.from_document('cpu', {
        'query': 'x', 'rewrite': {'pattern': ':[0-9]+$'}})
    found = cpu.values([series('12.5', instance='host-a:9100'),
                        series('3', instance='host-b.example.org:9100'),
                        series('1', instance='unknown:9100'),
                        series('1', job='no-instance-label')],
                       ROOTS, PROVIDERS)
    assert found == {'uuid-a': 12.5, 'uuid-b': 3.0}


def test_provider_uuid_label_and_bad_numbers_skipped():
    numa = metrics.Metric.from_document('numa_free', {
        'query': 'x', 'label': 'provider', 'target': 'provider'})
    found = numa.values([series('5', provider='uuid-numa'),
                         series('NaN', provider='uuid-a'),
                         series('+Inf', provider='uuid-b'),
                         series('7', provider='not-a-provider')],
                        ROOTS, PROVIDERS)
    assert found == {'uuid-numa': 5.0}


def test_documents_round_trip():
    document = {'query': 'up', 'label': 'fqdn', 'target': 'root',
                'rewrite': {'pattern': r'\..*$', 'replacement': ''}}
    metric = metrics.Metric.from_document('up', document, generation=2)
    assert metric.as_document() == dict(document, name='up', generation=2)
    assert metric.key_of({'fqdn': 'host-b.example.org'}) == 'host-b'


def test_numa_nodes_of_hosts_by_two_labels():
    # node_exporter's node_memory_numa_MemFree{instance, node}, in MiB.
    free = metrics.Metric.from_document('numa_node_free', {
        'query': 'node_memory_numa_MemFree / 1048576', 'target': 'numa',
        'rewrite': {'pattern': ':[0-9]+$'}})
    found = free.values([series('100', instance='host-a:9100', node='0'),
                         series('200', instance='host-a:9100', node='1'),
                         series('300', instance='host-b.example.org:9100',
                                node='0'),
                         series('1', instance='host-a:9100'),
                         series('1', instance='host-a:9100', node='x'),
                         series('1', instance='unknown:9100', node='0')],
                        ROOTS, PROVIDERS)
    assert found == {metrics.numa_key('uuid-a', 0): 100.0,
                     metrics.numa_key('uuid-a', 1): 200.0,
                     metrics.numa_key('uuid-b', 0): 300.0}
    assert free.as_document()['numa_label'] == 'node'
    other = metrics.Metric.from_document('x', dict(
        free.stored(), numa_label='numa'))
    assert other.values([series('5', instance='host-a', numa='3')], ROOTS,
                        PROVIDERS) == {metrics.numa_key('uuid-a', 3): 5.0}


def test_replacements_name_groups_as_prometheus_does():
    """The docs say "as Prometheus' own": ``h$1`` was stored and matched
    nothing (only ``h\\1`` worked), ``$2`` and ``${nope}`` were stored."""
    import pytest
    from tachyon_placement.telemetry import promql
    roots = {'hcn1': 'uuid-1', 'cn2-x': 'uuid-2', 'cn3': 'uuid-3',
             'hcn4': 'uuid-4'}
    providers = dict.fromkeys(roots.values())
    for replacement, instance, provider in (
            ('h$1', 'cn1:9100', 'uuid-1'), ('${1}-x', 'cn2:9100', 'uuid-2'),
            ('$host', 'cn3:9100', 'uuid-3'), ('h\\1', 'cn4:9100', 'uuid-4')):
        pattern = '(?P<host>[a-z0-9]+):9100'
        promql.check_rewrite(pattern, replacement)
        metric = metrics.Metric.from_document('cpu', {
            'query': 'x', 'rewrite': {'pattern': pattern,
                                      'replacement': replacement}})
        assert metric.values([series('1', instance=instance)], roots,
                             providers) == {provider: 1.0}, replacement
    assert promql.python_replacement('$$1 costs $') == '$1 costs $'
    for replacement in ('$2', '${nope}', '\\2', '$1x', '\\g<nope>'):
        with pytest.raises(promql.Invalid, match='refers to group'):
            promql.check_rewrite('([a-z]+):9100', replacement)
