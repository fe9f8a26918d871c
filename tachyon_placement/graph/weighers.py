"""Weighers (see tachyon_placement/weighing), stored as definitions
(graph/definitions.py) under the label Weigher; the Meta node's
``weighers`` stamp tells each process when to reload them."""
from tachyon_placement.graph import definitions
from tachyon_placement.weighing import model

WEIGHERS = definitions.Kind('Weigher', 'weigher', 'weighers')


def _weigher(name, definition, generation):
    return model.Weigher.from_document(name, definition,
                                       generation=generation)


class WeigherStore:
    """Mixin of Store (with DefinitionStore): weighers."""

    def list_weighers(self):
        return [_weigher(*row) for row in self.list_definitions(WEIGHERS)]

    def get_weigher(self, name):
        return _weigher(*self.get_definition(WEIGHERS, name))

    def put_weigher(self, weigher, generation):
        """Create (``generation`` None) or replace (at ``generation``) a
        weigher; the stored one (ConcurrentUpdate otherwise)."""
        return _weigher(*self.put_definition(
            WEIGHERS, weigher.name, weigher.stored(), generation))

    def delete_weigher(self, name):
        self.delete_definition(WEIGHERS, name)
