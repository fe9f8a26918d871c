"""Tachyon's /tachyon/metrics: what the telemetry collector queries and
how each series maps to providers (see tachyon_placement/telemetry)."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.domain import models
from tachyon_placement.policies import metric as policies
from tachyon_placement.schemas import metric as schema
from tachyon_placement.telemetry import collector
from tachyon_placement.telemetry import metrics
from tachyon_placement.telemetry import promql
from tachyon_placement.weighing import model as weighing_model


@tachyon.handler(accept=wsgi.JSON, uses=('metrics',))
def list_metrics(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'metrics': [
        metric.as_document() for metric in req.store.metrics.list()]})


@tachyon.handler(accept=wsgi.JSON, uses=('metrics',))
def get_metric(req):
    req.context.can(policies.SHOW)
    metric = tachyon.found(req.store.metrics.get, tachyon.name(req, 'metric'))
    return wsgi.json_response(req, metric.as_document())


@tachyon.handler(accept=wsgi.JSON, uses=('metrics',))
def telemetry_status(req):
    """What the collector's last run of each source found (stored by the
    process that holds its lease); a metric not run yet shows no run."""
    req.context.can(policies.STATUS)
    runs = req.store.metrics.runs()
    for metric in req.store.metrics.list():
        runs.setdefault(metric.name, {'name': metric.name,
                                      'label': 'metric %s' % metric.name,
                                      'kind': 'metric'})
    return wsgi.json_response(req, {'sources': [
        _run_document(run) for _name, run in sorted(runs.items())]})


def _run_document(run):
    def when(seconds):
        return (models.from_millis(seconds * 1000).isoformat()
                if seconds is not None else None)
    return {
        'name': run['name'], 'kind': run['kind'], 'label': run['label'],
        'last_run': when(run.get('last_run')),
        'duration_seconds': (round(run['duration'], 6)
                             if run.get('duration') is not None else None),
        'error': run.get('error'),
        'last_success': when(run.get('last_success')),
        'series': run.get('series'),
        'providers_matched': run.get('providers_matched'),
        'unmatched_series': run.get('unmatched_series'),
        'non_finite_values': run.get('non_finite_values'),
        'out_of_bounds_values': run.get('out_of_bounds_values'),
        'providers_stale': run.get('providers_stale'),
        'disabled': run.get('disabled', False)}


DRY_RUN_QUERY = {
    'type': 'object',
    'properties': {'dry_run': {'enum': ['true', 'false']}},
    'additionalProperties': False,
}


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON,
                 uses=('metrics', 'worlds'))
def put_metric(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'metric')
    req.validate_query(DRY_RUN_QUERY)
    data = req.json_body(schema.PUT)
    try:
        promql.check_query(data['query'])
        rewrite = data.get('rewrite')
        if rewrite:
            promql.check_rewrite(rewrite['pattern'],
                                 rewrite.get('replacement', ''))
    except promql.Invalid as exc:
        raise errors.BadRequest(str(exc))
    bounds = data.get('bounds') or {}
    if bounds.get('min', float('-inf')) > bounds.get('max', float('inf')):
        raise errors.BadRequest('bounds: min %s is above max %s'
                                % (bounds['min'], bounds['max']))
    metric = metrics.Metric.from_document(name, data)
    if req.GET.get('dry_run') == 'true':
        return wsgi.json_response(req, _dry_run(req, metric))
    # Stored, with what the dry run would say of it now: a metric the dry
    # run refuses gives no value until what it refuses changes (hosts may
    # register later), and each collection says why in the status.
    check = _check(req, metric)
    return tachyon.stored(req, req.store.metrics.put, metric,
                          data.get('generation'),
                          render=lambda stored: dict(stored.as_document(),
                                                     check=check))


def _check(req, metric):
    """How the metric's query answers now: {'state': 'passed',
    'providers_matched': n}, {'state': 'refused', 'reason': why} (what
    the dry run refuses), or {'state': 'unchecked', 'reason': why} when no
    Prometheus is configured or none answered within [telemetry]
    query_timeout."""
    if not req.conf.telemetry.url:
        return {'state': 'unchecked', 'reason': 'no Prometheus or Aetos is '
                'configured ([telemetry] url)'}
    try:
        report = _report(req, metric)
    except Exception as exc:  # noqa: BLE001 - whatever Prometheus says
        return {'state': 'unchecked',
                'reason': 'the query failed: %.500s' % exc}
    if report['refused']:
        return {'state': 'refused', 'reason': report['refused']}
    return {'state': 'passed',
            'providers_matched': report['providers_matched']}


def _report(req, metric):
    series = collector.PrometheusSource(req.conf).query(metric.query)
    world = req.store.worlds.current()
    roots_by_name = {record.provider.name: record.uuid
                     for record in world.roots}
    return metric.dry_run(series, roots_by_name, world.records)


def _dry_run(req, metric):
    """The metric run once through the deployment's Prometheus or Aetos,
    and how its series map to providers; nothing is stored."""
    if not req.conf.telemetry.url:
        raise errors.BadRequest('dry_run: no Prometheus or Aetos is '
                                'configured ([telemetry] url).')
    try:
        report = _report(req, metric)
    except Exception as exc:  # noqa: BLE001 - whatever Prometheus says
        raise errors.BadRequest('dry_run: the query failed: %.500s' % exc)
    return dict(report, dry_run=True, metric=metric.as_document())


IN_USE = 'tachyon.metric.inuse'


@tachyon.handler(uses=('metrics', 'weighers'))
def delete_metric(req):
    req.context.can(policies.DELETE)
    name = tachyon.name(req, 'metric')
    users = sorted(weigher.name for weigher in req.store.weighers.list()
                   if weigher.scorer['type'] == weighing_model.METRIC
                   and weigher.scorer['metric'] == name)
    if users:
        raise errors.Conflict(
            'Metric %s is used by weighers %s: delete or change them '
            'first.' % (name, ', '.join(users)), code=IN_USE)
    tachyon.found(req.store.metrics.delete, name)
    return wsgi.empty_response(req)
