"""Weighers (see tachyon_placement/weighing), stored as definitions
(graph/definitions.py) under the label Weigher; the Meta node's
``weighers`` stamp tells each process when to reload them."""
from tachyon_placement.graph import definitions

WEIGHERS = definitions.Kind('Weigher', 'weigher', 'weighers')


def weigher_store(engine, make):
    """Store.weighers: the weighers, as ``make`` (name, definition,
    generation) makes them (the weighing room's Weigher)."""
    return definitions.DefinitionStore(engine, WEIGHERS, make)
