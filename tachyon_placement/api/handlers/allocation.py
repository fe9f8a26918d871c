"""/allocations/{consumer_uuid}, POST /allocations and
/resource_providers/{uuid}/allocations."""
import contextlib
import uuid as uuidlib

from oslo_utils import uuidutils

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.domain import allocations as domain
from tachyon_placement.domain import conflicts
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.monitoring import metrics
from tachyon_placement.policies import allocation as policies
from tachyon_placement.schemas import allocation as schema
from tachyon_placement.schemas import by_version


@wsgi.handler(accept=wsgi.JSON, uses=('allocations',), session=True)
def list_for_consumer(req):
    req.context.can(policies.ALLOC_LIST)
    consumer_uuid = req.path_item('consumer_uuid')
    state, generations, modified = req.store.allocations.of_consumer(
        consumer_uuid)
    body = {'allocations': {}}
    if state is not None:
        body['allocations'] = {
            rp: {'generation': generations[rp], 'resources': resources}
            for rp, resources in state.allocations.items()}
        if req.has('allocations_dict'):
            body['project_id'] = state.project_id
            body['user_id'] = state.user_id
        if req.has('consumer_generation'):
            body['consumer_generation'] = state.generation
        if req.has('consumer_types'):
            body['consumer_type'] = state.consumer_type or 'unknown'
    return wsgi.json_response(req, body, last_modified=modified)


@wsgi.handler(accept=wsgi.JSON, uses=('allocations',))
def list_for_resource_provider(req):
    req.context.can(policies.RP_ALLOC_LIST)
    uuid = req.path_item('uuid')
    found = req.store.allocations.of_provider(uuid)
    if found is None:
        raise errors.NotFound(
            "Resource provider '%s' not found: No resource provider with "
            "uuid %s found" % (uuid, uuid))
    generation, by_consumer, modified = found
    if not req.has('consumer_generation'):
        for entry in by_consumer.values():
            del entry['consumer_generation']
    return wsgi.json_response(
        req, {'allocations': by_consumer,
              'resource_provider_generation': generation},
        last_modified=modified)


def consumer_request(req, consumer_uuid, data):
    """One consumer's body (any microversion) -> ConsumerRequest."""
    allocations = data['allocations']
    if not req.has('allocations_dict'):
        allocations = {item['resource_provider']['uuid']:
                       {'resources': item['resources']}
                       for item in allocations}
    project_id = data.get('project_id')
    user_id = data.get('user_id')
    if project_id is None:
        # Before 1.8 clients did not say who consumes; Placement records
        # configurable placeholders.
        project_id = req.conf.placement.incomplete_consumer_project_id
        user_id = req.conf.placement.incomplete_consumer_user_id
    return domain.ConsumerRequest(
        uuid=consumer_uuid, project_id=project_id, user_id=user_id,
        allocations={rp: dict(item['resources'])
                     for rp, item in allocations.items()},
        consumer_type=data.get('consumer_type'))


def conflict_retries(req):
    return conflicts.ConflictRetries(
        req.conf.placement.allocation_conflict_retry_count,
        lanes=req.app.write_lanes, on_retry=metrics.write_retried)


def _apply(req, requests, client_generations, unknown_class_message):
    with _answering(unknown_class_message):
        domain.apply(req.store, requests, conflict_retries(req),
                     client_generations=client_generations)


@contextlib.contextmanager
def _answering(unknown_class_message='%s'):
    """The API's answer to what an allocation write found wrong."""
    try:
        yield
    except domain.NoAllocations as exc:
        raise errors.NotFound(exc.message)
    except domain.ConsumerGenerationConflict as exc:
        raise errors.Conflict(exc.message, code=errors.CONCURRENT_UPDATE)
    except domain.ProviderMissing as exc:
        raise errors.BadRequest(exc.message)
    except domain.UnknownResourceClass as exc:
        raise errors.BadRequest(unknown_class_message % exc.message)
    except domain.InvalidAllocation as exc:
        raise errors.Conflict(
            'Unable to allocate inventory: %s' % exc.message)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict(
            'Inventory and/or allocations changed while attempting to '
            'allocate: %s' % exc.message, code=errors.CONCURRENT_UPDATE)


@wsgi.handler(content=wsgi.JSON,
              uses=('allocations', 'resource_classes', 'worlds'),
              session=True)
def set_allocations_for_consumer(req):
    req.context.can(policies.ALLOC_UPDATE)
    consumer_uuid = req.path_item('consumer_uuid')
    if not uuidutils.is_uuid_like(consumer_uuid):
        raise errors.BadRequest(
            'Malformed consumer_uuid: %s' % consumer_uuid)
    consumer_uuid = str(uuidlib.UUID(consumer_uuid))
    data = req.json_body(by_version(req, schema.PUT))
    request = consumer_request(req, consumer_uuid, data)
    generations = None
    if req.has('consumer_generation'):
        generations = {consumer_uuid: data['consumer_generation']}
    _apply(req, [request], generations,
           'Unable to allocate inventory for consumer %s: %%s'
           % consumer_uuid)
    return wsgi.empty_response(req)


@wsgi.handler(min_version='1.13', content=wsgi.JSON,
              uses=('allocations', 'resource_classes', 'worlds'),
              session=True)
def set_allocations(req):
    req.context.can(policies.ALLOC_MANAGE)
    data = req.json_body(by_version(req, schema.POST))
    requests = [consumer_request(req, consumer_uuid, body)
                for consumer_uuid, body in data.items()]
    generations = None
    if req.has('consumer_generation'):
        generations = {consumer_uuid: body['consumer_generation']
                       for consumer_uuid, body in data.items()}
    _apply(req, requests, generations, 'Unable to allocate inventory %s')
    return wsgi.empty_response(req)


@wsgi.handler(uses=('allocations',), session=True)
def delete_allocations(req):
    req.context.can(policies.ALLOC_DELETE)
    with _answering():
        domain.remove_allocations(req.store, req.path_item('consumer_uuid'))
    return wsgi.empty_response(req)
