"""PCI-NUMA affinity rules (see tachyon_placement/topology/affinity.py),
stored as definitions (graph/definitions.py) under the label
PciAffinityRule; the Meta node's ``pci_affinity`` stamp tells each process
when to reload them."""
from tachyon_placement.graph import definitions
from tachyon_placement.topology import affinity

RULES = definitions.Kind('PciAffinityRule', 'pci_affinity_rule',
                         'pci_affinity')


def _rule(name, definition, generation):
    return affinity.Rule.from_document(name, definition,
                                       generation=generation)


class PciAffinityStore:
    """Mixin of Store (with DefinitionStore): PCI-NUMA affinity rules."""

    def list_pci_affinity_rules(self):
        return [_rule(*row) for row in self.list_definitions(RULES)]

    def get_pci_affinity_rule(self, name):
        return _rule(*self.get_definition(RULES, name))

    def put_pci_affinity_rule(self, rule, generation):
        return _rule(*self.put_definition(RULES, rule.name, rule.stored(),
                                          generation))

    def delete_pci_affinity_rule(self, name):
        self.delete_definition(RULES, name)
