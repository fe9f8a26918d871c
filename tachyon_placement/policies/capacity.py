"""Policy rule for Tachyon's capacity counts (admin or service)."""
from tachyon_placement.policies import base

SHOW = 'tachyon:capacity:show'

rules = base.table((
    (SHOW, base.ADMIN_OR_SERVICE,
     'Count how many more instances of a request fit: per host, in total '
     'and per aggregate.',
     ['GET /tachyon/capacity']),
))


def list_rules():
    return list(rules)
