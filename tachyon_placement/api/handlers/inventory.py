"""/resource_providers/{uuid}/inventories and .../inventories/{class}.

Each write reads the provider with its inventories, lets the domain check
the request against that state (capacity, unknown classes, in use), and
has the store apply the result in one statement guarded by the generation
that was read.  Messages, statuses and error codes are Placement's,
including its inconsistencies (deleting one inventory in use is a
``concurrent_update`` conflict, deleting them all an ``inventory.inuse``
one).
"""
from oslo_log import log as logging

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import inventory as domain
from tachyon_placement.policies import inventory as policies
from tachyon_placement.schemas import inventory as schema

LOG = logging.getLogger(__name__)

GENERATION_CONFLICT = 'resource provider generation conflict'


def _url(req, uuid, resource_class):
    return req.url('resource_providers', uuid, 'inventories', resource_class)


def _render(inventory, generation=None):
    data = {field: getattr(inventory, field) for field in domain.FIELDS}
    # Placement leaves the generation out when it is 0 (falsy).
    if generation:
        data['resource_provider_generation'] = generation
    return data


def _send_one(req, inventory, generation, status=200):
    return wsgi.json_response(
        req, _render(inventory, generation), status=status,
        last_modified=inventory.updated_at or inventory.created_at)


def _send_all(req, inventories, generation, stored=True):
    """The collection document.  ``stored``: the records were read back
    (their times give Last-Modified); otherwise they were just written."""
    body = {'resource_provider_generation': generation,
            'inventories': {inventory.resource_class: _render(inventory)
                            for inventory in inventories}}
    modified = domain.last_modified(inventories) if stored else None
    response = wsgi.json_response(req, body, last_modified=modified)
    if not inventories and req.has('last_modified'):
        # Nothing to date the collection by: Placement sends no
        # Last-Modified (Cache-Control stays).
        response.last_modified = None
    return response


def _load(req, uuid):
    """Provider and inventories for a write; a missing provider is the
    plain 404 Placement gives for objects it cannot find."""
    try:
        return req.store.inventories.of_provider(uuid)
    except domain_errors.NotFound as exc:
        raise errors.EscapedNotFound(exc.message)


def _load_for_read(req, uuid):
    try:
        return req.store.inventories.of_provider(uuid)
    except domain_errors.NotFound as exc:
        raise errors.NotFound(
            'No resource provider with uuid %s found : %s'
            % (uuid, exc.message))


def _first_unknown_class(req, inventories):
    names = [inventory.resource_class for inventory in inventories]
    missing = req.store.resource_classes.missing(names)
    for name in names:
        if name in missing:
            return name
    return None


def _warn_over_capacity(provider, current, inventories):
    for resource_class in domain.over_capacity(current, inventories):
        LOG.warning('Resource provider %(uuid)s is now over-capacity for '
                    '%(resource)s',
                    {'uuid': provider.uuid, 'resource': resource_class})


@wsgi.handler(accept=wsgi.JSON, uses=('inventories',), session=True)
def get_inventories(req):
    req.context.can(policies.LIST)
    provider, current = _load_for_read(req, req.path_item('uuid'))
    return _send_all(req, list(current.values()), provider.generation)


@wsgi.handler(accept=wsgi.JSON, uses=('inventories',), session=True)
def get_inventory(req):
    req.context.can(policies.SHOW)
    uuid = req.path_item('uuid')
    resource_class = req.path_item('resource_class')
    provider, current = _load_for_read(req, uuid)
    inventory = current.get(resource_class)
    if inventory is None:
        raise errors.NotFound('No inventory of class %s for %s'
                              % (resource_class, uuid))
    return _send_one(req, inventory, provider.generation)


@wsgi.handler(content=wsgi.JSON, uses=('inventories', 'resource_classes'),
              session=True)
def create_inventory(req):
    req.context.can(policies.CREATE)
    provider, current = _load(req, req.path_item('uuid'))
    data = req.json_body(schema.POST_INVENTORY)
    resource_class = data['resource_class']
    inventory = domain.make_inventory(resource_class, data)
    prefix = ('Unable to create inventory for resource provider %s: '
              % provider.uuid)
    try:
        domain.check_capacity(provider.uuid, [inventory],
                              req.has('reserved_equals_total'))
    except domain.InvalidCapacity as exc:
        raise errors.BadRequest(prefix + exc.message)
    if _first_unknown_class(req, [inventory]):
        raise errors.BadRequest(
            prefix + 'No such resource class %s.' % resource_class)
    try:
        change = domain.plan_add(provider.uuid, current, inventory)
        generation = req.store.inventories.write(
            provider.uuid, provider.generation, change)
    except (domain.InventoryExists, domain_errors.ConcurrentUpdate) as exc:
        raise errors.Conflict('Update conflict: %s' % exc.message,
                              code=errors.CONCURRENT_UPDATE)
    response = _send_one(req, inventory, generation, status=201)
    response.location = _url(req, provider.uuid, resource_class)
    return response


@wsgi.handler(content=wsgi.JSON, uses=('inventories', 'resource_classes'),
              session=True)
def update_inventory(req):
    req.context.can(policies.UPDATE)
    resource_class = req.path_item('resource_class')
    provider, current = _load(req, req.path_item('uuid'))
    data = req.json_body(schema.PUT_INVENTORY)
    if data['resource_provider_generation'] != provider.generation:
        raise errors.Conflict(GENERATION_CONFLICT,
                              code=errors.CONCURRENT_UPDATE)
    inventory = domain.make_inventory(resource_class, data)
    try:
        domain.check_capacity(provider.uuid, [inventory],
                              req.has('reserved_equals_total'))
    except domain.InvalidCapacity as exc:
        raise errors.BadRequest(
            'Unable to update inventory for resource provider %s: %s'
            % (provider.uuid, exc.message))
    if _first_unknown_class(req, [inventory]):
        # Placement lets this lookup failure escape as a bare 404.
        raise errors.EscapedNotFound('No such resource class %s.'
                                     % resource_class)
    try:
        change = domain.plan_update(provider.uuid, current, inventory)
    except domain.NoInventory as exc:
        raise errors.BadRequest(
            'No inventory record with resource class for resource provider '
            '%s: %s' % (provider.uuid, exc.message))
    try:
        generation = req.store.inventories.write(
            provider.uuid, provider.generation, change)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.CONCURRENT_UPDATE)
    _warn_over_capacity(provider, current, [inventory])
    return _send_one(req, inventory, generation)


@wsgi.handler(content=wsgi.JSON, uses=('inventories', 'resource_classes'),
              session=True)
def set_inventories(req):
    req.context.can(policies.UPDATE)
    provider, current = _load(req, req.path_item('uuid'))
    data = req.json_body(schema.PUT_INVENTORIES)
    if data['resource_provider_generation'] != provider.generation:
        raise errors.Conflict(GENERATION_CONFLICT,
                              code=errors.CONCURRENT_UPDATE)
    inventories = [domain.make_inventory(resource_class, record)
                   for resource_class, record in data['inventories'].items()]
    try:
        domain.check_capacity(provider.uuid, inventories,
                              req.has('reserved_equals_total'))
    except domain.InvalidCapacity as exc:
        raise errors.BadRequest(
            'Unable to update inventory for resource provider %s: %s'
            % (provider.uuid, exc.message))
    unknown = _first_unknown_class(req, inventories)
    if unknown:
        raise errors.BadRequest(
            'Unknown resource class in inventory for resource provider '
            '%s: No such resource class %s.' % (provider.uuid, unknown))
    try:
        change = domain.plan_replace(provider.uuid, current, inventories)
    except domain.InventoryInUse as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.INVENTORY_INUSE)
    try:
        generation = req.store.inventories.write(
            provider.uuid, provider.generation, change)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.CONCURRENT_UPDATE)
    _warn_over_capacity(provider, current, inventories)
    return _send_all(req, inventories, generation, stored=False)


@wsgi.handler(uses=('inventories',), session=True)
def delete_inventories(req):
    # Before 1.5 the method does not exist on this URL: 405, not 404, and
    # before the policy check.
    if not req.has('delete_all_inventories'):
        raise errors.MethodNotAllowed(None)
    req.context.can(policies.DELETE)
    provider, current = _load(req, req.path_item('uuid'))
    try:
        change = domain.plan_replace(provider.uuid, current, [])
    except domain.InventoryInUse as exc:
        raise errors.Conflict(exc.message, code=errors.INVENTORY_INUSE)
    try:
        req.store.inventories.write(provider.uuid, provider.generation,
                                    change)
    except domain_errors.ConcurrentUpdate:
        raise errors.Conflict(
            'Unable to delete inventory for resource provider %s because '
            'the inventory was updated by another process. Please retry '
            'your request.' % provider.uuid,
            code=errors.CONCURRENT_UPDATE)
    return wsgi.empty_response(req)


@wsgi.handler(uses=('inventories', 'resource_classes'), session=True)
def delete_inventory(req):
    req.context.can(policies.DELETE)
    resource_class = req.path_item('resource_class')
    provider, current = _load(req, req.path_item('uuid'))
    not_found = 'No inventory of class %s found for delete: %s'
    if (resource_class not in current
            and req.store.resource_classes.missing([resource_class])):
        raise errors.NotFound(not_found % (
            resource_class, 'No such resource class %s.' % resource_class))
    try:
        change = domain.plan_delete(provider.uuid, current, resource_class)
        req.store.inventories.write(provider.uuid, provider.generation,
                                    change)
    except (domain.InventoryInUse, domain_errors.ConcurrentUpdate) as exc:
        raise errors.Conflict(
            'Unable to delete inventory of class %s: %s'
            % (resource_class, exc.message), code=errors.CONCURRENT_UPDATE)
    except domain.NoInventory:
        raise errors.NotFound(not_found % (
            resource_class,
            'No inventory of class %s found for delete' % resource_class))
    return wsgi.empty_response(req)
