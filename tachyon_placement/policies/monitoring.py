"""Policy rule for Tachyon's metrics (admin or service)."""
from tachyon_placement.policies import base

METRICS = 'tachyon:monitoring:metrics'

rules = base.table((
    (METRICS, base.ADMIN_OR_SERVICE,
     'Read the service\'s Prometheus metrics (requests, candidate '
     'searches, the copy of the graph, the engine, the collector, the '
     'change feed).',
     ['GET /tachyon/monitoring/metrics']),
))


def list_rules():
    return list(rules)
