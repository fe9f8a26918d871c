"""Tachyon's /tachyon/metrics: what the telemetry collector queries and
how each series maps to providers (see tachyon_placement/telemetry)."""
import re

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import metric as policies
from tachyon_placement.schemas import metric as schema
from tachyon_placement.telemetry import metrics


@tachyon.handler(accept=wsgi.JSON)
def list_metrics(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'metrics': [
        metric.as_document() for metric in req.store.list_metrics()]})


@tachyon.handler(accept=wsgi.JSON)
def get_metric(req):
    req.context.can(policies.SHOW)
    metric = tachyon.found(req.store.get_metric, tachyon.name(req, 'metric'))
    return wsgi.json_response(req, metric.as_document())


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON)
def put_metric(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'metric')
    data = req.json_body(schema.PUT)
    rewrite = data.get('rewrite')
    if rewrite:
        try:
            re.compile(rewrite['pattern'])
        except re.error as exc:
            raise errors.BadRequest('rewrite: bad pattern: %s' % exc)
    return tachyon.stored(req, req.store.put_metric,
                          metrics.Metric.from_document(name, data),
                          data.get('generation'))


@tachyon.handler()
def delete_metric(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.delete_metric, tachyon.name(req, 'metric'))
    return wsgi.empty_response(req)
