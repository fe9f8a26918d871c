"""Policy rules for /resource_providers/{uuid}/inventories."""
from tachyon_placement.policies import base

PREFIX = 'placement:resource_providers:inventories:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

BASE_PATH = '/resource_providers/{uuid}/inventories'
_ITEM = BASE_PATH + '/{resource_class}'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List resource provider inventories.',
     ['GET ' + BASE_PATH]),
    (CREATE, base.ADMIN_OR_SERVICE, 'Create one resource provider inventory.',
     ['POST ' + BASE_PATH]),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show resource provider inventory.',
     ['GET ' + _ITEM]),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Update resource provider inventory.',
     ['PUT ' + BASE_PATH, 'PUT ' + _ITEM]),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete resource provider inventory.',
     ['DELETE ' + BASE_PATH, 'DELETE ' + _ITEM]),
))


def list_rules():
    return list(rules)
