"""Policy rules for /allocations and provider allocations."""
from tachyon_placement.policies import base

RP_ALLOC_LIST = 'placement:resource_providers:allocations:list'

ALLOC_PREFIX = 'placement:allocations:%s'
ALLOC_LIST = ALLOC_PREFIX % 'list'
ALLOC_MANAGE = ALLOC_PREFIX % 'manage'
ALLOC_UPDATE = ALLOC_PREFIX % 'update'
ALLOC_DELETE = ALLOC_PREFIX % 'delete'

_CONSUMER = '/allocations/{consumer_uuid}'

rules = base.table((
    (ALLOC_MANAGE, base.ADMIN_OR_SERVICE, 'Manage allocations.',
     ['POST /allocations']),
    (ALLOC_LIST, base.ADMIN_OR_SERVICE, 'List allocations.',
     ['GET ' + _CONSUMER]),
    (ALLOC_UPDATE, base.ADMIN_OR_SERVICE, 'Update allocations.',
     ['PUT ' + _CONSUMER]),
    (ALLOC_DELETE, base.ADMIN_OR_SERVICE, 'Delete allocations.',
     ['DELETE ' + _CONSUMER]),
    (RP_ALLOC_LIST, base.ADMIN_OR_SERVICE,
     'List resource provider allocations.',
     ['GET /resource_providers/{uuid}/allocations']),
))


def list_rules():
    return list(rules)
