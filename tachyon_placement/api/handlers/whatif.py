"""Tachyon's what-if sessions: POST /tachyon/sessions opens one, GET shows
what it changed and read, DELETE discards it, POST .../commit writes its
allocations for real (409 naming what moved since it read it).  Requests
within a session carry its id in the OpenStack-Tachyon-Session header
(api/wsgi.py handler ``session``)."""
import datetime

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.domain import allocations as domain_allocations
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import inventory as domain_inventory
from tachyon_placement.policies import whatif as policies
from tachyon_placement.schemas import whatif as schema
from tachyon_placement.whatif import service

SESSION_CONFLICT = 'tachyon.session.conflict'
TOO_MANY_SESSIONS = 'tachyon.session.too_many'


def _when(millis):
    return datetime.datetime.fromtimestamp(
        millis / 1000.0, tz=datetime.timezone.utc).isoformat()


def render(state):
    consumers = []
    for uuid, held in sorted(state.consumers.items()):
        if held is None:
            consumers.append({'consumer_uuid': uuid, 'deleted': True,
                              'allocations': {}})
            continue
        consumers.append({
            'consumer_uuid': uuid, 'deleted': False,
            'allocations': {rp: {'resources': resources}
                            for rp, resources in held.allocations.items()},
            'project_id': held.project_id, 'user_id': held.user_id,
            'consumer_type': held.consumer_type,
            'consumer_generation': held.generation})
    return {
        'id': state.uuid,
        'created_at': _when(state.created_at),
        'expires_at': _when(state.expires_at),
        'writes': state.writes,
        'consumers': consumers,
        'usage_changes': {rp: dict(added)
                          for rp, added in sorted(state.usage.items())},
        'inventories': {rp: dict(replaced) for rp, replaced
                        in sorted(state.inventories.items())},
        'deleted_resource_providers': list(state.deleted),
        'read': {'resource_providers': dict(state.read_providers),
                 'consumers': dict(state.read_consumers)},
    }


def viewer(req):
    """Who asks (whatif.service.Viewer)."""
    return service.Viewer(req.context.project_id, bool(req.context.can(
        policies.ANY_PROJECT, fatal=False)))


# The most sessions GET /tachyon/sessions lists.
LISTED = 1000


def _found(call, *args):
    try:
        return call(*args)
    except service.SessionNotFound as exc:
        raise errors.NotFound(exc.message, code=wsgi.SESSION_NOT_FOUND)


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON, uses=('sessions',))
def open_session(req):
    req.context.can(policies.OPEN)
    data = req.json_body(schema.POST)
    options = req.conf.whatif
    ttl = data.get('ttl', options.default_ttl)
    if ttl > options.max_ttl:
        raise errors.BadRequest(
            'A what-if session lives at most %d seconds ([whatif] '
            'max_ttl).' % options.max_ttl)
    try:
        state = req.store.sessions.open(
            ttl, options.max_sessions, req.context.project_id,
            options.max_sessions_per_project)
    except service.TooManySessions as exc:
        raise errors.Conflict(exc.message, code=TOO_MANY_SESSIONS)
    return wsgi.json_response(req, render(state), status=201)


@tachyon.handler(accept=wsgi.JSON, uses=('sessions',))
def list_sessions(req):
    req.context.can(policies.LIST)
    return wsgi.json_response(req, {'sessions': [
        render(state) for state in req.store.sessions.mine(viewer(req),
                                                           LISTED)]})


@tachyon.handler(accept=wsgi.JSON, uses=('sessions',))
def show_session(req):
    req.context.can(policies.SHOW)
    return wsgi.json_response(req, render(_found(
        req.store.sessions.show, req.path_item('session_id'), viewer(req))))


@tachyon.handler(uses=('sessions',))
def discard_session(req):
    req.context.can(policies.DISCARD)
    _found(req.store.sessions.discard, req.path_item('session_id'),
           viewer(req))
    return wsgi.empty_response(req)


@tachyon.handler(accept=wsgi.JSON, uses=('sessions',))
def commit_session(req):
    req.context.can(policies.COMMIT)
    try:
        state = _found(req.store.sessions.commit, req.path_item('session_id'),
                       allocation.conflict_retries(req), viewer(req))
    except service.SessionConflict as exc:
        raise errors.Conflict(exc.message, code=SESSION_CONFLICT)
    except service.ProviderInUse as exc:
        raise errors.Conflict(exc.message, code=errors.PROVIDER_IN_USE)
    except domain_allocations.InvalidAllocation as exc:
        raise errors.Conflict(
            'Unable to allocate inventory: %s' % exc.message)
    except domain_inventory.InventoryInUse as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.INVENTORY_INUSE)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict(exc.message, code=errors.CONCURRENT_UPDATE)
    return wsgi.json_response(req, render(state))
