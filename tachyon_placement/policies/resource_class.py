"""Policy rules for /resource_classes."""
from tachyon_placement.policies import base

PREFIX = 'placement:resource_classes:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

_COLLECTION = '/resource_classes'
_ITEM = _COLLECTION + '/{name}'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List resource classes.',
     ['GET ' + _COLLECTION]),
    (CREATE, base.ADMIN_OR_SERVICE, 'Create resource class.',
     ['POST ' + _COLLECTION]),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show resource class.',
     ['GET ' + _ITEM]),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Update resource class.',
     ['PUT ' + _ITEM]),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete resource class.',
     ['DELETE ' + _ITEM]),
))


def list_rules():
    return list(rules)
