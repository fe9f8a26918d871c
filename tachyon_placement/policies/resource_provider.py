"""Policy rules for /resource_providers."""
from tachyon_placement.policies import base

PREFIX = 'placement:resource_providers:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

_COLLECTION = '/resource_providers'
_ITEM = _COLLECTION + '/{uuid}'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List resource providers.',
     ['GET ' + _COLLECTION]),
    (CREATE, base.ADMIN_OR_SERVICE, 'Create resource provider.',
     ['POST ' + _COLLECTION]),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show resource provider.',
     ['GET ' + _ITEM]),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Update resource provider.',
     ['PUT ' + _ITEM]),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete resource provider.',
     ['DELETE ' + _ITEM]),
))


def list_rules():
    return list(rules)
