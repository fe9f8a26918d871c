"""Policy rules for Tachyon's /tachyon/metrics (admin or service)."""
from tachyon_placement.policies import base

PREFIX = 'tachyon:metrics:%s'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List telemetry metrics.',
     ['GET /tachyon/metrics']),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show a telemetry metric.',
     ['GET /tachyon/metrics/{name}']),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Create or replace a telemetry metric.',
     ['PUT /tachyon/metrics/{name}']),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete a telemetry metric.',
     ['DELETE /tachyon/metrics/{name}']),
))


def list_rules():
    return list(rules)
