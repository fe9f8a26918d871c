"""Policy rules for Tachyon's /tachyon/changes (admin or service: Watcher,
capacity tools and other controllers read it as service users)."""
from tachyon_placement.policies import base

LIST = 'tachyon:changes:list'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE,
     'Read the change feed (long poll or Server-Sent Events).',
     ['GET /tachyon/changes', 'GET /tachyon/changes/stream']),
))


def list_rules():
    return list(rules)
