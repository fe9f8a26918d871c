"""/resource_providers/{uuid}/usages."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import inventory as inventory_domain
from tachyon_placement.policies import usage as policies


@wsgi.handler(accept=wsgi.JSON)
def list_provider_usages(req):
    """What the provider's allocations use of each class it has inventory
    of (0 when unused).  From 1.15 Last-Modified is now: usage is a
    question about the present."""
    req.context.can(policies.PROVIDER_USAGES)
    uuid = req.path_item('uuid')
    try:
        provider, current = req.store.provider_inventories(uuid)
    except domain_errors.NotFound as exc:
        raise errors.NotFound('No resource provider with uuid %s found: %s'
                              % (uuid, exc.message))
    return wsgi.json_response(
        req, {'resource_provider_generation': provider.generation,
              'usages': inventory_domain.usages(current)})
