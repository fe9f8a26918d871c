"""/traits, /traits/{name} and /resource_providers/{uuid}/traits."""
import jsonschema
from oslo_utils import timeutils

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import traits as domain
from tachyon_placement.policies import trait as policies
from tachyon_placement.schemas import trait as schema
from tachyon_placement.usecases import weighers

_INVALID_NAME = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')
_BAD_NAME_FILTER = (
    'Badly formatted name parameter. Expected name query string parameter '
    'in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"')
_BAD_ASSOCIATED = ('The query parameter "associated" only accepts "true" '
                   'or "false"')
_GENERATION_CHANGED = (
    "Resource provider's generation already changed. Please update the "
    "generation and try again.")
_CONCURRENT = ('Another thread concurrently updated the resource provider '
               'data. Please retry your update')
_NO_PROVIDER = 'No resource provider with uuid %s found'


def _url(req, name):
    return req.url('traits', name)


def _last_modified(traits):
    """Newest trait timestamp; json_response uses now when None."""
    return wsgi.latest(trait.updated_at or trait.created_at
                       for trait in traits)


def _cache_headers(req, response, last_modified):
    if req.has('last_modified'):
        response.last_modified = last_modified or timeutils.utcnow(
            with_timezone=True)
        response.cache_control = 'no-cache'
    return response


def _render_provider_traits(req, generation, traits):
    return wsgi.json_response(
        req, {'traits': [trait.name for trait in traits],
              'resource_provider_generation': generation},
        last_modified=_last_modified(traits))


@wsgi.handler(min_version='1.6', accept=wsgi.JSON, uses=('traits',))
def list_traits(req):
    req.context.can(policies.TRAITS_LIST)
    req.validate_query(schema.LIST_TRAITS)
    trait_filter = domain.TraitFilter()
    if 'name' in req.GET:
        value = req.GET['name']
        try:
            trait_filter.name_in, trait_filter.prefix = domain.parse_name(
                value)
        except domain_errors.Invalid:
            raise errors.BadRequest(_BAD_NAME_FILTER % value)
    if 'associated' in req.GET:
        try:
            trait_filter.associated = domain.parse_associated(
                req.GET['associated'])
        except domain_errors.Invalid:
            raise errors.BadRequest(_BAD_ASSOCIATED)
    traits = domain.select(
        req.store.traits.list(name_in=trait_filter.name_in,
                              associated=trait_filter.associated),
        trait_filter)
    return wsgi.json_response(
        req, {'traits': [trait.name for trait in traits]},
        last_modified=_last_modified(traits))


@wsgi.handler(min_version='1.6', uses=('traits',))
def get_trait(req):
    req.context.can(policies.TRAITS_SHOW)
    name = req.path_item('name')
    try:
        trait = req.store.traits.get(name)
    except domain_errors.NotFound as exc:
        raise errors.NotFound(exc.message)
    return _cache_headers(req, wsgi.empty_response(req), trait.created_at)


@wsgi.handler(min_version='1.6', uses=('traits',))
def put_trait(req):
    """Create custom trait {name}: 201 when created, 204 when present."""
    req.context.can(policies.TRAITS_UPDATE)
    name = req.path_item('name')
    try:
        wsgi.validate(name, schema.CUSTOM_TRAIT)
    except jsonschema.ValidationError:
        raise errors.BadRequest(_INVALID_NAME)
    status = 204
    trait = req.store.traits.find(name)
    if trait is None:
        try:
            trait = req.store.traits.create(name)
            status = 201
        except domain_errors.Exists:
            pass  # created concurrently: it exists, which is what was asked
    response = wsgi.empty_response(req, status, location=_url(req, name))
    return _cache_headers(req, response, trait and trait.created_at)


@wsgi.handler(min_version='1.6', uses=('traits', 'weighers'))
def delete_trait(req):
    req.context.can(policies.TRAITS_DELETE)
    name = req.path_item('name')
    try:
        req.store.traits.get(name)
        if not domain.is_custom(name):
            raise errors.BadRequest(
                'Cannot delete standard trait %s.' % name)
        users = weighers.naming_trait(req.store, name)
        if users:
            raise errors.Conflict(
                'Trait %s is named by weighers %s: delete or change them '
                'first.' % (name, ', '.join(users)),
                code=errors.NAMED_BY_WEIGHERS)
        req.store.traits.delete(name)
    except domain_errors.NotFound as exc:
        raise errors.NotFound(exc.message)
    except domain_errors.InUse as exc:
        raise errors.Conflict(exc.message)
    return wsgi.empty_response(req)


@wsgi.handler(min_version='1.6', accept=wsgi.JSON, uses=('traits',))
def list_provider_traits(req):
    req.context.can(policies.RP_TRAIT_LIST)
    uuid = req.path_item('uuid')
    try:
        provider, traits = req.store.traits.of_provider(uuid)
    except domain_errors.NotFound as exc:
        raise errors.NotFound(
            'No resource provider with uuid %(uuid)s found: %(error)s'
            % {'uuid': uuid, 'error': exc.message})
    return _render_provider_traits(req, provider.generation, traits)


@wsgi.handler(min_version='1.6', content=wsgi.JSON, uses=('traits',))
def set_provider_traits(req):
    """Replace the provider's traits.

    One guarded write; when it is refused the store says why, in
    Placement's order of checks: unknown provider (404), stale generation
    (409), unknown traits (400).
    """
    req.context.can(policies.RP_TRAIT_UPDATE)
    uuid = req.path_item('uuid')
    data = req.json_body(schema.SET_TRAITS_FOR_RP)
    try:
        generation, traits = req.store.traits.set_for_provider(
            uuid, data['traits'], data['resource_provider_generation'])
    except domain_errors.NotFound:
        raise errors.EscapedNotFound(_NO_PROVIDER % uuid)
    except domain_errors.ConcurrentUpdate:
        raise errors.Conflict(_GENERATION_CHANGED,
                              code=errors.CONCURRENT_UPDATE)
    except domain_errors.Invalid as exc:
        raise errors.BadRequest('No such trait %s' % ', '.join(exc.missing))
    return _render_provider_traits(req, generation, traits)


@wsgi.handler(min_version='1.6', uses=('providers', 'traits'))
def delete_provider_traits(req):
    req.context.can(policies.RP_TRAIT_DELETE)
    uuid = req.path_item('uuid')
    try:
        provider = req.store.providers.get(uuid)
        req.store.traits.set_for_provider(uuid, [], provider.generation)
    except domain_errors.NotFound:
        raise errors.EscapedNotFound(_NO_PROVIDER % uuid)
    except domain_errors.ConcurrentUpdate:
        raise errors.Conflict(_CONCURRENT, code=errors.CONCURRENT_UPDATE)
    return wsgi.empty_response(req)
