"""Policy rules for Tachyon's /tachyon/weighers (admin or service)."""
from tachyon_placement.policies import base

PREFIX = 'tachyon:weighers:%s'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List weighers.',
     ['GET /tachyon/weighers']),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show a weigher.',
     ['GET /tachyon/weighers/{name}']),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Create or replace a weigher.',
     ['PUT /tachyon/weighers/{name}']),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete a weigher.',
     ['DELETE /tachyon/weighers/{name}']),
))


def list_rules():
    return list(rules)
