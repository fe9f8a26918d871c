"""A host's hardware topology: sockets, NUMA nodes and PCI devices, as a
document (what the agent publishes and the topology view returns) and the
checks a document must pass beyond its JSON schema.

The document (schemas/topology.py has the exact shape)::

    {"sockets": [{"id": 0}, ...],
     "numa_nodes": [{"id": 0, "socket": 0, "cpus": [0, 1, ...],
                     "memory_mb": 65536,
                     "hugepages": [{"size_kb": 2048, "total": 512,
                                    "free": 512}],
                     "distances": {"0": 10, "1": 21}}, ...],
     "pci_devices": [{"address": "0000:3b:00.0", "vendor_id": "8086",
                      "product_id": "1572", "class": "020000",
                      "numa_node": 0, "physfn": null,
                      "sriov_totalvfs": 64, "sriov_numvfs": 8,
                      "driver": "i40e", "interfaces": ["ens1f0"],
                      "physical_network": "physnet1", "labels": {}}, ...]}

``numa_node`` null: the platform does not say (sysfs -1). A VF names its
PF in ``physfn``.
"""
import re

# PCI addresses as Linux writes them: domain:bus:device.function, in hex.
PCI_ADDRESS = re.compile(r'^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}'
                         r'\.[0-7]$')


class InvalidTopology(ValueError):
    """A document that contradicts itself (the message says where)."""


def pci_provider_name(hostname, address):
    """The name Nova gives the provider of a PCI device or PF
    (``[pci] report_in_placement``): ``<hypervisor hostname>_<ADDRESS>``,
    the address upper-cased."""
    return '%s_%s' % (hostname, address.upper())


def check(document):
    """Raise InvalidTopology if ``document`` (schema-valid) refers to
    sockets, NUMA nodes or PFs it does not list, or lists one twice."""
    sockets = _unique([socket['id'] for socket in document['sockets']],
                      'socket id')
    nodes = _unique([node['id'] for node in document['numa_nodes']],
                    'NUMA node id')
    for node in document['numa_nodes']:
        if node.get('socket') is not None and node['socket'] not in sockets:
            raise InvalidTopology('NUMA node %d: no socket %d' % (
                node['id'], node['socket']))
        for other in node.get('distances', {}):
            if int(other) not in nodes:
                raise InvalidTopology('NUMA node %d: a distance to NUMA node '
                                      '%s, which is not listed' % (
                                          node['id'], other))
    cpus = [cpu for node in document['numa_nodes'] for cpu in node['cpus']]
    _unique(cpus, 'CPU (in two NUMA nodes)')
    addresses = _unique([device['address'].lower()
                         for device in document['pci_devices']],
                        'PCI address')
    for device in document['pci_devices']:
        if (device.get('numa_node') is not None
                and device['numa_node'] not in nodes):
            raise InvalidTopology('PCI device %s: no NUMA node %d' % (
                device['address'], device['numa_node']))
        physfn = device.get('physfn')
        if physfn is not None:
            if physfn.lower() not in addresses:
                raise InvalidTopology('PCI device %s: its PF %s is not '
                                      'listed' % (device['address'], physfn))
            if physfn.lower() == device['address'].lower():
                raise InvalidTopology('PCI device %s is its own PF'
                                      % device['address'])


def _unique(values, what):
    seen = set()
    for value in values:
        if value in seen:
            raise InvalidTopology('%s %s listed twice' % (what, value))
        seen.add(value)
    return seen


def normalized(document):
    """``document`` with PCI addresses in lower case (as sysfs writes
    them) and lists in a stable order, so equal topologies store equal
    documents."""
    out = dict(document)
    out['sockets'] = sorted(document['sockets'], key=lambda s: s['id'])
    out['numa_nodes'] = sorted(
        (dict(node, cpus=sorted(node['cpus'])) for node in
         document['numa_nodes']), key=lambda node: node['id'])
    devices = []
    for device in document['pci_devices']:
        device = dict(device, address=device['address'].lower())
        if device.get('physfn'):
            device['physfn'] = device['physfn'].lower()
        devices.append(device)
    out['pci_devices'] = sorted(devices, key=lambda d: d['address'])
    return out


def socket_of(document):
    """{NUMA node id: socket id or None}."""
    return {node['id']: node.get('socket') for node in document['numa_nodes']}
