"""Which Placement providers represent a host's sockets, NUMA nodes and
PCI devices: pure rules over the host's provider tree.

- The host: the root provider named as the host (Nova names the compute
  node provider after the hypervisor hostname).
- A NUMA node: a provider of the tree with the trait ``HW_NUMA_ROOT``
  whose name ends in ``NUMA<id>``/``numa<id>`` (optionally after ``_``,
  ``-`` or ``:``); else, when the tree has exactly as many
  ``HW_NUMA_ROOT`` providers as the document has NUMA nodes, those
  providers in name order.
- A PCI device or PF: the provider Nova's ``[pci] report_in_placement``
  names ``<host>_<ADDRESS>``; a GPU whose vGPUs Nova reports: the provider
  named after libvirt's node device, ``<host>_pci_<dddd>_<bb>_<ss>_<f>``;
  a PF with a network interface: Neutron's SR-IOV agent's provider,
  ``<host>:<agent>:<interface>``, or one whose name ends in
  ``_<interface>``.  A VF has no provider of its own (Nova and Neutron
  count VFs on their PF's provider): it links to its PF's.
"""
import re

from tachyon_placement.graph import topology as topology_store
from tachyon_placement.topology import model

NUMA_TRAIT = 'HW_NUMA_ROOT'
_NUMA_NAME = re.compile(r'(?:^|[_:-])numa[_-]?(\d+)$', re.IGNORECASE)

Provider = topology_store.HostProvider
Links = topology_store.Links


def libvirt_device_name(hostname, address):
    """``<host>_pci_0000_84_00_0`` for 0000:84:00.0 (Nova's vGPU parent
    providers)."""
    return '%s_pci_%s' % (hostname, re.sub(r'[:.]', '_', address.lower()))


def link(hostname, document, providers):
    """Links: ``host`` (root provider uuid or None), ``numa`` {node id:
    uuid}, ``pci`` {address: uuid} for the providers (Provider tuples) of
    the host's tree."""
    root = next((p for p in providers
                 if p.parent_uuid is None and p.name == hostname), None)
    if root is None:
        return Links(None, {}, {})
    # Nova upper-cases the address; match whatever case a name has.
    by_name = {p.name.lower(): p.uuid for p in providers}
    numa = _numa_links(document, [p for p in providers
                                  if NUMA_TRAIT in p.traits])
    pci = {}
    devices = document['pci_devices']
    for device in devices:
        if device.get('physfn'):
            continue
        address = device['address'].lower()
        names = [model.pci_provider_name(hostname, address),
                 libvirt_device_name(hostname, address)]
        found = next((by_name[name.lower()] for name in names
                      if name.lower() in by_name), None)
        if found is None:
            found = _by_interface(hostname, device.get('interfaces') or (),
                                  providers)
        if found is not None:
            pci[address] = found
    for device in devices:
        physfn = device.get('physfn')
        if physfn and physfn.lower() in pci:
            pci[device['address'].lower()] = pci[physfn.lower()]
    return Links(root.uuid, numa, pci)


def _numa_links(document, numa_providers):
    ids = [node['id'] for node in document['numa_nodes']]
    named = {}
    for provider in numa_providers:
        match = _NUMA_NAME.search(provider.name)
        if match and int(match.group(1)) in ids:
            named.setdefault(int(match.group(1)), provider.uuid)
    if named:
        return named
    if numa_providers and len(numa_providers) == len(ids):
        ordered = sorted(numa_providers, key=lambda p: p.name)
        return {node_id: p.uuid for node_id, p in zip(sorted(ids), ordered)}
    return {}


def _by_interface(hostname, interfaces, providers):
    for interface in interfaces:
        for provider in providers:
            if provider.parent_uuid is None:
                continue
            if (provider.name.startswith(hostname + ':')
                    and provider.name.endswith(':' + interface)):
                return provider.uuid
            if provider.name == '%s_%s' % (hostname, interface):
                return provider.uuid
    return None
