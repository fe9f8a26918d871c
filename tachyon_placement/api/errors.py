"""Error codes and the API error type.

Handlers and the domain raise ``ApiError`` subclasses; the fault middleware
renders them as Placement does: ``{"errors": [{"status", "title", "detail",
"code", "request_id"}]}`` with webob's standard explanation text in
``detail``.  Codes are the strings Placement uses, one constant each.
"""
import webob.exc

DEFAULT = 'placement.undefined_code'
INVENTORY_INUSE = 'placement.inventory.inuse'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent')
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
ILLEGAL_DUPLICATE_QUERYPARAM = 'placement.query.duplicate_key'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'
# Tachyon's: the graph engine cannot serve now (a failover, a restart).
GRAPH_UNAVAILABLE = 'tachyon.graph.unavailable'
# Tachyon's: a resource class or trait a stored weigher names (deleted, the
# weigher would go on naming what is not, scoring nothing).
NAMED_BY_WEIGHERS = 'tachyon.weigher.named'
# The code of an error of Tachyon's own routes that names none of its own,
# by status (placement.undefined_code is Placement's to define; a client
# of Tachyon's routes tells these apart by code, as the api-ref lists).
TACHYON_CODES = {
    400: 'tachyon.bad_request', 403: 'tachyon.forbidden',
    404: 'tachyon.not_found', 405: 'tachyon.method_not_allowed',
    406: 'tachyon.not_acceptable', 409: 'tachyon.conflict',
    413: 'tachyon.request_too_large', 414: 'tachyon.request_uri_too_long',
    415: 'tachyon.unsupported_media_type', 500: 'tachyon.server_error',
    503: 'tachyon.unavailable'}


def tachyon_code(status):
    """The code of a Tachyon route's error of ``status`` that names none."""
    return TACHYON_CODES.get(status, 'tachyon.error')


class ApiError(Exception):
    """An error with an HTTP status, rendered as Placement's JSON error.

    ``rendered_by_handler``: Placement turns this kind of error into a
    response inside the handler, so the microversion middleware adds
    ``Vary: openstack-api-version`` to it as to any response; errors it
    raises past the handler (policy refusals, unknown URLs) get only the
    version header.
    """

    webob_class = webob.exc.HTTPBadRequest
    rendered_by_handler = True

    def __init__(self, detail, code=DEFAULT, headers=None):
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}

    @property
    def status(self):
        return self.webob_class.code


class BadRequest(ApiError):
    webob_class = webob.exc.HTTPBadRequest


class Forbidden(ApiError):
    webob_class = webob.exc.HTTPForbidden


class PolicyForbidden(Forbidden):
    rendered_by_handler = False


class NotFound(ApiError):
    webob_class = webob.exc.HTTPNotFound


class EscapedNotFound(NotFound):
    """A 404 that Placement's objects layer raises past the handler (the
    provider or resource class a handler looked up without catching it:
    GET/PUT of a provider, its aggregates, the writes of its inventories
    and traits, GET/DELETE and the 1.2-1.6 rename of a resource class):
    no Vary, as Placement 16.0.0 answers."""
    rendered_by_handler = False


class MethodNotAllowed(ApiError):
    webob_class = webob.exc.HTTPMethodNotAllowed


class NotAcceptable(ApiError):
    webob_class = webob.exc.HTTPNotAcceptable


class Conflict(ApiError):
    webob_class = webob.exc.HTTPConflict


class Gone(ApiError):
    webob_class = webob.exc.HTTPGone


class RequestEntityTooLarge(ApiError):
    webob_class = webob.exc.HTTPRequestEntityTooLarge


class UnsupportedMediaType(ApiError):
    webob_class = webob.exc.HTTPUnsupportedMediaType


class ServiceUnavailable(ApiError):
    webob_class = webob.exc.HTTPServiceUnavailable


class ServerError(ApiError):
    webob_class = webob.exc.HTTPInternalServerError
