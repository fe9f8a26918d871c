"""Policy rule for Tachyon's drift report (admin or service)."""
from tachyon_placement.policies import base

SHOW = 'tachyon:drift:show'

rules = base.table((
    (SHOW, base.ADMIN_OR_SERVICE,
     'List the consumers whose placement breaks a stored weigher '
     'threshold or PCI-NUMA affinity rule, and their hosts; the drift '
     'recorded since a cursor.',
     ['GET /tachyon/drift', 'GET /tachyon/drift/changes']),
))


def list_rules():
    return list(rules)
