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


def rule_store(engine):
    """Store.pci_affinity: the PCI-NUMA affinity rules, as
    topology.affinity.Rule."""
    return definitions.DefinitionStore(engine, RULES, _rule)
