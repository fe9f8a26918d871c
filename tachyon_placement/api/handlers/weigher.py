"""Tachyon's /tachyon/weighers: the weighers that order allocation
candidates (see tachyon_placement/weighing), managed by operators."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import models
from tachyon_placement.policies import weigher as policies
from tachyon_placement.schemas import weigher as schema
from tachyon_placement.telemetry import metrics
from tachyon_placement.weighing import cypher_text
from tachyon_placement.weighing import model


def _documents(req, weighers):
    """The weighers' documents; a Cypher scorer's says whether the
    collector runs it (``scorer_status``: ``disabled`` with the reason
    and since when, after it broke its bounds)."""
    disabled = (req.store.scorers.disabled_signals() if any(
        weigher.scorer['type'] == model.CYPHER for weigher in weighers)
        else {})
    documents = []
    for weigher in weighers:
        document = weigher.as_document()
        if weigher.scorer['type'] == model.CYPHER:
            found = disabled.get(model.cypher_signal(weigher.scorer['query']))
            document['scorer_status'] = (
                {'state': 'enabled'} if found is None else
                {'state': 'disabled', 'reason': found[0],
                 'since': models.from_millis(found[1]).isoformat()})
        documents.append(document)
    return documents


@tachyon.handler(accept=wsgi.JSON, uses=('scorers', 'weighers'))
def list_weighers(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'weighers': _documents(
        req, req.store.weighers.list())})


@tachyon.handler(accept=wsgi.JSON, uses=('scorers', 'weighers'))
def get_weigher(req):
    req.context.can(policies.SHOW)
    weigher = tachyon.found(req.store.weighers.get,
                            tachyon.name(req, 'weigher'))
    return wsgi.json_response(req, _documents(req, [weigher])[0])


def _check_names(req, data):
    """400 for what the weigher names that does not exist (it would score
    nothing, silently): resource classes, traits, its metric (which must
    name hosts or providers: a numa metric is for PCI-NUMA affinity)."""
    scorer, match = data['scorer'], data.get('match') or {}
    classes = set(match.get('resource_classes', ()))
    if scorer['type'] == model.USAGE:
        classes.add(scorer['resource_class'])
    missing = req.store.resource_classes.missing(classes)
    if missing:
        raise errors.BadRequest('No such resource class %s.'
                                % ', '.join(sorted(missing)))
    traits = set(match.get('required_traits', ()))
    if scorer['type'] == model.TRAITS:
        traits |= set(scorer.get('prefer', ())) | set(scorer.get('avoid', ()))
    missing = req.store.traits.missing(traits)
    if missing:
        raise errors.BadRequest('No such trait(s): %s.'
                                % ', '.join(sorted(missing)))
    if scorer['type'] == model.METRIC:
        try:
            metric = req.store.metrics.get(scorer['metric'])
        except domain_errors.NotFound:
            raise errors.BadRequest('No such metric %s: store it first '
                                    '(PUT /tachyon/metrics/%s).' % (
                                        scorer['metric'], scorer['metric']))
        if metric.target == metrics.NUMA:
            raise errors.BadRequest(
                'Metric %s has target numa (values per NUMA node, for '
                'PCI-NUMA affinity): a weigher scores hosts or providers.'
                % metric.name)


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON,
                 uses=('metrics', 'resource_classes', 'scorers', 'traits',
                       'weighers'))
def put_weigher(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'weigher')
    data = req.json_body(schema.PUT)
    match = data.get('match') or {}
    if match.get('min_groups', 1) > match.get('max_groups', 1000):
        raise errors.BadRequest('match: min_groups exceeds max_groups.')
    _check_names(req, data)
    if data['scorer']['type'] == model.CYPHER:
        query = data['scorer']['query']
        try:
            cypher_text.check(query)
        except cypher_text.Refused as exc:
            raise errors.BadRequest('cypher scorer refused: %s' % exc)
        try:
            req.store.scorers.check(
                query, model.ScorerBounds.from_conf(req.conf),
                model.CYPHER_COLUMNS)
        except domain_errors.Invalid as exc:
            raise errors.BadRequest(exc.message)
        # Stored again: a scorer disabled for breaking its bounds is
        # given another chance.
        req.store.scorers.enable_signal(model.cypher_signal(query))
    return tachyon.stored(req, req.store.weighers.put,
                          model.Weigher.from_document(name, data),
                          data.get('generation'))


@tachyon.handler(uses=('weighers',))
def delete_weigher(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.weighers.delete, tachyon.name(req, 'weigher'))
    return wsgi.empty_response(req)
