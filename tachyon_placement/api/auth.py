"""Authentication middleware: keystone auth_token or Placement's noauth2.

Both leave the version document at ``/`` open, as Placement does, so
clients can discover the API before they have a token.
"""
from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import request_id
import webob.dec
import webob.exc

from tachyon_placement.api import context as request_context
from tachyon_placement.api import wsgi

LOG = logging.getLogger(__name__)
ROOT_PATHS = ('/', '')


class NoAuthMiddleware:
    """Trust the token: ``user[:project]``; the user ``admin`` is an admin.

    ``X-Roles`` overrides the roles (tests pass the flattened implied roles,
    as keystone would); ``OpenStack-System-Scope`` leaves the project unset.
    """

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req):
        if req.environ['PATH_INFO'] in ROOT_PATHS:
            return self.application
        if 'X-Auth-Token' not in req.headers:
            return webob.exc.HTTPUnauthorized()
        user_id, _sep, project_id = req.headers['X-Auth-Token'].partition(':')
        project_id = project_id or user_id
        if 'HTTP_X_ROLES' in req.environ:
            roles = req.headers['X_ROLES'].split(',')
        elif user_id == 'admin':
            roles = ['admin']
        else:
            roles = []
        req.headers['X_USER_ID'] = user_id
        if not req.headers.get('OPENSTACK_SYSTEM_SCOPE'):
            req.headers['X_TENANT_ID'] = project_id
        req.headers['X_ROLES'] = ','.join(roles)
        return self.application


class KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for the version document."""

    def __init__(self, application, conf):
        self._unauthenticated_app = application
        super().__init__(application, conf)

    def __call__(self, environ, start_response):
        if environ['PATH_INFO'] in ROOT_PATHS:
            return self._unauthenticated_app(environ, start_response)
        return super().__call__(environ, start_response)


def keystone_middleware(conf):
    def make(application):
        return KeystoneAuth(application, {'oslo_config_config': conf})
    return make


class ContextMiddleware:
    """Build the request context from the identity headers."""

    def __init__(self, application, enforcer, conf):
        self.application = application
        self.enforcer = enforcer
        self.conf = conf

    @webob.dec.wsgify
    def __call__(self, req):
        ctx = request_context.RequestContext.from_environ(
            req.environ,
            request_id=req.environ.get(request_id.ENV_REQUEST_ID),
            enforcer=self.enforcer, config=self.conf)
        if ctx.user_id is None and req.environ['PATH_INFO'] not in ROOT_PATHS:
            LOG.debug('Neither X_USER_ID nor X_USER found in request')
            return webob.exc.HTTPUnauthorized()
        req.environ[wsgi.ENV_CONTEXT] = ctx
        return self.application
