"""Policy rules for Tachyon's /tachyon/pci_affinity (admin or service)."""
from tachyon_placement.policies import base

PREFIX = 'tachyon:pci_affinity:%s'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List PCI-NUMA affinity rules.',
     ['GET /tachyon/pci_affinity']),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show a PCI-NUMA affinity rule.',
     ['GET /tachyon/pci_affinity/{name}']),
    (UPDATE, base.ADMIN_OR_SERVICE,
     'Create or replace a PCI-NUMA affinity rule.',
     ['PUT /tachyon/pci_affinity/{name}']),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete a PCI-NUMA affinity rule.',
     ['DELETE /tachyon/pci_affinity/{name}']),
))


def list_rules():
    return list(rules)
