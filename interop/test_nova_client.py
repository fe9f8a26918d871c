"""Nova's own placement client (nova 34.x SchedulerReportClient) against the
server, doing what nova-compute, nova-scheduler and nova-conductor do.

The client is configured exactly as a deployment would configure it, with
only a ``[placement]`` section (keystoneauth ``admin_token`` plugin,
``endpoint``, ``token``), and built by nova's own code
(``SchedulerReportClient()``). Its requests carry the roles of nova's
service user (``admin`` and ``service``, which the reshaper's default policy
requires) in ``X-Roles``, which is how the noauth2 middleware learns roles.

The steps build on each other like the life of a cloud: compute nodes
register their provider trees (NUMA, SR-IOV PF and PCI children, traits),
the host aggregates are mirrored, the scheduler asks for allocation
candidates with granular groups and claims, a cold migration moves the
allocations to the migration record and back, an evacuation doubles them
up and cleans the source, ports are attached and detached, a compute
service is disabled, a virt driver reshapes its tree, instances are deleted
and finally a compute service is deleted. A step whose prerequisites
failed fails as "blocked".
"""
import copy
import os
import time
import uuid

from keystoneauth1 import session as ks_session
from nova import conf as nova_conf
from nova import context as nova_context
from nova import exception
from nova import objects
import os_traits
import pytest

import conftest

SUITE = 'test_nova_client'
NOVA_ROLES = 'admin,member,reader,service'
NS = uuid.UUID('7d8a3b8e-5f7e-4a0c-9d69-1c0f3c7e2a11')

PROJECT = uuid.uuid5(NS, 'project').hex
USER = uuid.uuid5(NS, 'user').hex
OTHER_USER = uuid.uuid5(NS, 'other-user').hex
AGG_NOVA = str(uuid.uuid5(NS, 'aggregate-nova'))
AGG_GOLD = str(uuid.uuid5(NS, 'aggregate-gold'))
ISOLATION_TRAIT = 'CUSTOM_INTEROP_NOVA'
GPU_RC = 'CUSTOM_PCI_10DE_1EB8'

INSTANCE = str(uuid.uuid5(NS, 'instance-1'))
MIGRATION_1 = str(uuid.uuid5(NS, 'migration-1'))
MIGRATION_2 = str(uuid.uuid5(NS, 'migration-2'))
PORT_1 = str(uuid.uuid5(NS, 'port-1'))
INSTANCE_VGPU = str(uuid.uuid5(NS, 'instance-vgpu'))
INSTANCE_HEAL = str(uuid.uuid5(NS, 'instance-heal'))


def rp_uuid(name):
    return str(uuid.uuid5(NS, 'rp-' + name))


# The virt driver ----------------------------------------------------------

def inv(total, reserved=0, max_unit=None, ratio=1.0, step=1, min_unit=1):
    return {'total': total, 'reserved': reserved, 'min_unit': min_unit,
            'max_unit': max_unit or total, 'step_size': step,
            'allocation_ratio': ratio}


class FakeDriver:
    """What a virt driver's update_provider_tree() does, for one host.

    Root: VCPU/MEMORY_MB/DISK_GB and CPU feature traits. Children: two NUMA
    cells with PCPU; under each an SR-IOV PF with VFs on a physnet; a PCI
    device (a GPU passed through, nova's PCI-in-placement model) under the
    root. ``reshape_vgpu`` moves VGPU inventory from the root to a child
    and needs the allocations to do so (ReshapeNeeded otherwise).
    """

    def __init__(self, host, numa=True, pci=True, vgpu_on_root=0):
        self.host = host
        self.root_inventory = {
            'VCPU': inv(16, ratio=4.0),
            'MEMORY_MB': inv(65536, reserved=512),
            'DISK_GB': inv(1000),
        }
        if vgpu_on_root:
            self.root_inventory['VGPU'] = inv(vgpu_on_root)
        self.root_traits = {'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42',
                            'COMPUTE_NET_ATTACH_INTERFACE', ISOLATION_TRAIT}
        self.children = {}
        if numa:
            for cell, physnet in ((0, 'PHYSNET0'), (1, 'PHYSNET1')):
                numa_name = '%s_NUMA%d' % (host, cell)
                self.children[numa_name] = {
                    'parent': host,
                    'inventory': {'PCPU': inv(8)},
                    'traits': {'HW_NUMA_ROOT'},
                }
                self.children['%s_ens%df0' % (host, cell + 1)] = {
                    'parent': numa_name,
                    'inventory': {'SRIOV_NET_VF': inv(8)},
                    'traits': {'HW_NIC_SRIOV', 'CUSTOM_PHYSNET_' + physnet},
                }
        if pci:
            self.children['%s_0000:3b:00.0' % host] = {
                'parent': host,
                'inventory': {GPU_RC: inv(1)},
                'traits': {'COMPUTE_MANAGED_PCI_DEVICE'},
            }
        self.reshape_vgpu = False
        # called once, when handed the allocations to reshape
        self.before_reshape = None

    @property
    def vgpu_child(self):
        return '%s_pci_0000_84_00_0' % self.host

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        assert nodename == self.host
        root_inventory = copy.deepcopy(self.root_inventory)
        if self.reshape_vgpu:
            vgpu = root_inventory.pop('VGPU', None)
            if 'VGPU' in provider_tree.data(nodename).inventory:
                # the VGPU allocations on the root must move with it
                if allocations is None:
                    raise exception.ReshapeNeeded()
            if not provider_tree.exists(self.vgpu_child):
                provider_tree.new_child(self.vgpu_child, nodename,
                                        uuid=rp_uuid(self.vgpu_child))
            if vgpu:
                provider_tree.update_inventory(self.vgpu_child,
                                               {'VGPU': vgpu})
            provider_tree.update_traits(self.vgpu_child,
                                        ['HW_GPU_API_VULKAN'])
            if allocations is not None and self.before_reshape:
                hook, self.before_reshape = self.before_reshape, None
                hook()
            if allocations is not None:
                root = provider_tree.data(nodename).uuid
                child = rp_uuid(self.vgpu_child)
                for alloc in allocations.values():
                    res = alloc['allocations'].get(root, {}).get('resources')
                    if res and 'VGPU' in res:
                        amount = res.pop('VGPU')
                        alloc['allocations'].setdefault(
                            child, {'resources': {}})['resources'][
                                'VGPU'] = amount
        provider_tree.update_inventory(nodename, root_inventory)
        provider_tree.update_traits(nodename, sorted(self.root_traits))
        # children, parents first
        for name, child in self._ordered_children():
            if not provider_tree.exists(name):
                provider_tree.new_child(name, child['parent'],
                                        uuid=rp_uuid(name))
            provider_tree.update_inventory(name, child['inventory'])
            provider_tree.update_traits(name, sorted(child['traits']))
        # providers the driver no longer reports go away
        keep = {nodename, self.vgpu_child} | set(self.children)
        for name in list(self._names(provider_tree, nodename)):
            if name not in keep and provider_tree.exists(name):
                provider_tree.remove(name)

    @staticmethod
    def _names(provider_tree, nodename):
        return [provider_tree.data(u).name
                for u in provider_tree.get_provider_uuids(nodename)]

    def _ordered_children(self):
        done, out = {self.host}, []
        pending = dict(self.children)
        while pending:
            for name, child in list(pending.items()):
                if child['parent'] in done:
                    out.append((name, child))
                    done.add(name)
                    del pending[name]
        return out


def resource_tracker_update(client, ctx, driver, startup=False):
    """ResourceTracker._update_to_placement, minus the PCI tracker."""
    nodename = driver.host
    prov_tree = client.get_provider_subtree_and_ensure_root(
        ctx, rp_uuid(nodename), name=nodename)
    allocs = client.get_allocations_for_provider_tree(ctx, nodename)
    reshaped = False
    try:
        driver.update_provider_tree(prov_tree, nodename)
    except exception.ReshapeNeeded:
        if not startup:
            raise
        driver.update_provider_tree(prov_tree, nodename, allocations=allocs)
        reshaped = True
    client.update_from_provider_tree(
        ctx, prov_tree, allocations=allocs if reshaped else None)


# Fixtures ----------------------------------------------------------------

class _HostManager:
    """The scheduler host manager's compute node lookup, for in_tree."""

    def get_compute_nodes_by_host_or_node(self, ctxt, host, node, cell=None):
        name = node or host
        return [objects.ComputeNode(uuid=rp_uuid(name), host=name,
                                    hypervisor_hostname=name)]


@pytest.fixture(scope='module')
def nova(server, tmp_path_factory):
    objects.register_all()
    conf_file = tmp_path_factory.mktemp('nova') / 'nova.conf'
    conf_file.write_text(
        '[DEFAULT]\n'
        '[placement]\n'
        'auth_type = admin_token\n'
        'endpoint = %s\n'
        'token = %s\n' % (server.endpoint, conftest.TOKEN))
    nova_conf.CONF(['--config-file', str(conf_file)], project='nova')

    # Record what nova sends: microversions for the summary, the exchanges
    # for a failing step's report.
    original = ks_session.Session.request

    def request(self, url, method, *args, **kwargs):
        resp = original(self, url, method, *args, **kwargs)
        sent = resp.request.headers.get('OpenStack-API-Version', '')
        version = sent.split()[-1] if sent else None
        conftest.record_microversion(SUITE, version)
        body = kwargs.get('json')
        conftest.trace('nova: %s %s [%s] %s-> %s %s' % (
            method, url, version or '-',
            ('%s ' % body) if body is not None else '',
            resp.status_code, resp.text[:600]))
        return resp

    ks_session.Session.request = request
    from nova.scheduler.client import report
    report.PLACEMENTCLIENT = None
    client = report.report_client_singleton()
    # nova's service user: keystone would put these roles in the token
    client._client.additional_headers['X-Roles'] = NOVA_ROLES
    ctx = nova_context.get_admin_context()
    state = {'client': client, 'ctx': ctx, 'drivers': {}}
    try:
        yield state
    finally:
        ks_session.Session.request = original
        nova_conf.CONF.reset()
        nova_conf.CONF.clear()


def request_spec(vcpus=4, memory_mb=2048, root_gb=20, extra_specs=None,
                 requested_resources=None, aggregates=None, host=None,
                 root_required=(ISOLATION_TRAIT,), root_forbidden=(
                     os_traits.COMPUTE_STATUS_DISABLED,),
                 same_subtree=None):
    flavor = objects.Flavor(vcpus=vcpus, memory_mb=memory_mb,
                            root_gb=root_gb, ephemeral_gb=0, swap=0,
                            extra_specs=extra_specs or {})
    spec = objects.RequestSpec(
        flavor=flavor, num_instances=1, is_bfv=False,
        image=objects.ImageMeta.from_dict({'properties': {}}),
        requested_resources=requested_resources or [],
        scheduler_hints={},
        request_level_params=objects.RequestLevelParams(
            root_required=set(root_required),
            root_forbidden=set(root_forbidden),
            same_subtree=same_subtree or []))
    if aggregates or host:
        dest = objects.Destination()
        if aggregates:
            dest.aggregates = aggregates
        if host:
            dest.host = host
            dest.node = host
        spec.requested_destination = dest
    return spec


def resources_for(nova, spec):
    from nova.scheduler import utils as scheduler_utils
    return scheduler_utils.resources_from_request_spec(
        nova['ctx'], spec, _HostManager())


def candidates(nova, spec):
    res_req = resources_for(nova, spec)
    reqs, summaries, version = nova['client'].get_allocation_candidates(
        nova['ctx'], res_req)
    assert reqs is not None, (
        'get_allocation_candidates failed (nova logged the error; see the '
        'client trace) for %s' % res_req.to_querystring())
    return reqs, summaries, version, res_req


def roots_of(alloc_request):
    return {rp_root(rp) for rp in alloc_request['allocations']}


def rp_root(rp):
    for host in ('cn1', 'cn2', 'cn3'):
        if rp in tree_uuids(host):
            return host
    return None


def tree_uuids(host):
    names = [host, '%s_NUMA0' % host, '%s_NUMA1' % host, '%s_ens1f0' % host,
             '%s_ens2f0' % host, '%s_0000:3b:00.0' % host,
             '%s_pci_0000_84_00_0' % host]
    return {rp_uuid(n) for n in names}


def allocs_of(api, consumer):
    return api.get('/allocations/%s' % consumer, version='1.38')


def flat(allocations):
    """{rp_uuid: {rc: amount}} from an allocations dict."""
    return {rp: dict(a['resources']) for rp, a in allocations.items()}


def usages(api, rp):
    return api.get('/resource_providers/%s/usages' % rp)['usages']


def pick(reqs, host):
    for req in reqs:
        if roots_of(req) == {host}:
            return req
    raise AssertionError('no candidate on %s in %s' % (host, reqs))


# Steps ---------------------------------------------------------------------

def test_register_compute_nodes_with_nested_trees(nova, api):
    """nova-compute start-up: root, NUMA, PF and PCI providers, traits."""
    client, ctx = nova['client'], nova['ctx']
    for host in ('cn1', 'cn2'):
        driver = nova['drivers'][host] = FakeDriver(host)
        resource_tracker_update(client, ctx, driver, startup=True)

    for host in ('cn1', 'cn2'):
        root = rp_uuid(host)
        rps = api.get('/resource_providers?in_tree=%s' % root,
                      version='1.14')['resource_providers']
        by_name = {rp['name']: rp for rp in rps}
        assert set(by_name) == {
            host, '%s_NUMA0' % host, '%s_NUMA1' % host, '%s_ens1f0' % host,
            '%s_ens2f0' % host, '%s_0000:3b:00.0' % host}
        for name, rp in by_name.items():
            assert rp['uuid'] == rp_uuid(name)
            assert rp['root_provider_uuid'] == root
        assert by_name[host]['parent_provider_uuid'] is None
        assert by_name['%s_NUMA0' % host]['parent_provider_uuid'] == root
        assert (by_name['%s_ens2f0' % host]['parent_provider_uuid']
                == rp_uuid('%s_NUMA1' % host))

        root_inv = api.get('/resource_providers/%s/inventories' % root)
        assert root_inv['inventories']['VCPU']['total'] == 16
        assert root_inv['inventories']['VCPU']['allocation_ratio'] == 4.0
        assert root_inv['inventories']['MEMORY_MB']['reserved'] == 512
        assert set(root_inv['inventories']) == {'VCPU', 'MEMORY_MB',
                                                'DISK_GB'}
        pf = api.get('/resource_providers/%s/inventories' %
                     rp_uuid('%s_ens1f0' % host))
        assert pf['inventories']['SRIOV_NET_VF']['total'] == 8
        gpu = api.get('/resource_providers/%s/inventories' %
                      rp_uuid('%s_0000:3b:00.0' % host))
        assert gpu['inventories'][GPU_RC]['max_unit'] == 1
        traits = api.get('/resource_providers/%s/traits' % root)['traits']
        assert set(traits) == nova['drivers'][host].root_traits
        pf_traits = api.get('/resource_providers/%s/traits' %
                            rp_uuid('%s_ens2f0' % host))['traits']
        assert set(pf_traits) == {'HW_NIC_SRIOV', 'CUSTOM_PHYSNET_PHYSNET1'}

    # The client's own view of the tree.
    in_tree = client.get_providers_in_tree(ctx, rp_uuid('cn1'))
    assert len(in_tree) == 6
    assert api.get('/resource_classes/%s' % GPU_RC)['name'] == GPU_RC


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_periodic_update_from_fresh_cache_writes_nothing(nova, api):
    """A restarted nova-compute reads the trees back and finds no change.

    With an empty cache the client reads every provider, inventory, trait
    and aggregate from the server; if any of them came back different from
    what was written (a missing field, another type), nova would write
    again and bump generations.
    """
    client, ctx = nova['client'], nova['ctx']
    before = {rp['uuid']: rp['generation'] for rp in api.get(
        '/resource_providers?in_tree=%s' % rp_uuid('cn1'),
        version='1.14')['resource_providers']}
    client.clear_provider_cache()
    conftest.TRACE.clear()
    resource_tracker_update(client, ctx, nova['drivers']['cn1'])
    writes = [t for t in conftest.TRACE
              if t.split()[1] in ('PUT', 'POST', 'DELETE')]
    assert writes == [], 'unexpected writes:\n' + '\n'.join(writes)
    after = {rp['uuid']: rp['generation'] for rp in api.get(
        '/resource_providers?in_tree=%s' % rp_uuid('cn1'),
        version='1.14')['resource_providers']}
    assert before == after


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_inventory_and_trait_changes_are_flushed(nova, api):
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn2']
    driver.root_inventory['MEMORY_MB'] = inv(65536, reserved=2048)
    driver.root_traits.discard('HW_CPU_X86_SSE42')
    driver.root_traits.add('CUSTOM_INTEROP_GOLD')
    driver.children['cn2_NUMA1']['inventory']['PCPU'] = inv(6)
    resource_tracker_update(client, ctx, driver)

    root = rp_uuid('cn2')
    assert api.get('/resource_providers/%s/inventories/MEMORY_MB'
                   % root)['reserved'] == 2048
    assert set(api.get('/resource_providers/%s/traits' % root)['traits']) \
        == driver.root_traits
    assert api.get('/resource_providers/%s/inventories/PCPU'
                   % rp_uuid('cn2_NUMA1'))['total'] == 6
    assert api.get('/traits/CUSTOM_INTEROP_GOLD', expect=204) is None


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_generation_conflict_is_detected_and_redriven(nova, api):
    """Someone else changed a provider: nova gets 409, refreshes, redoes."""
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn1']
    numa0 = rp_uuid('cn1_NUMA0')
    # an out-of-band write bumps the provider generation behind nova's back
    api.set_inventories(numa0, {'PCPU': inv(7)})
    driver.children['cn1_NUMA0']['inventory']['PCPU'] = inv(8, reserved=1)
    with pytest.raises(exception.ResourceProviderUpdateConflict):
        resource_tracker_update(client, ctx, driver)
    # the next periodic run starts from fresh data and succeeds
    resource_tracker_update(client, ctx, driver)
    pcpu = api.get('/resource_providers/%s/inventories/PCPU' % numa0)
    assert (pcpu['total'], pcpu['reserved']) == (8, 1)


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_host_aggregates_are_mirrored(nova, api):
    """nova-api's aggregate add/remove host, mirrored into placement."""
    client, ctx = nova['client'], nova['ctx']
    for host in ('cn1', 'cn2'):
        client.aggregate_add_host(ctx, AGG_NOVA, host_name=host)
    client.aggregate_add_host(ctx, AGG_GOLD, host_name='cn2')
    assert set(api.get('/resource_providers/%s/aggregates' % rp_uuid('cn2'))
               ['aggregates']) == {AGG_NOVA, AGG_GOLD}
    client.aggregate_remove_host(ctx, AGG_GOLD, 'cn2')
    assert api.get('/resource_providers/%s/aggregates' % rp_uuid('cn2'))[
        'aggregates'] == [AGG_NOVA]
    assert client._get_provider_aggregates(ctx, rp_uuid('cn1')).aggregates \
        == {AGG_NOVA}
    members = api.get('/resource_providers?member_of=%s' % AGG_NOVA,
                      version='1.14')['resource_providers']
    assert {rp['uuid'] for rp in members} == {rp_uuid('cn1'), rp_uuid('cn2')}


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_allocation_candidates_for_granular_request(nova, api):
    """Dedicated CPUs, a GPU (flavor group) and an SR-IOV port (port group).

    PCPU comes from either NUMA cell, MEMORY_MB and DISK_GB from the root
    (the unsuffixed group spreads over the tree), the VF from the PF on
    PHYSNET0 and the GPU from the PCI provider: two candidates per host.
    """
    port_group = objects.RequestGroup(
        requester_id=PORT_1, resources={'SRIOV_NET_VF': 1},
        required_traits={'CUSTOM_PHYSNET_PHYSNET0'})
    spec = request_spec(
        extra_specs={'hw:cpu_policy': 'dedicated',
                     'resources_GPU:%s' % GPU_RC: '1',
                     'trait:HW_CPU_X86_AVX2': 'required',
                     'group_policy': 'none'},
        requested_resources=[port_group])
    reqs, summaries, version, res_req = candidates(nova, spec)
    query = res_req.to_querystring()
    assert 'resources_GPU=' in query and ('resources%s=' % PORT_1) in query
    assert 'root_required=' in query
    assert version == '1.36'
    assert len(reqs) == 4, reqs
    assert sorted(rp_root(next(iter(r['allocations']))) for r in reqs) == [
        'cn1', 'cn1', 'cn2', 'cn2']
    seen_numa = set()
    for req in reqs:
        host = rp_root(next(iter(req['allocations'])))
        allocs = flat(req['allocations'])
        numa = [n for n in ('%s_NUMA0' % host, '%s_NUMA1' % host)
                if rp_uuid(n) in allocs]
        assert len(numa) == 1
        seen_numa.add(numa[0])
        assert allocs[rp_uuid(numa[0])] == {'PCPU': 4}
        assert allocs[rp_uuid(host)] == {'MEMORY_MB': 2048, 'DISK_GB': 20}
        assert allocs[rp_uuid('%s_ens1f0' % host)] == {'SRIOV_NET_VF': 1}
        assert allocs[rp_uuid('%s_0000:3b:00.0' % host)] == {GPU_RC: 1}
        assert len(allocs) == 4
        mappings = req['mappings']
        assert mappings[PORT_1] == [rp_uuid('%s_ens1f0' % host)]
        assert mappings['_GPU'] == [rp_uuid('%s_0000:3b:00.0' % host)]
        assert sorted(mappings['']) == sorted(
            [rp_uuid(host), rp_uuid(numa[0])])
    assert len(seen_numa) == 4
    root = summaries[rp_uuid('cn1')]
    assert root['resources']['VCPU'] == {'capacity': 64, 'used': 0}
    assert root['resources']['MEMORY_MB'] == {'capacity': 65024, 'used': 0}
    assert ISOLATION_TRAIT in root['traits']
    assert root['root_provider_uuid'] == rp_uuid('cn1')
    assert root['parent_provider_uuid'] is None
    pf = summaries[rp_uuid('cn1_ens1f0')]
    assert pf['parent_provider_uuid'] == rp_uuid('cn1_NUMA0')
    assert 'CUSTOM_PHYSNET_PHYSNET0' in pf['traits']
    nova['candidates'] = reqs


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_allocation_candidates_same_subtree_isolate_limit(nova, api):
    """NUMA affinity of a VF with the CPUs (same_subtree), group_policy
    isolate and nova's limit."""
    spec = request_spec(
        extra_specs={'resources_NUMA:PCPU': '2',
                     'trait_NUMA:HW_NUMA_ROOT': 'required',
                     'resources_VF:SRIOV_NET_VF': '1',
                     'group_policy': 'isolate'},
        same_subtree=[['_NUMA', '_VF']])
    reqs, summaries, version, res_req = candidates(nova, spec)
    assert 'same_subtree=_NUMA%2C_VF' in res_req.to_querystring()
    pairs = set()
    for req in reqs:
        m = req['mappings']
        pairs.add((m['_NUMA'][0], m['_VF'][0]))
    expected = set()
    for host in ('cn1', 'cn2'):
        expected.add((rp_uuid('%s_NUMA0' % host),
                      rp_uuid('%s_ens1f0' % host)))
        expected.add((rp_uuid('%s_NUMA1' % host),
                      rp_uuid('%s_ens2f0' % host)))
    assert pairs == expected
    assert len(reqs) == 4

    res_req._limit = 3
    reqs, _, _ = nova['client'].get_allocation_candidates(nova['ctx'],
                                                          res_req)
    assert reqs is not None and len(reqs) == 3


@pytest.mark.after('test_allocation_candidates_for_granular_request')
def test_claim_resources_for_instance(nova, api):
    client, ctx = nova['client'], nova['ctx']
    chosen = pick(nova['candidates'], 'cn1')
    assert client.claim_resources(ctx, INSTANCE, chosen, PROJECT, USER,
                                  allocation_request_version='1.36') is True
    got = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert got['consumer_generation'] == 1
    assert got['project_id'] == PROJECT and got['user_id'] == USER
    assert flat(got['allocations']) == flat(chosen['allocations'])
    assert usages(api, rp_uuid('cn1'))['MEMORY_MB'] == 2048
    nova['claimed'] = chosen
    # a second claim against a fresh consumer for the only GPU of cn1 finds
    # it used: cn1 no longer offers the GPU
    spec = request_spec(extra_specs={'resources:%s' % GPU_RC: '1'},
                        vcpus=1, memory_mb=512, root_gb=1)
    reqs, summaries, _, _ = candidates(nova, spec)
    assert {rp_root(next(iter(r['allocations']))) for r in reqs} == {'cn2'}
    assert summaries[rp_uuid('cn2_0000:3b:00.0')]['resources'][GPU_RC] == {
        'capacity': 1, 'used': 0}


@pytest.mark.after('test_claim_resources_for_instance')
def test_weighers_choose_what_nova_keeps_with_its_limit(nova, api, server):
    """Nova keeps the first ``max_placement_results`` candidates: an
    operator's spread weigher (Tachyon's own API) makes them the emptiest
    hosts, with nothing changed in Nova."""
    if server.target != 'tachyon':
        pytest.skip('weighers are Tachyon\'s own (target %s)'
                    % server.target)
    client, ctx = nova['client'], nova['ctx']
    res_req = resources_for(nova, request_spec(vcpus=1, memory_mb=512,
                                               root_gb=1))
    res_req._limit = 1

    def first_host():
        reqs, _, _ = client.get_allocation_candidates(ctx, res_req)
        assert reqs is not None and len(reqs) == 1
        return rp_root(next(iter(reqs[0]['allocations'])))

    # Placement's order: the oldest host, cn1, which the claim loaded.
    assert first_host() == 'cn1'
    assert usages(api, rp_uuid('cn1'))['MEMORY_MB'] > usages(
        api, rp_uuid('cn2')).get('MEMORY_MB', 0)
    weigher = '/tachyon/weighers/interop-spread-ram'
    api.request('PUT', weigher, {
        'weight': 1, 'scorer': {'type': 'usage', 'resource_class': 'MEMORY_MB',
                                'mode': 'spread'}}, expect=201)
    try:
        assert first_host() == 'cn2'
    finally:
        api.request('DELETE', weigher, expect=204)
    assert first_host() == 'cn1'


def _wait_for(condition, timeout=30):
    """Seconds until ``condition()`` held (fails after ``timeout``)."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, 'not within %ss' % timeout
        time.sleep(0.2)
    return time.monotonic() - start


@pytest.mark.after('test_weighers_choose_what_nova_keeps_with_its_limit')
def test_nova_gets_the_coolest_hosts_first(nova, api, server):
    """Telemetry: the CPU utilisation a real Prometheus scrapes from the
    hosts' exporter orders what Nova keeps with its limit, coolest first,
    and a change of load changes Nova's pick within a collection."""
    if server.target != 'tachyon':
        pytest.skip('weighers are Tachyon\'s own (target %s)'
                    % server.target)
    feed = server.telemetry
    if feed is None:
        pytest.skip('no prometheus binary on this machine (Debian package '
                    'prometheus; tools/run-tests.sh installs it)')
    client, ctx = nova['client'], nova['ctx']
    res_req = resources_for(nova, request_spec(vcpus=1, memory_mb=512,
                                               root_gb=1))
    res_req._limit = 2

    def hosts():
        reqs, _, _ = client.get_allocation_candidates(ctx, res_req)
        assert reqs is not None
        return [rp_root(next(iter(r['allocations']))) for r in reqs]

    assert hosts() == ['cn1', 'cn2']            # Placement's order
    for host, percent in (('cn1', 85.0), ('cn2', 10.0), ('cn3', 50.0)):
        feed.set_cpu(host, percent)
    api.request('PUT', '/tachyon/metrics/interop-cpu', {
        'query': 'host_cpu_utilisation', 'label': 'instance',
        'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}}, expect=201)
    api.request('PUT', '/tachyon/weighers/interop-coolest', {
        'weight': 1, 'scorer': {'type': 'metric', 'metric': 'interop-cpu'}},
        expect=201)
    try:
        _wait_for(lambda: hosts() == ['cn2', 'cn1'])
        # cn2 gets busy: Nova's next request sees cn1 first.
        feed.set_cpu('cn2', 95.0)
        seconds = _wait_for(lambda: hosts() == ['cn1', 'cn2'])
        conftest.trace('coolest host first %.1f s after the load changed'
                       % seconds)
    finally:
        api.request('DELETE', '/tachyon/weighers/interop-coolest',
                    expect=204)
        api.request('DELETE', '/tachyon/metrics/interop-cpu', expect=204)
    assert hosts() == ['cn1', 'cn2']


@pytest.mark.after('test_claim_resources_for_instance')
def test_usages_for_quota_and_limits(nova, api):
    client, ctx = nova['client'], nova['ctx']
    counts = client.get_usages_counts_for_quota(ctx, PROJECT, USER)
    assert counts == {'project': {'cores': 4, 'ram': 2048},
                      'user': {'cores': 4, 'ram': 2048}}
    other = client.get_usages_counts_for_quota(ctx, PROJECT, OTHER_USER)
    assert other['user'] == {'cores': 0, 'ram': 0}
    limits = client.get_usages_counts_for_limits(ctx, PROJECT)
    assert limits == {'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 20,
                      'SRIOV_NET_VF': 1, GPU_RC: 1}
    by_rp = client.get_allocations_for_resource_provider(
        ctx, rp_uuid('cn1')).allocations
    assert by_rp[INSTANCE]['resources'] == {'MEMORY_MB': 2048,
                                            'DISK_GB': 20}


@pytest.mark.after('test_claim_resources_for_instance')
def test_cold_migrate_then_revert(nova, api):
    """Conductor moves the source allocation to the migration, the
    scheduler claims on the (targeted) destination, revert moves back."""
    client, ctx = nova['client'], nova['ctx']
    assert client.move_allocations(ctx, INSTANCE, MIGRATION_1) is True
    mig = client.get_allocs_for_consumer(ctx, MIGRATION_1)
    assert flat(mig['allocations']) == flat(nova['claimed']['allocations'])
    assert mig['project_id'] == PROJECT
    assert client.get_allocs_for_consumer(ctx, INSTANCE)['allocations'] == {}

    # targeted destination host: the scheduler adds in_tree
    spec = request_spec(extra_specs={'hw:cpu_policy': 'dedicated'},
                        host='cn2')
    reqs, _, _, res_req = candidates(nova, spec)
    assert 'in_tree=%s' % rp_uuid('cn2') in res_req.to_querystring()
    assert reqs and all(roots_of(r) == {'cn2'} for r in reqs)
    assert client.claim_resources(ctx, INSTANCE, reqs[0], PROJECT, USER,
                                  allocation_request_version='1.36')
    assert roots_of(client.get_allocs_for_consumer(ctx, INSTANCE)) == {'cn2'}
    assert usages(api, rp_uuid('cn1'))['MEMORY_MB'] == 2048  # migration's
    assert usages(api, rp_uuid('cn2'))['MEMORY_MB'] == 2048  # instance's

    # revert resize: the source allocation goes back to the instance
    assert client.move_allocations(ctx, MIGRATION_1, INSTANCE) is True
    back = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert flat(back['allocations']) == flat(nova['claimed']['allocations'])
    assert client.get_allocs_for_consumer(ctx, MIGRATION_1)[
        'allocations'] == {}
    assert usages(api, rp_uuid('cn2'))['MEMORY_MB'] == 0


@pytest.mark.after('test_cold_migrate_then_revert')
def test_cold_migrate_then_confirm(nova, api):
    client, ctx = nova['client'], nova['ctx']
    assert client.move_allocations(ctx, INSTANCE, MIGRATION_2) is True
    spec = request_spec(extra_specs={'hw:cpu_policy': 'dedicated'},
                        host='cn2')
    reqs, _, _, _ = candidates(nova, spec)
    assert client.claim_resources(ctx, INSTANCE, reqs[0], PROJECT, USER,
                                  allocation_request_version='1.36')
    # confirm resize: the source compute drops the migration's allocation
    assert client.delete_allocation_for_instance(
        ctx, MIGRATION_2, consumer_type='migration') is True
    assert client.get_allocs_for_consumer(ctx, MIGRATION_2)[
        'allocations'] == {}
    now = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert roots_of(now) == {'cn2'}
    assert usages(api, rp_uuid('cn1'))['MEMORY_MB'] == 0
    assert usages(api, rp_uuid('cn1_0000:3b:00.0'))[GPU_RC] == 0


@pytest.mark.after('test_cold_migrate_then_confirm')
def test_evacuate_doubles_up_then_source_tree_removed(nova, api):
    """Evacuation claims on the destination while the source allocation
    stays (a doubled-up allocation); the recovered source host then
    removes its tree from the instance's allocation."""
    client, ctx = nova['client'], nova['ctx']
    spec = request_spec(extra_specs={'hw:cpu_policy': 'dedicated'},
                        host='cn1')
    reqs, _, _, _ = candidates(nova, spec)
    assert client.claim_resources(ctx, INSTANCE, reqs[0], PROJECT, USER,
                                  allocation_request_version='1.36')
    doubled = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert {rp_root(rp) for rp in doubled['allocations']} == {'cn1', 'cn2'}
    client.remove_provider_tree_from_instance_allocation(
        ctx, INSTANCE, rp_uuid('cn2'))
    after = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert {rp_root(rp) for rp in after['allocations']} == {'cn1'}
    assert flat(after['allocations']) == flat(reqs[0]['allocations'])
    assert after['consumer_generation'] == doubled['consumer_generation'] + 1
    assert usages(api, rp_uuid('cn2'))['MEMORY_MB'] == 0


@pytest.mark.after('test_evacuate_doubles_up_then_source_tree_removed')
def test_stale_consumer_generation_is_reported(nova, api):
    """A forced evacuation passes the consumer generation the conductor
    saw; if the instance changed since, placement's 409 ("consumer
    generation conflict") becomes AllocationUpdateFailed, and a move of a
    changed consumer is refused the same way."""
    client, ctx = nova['client'], nova['ctx']
    current = client.get_allocs_for_consumer(ctx, INSTANCE)
    spec = request_spec(extra_specs={'hw:cpu_policy': 'dedicated'},
                        host='cn2')
    reqs, _, _, _ = candidates(nova, spec)
    stale = copy.deepcopy(reqs[0])
    stale['consumer_generation'] = current['consumer_generation'] - 1
    with pytest.raises(exception.AllocationUpdateFailed):
        client.claim_resources(ctx, INSTANCE, stale, PROJECT, USER,
                               allocation_request_version='1.36')
    assert client.get_allocs_for_consumer(ctx, INSTANCE) == current


@pytest.mark.after('test_evacuate_doubles_up_then_source_tree_removed')
def test_attach_and_detach_port_with_resource_request(nova, api):
    client, ctx = nova['client'], nova['ctx']
    vf = {rp_uuid('cn1_ens2f0'): {'resources': {'SRIOV_NET_VF': 1}}}
    before = client.get_allocs_for_consumer(ctx, INSTANCE)
    client.add_resources_to_instance_allocation(ctx, INSTANCE, vf)
    attached = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert flat(attached['allocations'])[rp_uuid('cn1_ens2f0')] == {
        'SRIOV_NET_VF': 1}
    assert usages(api, rp_uuid('cn1_ens2f0'))['SRIOV_NET_VF'] == 1
    client.remove_resources_from_instance_allocation(ctx, INSTANCE, vf)
    detached = client.get_allocs_for_consumer(ctx, INSTANCE)
    assert flat(detached['allocations']) == flat(before['allocations'])
    assert usages(api, rp_uuid('cn1_ens2f0'))['SRIOV_NET_VF'] == 0
    assert detached['consumer_generation'] == (
        before['consumer_generation'] + 2)


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_disabled_compute_is_filtered_out(nova, api):
    """nova-compute adds COMPUTE_STATUS_DISABLED when its service is
    disabled; the scheduler's root_forbidden then drops the host."""
    from nova.compute import manager

    class Compute:
        reportclient = nova['client']

    virtapi = manager.ComputeVirtAPI(Compute())
    virtapi.update_compute_provider_status(nova['ctx'], rp_uuid('cn2'),
                                           enabled=False)
    traits = api.get('/resource_providers/%s/traits' % rp_uuid('cn2'))
    assert os_traits.COMPUTE_STATUS_DISABLED in traits['traits']
    spec = request_spec(vcpus=1, memory_mb=128, root_gb=1)
    reqs, _, _, _ = candidates(nova, spec)
    assert reqs and {rp_root(next(iter(r['allocations'])))
                     for r in reqs} == {'cn1'}
    virtapi.update_compute_provider_status(nova['ctx'], rp_uuid('cn2'),
                                           enabled=True)
    traits = api.get('/resource_providers/%s/traits' % rp_uuid('cn2'))
    assert os_traits.COMPUTE_STATUS_DISABLED not in traits['traits']
    reqs, _, _, _ = candidates(nova, spec)
    assert {rp_root(next(iter(r['allocations'])))
            for r in reqs} == {'cn1', 'cn2'}


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_member_of_from_aggregate_request_filter(nova, api):
    """A request filter (tenant isolation / AZ) restricts to aggregates."""
    nova['client'].aggregate_add_host(nova['ctx'], AGG_GOLD, host_name='cn1')
    spec = request_spec(vcpus=1, memory_mb=128, root_gb=1,
                        aggregates=[AGG_GOLD])
    reqs, _, _, res_req = candidates(nova, spec)
    assert 'member_of=in%3A' + AGG_GOLD in res_req.to_querystring()
    assert reqs and {rp_root(next(iter(r['allocations'])))
                     for r in reqs} == {'cn1'}
    nova['client'].aggregate_remove_host(nova['ctx'], AGG_GOLD, 'cn1')


def test_register_compute_node_with_vgpu_on_root(nova, api):
    """An older driver: VGPU inventory on the root, one instance using it."""
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn3'] = FakeDriver('cn3', numa=False,
                                                 pci=False, vgpu_on_root=4)
    driver.root_traits.add('CUSTOM_INTEROP_RESHAPE')
    resource_tracker_update(client, ctx, driver, startup=True)
    spec = request_spec(vcpus=1, memory_mb=512, root_gb=1,
                        extra_specs={'resources:VGPU': '1'},
                        root_required=('CUSTOM_INTEROP_RESHAPE',))
    reqs, _, _, _ = candidates(nova, spec)
    assert len(reqs) == 1
    assert flat(reqs[0]['allocations']) == {rp_uuid('cn3'): {
        'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'VGPU': 1}}
    assert client.claim_resources(ctx, INSTANCE_VGPU, reqs[0], PROJECT, USER,
                                  allocation_request_version='1.36')


@pytest.mark.after('test_register_compute_node_with_vgpu_on_root')
def test_reshape_needs_the_service_role(nova, api):
    """POST /reshaper is for services only: without the service role the
    reshape is refused and nova reports ReshapeFailed."""
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn3']
    driver.reshape_vgpu = True
    headers = client._client.additional_headers
    headers['X-Roles'] = 'admin,member,reader'
    try:
        with pytest.raises(exception.ReshapeFailed) as err:
            resource_tracker_update(client, ctx, driver, startup=True)
    finally:
        headers['X-Roles'] = NOVA_ROLES
    assert '403' in str(err.value) or 'orbidden' in str(err.value)
    # nothing moved
    assert 'VGPU' in api.get('/resource_providers/%s/inventories'
                             % rp_uuid('cn3'))['inventories']
    assert flat(allocs_of(api, INSTANCE_VGPU)['allocations']) == {
        rp_uuid('cn3'): {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1,
                         'VGPU': 1}}


@pytest.mark.after('test_register_compute_node_with_vgpu_on_root')
def test_reshape_generation_conflict(nova, api):
    """A provider changes while the driver prepares the reshape: placement
    answers 409 placement.concurrent_update, which nova turns into
    PlacementReshapeConflict (and a later periodic run redoes it)."""
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn3']
    driver.reshape_vgpu = True
    root = rp_uuid('cn3')
    driver.before_reshape = lambda: api.set_aggregates(root, [AGG_GOLD])
    client.clear_provider_cache()
    with pytest.raises(exception.PlacementReshapeConflict):
        resource_tracker_update(client, ctx, driver, startup=True)
    assert api.get('/resource_providers/%s/aggregates' % root)[
        'aggregates'] == [AGG_GOLD]
    assert 'VGPU' in api.get('/resource_providers/%s/inventories'
                             % root)['inventories']
    assert flat(allocs_of(api, INSTANCE_VGPU)['allocations']) == {
        root: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1, 'VGPU': 1}}
    api.set_aggregates(root, [])


@pytest.mark.after('test_register_compute_node_with_vgpu_on_root')
def test_reshape_moves_vgpu_inventory_and_allocations_to_child(nova, api):
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn3']
    driver.reshape_vgpu = True
    client.clear_provider_cache()
    resource_tracker_update(client, ctx, driver, startup=True)
    assert any(' POST ' in t and '/reshaper' in t and '[1.30]' in t
               for t in conftest.TRACE), 'nova did not POST /reshaper'
    root, child = rp_uuid('cn3'), rp_uuid(driver.vgpu_child)
    assert 'VGPU' not in api.get('/resource_providers/%s/inventories'
                                 % root)['inventories']
    assert api.get('/resource_providers/%s/inventories/VGPU'
                   % child)['total'] == 4
    assert api.get('/resource_providers/%s' % child,
                   version='1.14')['parent_provider_uuid'] == root
    got = allocs_of(api, INSTANCE_VGPU)
    assert flat(got['allocations']) == {
        root: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
        child: {'VGPU': 1}}
    assert usages(api, child) == {'VGPU': 1}
    # and the next periodic run finds nothing more to do
    conftest.TRACE.clear()
    resource_tracker_update(client, ctx, driver)
    writes = [t for t in conftest.TRACE
              if t.split()[1] in ('PUT', 'POST', 'DELETE')]
    assert writes == [], 'unexpected writes:\n' + '\n'.join(writes)


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_heal_allocations_put(nova, api):
    """nova-manage placement heal_allocations writes a whole allocation;
    a stale consumer generation is refused as a consumer generation
    conflict."""
    try:
        _heal_allocations(nova, api)
    finally:  # never leave usage behind for the later steps
        api.request('DELETE', '/allocations/%s' % INSTANCE_HEAL)


def _heal_allocations(nova, api):
    client, ctx = nova['client'], nova['ctx']
    payload = {'allocations': {rp_uuid('cn1'): {'resources': {
        'VCPU': 1, 'MEMORY_MB': 256}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None}
    assert client.put_allocations(ctx, INSTANCE_HEAL, payload) is True
    got = client.get_allocs_for_consumer(ctx, INSTANCE_HEAL)
    assert got['consumer_generation'] == 1
    assert flat(got['allocations']) == {rp_uuid('cn1'): {
        'VCPU': 1, 'MEMORY_MB': 256}}
    with pytest.raises(exception.AllocationUpdateFailed):
        client.put_allocations(ctx, INSTANCE_HEAL, payload)
    payload['consumer_generation'] = 1
    payload['allocations'][rp_uuid('cn1')]['resources']['VCPU'] = 2
    assert client.put_allocations(ctx, INSTANCE_HEAL, payload) is True
    assert usages(api, rp_uuid('cn1'))['VCPU'] == 2
    assert client.delete_allocation_for_instance(ctx, INSTANCE_HEAL,
                                                 force=True) is True


@pytest.mark.after('test_claim_resources_for_instance')
def test_delete_instance_allocations(nova, api):
    client, ctx = nova['client'], nova['ctx']
    assert client.delete_allocation_for_instance(ctx, INSTANCE) is True
    assert client.get_allocs_for_consumer(ctx, INSTANCE)['allocations'] == {}
    # already gone
    assert client.delete_allocation_for_instance(ctx, INSTANCE) is False
    for name in ('cn1', 'cn1_NUMA0', 'cn1_NUMA1', 'cn1_ens1f0',
                 'cn1_0000:3b:00.0'):
        assert all(v == 0 for v in usages(api, rp_uuid(name)).values()), name
    assert client.get_usages_counts_for_quota(ctx, PROJECT)['project'][
        'ram'] in (0, 512)   # 512: the VGPU instance, if it exists


@pytest.mark.after('test_register_compute_node_with_vgpu_on_root')
def test_force_delete_allocations(nova, api):
    client, ctx = nova['client'], nova['ctx']
    assert client.delete_allocation_for_instance(ctx, INSTANCE_VGPU,
                                                 force=True) is True
    assert allocs_of(api, INSTANCE_VGPU)['allocations'] == {}


@pytest.mark.after('test_delete_instance_allocations')
def test_driver_drops_a_child_provider(nova, api):
    """The GPU is removed from the host: its provider is deleted."""
    client, ctx = nova['client'], nova['ctx']
    driver = nova['drivers']['cn1']
    del driver.children['cn1_0000:3b:00.0']
    resource_tracker_update(client, ctx, driver)
    api.request('GET', '/resource_providers/%s'
                % rp_uuid('cn1_0000:3b:00.0'), expect=404)
    rps = api.get('/resource_providers?in_tree=%s' % rp_uuid('cn1'),
                  version='1.14')['resource_providers']
    assert len(rps) == 5


@pytest.mark.after('test_register_compute_nodes_with_nested_trees',
                   'test_delete_instance_allocations')
def test_delete_compute_node_provider_tree(nova, api):
    """nova-manage/nova-api deletes a compute service: the whole provider
    tree goes, children first."""
    client, ctx = nova['client'], nova['ctx']
    node = objects.ComputeNode(uuid=rp_uuid('cn2'), host='cn2',
                               hypervisor_hostname='cn2')
    client.delete_resource_provider(ctx, node, cascade=False)
    for name in ('cn2', 'cn2_NUMA0', 'cn2_NUMA1', 'cn2_ens1f0', 'cn2_ens2f0',
                 'cn2_0000:3b:00.0'):
        api.request('GET', '/resource_providers/%s' % rp_uuid(name),
                    expect=404)
    assert client.get_provider_by_name(ctx, 'cn1')['uuid'] == rp_uuid('cn1')
    with pytest.raises(exception.ResourceProviderNotFound):
        client.get_provider_by_name(ctx, 'cn2')


@pytest.mark.after('test_register_compute_nodes_with_nested_trees')
def test_agent_topology_links_to_novas_pci_providers(nova, api, server):
    """nova-compute with [pci] report_in_placement: Nova's own PCI
    placement view (nova.compute.pci_placement_translator) makes the PCI
    providers of a host whose VFs and GPU are in [pci] device_spec; the
    topology agent then publishes that host's sysfs (a Xeon server's tree
    shipped with Tachyon's tests) and its NUMA nodes and devices link to
    the providers Nova made."""
    if server.target != 'tachyon':
        pytest.skip('the topology API is Tachyon\'s own (target %s)'
                    % server.target)
    from nova.compute import pci_placement_translator as translator
    from nova.compute import provider_tree
    from nova.pci import devspec
    import subprocess

    client, ctx = nova['client'], nova['ctx']
    host = 'cn5'
    tree = client.get_provider_subtree_and_ensure_root(
        ctx, rp_uuid(host), name=host)
    tree.update_inventory(host, {'VCPU': inv(40), 'MEMORY_MB': inv(393216)})
    assert isinstance(tree, provider_tree.ProviderTree)
    view = translator.PlacementView(host, [])
    devices = [('0000:3b:02.%d' % n, 'type-VF', '8086', '154c', 0,
                '0000:3b:00.0') for n in range(4)]
    devices.append(('0000:af:00.0', 'type-PCI', '10de', '1eb8', 1, None))
    for address, dev_type, vendor, product, numa, parent in devices:
        dev = objects.PciDevice(
            compute_node_id=1, address=address, dev_type=dev_type,
            vendor_id=vendor, product_id=product, numa_node=numa,
            parent_addr=parent, status='available', instance_uuid=None,
            extra_info={}, dev_id='pci_%s' % address.replace(':', '_'),
            label='label_%s_%s' % (vendor, product), request_id=None)
        view.process_dev(dev, devspec.PciDeviceSpec(
            {'vendor_id': vendor, 'product_id': product}))
    view.update_provider_tree(tree, {})
    client.update_from_provider_tree(ctx, tree)
    in_tree = {rp['name']: rp for rp in api.get(
        '/resource_providers?in_tree=%s' % rp_uuid(host),
        version='1.14')['resource_providers']}
    # Nova's naming: <hostname>_<ADDRESS>, the PF of the VFs.
    assert set(in_tree) == {host, 'cn5_0000:3B:00.0', 'cn5_0000:AF:00.0'}

    sysfs = os.path.join(conftest.ROOT, 'tachyon_placement', 'tests',
                         'fixtures', 'sysfs', 'r740-2s-2n')
    config = os.path.join(server.workdir, 'agent.conf')
    with open(config, 'w') as out:
        out.write('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                  'token = %s\n[topology_agent]\nhost = %s\n'
                  'sysfs_root = %s\ninterval = 0\n'
                  % (server.endpoint, conftest.TOKEN, host, sysfs))
    result = subprocess.run(
        [conftest._server_python(), '-m',
         'tachyon_placement.cmd.topology_agent', '--config-file', config],
        capture_output=True, text=True, timeout=120, cwd=conftest.ROOT)
    assert result.returncode == 0, result.stderr
    topology = api.get('/tachyon/topology/hosts/%s' % host, version=None)
    assert topology['root_provider_uuid'] == rp_uuid(host)
    by_address = {d['address']: d for d in topology['pci_devices']}
    pf_rp = in_tree['cn5_0000:3B:00.0']['uuid']
    assert by_address['0000:3b:00.0']['provider_uuid'] == pf_rp
    assert by_address['0000:3b:02.3']['provider_uuid'] == pf_rp
    assert by_address['0000:3b:00.0']['free'] == {'CUSTOM_PCI_8086_154C': 4}
    assert by_address['0000:af:00.0']['provider_uuid'] == in_tree[
        'cn5_0000:AF:00.0']['uuid']
    assert by_address['0000:af:00.0']['numa_node'] == 1
