"""/resource_providers/{uuid}/aggregates (microversion 1.1 on).

1.1-1.18: the PUT body and both responses are ``{"aggregates": [...]}``
(the PUT body a bare list); 1.19 adds ``resource_provider_generation`` to
the PUT body (checked, and the generation bumped) and to the responses.
"""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.policies import aggregate as policies
from tachyon_placement.schemas import aggregate as schema
from tachyon_placement.schemas import by_version

_NO_PROVIDER = 'No resource provider with uuid %s found'
_GENERATION_CHANGED = (
    "Resource provider's generation already changed. Please update the "
    "generation and try again.")
_CONCURRENT = ('Update conflict: Another thread concurrently updated the '
               'resource provider data. Please retry your update')


def _require_version(req):
    # Checked in the handler body, not by @wsgi.handler, so that the
    # Accept (GET) and Content-Type (PUT) checks come first, as in
    # Placement.
    if not req.has('aggregates'):
        raise errors.NotFound(None)


def _send(req, aggregates, generation):
    body = {'aggregates': aggregates}
    if req.has('aggregates_generation'):
        body['resource_provider_generation'] = generation
    # Membership carries no timestamp: Last-Modified is now (1.15+), as
    # in Placement.
    return wsgi.json_response(req, body)


@wsgi.handler(accept=wsgi.JSON, uses=('aggregates',))
def get_aggregates(req):
    _require_version(req)
    req.context.can(policies.LIST)
    uuid = req.path_item('uuid')
    try:
        provider, aggregates = req.store.aggregates.of_provider(uuid)
    except domain_errors.NotFound:
        raise errors.EscapedNotFound(_NO_PROVIDER % uuid)
    return _send(req, aggregates, provider.generation)


@wsgi.handler(content=wsgi.JSON, uses=('aggregates', 'providers'))
def set_aggregates(req):
    _require_version(req)
    req.context.can(policies.UPDATE)
    uuid = req.path_item('uuid')
    try:
        provider = req.store.providers.get(uuid)
    except domain_errors.NotFound:
        raise errors.EscapedNotFound(_NO_PROVIDER % uuid)
    data = req.json_body(by_version(req, schema.PUT))
    generation = None
    aggregates = data
    if req.has('aggregates_generation'):
        generation = data['resource_provider_generation']
        aggregates = data['aggregates']
        if generation != provider.generation:
            raise errors.Conflict(_GENERATION_CHANGED,
                                  code=errors.CONCURRENT_UPDATE)
    try:
        new_generation = req.store.aggregates.set_for_provider(
            uuid, aggregates, generation=generation)
    except domain_errors.NotFound:
        raise errors.EscapedNotFound(_NO_PROVIDER % uuid)
    except domain_errors.ConcurrentUpdate:
        raise errors.Conflict(_CONCURRENT, code=errors.CONCURRENT_UPDATE)
    return _send(req, aggregates, new_generation)
