"""What the graph gets for each row of a Placement database (pure).

The kinds, in the order they are written (each needs the ones before:
inventories their providers and classes, allocations their consumers);
``provider_parents`` reads the providers a second time, once all exist.
"""
import os_resource_classes
import os_traits

from tachyon_placement.graph import schema
from tachyon_placement.importing import source as placement_source

CUSTOM = 'CUSTOM_'

# (kind written, kind of source rows it is made from)
KINDS = (
    ('resource_classes', 'resource_classes'),
    ('traits', 'traits'),
    ('providers', 'providers'),
    ('provider_parents', 'providers'),
    ('inventories', 'inventories'),
    ('provider_traits', 'provider_traits'),
    ('provider_aggregates', 'provider_aggregates'),
    ('consumers', 'consumers'),
    ('allocations', 'allocations'),
)

_STANDARD_CLASSES = frozenset(os_resource_classes.STANDARDS)
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
ms = placement_source.millis


def resource_class(row):
    """Custom classes keep Placement's id as their listing ordinal (both
    number them from 10000 in creation order); a standard class the graph
    knows is already there (db sync), one it does not (a newer
    os-resource-classes on the Placement side) comes as standard."""
    if row['name'] in _STANDARD_CLASSES:
        return None
    return {'name': row['name'], 'ordinal': row['id'],
            'standard': not row['name'].startswith(CUSTOM),
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


def trait(row):
    if row['name'] in _STANDARD_TRAITS:
        return None
    return {'name': row['name'],
            'standard': not row['name'].startswith(CUSTOM),
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


def provider(row):
    """``seq`` (creation order, Placement's listing order) is its id."""
    return {'uuid': row['uuid'], 'name': row['name'],
            'name_key': schema.name_key(row['name']),
            'generation': row['generation'] or 0,
            'parent_uuid': row['parent_uuid'],
            'root_uuid': row['root_uuid'] or row['uuid'],
            'seq': row['id'],
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


def provider_parent(row):
    if row['parent_uuid'] is None:
        return None
    return {'uuid': row['uuid'], 'parent_uuid': row['parent_uuid']}


def inventory(row):
    return {'provider_uuid': row['provider_uuid'],
            'resource_class': row['resource_class'],
            'total': row['total'], 'reserved': row['reserved'],
            'min_unit': row['min_unit'], 'max_unit': row['max_unit'],
            'step_size': row['step_size'],
            'allocation_ratio': float(row['allocation_ratio']),
            'used': int(row['used']),
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


def provider_trait(row):
    return {'provider_uuid': row['provider_uuid'], 'trait': row['trait']}


def provider_aggregate(row):
    return {'provider_uuid': row['provider_uuid'],
            'aggregate_uuid': row['aggregate_uuid'],
            'created_at': ms(row['created_at'])}


def consumer(row):
    return {'uuid': row['uuid'], 'generation': row['generation'],
            'project_id': row['project_id'], 'user_id': row['user_id'],
            'consumer_type': row['consumer_type'],
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


def allocation(row):
    return {'consumer_uuid': row['consumer_uuid'],
            'provider_uuid': row['provider_uuid'],
            'resource_class': row['resource_class'],
            'used': row['used'],
            # Placement lists a consumer's allocations as inserted: by id.
            'position': row['id'],
            'created_at': ms(row['created_at']),
            'updated_at': ms(row['updated_at'])}


CONVERT = {
    'resource_classes': resource_class,
    'traits': trait,
    'providers': provider,
    'provider_parents': provider_parent,
    'inventories': inventory,
    'provider_traits': provider_trait,
    'provider_aggregates': provider_aggregate,
    'consumers': consumer,
    'allocations': allocation,
}


def convert(kind, rows):
    """The graph's rows of one kind from a batch of source rows (rows the
    graph already has, or needs not, left out)."""
    made = (CONVERT[kind](row) for row in rows)
    return [row for row in made if row is not None]


def compare(source_counts, graph_counts, source_usages, graph_usages):
    """Differences between a source and the graph it was imported into:
    a list of sentences, empty when they agree.  ``source_usages``
    {(provider, class): used}; ``graph_usages`` {(provider, class): (used
    kept on the inventory or None without one, sum of the allocations)}."""
    problems = []
    for kind, found in sorted(graph_counts.items()):
        if source_counts.get(kind) != found:
            problems.append('%s: %s in the source, %s in the graph' % (
                kind, source_counts.get(kind), found))
    for key in sorted(set(source_usages) | set(graph_usages)):
        used = source_usages.get(key, 0)
        kept, allocated = graph_usages.get(key, (None, 0))
        if used != allocated or (kept is not None and kept != used):
            problems.append('usage of %s on %s: %s in the source, %s '
                            'allocated (%s kept on the inventory) in the '
                            'graph' % (key[1], key[0], used, allocated, kept))
    return problems
