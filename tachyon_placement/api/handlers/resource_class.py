"""/resource_classes and /resource_classes/{name}."""
import os_resource_classes

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.policies import resource_class as policies
from tachyon_placement.schemas import resource_class as schema
from tachyon_placement.usecases import weighers


def _url(req, name):
    return req.url('resource_classes', name)


def _render(req, rc):
    return {'name': rc.name,
            'links': [{'rel': 'self', 'href': _url(req, rc.name)}]}


@wsgi.handler(min_version='1.2', accept=wsgi.JSON, uses=('resource_classes',))
def list_resource_classes(req):
    req.context.can(policies.LIST)
    classes = req.store.resource_classes.list()
    return wsgi.json_response(
        req, {'resource_classes': [_render(req, rc) for rc in classes]},
        last_modified=wsgi.latest(rc.updated_at or rc.created_at
                                  for rc in classes))


@wsgi.handler(min_version='1.2', accept=wsgi.JSON, uses=('resource_classes',))
def get_resource_class(req):
    req.context.can(policies.SHOW)
    rc = _lookup(req, req.path_item('name'))
    return wsgi.json_response(req, _render(req, rc),
                              last_modified=rc.updated_at or rc.created_at)


@wsgi.handler(min_version='1.2', content=wsgi.JSON, uses=('resource_classes',))
def create_resource_class(req):
    req.context.can(policies.CREATE)
    name = req.json_body(schema.POST_RC_V1_2)['name']
    try:
        req.store.resource_classes.create(name)
    except domain_errors.Exists:
        raise errors.Conflict(
            'Conflicting resource class already exists: %s' % name)
    return wsgi.empty_response(req, 201, location=_url(req, name))


@wsgi.handler(min_version='1.2', max_version='1.6', content=wsgi.JSON,
              uses=('resource_classes',))
def rename_resource_class(req):
    name = req.path_item('name')
    req.context.can(policies.UPDATE)
    new_name = req.json_body(schema.PUT_RC_V1_2)['name']
    current = _lookup(req, name)
    if not current.is_custom:
        raise errors.BadRequest(
            'Cannot update standard resource class %s' % name)
    try:
        rc = req.store.resource_classes.rename(name, new_name)
    except domain_errors.Exists:
        raise errors.Conflict('Resource class already exists: %s' % new_name)
    return wsgi.json_response(req, _render(req, rc))


@wsgi.handler(min_version='1.7', uses=('resource_classes',))
def ensure_resource_class(req):
    """Bodiless create-or-confirm: 201 when created, 204 when present."""
    name = req.path_item('name')
    req.context.can(policies.UPDATE)
    # Validate the name exactly as a POST body would be validated.
    wsgi.extract_json('{"name": "%s"}' % name, schema.PUT_RC_V1_2)
    status = 204
    if not req.store.resource_classes.exists(name):
        try:
            req.store.resource_classes.create(name)
            status = 201
        except domain_errors.Exists:
            pass  # created concurrently: it exists, which is what was asked
    return wsgi.empty_response(req, status, location=_url(req, name))


@wsgi.handler(min_version='1.2', uses=('resource_classes', 'weighers'))
def delete_resource_class(req):
    name = req.path_item('name')
    req.context.can(policies.DELETE)
    _lookup(req, name)
    if name in os_resource_classes.STANDARDS:
        raise errors.BadRequest(
            'Error in delete resource class: Cannot delete standard '
            'resource class %s.' % name)
    users = weighers.naming_class(req.store, name)
    if users:
        raise errors.Conflict(
            'Error in delete resource class: Class is named by weighers '
            '%s: delete or change them first.' % ', '.join(users),
            code=errors.NAMED_BY_WEIGHERS)
    try:
        req.store.resource_classes.delete(name)
    except domain_errors.InUse as exc:
        raise errors.Conflict(
            'Error in delete resource class: %s' % exc.message)
    return wsgi.empty_response(req)


update_resource_class = wsgi.versioned(rename_resource_class,
                                       ensure_resource_class)


def _lookup(req, name):
    try:
        return req.store.resource_classes.get(name)
    except domain_errors.NotFound as exc:
        raise errors.EscapedNotFound(exc.message)
