"""POST /reshaper (1.30): move inventory and allocations atomically."""
from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation as allocation_handler
from tachyon_placement.domain import allocations
from tachyon_placement.domain import errors as domain_errors
from tachyon_placement.domain import inventory as inventory_domain
from tachyon_placement.domain import reshaper as domain
from tachyon_placement.policies import reshaper as policies
from tachyon_placement.schemas import by_version
from tachyon_placement.schemas import reshaper as schema


@wsgi.handler(min_version='1.30', content=wsgi.JSON,
              uses=('allocations', 'providers', 'reshapes',
                    'resource_classes'))
def reshape(req):
    req.context.can(policies.RESHAPE)
    data = req.json_body(by_version(req, schema.POST_RESHAPER))
    new_inventories = {}
    for rp_uuid, body in data['inventories'].items():
        provider = req.store.providers.find(rp_uuid)
        if provider is None:
            raise errors.BadRequest(
                'Resource provider %s in inventories not found: No resource '
                'provider with uuid %s found' % (rp_uuid, rp_uuid),
                code=errors.RESOURCE_PROVIDER_NOT_FOUND)
        given = body['resource_provider_generation']
        if given != provider.generation:
            raise errors.Conflict(
                'resource provider generation conflict for provider %s: '
                'actual: %s, given: %s' % (rp_uuid, provider.generation,
                                           given),
                code=errors.CONCURRENT_UPDATE)
        new_inventories[rp_uuid] = [
            inventory_domain.make_inventory(rc, record)
            for rc, record in body['inventories'].items()]
    requests = [allocation_handler.consumer_request(req, uuid, body)
                for uuid, body in data['allocations'].items()]
    generations = {uuid: body['consumer_generation']
                   for uuid, body in data['allocations'].items()}
    try:
        for rp_uuid, inventories in new_inventories.items():
            inventory_domain.check_capacity(rp_uuid, inventories, True)
        domain.apply(req.store, new_inventories, requests,
                     allocation_handler.conflict_retries(req),
                     client_generations=generations)
    except allocations.ConsumerGenerationConflict as exc:
        raise errors.Conflict(exc.message, code=errors.CONCURRENT_UPDATE)
    except (allocations.ProviderMissing,
            allocations.UnknownResourceClass) as exc:
        raise errors.BadRequest('malformed reshaper data: %s' % exc.message)
    except inventory_domain.InventoryInUse as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.INVENTORY_INUSE)
    except (allocations.InvalidAllocation,
            inventory_domain.InvalidCapacity) as exc:
        raise errors.Conflict(
            'Unable to allocate inventory: %s' % exc.message)
    except domain_errors.ConcurrentUpdate as exc:
        raise errors.Conflict('update conflict: %s' % exc.message,
                              code=errors.CONCURRENT_UPDATE)
    return wsgi.empty_response(req)
