"""Weighers (see tachyon_placement/weighing), stored as definitions
(graph/definitions.py) under the label Weigher; the Meta node's
``weighers`` stamp tells each process when to reload them."""
from tachyon_placement.graph import definitions
from tachyon_placement.weighing import model

WEIGHERS = definitions.Kind('Weigher', 'weigher', 'weighers')


def _weigher(name, definition, generation):
    return model.Weigher.from_document(name, definition,
                                       generation=generation)


def weigher_store(engine):
    """Store.weighers: the weighers, as weighing.model.Weigher."""
    return definitions.DefinitionStore(engine, WEIGHERS, _weigher)
