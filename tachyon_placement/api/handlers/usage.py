"""/resource_providers/{uuid}/usages."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import inventory as inventory_domain
from tachyon_placement.domain import usages as usages_domain
from tachyon_placement.policies import usage as policies
from tachyon_placement.schemas import by_version
from tachyon_placement.schemas import usage as usage_schema


@wsgi.handler(accept=wsgi.JSON, uses=('inventories',))
def list_provider_usages(req):
    """What the provider's allocations use of each class it has inventory
    of (0 when unused).  From 1.15 Last-Modified is now: usage is a
    question about the present."""
    req.context.can(policies.PROVIDER_USAGES)
    uuid = req.path_item('uuid')
    try:
        provider, current = req.store.inventories.of_provider(uuid)
    except domain_errors.NotFound as exc:
        raise errors.NotFound('No resource provider with uuid %s found: %s'
                              % (uuid, exc.message))
    return wsgi.json_response(
        req, {'resource_provider_generation': provider.generation,
              'usages': inventory_domain.usages(current)})


@wsgi.handler(min_version='1.9', accept=wsgi.JSON, uses=('usages',))
def get_total_usages(req):
    """GET /usages?project_id=&user_id=[&consumer_type=] (1.38 groups by
    consumer type and counts consumers)."""
    project_id = req.GET.get('project_id')
    user_id = req.GET.get('user_id')
    req.context.can(policies.TOTAL_USAGES, target={'project_id': project_id})
    req.validate_query(by_version(req, usage_schema.GET_USAGES))
    rows = req.store.usages.project_rows(project_id, user_id)
    if req.has('consumer_types'):
        totals = usages_domain.by_consumer_type(
            rows, req.GET.get('consumer_type'))
        # Consumers written before 1.38 have no type: "unknown".
        body = {'usages': {('unknown' if name is None else name): usage
                           for name, usage in totals.items()}}
    else:
        body = {'usages': usages_domain.by_class(rows)}
    return wsgi.json_response(req, body)
