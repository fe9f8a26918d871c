"""GET /usages arithmetic over allocation rows of one project (and user).

Rows are dicts with consumer, consumer_type (None when the consumer has
none), resource_class and used.
"""
import collections


def by_class(rows):
    """Before 1.38: {resource_class: total used}."""
    totals = collections.Counter()
    for row in rows:
        totals[row['resource_class']] += row['used']
    return dict(totals)


def by_consumer_type(rows, consumer_type=None):
    """1.38: {consumer_type: {resource_class: used, 'consumer_count': n}}.

    ``all`` folds every consumer into one group; ``unknown`` keeps the
    consumers that have no type; another name keeps that type only; None
    groups by type (untyped consumers under None, which the API renders
    as "unknown").
    """
    if consumer_type in ('all', 'unknown'):
        if consumer_type == 'unknown':
            rows = [row for row in rows if row['consumer_type'] is None]
        groups = {consumer_type: rows} if rows else {}
    else:
        groups = collections.defaultdict(list)
        for row in rows:
            if consumer_type is None or row['consumer_type'] == consumer_type:
                groups[row['consumer_type']].append(row)
    result = {}
    for name, group in groups.items():
        usage = by_class(group)
        usage['consumer_count'] = len({row['consumer'] for row in group})
        result[name] = usage
    return result
