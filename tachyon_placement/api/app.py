"""The WSGI application and its middleware stack."""
import functools
import time

from microversion_parse import middleware as mp_middleware
from oslo_context import context as oslo_context
from oslo_log import log as logging
import oslo_middleware
from oslo_middleware import request_id
import routes
import webob.dec
import webob.exc

from tachyon_placement.api import auth
from tachyon_placement.api import errors
from tachyon_placement.api import inputs
from tachyon_placement.api import microversion
from tachyon_placement.api import routes as route_table
from tachyon_placement.api import wsgi
from tachyon_placement.domain import conflicts
from tachyon_placement.graph import engine as graph_engine
from tachyon_placement.monitoring import health as monitoring_health
from tachyon_placement.monitoring import metrics
from tachyon_placement.monitoring import middleware as monitoring_middleware

LOG = logging.getLogger(__name__)


def make_mapper(declarations):
    """A Routes mapper from {url: {method: handler}}; other methods get 405."""
    mapper = routes.Mapper()
    for url, methods in declarations.items():
        for method, func in methods.items():
            mapper.connect(url, action=func, conditions={'method': [method]})
        mapper.connect(url, action=None, _methods=', '.join(methods))
    return mapper


class PlacementApp:
    """Dispatch a request to its handler through a route table."""

    def __init__(self, conf, store, routes=route_table.ROUTES,
                 write_lanes=None):
        self.conf = conf
        self.store = store
        # Allocation writers of this process on the same providers take
        # turns instead of racing (see domain.conflicts).
        self.write_lanes = write_lanes or conflicts.WriteLanes()
        self.mapper = make_mapper(routes)

    def __call__(self, environ, start_response):
        environ[wsgi.ENV_APP] = self
        try:
            return self._dispatch(environ, start_response)
        except errors.ApiError as exc:
            raise wsgi.to_webob(exc, environ)

    def _dispatch(self, environ, start_response):
        length = environ.get('CONTENT_LENGTH')
        try:
            if length and int(length) > 0 and not environ.get('CONTENT_TYPE'):
                raise errors.BadRequest(
                    'content-type header required when content-length > 0')
        except ValueError:
            raise errors.BadRequest(
                'content-length header must be an integer')
        inputs.check_path(environ)
        matched = self.mapper.routematch(environ=environ)
        if matched is None:
            raise errors.NotFound(None)
        match, route = matched
        # The route's template (never a uuid): the metrics' label.
        environ[wsgi.ENV_ROUTE] = route.routepath
        func = match.pop('action')
        if func is None:
            # Rendered here, not raised: Placement's 405 carries Vary.
            error = errors.MethodNotAllowed(
                'The method specified is not allowed for this resource.',
                headers={'allow': str(match['_methods'])})
            return wsgi.to_webob(error, environ)(environ, start_response)
        environ['wsgiorg.routing_args'] = ((), match)
        req = wsgi.Request(environ)
        try:
            response = func(req)
        except errors.ApiError as exc:
            if not exc.rendered_by_handler:
                raise wsgi.to_webob(exc, environ)
            response = wsgi.to_webob(exc, environ)
        except graph_engine.Busy as exc:
            response = wsgi.to_webob(errors.ServiceUnavailable(
                str(exc), code=exc.code, headers={
                    'Retry-After': str(graph_engine.Busy.RETRY_AFTER)}),
                environ)
        except graph_engine.Unavailable as exc:
            # A failover or a restart of the engine: a client retries.
            LOG.warning('Graph engine unavailable: %s', exc)
            response = wsgi.to_webob(errors.ServiceUnavailable(
                'The graph database is unavailable, try again: %s' % exc,
                code=errors.GRAPH_UNAVAILABLE, headers={
                    'Retry-After': str(graph_engine.Unavailable.RETRY_AFTER)
                }), environ)
        return response(environ, start_response)


class NamespaceDispatch:
    """Tachyon's own routes (under /tachyon) to their application, every
    other URL to Placement's: each has its own version negotiation."""

    def __init__(self, placement, tachyon):
        self.placement = placement
        self.tachyon = tachyon

    def __call__(self, environ, start_response):
        if microversion.is_tachyon_path(environ.get('PATH_INFO', '')):
            return self.tachyon(environ, start_response)
        return self.placement(environ, start_response)


class RequestLog(request_id.RequestId):
    """Request id (oslo.middleware), a one-line access log, JSON errors.

    An absent or ``*/*`` Accept becomes application/json so error bodies
    are JSON, as Placement does.
    """

    def __init__(self, application):
        super().__init__(application)

    @webob.dec.wsgify
    def __call__(self, req):
        started = time.monotonic()
        self.set_global_req_id(req)
        ctx = oslo_context.RequestContext.from_environ(req.environ)
        req.environ[request_id.ENV_REQUEST_ID] = ctx.request_id
        accept = req.environ.get('HTTP_ACCEPT')
        if not accept or accept == '*/*':
            req.environ['HTTP_ACCEPT'] = wsgi.JSON
            req.environ[wsgi.ENV_ACCEPTS_ANY] = True
        response = req.get_response(self.application)
        for header in [request_id.HTTP_RESP_HEADER_REQUEST_ID] + list(
                self.compat_headers):
            if header not in response.headers:
                response.headers.add(header, ctx.request_id)
        # Placement's line, then the time taken (seconds; to the first
        # byte of a stream): what Placement's operators parse still
        # parses.
        LOG.info('%(addr)s "%(method)s %(uri)s" status: %(status)s '
                 'len: %(len)s microversion: %(version)s time: %(time).6f',
                 {'addr': printable(req.remote_addr or '-'),
                  'method': printable(req.method),
                  'uri': printable(_uri(req.environ)),
                  'status': response.status_code,
                  'len': response.content_length,
                  'version': printable(str(req.environ.get(
                      microversion.TACHYON_ENVIRON,
                      req.environ.get(microversion.MICROVERSION_ENVIRON,
                                      '-')))),
                  'time': time.monotonic() - started})
        return response


# What a logged request field may not hold as it came: control characters
# (a %0a in a request target would start a forged line of its own), and
# the quote and backslash of the quoted request line, escaped as Apache's
# access log does (\xNN, \", \\).
_ESCAPED = {code: '\\x%02x' % code
            for code in list(range(0x20)) + list(range(0x7f, 0xa0))}
_ESCAPED.update({ord('"'): '\\"', ord('\\'): '\\\\',
                 0x2028: '\\u2028', 0x2029: '\\u2029'})


def printable(text):
    """``text`` as a log line may hold it: one line, unambiguous."""
    return text.translate(_ESCAPED)


def _uri(environ):
    # From the raw environ: servers do not all encode PATH_INFO the same
    # way, and a log line must never fail a request.
    uri = environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', '')
    if environ.get('QUERY_STRING'):
        uri += '?' + environ['QUERY_STRING']
    return uri


class FaultWrapper:
    """Any exception that escapes becomes a JSON 500 (and is a bug)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        try:
            return self.application(environ, start_response)
        except Exception as exc:  # noqa: BLE001 - last line of defence
            LOG.exception('Placement API unexpected error: %s', exc)
            fault = webob.exc.HTTPInternalServerError(
                str(exc), json_formatter=wsgi.json_error_formatter)
            return fault.generate_response(environ, start_response)


class ForgetRequest:
    """Takes what the application put in the WSGI environ out of it once
    the response is made (or, for a stream, sent).

    Webob keeps the parsed query and its per-request attributes (the
    response among them) in the environ, and they refer back to it: a
    reference cycle per request, with the response body in it, that only
    the garbage collector frees.  world/records.py's settle() freezes
    every object alive at that moment, out of the collector's reach: a
    request in flight then stayed in memory for good (a worker under a
    thousand provider changes a second grew by 16 MB/s).  Without the
    keys, reference counting frees it all when the server lets go.
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        served = set(environ)
        try:
            result = self.application(environ, start_response)
        except BaseException:
            _forget(environ, served)
            raise
        if isinstance(result, (list, tuple)):
            _forget(environ, served)
            return result
        return _Forgetting(result, environ, served)


def _forget(environ, served):
    for key in [key for key in environ if key not in served]:
        del environ[key]


class _Forgetting:
    """A streamed response (the change feed's): forgets when closed."""

    def __init__(self, result, environ, served):
        self._result = result
        self._environ = environ
        self._served = served

    def __iter__(self):
        return iter(self._result)

    def close(self):
        try:
            close = getattr(self._result, 'close', None)
            if close is not None:
                close()
        finally:
            _forget(self._environ, self._served)


def build_stack(conf, store, enforcer):
    """Wrap the dispatcher in Placement's middleware, innermost first."""
    placement = PlacementApp(conf, store)
    tachyon = PlacementApp(conf, store, route_table.TACHYON_ROUTES,
                           write_lanes=placement.write_lanes)
    application = NamespaceDispatch(
        mp_middleware.MicroversionMiddleware(
            placement, microversion.SERVICE_TYPE, microversion.VERSIONS,
            json_error_formatter=wsgi.json_error_formatter),
        mp_middleware.MicroversionMiddleware(
            tachyon, microversion.TACHYON_SERVICE_TYPE,
            microversion.TACHYON_VERSIONS,
            json_error_formatter=wsgi.json_error_formatter))
    if conf.api.auth_strategy == 'noauth2':
        auth_middleware = auth.NoAuthMiddleware
    else:
        auth_middleware = auth.keystone_middleware(conf)
    cors_middleware = None
    if conf.cors.allowed_origin:
        cors_middleware = oslo_middleware.CORS.factory({}, **conf.cors)
    # Given our conf: without it the middleware reads oslo.config's global
    # CONF, which never holds the service's file, so the option was
    # ignored.  Left out when off, where it only wrapped every request in
    # one more webob layer for nothing (the option is not mutable).
    proxy_middleware = None
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        proxy_middleware = functools.partial(
            oslo_middleware.HTTPProxyToWSGI, conf=conf)
    request_metrics = None
    if conf.metrics.enabled:
        metrics.enable(store.engine.dialect)
        request_metrics = functools.partial(
            monitoring_middleware.RequestMetrics,
            route_key=wsgi.ENV_ROUTE,
            # A Tachyon route's own version first (explain also sets
            # Placement's, to search as the latest microversion).
            version_keys=(microversion.TACHYON_ENVIRON,
                          microversion.MICROVERSION_ENVIRON),
            code_key=wsgi.ENV_ERROR_CODE)

    def health(app):
        return monitoring_health.Health(
            app, lambda: {'graph_version': store.versions.graph().version},
            store.engine.dialect, route_key=wsgi.ENV_ROUTE)
    layers = (
        FaultWrapper,
        lambda app: auth.ContextMiddleware(app, enforcer, conf),
        auth_middleware,
        cors_middleware,
        # Before authentication: a probe holds no token.
        health,
        request_metrics,
        RequestLog,
        proxy_middleware,
        ForgetRequest,
    )
    for layer in layers:
        if layer:
            application = layer(application)
    return application
