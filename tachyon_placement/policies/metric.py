"""Policy rules for Tachyon's /tachyon/metrics (admin or service)."""
from tachyon_placement.policies import base

PREFIX = 'tachyon:metrics:%s'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'
STATUS = 'tachyon:telemetry:status'

rules = base.table((
    (LIST, base.ADMIN_OR_SERVICE, 'List telemetry metrics.',
     ['GET /tachyon/metrics']),
    (SHOW, base.ADMIN_OR_SERVICE, 'Show a telemetry metric.',
     ['GET /tachyon/metrics/{name}']),
    (UPDATE, base.ADMIN_OR_SERVICE, 'Create or replace a telemetry metric.',
     ['PUT /tachyon/metrics/{name}']),
    (DELETE, base.ADMIN_OR_SERVICE, 'Delete a telemetry metric.',
     ['DELETE /tachyon/metrics/{name}']),
    (STATUS, base.ADMIN_OR_SERVICE,
     'Show what the collector\'s last run of each metric and Cypher '
     'scorer found: when, how long, the error, the series and providers '
     'matched.', ['GET /tachyon/telemetry/status']),
))


def list_rules():
    return list(rules)
