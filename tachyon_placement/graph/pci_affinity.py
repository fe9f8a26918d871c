"""PCI-NUMA affinity rules (see tachyon_placement/topology/affinity.py),
stored as definitions (graph/definitions.py) under the label
PciAffinityRule; the Meta node's ``pci_affinity`` stamp tells each process
when to reload them."""
from tachyon_placement.graph import definitions

RULES = definitions.Kind('PciAffinityRule', 'pci_affinity_rule',
                         'pci_affinity')


def rule_store(engine, make):
    """Store.pci_affinity: the PCI-NUMA affinity rules, as ``make`` (name,
    definition, generation) makes them (the topology room's Rule)."""
    return definitions.DefinitionStore(engine, RULES, make)
