"""The topology view of one host: its published document joined with the
providers of its tree (inventories, usages, traits, aggregates) and the
free capacity of each NUMA node and PCI device through the provider that
represents it.  Pure: the caller passes the records of the tree
(world.records.ProviderRecord: ``provider``, ``inventories`` {class:
Inventory}, ``as_document()``)."""


def free(record):
    """{class: capacity - used} of a provider record (Placement's
    capacity: (total - reserved) x allocation_ratio)."""
    return {rc: max(0, int(inventory.capacity - inventory.used))
            for rc, inventory in sorted(record.inventories.items())}


def host_view(topology, tree):
    """The view of ``topology`` (graph.topology.Topology with links) over
    ``tree`` (the records of its host's provider tree, maybe empty)."""
    records = {record.provider.uuid: record for record in tree}
    links = topology.links
    document = topology.document

    def linked(uuid):
        record = records.get(uuid)
        if record is None:
            return {'provider_uuid': None, 'free': None}
        return {'provider_uuid': uuid, 'free': free(record)}

    # Who is on which node and which VFs each PF has, in one pass (one
    # pass per device made the view of 8,192 devices quadratic).
    on_node, vfs_of = {}, {}
    for device in document['pci_devices']:
        on_node.setdefault(device.get('numa_node'), []).append(
            device['address'])
        if device.get('physfn'):
            vfs_of.setdefault(device['physfn'], []).append(
                device['address'])
    nodes = []
    for node in document['numa_nodes']:
        entry = dict(node)
        entry.update(linked(links.numa.get(node['id'])))
        entry['pci_devices'] = list(on_node.get(node['id'], ()))
        nodes.append(entry)
    devices = []
    for device in document['pci_devices']:
        entry = dict(device)
        entry.update(linked(links.pci.get(device['address'])))
        entry['vfs'] = list(vfs_of.get(device['address'], ()))
        devices.append(entry)
    sockets = [dict(socket, numa_nodes=[
        node['id'] for node in document['numa_nodes']
        if node.get('socket') == socket['id']])
        for socket in document['sockets']]
    root = links.host if links.host in records else None
    return {
        'host': topology.name,
        'generation': topology.generation,
        'root_provider_uuid': root,
        'sockets': sockets,
        'numa_nodes': nodes,
        'pci_devices': devices,
        'providers': [record.as_document() for record in tree],
        'free': free_total(tree),
    }


def free_total(tree):
    """{class: free capacity summed over the tree}."""
    total = {}
    for record in tree:
        for rc, amount in free(record).items():
            total[rc] = total.get(rc, 0) + amount
    return total
