"""Tachyon's own API: its version document and what its resources (named
definitions: weighers, metrics) share."""
import re

from tachyon_placement.api import errors
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.schemas import common

_NAME = re.compile(common.TACHYON_NAME_PATTERN)


def handler(**kwargs):
    """wsgi.handler on Tachyon's versions."""
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


def name(req, kind):
    """The ``{name}`` of the URL, checked."""
    value = req.path_item('name')
    if not _NAME.fullmatch(value):
        raise errors.BadRequest(
            'Invalid %s name %r: 1 to 64 letters, digits, "_", "." or '
            '"-".' % (kind, value))
    return value


def found(load, *args):
    """``load(*args)``, its NotFound a 404."""
    try:
        return load(*args)
    except domain_errors.NotFound as exc:
        raise errors.NotFound(exc.message)


def stored(req, put, item, generation, render=None):
    """``put(item, generation)`` rendered (by ``render``, else its
    as_document()): 201 created, 200 replaced, 409
    placement.concurrent_update when the name is taken or the generation
    moved on."""
    try:
        result = put(item, generation)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict(exc.message, code=errors.CONCURRENT_UPDATE)
    document = render(result) if render else result.as_document()
    return wsgi.json_response(req, document,
                              status=201 if generation is None else 200)
