"""The topology room: the sysfs reader on this machine's sysfs and on the
sysfs trees of real server layouts the tests ship
(tests/fixtures/sysfs, written by tools/make-sysfs-fixtures), the
document's checks, and how parts link to Nova's providers."""
import os
import types

import pytest

from tachyon_placement.topology import links
from tachyon_placement.topology import model
from tachyon_placement.topology import sysfs

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                        'fixtures', 'sysfs')


def read(server, mappings=None):
    return sysfs.SysfsReader(os.path.join(FIXTURES, server),
                             mappings).document()


def test_shipped_trees_survive_a_clean_checkout():
    # git keeps no empty directory: a tree that needs one (a device's
    # net/<interface>) reads differently from a fresh clone, as CI found.
    empty = [directory for directory, dirs, files in os.walk(FIXTURES)
             if not dirs and not files]
    assert empty == []


def test_cpulist():
    assert sysfs.parse_cpulist('0-3,8,10-11\n') == [0, 1, 2, 3, 8, 10, 11]
    assert sysfs.parse_cpulist('') == []


def test_two_socket_xeon_with_sriov_nic_and_gpu():
    doc = read('r740-2s-2n', {'ens1f0': 'physnet1'})
    model.check(doc)
    assert doc['sockets'] == [{'id': 0}, {'id': 1}]
    node0, node1 = doc['numa_nodes']
    assert (node0['id'], node0['socket'], node1['socket']) == (0, 0, 1)
    assert node0['cpus'] == list(range(0, 20)) + list(range(40, 60))
    assert node0['memory_mb'] == 196608000 // 1024
    assert node0['distances'] == {'0': 10, '1': 21}
    assert node1['hugepages'] == [
        {'size_kb': 2048, 'total': 4096, 'free': 4096},
        {'size_kb': 1048576, 'total': 8, 'free': 6}]
    devices = {d['address']: d for d in doc['pci_devices']}
    # The host bridge is no device anyone schedules.
    assert '0000:00:00.0' not in devices
    pf = devices['0000:3b:00.0']
    assert (pf['vendor_id'], pf['product_id'], pf['class']) == (
        '8086', '1572', '020000')
    assert (pf['sriov_totalvfs'], pf['sriov_numvfs']) == (64, 4)
    assert (pf['driver'], pf['interfaces']) == ('i40e', ['ens1f0'])
    assert pf['physical_network'] == 'physnet1'
    vfs = [d for d in doc['pci_devices'] if d['physfn'] == '0000:3b:00.0']
    assert [vf['address'] for vf in vfs] == [
        '0000:3b:02.0', '0000:3b:02.1', '0000:3b:02.2', '0000:3b:02.3']
    assert {(vf['product_id'], vf['driver'], vf['numa_node'],
             vf['physical_network']) for vf in vfs} == {
        ('154c', 'iavf', 0, 'physnet1')}
    assert devices['0000:3b:00.1']['physical_network'] is None
    assert devices['0000:af:00.0']['numa_node'] == 1
    # numa_node -1: the firmware does not say.
    assert devices['0000:03:00.0']['numa_node'] is None


def test_epyc_nps2_four_nodes_on_two_sockets():
    doc = read('epyc-2s-4n')
    model.check(doc)
    assert [(n['id'], n['socket']) for n in doc['numa_nodes']] == [
        (0, 0), (1, 0), (2, 1), (3, 1)]
    assert doc['numa_nodes'][1]['distances'] == {
        '0': 12, '1': 10, '2': 32, '3': 32}
    devices = {d['address']: d for d in doc['pci_devices']}
    assert devices['0000:41:00.2']['physfn'] == '0000:41:00.0'
    assert devices['0000:41:00.3']['numa_node'] == 1
    assert [devices[a]['numa_node'] for a in ('0000:81:00.0',
                                              '0000:c1:00.0')] == [2, 3]
    assert devices['0000:c4:00.0']['numa_node'] is None


def _read_text(path):
    with open(path) as f:
        return f.read().strip()


@pytest.mark.skipif(not os.path.isdir('/sys/devices/system/cpu'),
                    reason='no sysfs on this machine')
def test_this_machines_sysfs():
    doc = sysfs.SysfsReader('/').document()
    model.check(doc)
    online = sysfs.parse_cpulist(_read_text('/sys/devices/system/cpu/online'))
    assert sorted(cpu for node in doc['numa_nodes']
                  for cpu in node['cpus']) == online
    nodes = '/sys/devices/system/node'
    if os.path.isdir(nodes):
        assert len(doc['numa_nodes']) == len(
            [n for n in os.listdir(nodes) if n.startswith('node')
             and n[4:].isdigit()])
    assert all(node['memory_mb'] > 0 for node in doc['numa_nodes'])
    functions = sorted(os.listdir('/sys/bus/pci/devices'))
    expected = [address for address in functions
                if not _read_text('/sys/bus/pci/devices/%s/class' % address)
                [2:].startswith(('06', '08'))]
    assert [d['address'] for d in doc['pci_devices']] == expected
    for device in doc['pci_devices']:
        path = '/sys/bus/pci/devices/%s/' % device['address']
        assert device['vendor_id'] == _read_text(path + 'vendor')[2:]
        numa = int(_read_text(path + 'numa_node'))
        assert device['numa_node'] == (None if numa < 0 else numa)


def _doc(**parts):
    doc = {'sockets': [{'id': 0}],
           'numa_nodes': [{'id': 0, 'socket': 0, 'cpus': [0, 1],
                           'memory_mb': 1024}],
           'pci_devices': []}
    doc.update(parts)
    return doc


@pytest.mark.parametrize('doc, message', [
    (_doc(sockets=[{'id': 0}, {'id': 0}]), 'socket id 0 listed twice'),
    (_doc(numa_nodes=[{'id': 0, 'socket': 5, 'cpus': [], 'memory_mb': 1}]),
     'no socket 5'),
    (_doc(numa_nodes=[{'id': 0, 'cpus': [], 'memory_mb': 1,
                       'distances': {'1': 20}}]), 'NUMA node 1'),
    (_doc(pci_devices=[{'address': '0000:01:00.0', 'physfn': '0000:01:00.0',
                        'vendor_id': 'a', 'product_id': 'b',
                        'class': '020000'}]), 'its own PF'),
    (_doc(pci_devices=[{'address': '0000:01:00.0', 'vendor_id': 'a',
                        'product_id': 'b', 'class': '020000'},
                       {'address': '0000:01:00.0', 'vendor_id': 'a',
                        'product_id': 'b', 'class': '020000'}]),
     'listed twice'),
])
def test_inconsistent_documents_are_refused(doc, message):
    with pytest.raises(model.InvalidTopology, match=message):
        model.check(doc)


def P(uuid, name, parent='root', traits=()):
    return links.Provider(uuid, name, parent, frozenset(traits))


def test_links_follow_novas_and_neutrons_names():
    doc = read('r740-2s-2n')
    tree = [P('root', 'cn1', None),
            P('n0', 'cn1_NUMA0', traits={'HW_NUMA_ROOT'}),
            P('n1', 'cn1_NUMA1', traits={'HW_NUMA_ROOT'}),
            P('pf', 'cn1_0000:3B:00.0'),
            P('agent', 'cn1:NIC Switch agent:ens1f1'),
            P('vgpu', 'cn1_pci_0000_af_00_0'),
            # the case of the address does not matter
            P('nvme', 'cn1_0000:5e:00.0')]
    found = links.link('cn1', doc, tree)
    assert found.host == 'root'
    assert found.numa == {0: 'n0', 1: 'n1'}
    assert found.pci['0000:3b:00.0'] == 'pf'
    # VFs count on their PF's provider.
    assert found.pci['0000:3b:02.3'] == 'pf'
    assert found.pci['0000:3b:00.1'] == 'agent'
    assert found.pci['0000:af:00.0'] == 'vgpu'
    assert found.pci['0000:5e:00.0'] == 'nvme'
    assert '0000:03:00.0' not in found.pci
    # Another host's tree: nothing links.
    assert links.link('cn2', doc, tree) == links.Links(None, {}, {})


def test_numa_providers_without_numbered_names_link_in_name_order():
    doc = read('epyc-2s-4n')
    tree = [P('root', 'h', None)] + [
        P('numa-%s' % c, 'h-cell-%s' % c, traits={'HW_NUMA_ROOT'})
        for c in 'dcba']
    assert links.link('h', doc, tree).numa == {
        0: 'numa-a', 1: 'numa-b', 2: 'numa-c', 3: 'numa-d'}
    # A count that does not match: no guess.
    assert links.link('h', doc, tree[:3]).numa == {}


def test_a_provider_whose_devices_sit_on_two_nodes_has_no_node():
    from tachyon_placement.topology import affinity
    doc = _doc(numa_nodes=[
        {'id': 0, 'socket': 0, 'cpus': [0], 'memory_mb': 1},
        {'id': 1, 'socket': 0, 'cpus': [1], 'memory_mb': 1}],
        pci_devices=[
            {'address': '0000:01:00.0', 'vendor_id': 'a', 'product_id': 'b',
             'class': '030000', 'numa_node': 0},
            {'address': '0000:02:00.0', 'vendor_id': 'a', 'product_id': 'b',
             'class': '030000', 'numa_node': 1},
            {'address': '0000:03:00.0', 'vendor_id': 'a', 'product_id': 'b',
             'class': '030000', 'numa_node': 1}])
    found = links.Links('root', {0: 'n0', 1: 'n1'}, {
        '0000:01:00.0': 'shared', '0000:02:00.0': 'shared',
        '0000:03:00.0': 'own'})
    layout = affinity.HostLayout.from_topology(doc, found)
    assert layout.device_numa == {'shared': None, 'own': 1}
    assert layout.numa_providers == {'n0': 0, 'n1': 1}
    assert layout.numa_cpus == {0: 1, 1: 1}


def test_a_per_numa_metric_tells_the_room_of_a_flat_hosts_nodes():
    from tachyon_placement.domain import candidates as domain
    from tachyon_placement.telemetry import metrics
    from tachyon_placement.topology import affinity
    # A flat host (CPUs and memory on the root) with a GPU on each of two
    # NUMA nodes of 16 GiB; a rule requires the GPU on the instance's
    # node.
    doc = _doc(numa_nodes=[
        {'id': 0, 'socket': 0, 'cpus': [0, 1, 2, 3], 'memory_mb': 16384},
        {'id': 1, 'socket': 0, 'cpus': [4, 5, 6, 7], 'memory_mb': 16384}],
        pci_devices=[
            {'address': '0000:01:00.0', 'vendor_id': 'a', 'product_id': 'b',
             'class': '030000', 'numa_node': 0},
            {'address': '0000:02:00.0', 'vendor_id': 'a', 'product_id': 'b',
             'class': '030000', 'numa_node': 1}])
    layout = affinity.HostLayout.from_topology(doc, links.Links(
        'root', {}, {'0000:01:00.0': 'gpu0', '0000:02:00.0': 'gpu1'}))
    records = {uuid: types.SimpleNamespace(
        parent_uuid=None if uuid == 'root' else 'root', traits=frozenset(),
        inventories={}) for uuid in ('root', 'gpu0', 'gpu1')}
    rule = affinity.Rule('gpus', affinity.REQUIRED, resource_class='GPU')

    def request(gpu):
        return domain.AllocationRequest(
            anchor='root', allocations={
                'root': {'VCPU': 2, 'MEMORY_MB': 8192}, gpu: {'GPU': 1}},
            mappings={})

    # By the nodes' sizes both have room: both candidates stay.
    sized = affinity.Refiner([rule], {'root': layout}, records)
    assert sized.accept(request('gpu0')) and sized.accept(request('gpu1'))
    # Node 0 has 1 GiB free: only the GPU on node 1.
    measured = affinity.Refiner([rule], {'root': layout}, records, {
        metrics.numa_key('root', 0): 1024.0,
        metrics.numa_key('root', 1): 12000.0})
    assert not measured.accept(request('gpu0'))
    assert measured.accept(request('gpu1'))
    # Values of another host change nothing here.
    other = affinity.Refiner([rule], {'root': layout}, records, {
        metrics.numa_key('elsewhere', 0): 0.0})
    assert other.accept(request('gpu0'))
