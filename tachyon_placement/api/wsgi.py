"""Request/response plumbing shared by every handler.

A handler is a plain function ``handler(req) -> webob.Response`` decorated
with ``@handler(...)``, which declares the microversion range it serves and
the media types it accepts and produces.  ``ApiError`` raised anywhere below
becomes Placement's JSON error body.
"""
import functools
import pprint

import jsonschema
import orjson
from oslo_middleware import request_id
from oslo_utils import timeutils
from oslo_utils import uuidutils
import webob
import webob.dec
import webob.exc

from tachyon_placement.api import errors
from tachyon_placement.api import inputs
from tachyon_placement.api import microversion
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.policies import whatif as whatif_policies
from tachyon_placement.whatif import overlay as whatif_overlay
from tachyon_placement.whatif import service as whatif_service

ENV_ERROR_CODE = 'placement.error_code'
ENV_CONTEXT = 'placement.context'
ENV_APP = 'tachyon.app'
# The template of the route a request matched (for the metrics).
ENV_ROUTE = 'tachyon.route'
ENV_QUERY_CHECKED = 'tachyon.query_checked'
# The StoreView of the stores the handler serving the request named
# (handler's ``uses``).
ENV_STORES = 'tachyon.stores'
# Set when the client sent no Accept, or */* (the API then asks for JSON
# on its behalf, so that errors are JSON as in Placement): a route that
# gives another type (the metrics' text format) still answers it.
ENV_ACCEPTS_ANY = 'tachyon.accepts_any'
JSON = 'application/json'

_FORMAT_CHECKER = jsonschema.FormatChecker()
# {id(schema): (schema, validator)}: schemas are module constants, checked
# once instead of on every request as jsonschema.validate() does.
_VALIDATORS = {}


def validate(instance, schema):
    """jsonschema.validate() (same error chosen) with a cached validator."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        cached = (schema, cls(schema, format_checker=_FORMAT_CHECKER))
        _VALIDATORS[id(schema)] = cached
    error = jsonschema.exceptions.best_match(cached[1].iter_errors(instance))
    if error is not None:
        raise error


@_FORMAT_CHECKER.checks('uuid')
def _is_uuid(instance):
    return uuidutils.is_uuid_like(instance)


def json_error_formatter(body, status, title, environ):
    """Placement's error document, used for every webob error we raise."""
    body = webob.exc.strip_tags(body)
    status_code = int(status.split(None, 1)[0])
    error = {'status': status_code, 'title': title, 'detail': body}
    tachyon = microversion.is_tachyon_path(environ.get('PATH_INFO', ''))
    want_version = environ.get(microversion.MICROVERSION_ENVIRON)
    if tachyon:
        error['code'] = environ.get(ENV_ERROR_CODE) or errors.tachyon_code(
            status_code)
    elif want_version and microversion.has(want_version, 'error_codes'):
        error['code'] = environ.get(ENV_ERROR_CODE, errors.DEFAULT)
    if request_id.ENV_REQUEST_ID in environ:
        error['request_id'] = environ[request_id.ENV_REQUEST_ID]
    # No microversion in the environ on a 406 means negotiation failed: tell
    # the client what we serve so it can pick (osc-placement reads this).
    if status_code == 406 and tachyon:
        if microversion.TACHYON_ENVIRON not in environ:
            error['max_version'] = microversion.TACHYON_VERSIONS[-1]
            error['min_version'] = microversion.TACHYON_VERSIONS[0]
    elif (status_code == 406
            and microversion.MICROVERSION_ENVIRON not in environ):
        error['max_version'] = microversion.MAX_VERSION
        error['min_version'] = microversion.MIN_VERSION
    return {'errors': [error]}


def webob_error(exc_class, detail, environ=None, code=None, **kw):
    if environ is not None and code:
        environ[ENV_ERROR_CODE] = code
    return exc_class(detail, json_formatter=json_error_formatter, **kw)


def server_error(code, detail):
    """(status line text, headers, body) of an error the HTTP server
    itself answers, before any application saw the request (a request
    line too long, too many headers...): Placement's JSON error shape,
    with a request id, as the application's own errors."""
    error_class = webob.exc.status_map.get(code)
    if error_class is None or code < 400:
        error_class = webob.exc.HTTPBadRequest
    probe = webob.Request.blank('/', headers={'Accept': JSON})
    identifier = 'req-' + uuidutils.generate_uuid()
    probe.environ[request_id.ENV_REQUEST_ID] = identifier
    response = probe.get_response(webob_error(error_class, detail or ''))
    headers = [('Content-Type', response.content_type),
               ('Content-Length', str(len(response.body))),
               (request_id.HTTP_RESP_HEADER_REQUEST_ID, identifier),
               ('Connection', 'close')]
    return response.status, headers, response.body


def _too_large(limit):
    return ('The request body is larger than the %d bytes this service '
            'accepts ([api] max_request_body_size).' % limit)


class Request(webob.Request):
    """A webob request that knows the Placement bits of its environ."""

    @property
    def version(self):
        """The Placement microversion, or on Tachyon's own routes the
        Tachyon API version."""
        if microversion.TACHYON_ENVIRON in self.environ:
            return self.environ[microversion.TACHYON_ENVIRON]
        return self.environ[microversion.MICROVERSION_ENVIRON]

    def has(self, feature):
        """Whether the Placement microversion has ``feature`` (a Tachyon
        route that parses a Placement query sets one)."""
        version = self.environ.get(microversion.MICROVERSION_ENVIRON)
        return microversion.has(version or self.version, feature)

    @property
    def context(self):
        return self.environ[ENV_CONTEXT]

    @property
    def app(self):
        return self.environ[ENV_APP]

    @property
    def store(self):
        """The stores the handler named (``@handler(uses=...)``), by
        name: ``req.store.providers``; no other."""
        return self.environ.get(ENV_STORES) or NO_STORES

    @property
    def conf(self):
        return self.app.conf

    @property
    def GET(self):
        # Checked where a handler first reads it, after the version and
        # policy checks that come before it in Placement.
        if not self.environ.get(ENV_QUERY_CHECKED):
            inputs.check_query(self.environ)
            self.environ[ENV_QUERY_CHECKED] = True
        return super().GET

    def path_item(self, name):
        return self.environ['wsgiorg.routing_args'][1].get(name)

    def json_body(self, schema):
        return extract_json(self.bounded_body(), schema)

    def bounded_body(self):
        """The body, read only up to ``[api] max_request_body_size``
        bytes: a longer one (by its Content-Length, or as it is read when
        chunked) is refused with 413 before it is held whole."""
        limit = self.conf.api.max_request_body_size
        length = self.content_length
        if length is not None and length > limit:
            raise errors.RequestEntityTooLarge(_too_large(limit))
        if length is None and self.is_body_readable:
            body = self.body_file_raw.read(limit + 1)
            if len(body) > limit:
                raise errors.RequestEntityTooLarge(_too_large(limit))
            return body
        return self.body

    def validate_query(self, schema):
        # Placement validates the last value of a repeated key and its
        # handlers use the first, so a bad first value ends in a 500 there;
        # both are checked here, the last first for Placement's message.
        last = dict(self.GET)
        first = {}
        for key, value in self.GET.items():
            first.setdefault(key, value)
        try:
            validate(last, schema)
            if first != last:
                validate(first, schema)
        except jsonschema.ValidationError as exc:
            raise errors.BadRequest(
                'Invalid query string parameters: %(exc)s' % {'exc': exc})

    def url(self, *parts):
        """Relative URL under this app's mount point."""
        return '/'.join((self.script_name,) + parts)


# How much of a refused value an error message shows (a 5 MB name made a
# 10.5 MB error: the message and its "On instance" part both quote it).
MAX_QUOTED = 256
MAX_DETAIL = 8192


def _bounded(exc):
    """The text of a jsonschema error, quoting at most MAX_QUOTED
    characters of the value it refused, and at most MAX_DETAIL in all."""
    text = str(exc)
    if len(text) <= MAX_DETAIL:
        return text
    for quoted in (repr(exc.instance), pprint.pformat(exc.instance,
                                                      width=72)):
        if len(quoted) > MAX_QUOTED:
            text = text.replace(quoted, '%s...(%d characters)' % (
                quoted[:MAX_QUOTED], len(quoted)))
    if len(text) > MAX_DETAIL:
        text = text[:MAX_DETAIL] + '...'
    return text


def extract_json(body, schema):
    data = inputs.load_json(body)
    try:
        validate(data, schema)
    except jsonschema.ValidationError as exc:
        raise errors.BadRequest(
            'JSON does not validate: %(error)s' % {'error': _bounded(exc)})
    return data


def json_response(req, data, status=200, last_modified=None):
    """A JSON response; from 1.15 on with Last-Modified and no-cache."""
    return encoded_json_response(req, encode_json(data), status,
                                 last_modified)


def encode_json(data):
    """``data`` as compact JSON bytes."""
    # Candidate documents run to megabytes: json.dumps took up to a
    # quarter of such requests, orjson a twentieth of that.
    try:
        return orjson.dumps(data)
    except TypeError:
        # A key that is not a string (OPT_NON_STR_KEYS halves the speed,
        # so only when needed).
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


def to_keep(encoded):
    """``encoded`` (bytes) in an object sized to fit, for a memo: orjson's
    bytes keep the buffer they were written in, 4 KiB for a document of a
    few hundred bytes, so the 30,000 provider documents a list remembers
    held 122 MiB instead of 23."""
    return bytes(memoryview(encoded))


# Bytes of the chunks a JoinedItems document is sent in (about: whole
# items).
_CHUNK_BYTES = 1 << 20


class JoinedItems:
    """The JSON document ``head`` + ``items`` (encoded, bytes) joined by
    commas + ``tail``, joined a chunk of about _CHUNK_BYTES at a time as
    the server sends it: a list of every provider with room at 50,000
    hosts is 115 MB, and each such request in flight held it whole, a
    second copy of the items the graph's copy keeps encoded (8 at once
    took the service from 3.6 to 4.2 GiB).  A short document is one
    chunk."""

    def __init__(self, head, items, tail):
        self.head = head
        self.items = items
        self.tail = tail
        size = sum(map(len, items))
        self.length = len(head) + size + max(len(items) - 1, 0) + len(tail)
        # Items per chunk, by their mean length and a comma.
        self._step = max(1, _CHUNK_BYTES * len(items) // (
            size + len(items))) if items else 1

    def __iter__(self):
        items, step = self.items, self._step
        for start in range(0, max(len(items), 1), step):
            if start:
                # The leading comma comes with the join.
                chunk = b','.join([b''] + items[start:start + step])
            else:
                # The head and tail go with a chunk, not as writes of a
                # few bytes of their own (a server without TCP_NODELAY
                # would hold the next one back).
                chunk = self.head + b','.join(items[:step])
            if start + step >= len(items):
                chunk += self.tail
            yield chunk


def encoded_json_response(req, body, status=200, last_modified=None):
    """json_response() of a document already encoded: ``body``, bytes, a
    JoinedItems, or a list of bytes sent one after the other (the pieces
    of a large document are not copied into one)."""
    response = req.response
    response.status = status
    if isinstance(body, bytes):
        response.body = body
    elif isinstance(body, JoinedItems):
        response.app_iter = body
        response.content_length = body.length
    else:
        response.app_iter = body
        response.content_length = sum(map(len, body))
    response.content_type = JSON
    if req.has('last_modified'):
        response.last_modified = last_modified or timeutils.utcnow(
            with_timezone=True)
        response.cache_control = 'no-cache'
    return response


def empty_response(req, status=204, location=None):
    response = req.response
    response.status = status
    response.content_type = None
    if location:
        response.location = location
    return response


def latest(timestamps):
    """Newest of some (possibly None) datetimes, or None."""
    present = [stamp for stamp in timestamps if stamp is not None]
    return max(present) if present else None


class StoreView:
    """The stores of graph.store.Store a handler named, as attributes:
    reaching any other is an AttributeError (a 500 the tests catch)."""

    def __init__(self, store, names):
        for name in names:
            setattr(self, name, getattr(store, name))


NO_STORES = StoreView(None, ())


# Selects a what-if session (Tachyon's /tachyon/sessions) for a request.
SESSION_HEADER = 'OpenStack-Tachyon-Session'
SESSION_NOT_FOUND = 'tachyon.session.not_found'
SESSION_UNSUPPORTED = 'tachyon.session.unsupported'


def _session_stores(req, session_id, supported):
    """The stores of the what-if session ``session_id`` (the request's
    header): its overlay of the graph (whatif/overlay.py)."""
    if not supported:
        raise errors.BadRequest(
            '%s %s is not answered within a what-if session: send it '
            'without the %s header.' % (req.method, req.path,
                                        SESSION_HEADER),
            code=SESSION_UNSUPPORTED)
    req.context.can(whatif_policies.USE)
    if uuidutils.is_uuid_like(session_id):
        try:
            return req.app.store.sessions.overlay(
                session_id, req.conf.whatif.max_consumers,
                whatif_service.Viewer(req.context.project_id, bool(
                    req.context.can(whatif_policies.ANY_PROJECT,
                                    fatal=False))))
        except whatif_overlay.SessionGone:
            pass
        except domain_errors.NotFound:
            pass
    raise errors.NotFound('No what-if session %s.' % session_id[:64],
                          code=SESSION_NOT_FOUND)


def handler(min_version=None, max_version=None, accept=None, content=None,
            versions=microversion.VERSIONS, uses=(), session=False):
    """Declare a handler's microversion range, media types and stores.

    Outside the range the request gets 404 (as Placement does).  ``accept``
    gives 406 for an Accept header it cannot satisfy; ``content`` gives 415
    for a body of another media type.  ``versions``: the API's versions
    (Placement's; microversion.TACHYON_VERSIONS on Tachyon's own routes).
    ``uses``: the names of the stores (graph.store.Store's attributes) it
    reads or writes, the only ones ``req.store`` then holds.  ``session``:
    whether it answers within a what-if session (SESSION_HEADER: its
    stores are then the session's); otherwise such a request gets 400.
    """
    low = microversion.parse(min_version or versions[0])
    high = microversion.parse(max_version or versions[-1])
    uses = tuple(uses)

    def decorator(func):
        @functools.wraps(func)
        def wrapper(req):
            req.environ[ENV_STORES] = StoreView(req.app.store, uses)
            if not (low <= req.version <= high):
                raise errors.NotFound(None)
            if accept and req.accept and not req.environ.get(
                    ENV_ACCEPTS_ANY):
                if not req.accept.acceptable_offers([accept]):
                    raise errors.NotAcceptable(
                        'Only %(type)s is provided' % {'type': accept})
            if content and req.content_type != content:
                raise errors.UnsupportedMediaType(
                    'The media type %(bad_type)s is not supported, use '
                    '%(good_type)s' % {'bad_type': req.content_type or 'None',
                                       'good_type': content})
            session_id = req.headers.get(SESSION_HEADER)
            if session_id is None:
                return func(req)
            req.environ[ENV_STORES] = StoreView(
                _session_stores(req, session_id, session), uses)
            try:
                return func(req)
            except whatif_overlay.SessionGone:
                raise errors.NotFound(
                    'No what-if session %s.' % session_id,
                    code=SESSION_NOT_FOUND)
        wrapper.version_range = (low, high)
        wrapper.uses = uses
        wrapper.session = session
        return wrapper
    return decorator


def versioned(*implementations):
    """One route, different handlers per microversion range.

    Each implementation is a ``@handler`` function; the first whose range
    contains the request's version serves it, otherwise 404.
    """
    def dispatch(req):
        for impl in implementations:
            low, high = impl.version_range
            if low <= req.version <= high:
                return impl(req)
        raise errors.NotFound(None)
    dispatch.__name__ = implementations[0].__name__
    dispatch.implementations = implementations
    return dispatch


_JSON_ALWAYS = {}


def _json_always(webob_class):
    """``webob_class`` rendering its body as JSON whatever the request
    accepts: webob picks plain text or HTML by Accept, and a client of
    Tachyon's own routes (an SSE client asks for text/event-stream) reads
    the error document with its code as on every other route."""
    if webob_class not in _JSON_ALWAYS:
        class JSONAlways(webob_class):
            def generate_response(self, environ, start_response):
                return super().generate_response(
                    dict(environ, HTTP_ACCEPT=JSON), start_response)
        JSONAlways.__name__ = webob_class.__name__
        _JSON_ALWAYS[webob_class] = JSONAlways
    return _JSON_ALWAYS[webob_class]


def to_webob(exc, environ):
    """Turn an ApiError into the webob exception that renders it."""
    if exc.code != errors.DEFAULT:
        environ[ENV_ERROR_CODE] = exc.code
    headers = dict(exc.headers)
    webob_class = exc.webob_class
    if microversion.is_tachyon_path(environ.get('PATH_INFO', '')):
        webob_class = _json_always(webob_class)
    return webob_class(exc.detail, json_formatter=json_error_formatter,
                       headers=headers)
