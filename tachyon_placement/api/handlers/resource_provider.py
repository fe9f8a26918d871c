"""/resource_providers and /resource_providers/{uuid}."""
import uuid as uuidlib

import orjson
from oslo_utils import uuidutils

from tachyon_placement.api import errors
from tachyon_placement.api import query
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import providers as domain
from tachyon_placement.policies import resource_provider as policies
from tachyon_placement.schemas import by_version
from tachyon_placement.schemas import resource_provider as schema

# Link relations of a provider and the feature that adds each.
_LINKS = (('inventories', None), ('usages', None),
          ('aggregates', 'aggregates'), ('traits', 'traits'),
          ('allocations', 'allocations_link'))


def provider_url(req, uuid):
    return req.url('resource_providers', uuid)


def render(req, provider):
    url = provider_url(req, provider.uuid)
    links = [{'rel': 'self', 'href': url}]
    links += [{'rel': rel, 'href': '%s/%s' % (url, rel)}
              for rel, feature in _LINKS if not feature or req.has(feature)]
    data = {'uuid': provider.uuid, 'name': provider.name,
            'generation': provider.generation, 'links': links}
    if req.has('provider_tree'):
        data['parent_provider_uuid'] = provider.parent_uuid
        data['root_provider_uuid'] = provider.root_uuid
    return data


def lookup(req, uuid):
    """The provider named in the URL, or Placement's 404."""
    provider = req.store.providers.find(uuid)
    if provider is None:
        raise errors.EscapedNotFound(
            'No resource provider with uuid %s found' % uuid)
    return provider


@wsgi.handler(accept=wsgi.JSON, uses=('resource_classes', 'traits', 'worlds'))
def list_resource_providers(req):
    req.context.can(policies.LIST)
    req.validate_query(by_version(req, schema.GET_RPS))
    filters = domain.ProviderFilters()
    if 'member_of' in req.GET:
        filters.member_of, filters.forbidden_aggregates = query.member_of(req)
    if 'required' in req.GET:
        filters.required_traits, filters.forbidden_traits = (
            query.required_traits(req))
    if 'resources' in req.GET:
        filters.resources = query.parse_resources(req.GET['resources'])

    check_filters(req, filters)

    world = req.store.worlds.current()
    if 'in_tree' in req.GET:
        tree_member = world.records.get(req.GET['in_tree'])
        if tree_member is None:
            return _render_records(req, [])
        records = domain.select(world.trees[tree_member.root_uuid], filters)
    else:
        # The same list, from the copy's indexes (a cloud's worth of
        # providers: see World.narrowed).
        records = world.narrowed(filters)
    if 'uuid' in req.GET:
        records = [record for record in records
                   if record.uuid == req.GET['uuid']]
    if 'name' in req.GET:
        records = [record for record in records
                   if record.provider.name == req.GET['name']]
    return _render_records(req, records)


def check_filters(req, filters):
    """Placement's 400 for a resource class or trait of the filters that
    does not exist."""
    missing = req.store.resource_classes.missing(filters.resources)
    if missing:
        raise errors.BadRequest(
            'Invalid resource class in resources parameter: No such resource '
            'class %s.' % sorted(missing)[0])
    for any_of in filters.required_traits:
        missing = req.store.traits.missing(any_of)
        if missing:
            raise errors.BadRequest(
                'Invalid trait(s) in "required" parameter: No such trait(s): '
                '%s.' % ', '.join(sorted(missing)))
    missing = req.store.traits.missing(filters.forbidden_traits)
    if missing:
        raise errors.BadRequest(
            'Invalid trait(s) in "required" parameter: No such trait(s): '
            '%s.' % ', '.join(sorted(missing)))


def _render_records(req, records):
    """The list of the providers of graph copy records: each record
    keeps its encoded document per shape (URL prefix and microversion
    features), so a provider is rendered and encoded once per change, not
    per list, and a list is its documents joined (a 30,000-provider list
    spent most of its time making and encoding the same dicts)."""
    shape = _shape_key((req.script_name, req.has('provider_tree'), tuple(
        feature and req.has(feature) for _rel, feature in _LINKS)))
    encoded = [record.rendered.get(shape) or _encode(req, record, shape)
               for record in records]
    return wsgi.encoded_json_response(
        req, wsgi.JoinedItems(b'{"resource_providers":[', encoded, b']}'),
        last_modified=wsgi.latest(record.modified for record in records))


def _encode(req, record, shape):
    encoded = record.rendered[shape] = wsgi.to_keep(orjson.dumps(
        render(req, record.provider)))
    return encoded


# {shape: a small number standing for it}: looked up once per provider of a
# list, a tuple key was hashed anew each time.
_SHAPES = {}
_SHAPES_KEPT = 64


def _shape_key(shape):
    key = _SHAPES.get(shape)
    if key is None:
        if len(_SHAPES) >= _SHAPES_KEPT:
            return shape        # never reused for another shape
        key = _SHAPES.setdefault(shape, len(_SHAPES))
    return key


@wsgi.handler(accept=wsgi.JSON, uses=('providers',))
def get_resource_provider(req):
    req.context.can(policies.SHOW)
    provider = lookup(req, req.path_item('uuid'))
    return wsgi.json_response(req, render(req, provider),
                              last_modified=provider.last_modified)


@wsgi.handler(content=wsgi.JSON, uses=('providers',))
def create_resource_provider(req):
    req.context.can(policies.CREATE)
    data = req.json_body(by_version(req, schema.POST_RP))
    # Accept undashed uuids but store the canonical dashed form.
    uuid = (str(uuidlib.UUID(data['uuid'])) if data.get('uuid')
            else uuidutils.generate_uuid())
    parent_uuid = data.get('parent_provider_uuid')
    if parent_uuid == uuid:
        raise errors.BadRequest(
            'Unable to create resource provider "%s", %s: Object action '
            'create failed because: parent provider UUID cannot be same as '
            'UUID. Please set parent provider UUID to None if there is no '
            'parent.' % (data['name'], uuid))
    try:
        provider = req.store.providers.create(uuid, data['name'], parent_uuid)
    except domain_errors.Exists as exc:
        raise errors.Conflict(
            'Conflicting resource provider %s: %s already exists.'
            % (exc.field, exc.value), code=errors.DUPLICATE_NAME)
    except domain_errors.Invalid as exc:
        raise errors.BadRequest(
            'Unable to create resource provider "%s", %s: Object action '
            'create failed because: %s' % (data['name'], uuid, exc.message))
    location = provider_url(req, uuid)
    if not req.has('create_returns_provider'):
        return wsgi.empty_response(req, 201, location=location)
    response = wsgi.json_response(req, render(req, provider),
                                  last_modified=provider.last_modified)
    response.location = location
    return response


@wsgi.handler(content=wsgi.JSON, uses=('providers',))
def update_resource_provider(req):
    uuid = req.path_item('uuid')
    req.context.can(policies.UPDATE)
    provider = lookup(req, uuid)
    data = req.json_body(by_version(req, schema.PUT_RP))
    name = data.get('name', provider.name)
    parent_uuid = data.get('parent_provider_uuid', provider.parent_uuid)
    try:
        if parent_uuid != provider.parent_uuid:
            if parent_uuid is not None and (
                    req.store.providers.find(parent_uuid) is None):
                raise domain_errors.Invalid(
                    'parent provider UUID does not exist.', action='create')
            domain.check_new_parent(
                provider, parent_uuid, req.has('reparenting'),
                req.store.providers.subtree_uuids(uuid) if parent_uuid
                else set())
        provider = req.store.providers.update(provider, name, parent_uuid)
    except domain_errors.Exists:
        raise errors.Conflict(
            'Conflicting resource provider %s already exists.' % name,
            code=errors.DUPLICATE_NAME)
    except domain_errors.Invalid as exc:
        action = getattr(exc, 'action', 'update')
        raise errors.BadRequest(
            'Unable to save resource provider %s: Object action %s failed '
            'because: %s' % (uuid, action, exc.message))
    except domain_errors.ConcurrentUpdate:
        raise errors.Conflict(
            'Another thread concurrently updated the data. Please retry '
            'your update', code=errors.CONCURRENT_UPDATE)
    return wsgi.json_response(req, render(req, provider),
                              last_modified=provider.last_modified)


@wsgi.handler(uses=('providers',), session=True)
def delete_resource_provider(req):
    uuid = req.path_item('uuid')
    req.context.can(policies.DELETE)
    try:
        req.store.providers.delete(uuid)
    except domain_errors.NotFound:
        raise errors.NotFound(
            'No resource provider with uuid %s found for delete' % uuid)
    except domain_errors.InUse as exc:
        if exc.reason == 'children':
            raise errors.Conflict(
                'Unable to delete parent resource provider %s: It has child '
                'resource providers.' % uuid,
                code=errors.PROVIDER_CANNOT_DELETE_PARENT)
        raise errors.Conflict(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % uuid, code=errors.PROVIDER_IN_USE)
    return wsgi.empty_response(req)
