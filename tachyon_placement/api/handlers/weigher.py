"""Tachyon's /tachyon/weighers: the weighers that order allocation
candidates (see tachyon_placement/weighing), managed by operators."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import models
from tachyon_placement.policies import weigher as policies
from tachyon_placement.schemas import weigher as schema
from tachyon_placement.usecases import weighers as weighing
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


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON,
                 uses=('metrics', 'resource_classes', 'scorers', 'traits',
                       'weighers'))
def put_weigher(req):
    req.context.can(policies.UPDATE)
    name = tachyon.name(req, 'weigher')
    data = req.json_body(schema.PUT)
    try:
        weigher = weighing.checked(req.store, name, data,
                                   model.ScorerBounds.from_conf(req.conf))
    except domain_errors.Invalid as exc:
        raise errors.BadRequest(exc.message)
    return tachyon.stored(req, req.store.weighers.put, weigher,
                          data.get('generation'))


@tachyon.handler(uses=('weighers',))
def delete_weigher(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.weighers.delete, tachyon.name(req, 'weigher'))
    return wsgi.empty_response(req)
