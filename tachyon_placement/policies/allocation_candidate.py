"""Policy rules for /allocation_candidates."""
from tachyon_placement.policies import base

LIST = 'placement:allocation_candidates:list'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List allocation candidates.',
     ['GET /allocation_candidates']),
))


def list_rules():
    return list(rules)
