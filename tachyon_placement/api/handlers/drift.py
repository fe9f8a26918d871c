"""Tachyon's GET /tachyon/drift: the consumers whose placement breaks a
stored weigher threshold or PCI-NUMA affinity rule (usecases/drift.py)."""
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import drift as policies
from tachyon_placement.usecases import drift


@tachyon.handler(accept=wsgi.JSON, uses=('worlds', 'allocations'))
def get_drift(req):
    req.context.can(policies.SHOW)
    req.validate_query({'type': 'object', 'additionalProperties': False})
    return wsgi.json_response(req, drift.report(
        req.store, req.conf.telemetry.staleness_limit))
