"""Built-in scorers: the raw score of one candidate tree.

A scorer looks at the providers of one tree (records with ``traits``,
``aggregates``, ``inventories`` {class: Inventory with ``used``} and
``parent_uuid``) and returns a number, higher is better, or None when the
tree has nothing to score (it then ranks with the lowest, see ranking).
"""
from tachyon_placement.weighing import model


def usage(spec, tree):
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


def traits(spec, tree):
    """Preferred traits the tree has (on any provider) less avoided ones."""
    present = set()
    for record in tree:
        present.update(record.traits)
    return _preference(spec.get('prefer', ()), spec.get('avoid', ()), present)


def aggregates(spec, tree):
    """Preferred aggregates the root is a member of less avoided ones."""
    root = next(record for record in tree if record.parent_uuid is None)
    return _preference(spec.get('prefer', ()), spec.get('avoid', ()),
                       set(root.aggregates))


SCORERS = {
    model.USAGE: usage,
    model.TRAITS: traits,
    model.AGGREGATES: aggregates,
}


def score(spec, tree):
    return SCORERS[spec['type']](spec, tree)
