"""Tachyon's /tachyon/topology/hosts: hosts' hardware topology (sockets,
NUMA nodes, PCI devices, see tachyon_placement/topology) published by the
topology agent, and the view that joins it with the host's providers."""
import re

from tachyon_placement.api import errors
from tachyon_placement.api import microversion
from tachyon_placement.api import query
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import resource_provider
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.domain import providers as domain
from tachyon_placement.policies import topology as policies
from tachyon_placement.schemas import topology as schema
from tachyon_placement.topology import model
from tachyon_placement.topology import view
from tachyon_placement.usecases import topology as publishing

# A hypervisor hostname: DNS-like, as Nova names compute node providers.
_HOST = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$')

LIST_QUERY = {
    'type': 'object',
    'properties': {
        'member_of': {'type': 'string'},
        'required': {'type': 'string'},
        'resources': {'type': 'string'},
    },
    'additionalProperties': False,
}


def _host(req):
    value = req.path_item('name')
    if not _HOST.fullmatch(value):
        raise errors.BadRequest(
            'Invalid host name %r: a hostname of letters, digits, ".", "_" '
            'and "-", at most 255 characters.' % value)
    return value


def _tree(req, topology):
    """The records of the provider tree the host's topology links to."""
    world = req.store.worlds.current()
    return world.trees.get(topology.links.host, []) if (
        topology.links.host) else []


@tachyon.handler(accept=wsgi.JSON,
                 uses=('resource_classes', 'traits', 'worlds'))
def list_hosts(req):
    req.context.can(policies.LIST)
    # The filters GET /resource_providers has, in Placement's syntax and
    # with its errors at its latest microversion (in:, !, repeated
    # parameters; unknown classes and traits are 400s).
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    req.validate_query(LIST_QUERY)
    filters = domain.ProviderFilters()
    if 'member_of' in req.GET:
        filters.member_of, filters.forbidden_aggregates = query.member_of(req)
    if 'required' in req.GET:
        filters.required_traits, filters.forbidden_traits = (
            query.required_traits(req))
    if 'resources' in req.GET:
        filters.resources = query.parse_resources(req.GET['resources'])
    resource_provider.check_filters(req, filters)
    wanted = filters.resources
    # From this process's copy of the graph (published topologies are
    # summarised there as they change): no engine read but the version's.
    world = req.store.worlds.current()
    roots = {record.provider.name: record for record in world.roots}
    hosts = []
    for name, summary in sorted(world.topology_summaries.items()):
        root = roots.get(name)
        tree = world.trees.get(root.provider.uuid, []) if root else []
        # Aggregates: the root's; traits: any provider's of the tree.
        aggregates = set(root.aggregates) if root else set()
        if not all(any_of & aggregates for any_of in filters.member_of) or (
                filters.forbidden_aggregates & aggregates):
            continue
        present = set()
        for record in tree:
            present.update(record.traits)
        if not all(any_of & present for any_of in filters.required_traits) \
                or filters.forbidden_traits & present:
            continue
        free = view.free_total(tree)
        if any(free.get(rc, 0) < amount for rc, amount in wanted.items()):
            continue
        hosts.append({
            'host': name,
            'generation': summary.generation,
            'root_provider_uuid': root.provider.uuid if root else None,
            'sockets': summary.sockets,
            'numa_nodes': summary.numa_nodes,
            'pci_devices': summary.pci_devices,
            'free': free,
        })
    return wsgi.json_response(req, {'hosts': hosts})


@tachyon.handler(accept=wsgi.JSON, uses=('topology', 'worlds'))
def get_host(req):
    req.context.can(policies.SHOW)
    topology = tachyon.found(req.store.topology.get, _host(req))
    return wsgi.json_response(req, view.host_view(topology,
                                                  _tree(req, topology)))


@tachyon.handler(accept=wsgi.JSON, content=wsgi.JSON,
                 uses=('topology', 'worlds'))
def put_host(req):
    req.context.can(policies.UPDATE)
    name = _host(req)
    data = req.json_body(schema.PUT)
    generation = data.pop('generation', None)
    try:
        model.check(data)
    except model.InvalidTopology as exc:
        raise errors.BadRequest('Invalid topology: %s.' % exc)
    return tachyon.stored(req, lambda document, gen:
                          publishing.publish(req.store, name, document,
                                             gen),
                          model.normalized(data), generation,
                          render=lambda topology: view.host_view(
                              topology, _tree(req, topology)))


@tachyon.handler(uses=('topology',))
def delete_host(req):
    req.context.can(policies.DELETE)
    tachyon.found(req.store.topology.delete, _host(req))
    return wsgi.empty_response(req)
