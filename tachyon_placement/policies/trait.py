"""Policy rules for /traits and /resource_providers/{uuid}/traits."""
from tachyon_placement.policies import base

RP_TRAIT_PREFIX = 'placement:resource_providers:traits:%s'
RP_TRAIT_LIST = RP_TRAIT_PREFIX % 'list'
RP_TRAIT_UPDATE = RP_TRAIT_PREFIX % 'update'
RP_TRAIT_DELETE = RP_TRAIT_PREFIX % 'delete'

TRAITS_PREFIX = 'placement:traits:%s'
TRAITS_LIST = TRAITS_PREFIX % 'list'
TRAITS_SHOW = TRAITS_PREFIX % 'show'
TRAITS_UPDATE = TRAITS_PREFIX % 'update'
TRAITS_DELETE = TRAITS_PREFIX % 'delete'

_TRAIT = '/traits/{name}'
_RP_TRAITS = '/resource_providers/{uuid}/traits'

rules = base.table((
    (TRAITS_LIST, base.ADMIN_OR_SERVICE, 'List traits.', ['GET /traits']),
    (TRAITS_SHOW, base.ADMIN_OR_SERVICE, 'Show trait.', ['GET ' + _TRAIT]),
    (TRAITS_UPDATE, base.ADMIN_OR_SERVICE, 'Update trait.',
     ['PUT ' + _TRAIT]),
    (TRAITS_DELETE, base.ADMIN_OR_SERVICE, 'Delete trait.',
     ['DELETE ' + _TRAIT]),
    (RP_TRAIT_LIST, base.ADMIN_OR_SERVICE, 'List resource provider traits.',
     ['GET ' + _RP_TRAITS]),
    (RP_TRAIT_UPDATE, base.ADMIN_OR_SERVICE,
     'Update resource provider traits.', ['PUT ' + _RP_TRAITS]),
    (RP_TRAIT_DELETE, base.ADMIN_OR_SERVICE,
     'Delete resource provider traits.', ['DELETE ' + _RP_TRAITS]),
))


def list_rules():
    return list(rules)
