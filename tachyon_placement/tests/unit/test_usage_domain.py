from tachyon_placement.domain import usages


ROWS = [
    {'consumer': 'a', 'consumer_type': 'INSTANCE', 'resource_class': 'VCPU',
     'used': 2},
    {'consumer': 'a', 'consumer_type': 'INSTANCE',
     'resource_class': 'MEMORY_MB', 'used': 512},
    {'consumer': 'b', 'consumer_type': 'MIGRATION',
     'resource_class': 'VCPU', 'used': 1},
    {'consumer': 'c', 'consumer_type': None, 'resource_class': 'VCPU',
     'used': 4},
]


def test_by_class_sums_every_consumer():
    assert usages.by_class(ROWS) == {'VCPU': 7, 'MEMORY_MB': 512}


def test_by_consumer_type_groups_and_counts():
    assert usages.by_consumer_type(ROWS) == {
        'INSTANCE': {'VCPU': 2, 'MEMORY_MB': 512, 'consumer_count': 1},
        'MIGRATION': {'VCPU': 1, 'consumer_count': 1},
        None: {'VCPU': 4, 'consumer_count': 1},
    }


def test_all_unknown_and_named_filters():
    assert usages.by_consumer_type(ROWS, 'all') == {
        'all': {'VCPU': 7, 'MEMORY_MB': 512, 'consumer_count': 3}}
    assert usages.by_consumer_type(ROWS, 'unknown') == {
        'unknown': {'VCPU': 4, 'consumer_count': 1}}
    assert usages.by_consumer_type(ROWS, 'MIGRATION') == {
        'MIGRATION': {'VCPU': 1, 'consumer_count': 1}}
    assert usages.by_consumer_type([], 'all') == {}
