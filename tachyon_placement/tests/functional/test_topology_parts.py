"""A published topology's parts are linked to each other in the graph as
the document says (graph/topology.py): devices to their NUMA node, VFs to
their PF, NUMA nodes to their socket; by positions computed in Python,
so a publication stays linear in the devices."""
from tachyon_placement.graph.cypher import Statement
from tachyon_placement.topology import model
from tachyon_placement.usecases import topology as publishing

EDGES = Statement('test_topology_edges', common="""
MATCH (host:Host {name: $name})-[:HAS_DEVICE]->(device:PCIDevice)
OPTIONAL MATCH (device)-[:ON_NUMA_NODE]->(node:NUMANode)
OPTIONAL MATCH (pf:PCIDevice)-[:HAS_VF]->(device)
RETURN device.address AS address, node.id AS node, pf.address AS pf
""")

DOCUMENT = {
    'sockets': [{'id': 0}, {'id': 1}],
    'numa_nodes': [
        {'id': 1, 'socket': 1, 'cpus': [2, 3], 'memory_mb': 1024},
        {'id': 0, 'socket': 0, 'cpus': [0, 1], 'memory_mb': 1024}],
    # Out of address order, upper case, a device with no NUMA node.
    'pci_devices': [
        {'address': '0000:81:00.2', 'vendor_id': '8086',
         'product_id': '154c', 'class': '020000', 'numa_node': 1,
         'physfn': '0000:81:00.0'},
        {'address': '0000:81:00.0', 'vendor_id': '8086',
         'product_id': '1572', 'class': '020000', 'numa_node': 1},
        {'address': '0000:81:00.1', 'vendor_id': '8086',
         'product_id': '154c', 'class': '020000', 'numa_node': 1,
         'physfn': '0000:81:00.0'},
        {'address': '0000:3B:00.0', 'vendor_id': '10de',
         'product_id': '1eb8', 'class': '030200', 'numa_node': 0},
        {'address': '0000:00:1f.0', 'vendor_id': '8086',
         'product_id': 'a1c8', 'class': '060100', 'numa_node': None},
    ],
}


def test_parts_are_linked_as_the_document_says(service):
    store = service.app.store
    model.check(DOCUMENT)
    document = model.normalized(DOCUMENT)
    for generation in (None, 0):   # created, then replaced
        publishing.publish(store, 'cn-parts', document, generation)
        edges = {row['address']: (row['node'], row['pf']) for row in
                 store.engine.read(EDGES, name='cn-parts')}
        assert edges == {
            '0000:81:00.0': (1, None),
            '0000:81:00.1': (1, '0000:81:00.0'),
            '0000:81:00.2': (1, '0000:81:00.0'),
            '0000:3b:00.0': (0, None),
            '0000:00:1f.0': (None, None),
        }
