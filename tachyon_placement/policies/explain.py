"""Policy rule for Tachyon's candidate explanations (admin or service)."""
from tachyon_placement.policies import base

EXPLAIN = 'tachyon:allocation_candidates:explain'

rules = base.table((
    (EXPLAIN, base.ADMIN_OR_SERVICE,
     'Explain the order of allocation candidates: the score of each '
     'candidate host per weigher, with the metric values and their age.',
     ['GET /tachyon/explain/allocation_candidates']),
))


def list_rules():
    return list(rules)
