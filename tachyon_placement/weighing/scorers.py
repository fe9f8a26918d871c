"""Built-in scorers: the raw score of one candidate tree.

A scorer looks at the providers of one tree (records with ``uuid``,
``traits``, ``aggregates``, ``inventories`` {class: Inventory with
``used``} and ``parent_uuid``) and the fresh metric values (``signals``:
{metric: {provider uuid: value}}) and returns a number, higher is better,
or None when the tree has nothing to score (it then ranks with the
lowest, see ranking).
"""
from tachyon_placement.weighing import model


def usage(spec, tree, signals):
    """Share of ``resource_class`` in use over the tree's inventories of
    it: ``spread`` prefers the emptiest trees, ``pack`` the fullest."""
    used = capacity = 0.0
    for record in tree:
        inventory = record.inventories.get(spec['resource_class'])
        if inventory is not None:
            used += inventory.used
            capacity += inventory.capacity
    if capacity <= 0:
        return None
    ratio = used / capacity
    return ratio if spec.get('mode', model.SPREAD) == model.PACK else -ratio


def _preference(prefer, avoid, present):
    return len(present.intersection(prefer)) - len(present.intersection(avoid))


def traits(spec, tree, signals):
    """Preferred traits the tree has (on any provider) less avoided ones."""
    present = set()
    for record in tree:
        present.update(record.traits)
    return _preference(spec.get('prefer', ()), spec.get('avoid', ()), present)


def aggregates(spec, tree, signals):
    """Preferred aggregates the root is a member of less avoided ones."""
    return _preference(spec.get('prefer', ()), spec.get('avoid', ()),
                       set(_root(tree).aggregates))


def metric(spec, tree, signals):
    """The metric's value for the tree: its root's, else the mean of its
    providers' (a metric mapped to NUMA nodes or devices), plus what was
    placed on it since the value came (``placed_load``); ``higher`` is
    better or, by default, lower (a utilisation).  No fresh value: None."""
    higher = spec.get('higher_is_better', False)
    value = _tree_value(signals.get(spec['metric']), tree, True)
    if value is None:
        return None
    placed = spec.get('placed_load')
    if placed:
        value += placed_load(placed, tree,
                             signals.get(model.USAGE_AT_SAMPLE))
    return value if higher else -value


def placed_load(factors, tree, usage_at_sample):
    """factor x the units of each class of ``factors`` allocated on the
    tree since ``usage_at_sample`` ({root: {class: used}}; a tree not in
    it, or none: nothing counted).  Freed units count nothing: the sample
    may not have seen them used."""
    then = (usage_at_sample or {}).get(_root(tree).uuid)
    if then is None:
        return 0.0
    now = tree_usage(tree, factors)
    return sum(factor * max(0, now.get(rc, 0) - then.get(rc, 0))
               for rc, factor in factors.items())


def tree_usage(tree, classes):
    """{class: units in use on the tree's providers} of ``classes``."""
    used = {}
    for record in tree:
        for rc in classes:
            inventory = record.inventories.get(rc)
            if inventory is not None:
                used[rc] = used.get(rc, 0) + inventory.used
    return used


def cypher(spec, tree, signals):
    """What the operator's query scored the tree (its root, else the mean
    of its providers), as the collector last ran it; higher is better
    unless ``higher_is_better`` is false."""
    return _tree_value(signals.get(model.cypher_signal(spec['query'])),
                       tree, spec.get('higher_is_better', True))


def _tree_value(values, tree, higher_is_better):
    if not values:
        return None
    value = values.get(_root(tree).uuid)
    if value is None:
        found = [values[record.uuid] for record in tree
                 if record.uuid in values]
        if not found:
            return None
        value = sum(found) / len(found)
    return value if higher_is_better else -value


def _root(tree):
    return next(record for record in tree if record.parent_uuid is None)


SCORERS = {
    model.USAGE: usage,
    model.TRAITS: traits,
    model.AGGREGATES: aggregates,
    model.METRIC: metric,
    model.CYPHER: cypher,
}


def reads_signals(spec):
    """Whether the scorer's scores depend on the metric values."""
    return spec['type'] in (model.METRIC, model.CYPHER)


def score(spec, tree, signals):
    return SCORERS[spec['type']](spec, tree, signals)


def higher_is_better(spec):
    """Whether a higher measured value scores higher: a score is the
    measured value (a usage share, a metric's value, a Cypher score, a
    count of preferences), negated when lower is better."""
    kind = spec['type']
    if kind == model.USAGE:
        return spec.get('mode', model.SPREAD) == model.PACK
    if kind == model.METRIC:
        return spec.get('higher_is_better', False)
    if kind == model.CYPHER:
        return spec.get('higher_is_better', True)
    return True


def measured(spec, raw):
    """The measured value behind the score ``raw`` (None stays None)."""
    if raw is None or higher_is_better(spec):
        return raw
    return -raw
