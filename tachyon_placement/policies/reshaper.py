"""Policy rules for /reshaper (service only under the new defaults)."""
from tachyon_placement.policies import base

PREFIX = 'placement:reshaper:%s'
RESHAPE = PREFIX % 'reshape'

rules = base.table((
    (RESHAPE, base.SERVICE, 'Reshape Inventory and Allocations.',
     ['POST /reshaper']),
))


def list_rules():
    return list(rules)
