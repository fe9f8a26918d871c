"""Tachyon's /tachyon/monitoring/metrics: the service's Prometheus
metrics (tachyon_placement/monitoring), for a Prometheus that scrapes
with a token; ``[metrics] listen_port`` serves the same without one."""
from tachyon_placement.api import errors
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.monitoring import metrics
from tachyon_placement.policies import monitoring as policies


@tachyon.handler(accept='text/plain')
def get_metrics(req):
    req.context.can(policies.METRICS)
    if not metrics.enabled():
        raise errors.NotFound(
            'Metrics are not recorded: set [metrics] enabled = true.')
    content_type, body = metrics.exposition()
    response = req.response
    response.status = 200
    response.headers['Content-Type'] = content_type
    response.body = body
    return response
