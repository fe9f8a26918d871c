"""Tachyon's /tachyon/weighers: the weighers that order allocation
candidates (see tachyon_placement/weighing), managed by operators."""
import re

from tachyon_placement.api import errors
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.policies import weigher as policies
from tachyon_placement.schemas import weigher as schema
from tachyon_placement.weighing import model

_NAME = re.compile(schema.NAME_PATTERN)


def handler(**kwargs):
    return wsgi.handler(versions=microversion.TACHYON_VERSIONS, **kwargs)


@handler(accept=wsgi.JSON)
def home(req):
    """The version document of Tachyon's own API."""
    version = {
        'id': 'v%s' % microversion.TACHYON_VERSIONS[0],
        'max_version': microversion.TACHYON_VERSIONS[-1],
        'min_version': microversion.TACHYON_VERSIONS[0],
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    return wsgi.json_response(req, {'versions': [version]})


def _name(req):
    name = req.path_item('name')
    if not _NAME.fullmatch(name):
        raise errors.BadRequest(
            'Invalid weigher name %r: 1 to 64 letters, digits, "_", "." '
            'or "-".' % name)
    return name


@handler(accept=wsgi.JSON)
def list_weighers(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'weighers': [
        weigher.as_document() for weigher in req.store.list_weighers()]})


@handler(accept=wsgi.JSON)
def get_weigher(req):
    req.context.can(policies.SHOW)
    try:
        weigher = req.store.get_weigher(_name(req))
    except domain_errors.NotFound as exc:
        raise errors.NotFound(exc.message)
    return wsgi.json_response(req, weigher.as_document())


@handler(accept=wsgi.JSON, content=wsgi.JSON)
def put_weigher(req):
    req.context.can(policies.UPDATE)
    name = _name(req)
    data = req.json_body(schema.PUT)
    match = data.get('match') or {}
    if match.get('min_groups', 1) > match.get('max_groups', 1000):
        raise errors.BadRequest('match: min_groups exceeds max_groups.')
    generation = data.get('generation')
    weigher = model.Weigher.from_document(name, data)
    try:
        stored = req.store.put_weigher(weigher, generation)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict(exc.message, code=errors.CONCURRENT_UPDATE)
    return wsgi.json_response(req, stored.as_document(),
                              status=201 if generation is None else 200)


@handler()
def delete_weigher(req):
    req.context.can(policies.DELETE)
    try:
        req.store.delete_weigher(_name(req))
    except domain_errors.NotFound as exc:
        raise errors.NotFound(exc.message)
    return wsgi.empty_response(req)
