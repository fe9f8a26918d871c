"""Read a Linux host's topology document (topology/model.py) from sysfs.

What it reads, under ``root`` (``/`` on a real host, a copied tree in
tests):

- ``sys/devices/system/node/node<N>/``: ``cpulist``, ``meminfo``
  (``MemTotal``), ``distance`` (one value per online node, in node order),
  ``hugepages/hugepages-<size>kB/{nr,free}_hugepages``;
- ``sys/devices/system/cpu/cpu<N>/topology/physical_package_id``: the
  socket of each NUMA node (its first CPU's);
- ``sys/bus/pci/devices/<address>/``: ``vendor``, ``device``, ``class``,
  ``numa_node`` (-1: unknown), ``physfn`` (a VF's PF), ``sriov_totalvfs``,
  ``sriov_numvfs``, ``driver`` (link to the bound driver), ``net/``
  (network interfaces).

A host without ``node`` directories (a kernel without NUMA) gets one NUMA
node 0 holding every online CPU and the memory of ``/proc/meminfo``.

``physical_device_mappings`` ({interface: physical network}, as Neutron's
SR-IOV agent is configured) sets ``physical_network`` on the PFs that own
those interfaces and on their VFs.
"""
import glob
import os
import re

_NODE_DIR = re.compile(r'^node(\d+)$')
_HUGEPAGES_DIR = re.compile(r'^hugepages-(\d+)kB$')
# PCI base classes that are bridges, host controllers and the like: not
# devices anyone schedules (class 06: bridge; 08: system peripheral).
_SKIPPED_CLASSES = ('06', '08')


def parse_cpulist(text):
    """``0-3,8,10-11`` -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in text.strip().split(','):
        if not part:
            continue
        low, _, high = part.partition('-')
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def _read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return default


def _read_int(path, default=None):
    text = _read(path)
    try:
        return int(text, 0) if text is not None else default
    except ValueError:
        return default


def _hex_id(text):
    """``0x8086`` -> ``8086``."""
    if not text:
        return None
    text = text.lower()
    return text[2:] if text.startswith('0x') else text


def _meminfo_mb(text, key='MemTotal'):
    for line in (text or '').splitlines():
        # "Node 0 MemTotal:  196608000 kB" or "MemTotal:  16384 kB"
        fields = line.replace(':', ' ').split()
        if key in fields:
            position = fields.index(key)
            try:
                return int(fields[position + 1]) // 1024
            except (IndexError, ValueError):
                return None
    return None


class SysfsReader:
    """The topology document of the host whose sysfs is under ``root``."""

    def __init__(self, root='/', physical_device_mappings=None):
        self.root = root
        self.mappings = dict(physical_device_mappings or {})

    def _path(self, *parts):
        return os.path.join(self.root, *parts)

    def document(self):
        nodes = self.numa_nodes()
        sockets = sorted({node['socket'] for node in nodes
                          if node['socket'] is not None})
        node_ids = {node['id'] for node in nodes}
        return {'sockets': [{'id': socket} for socket in sockets],
                'numa_nodes': nodes,
                'pci_devices': self.pci_devices(node_ids)}

    # -- NUMA nodes -------------------------------------------------------

    def numa_nodes(self):
        base = self._path('sys', 'devices', 'system', 'node')
        try:
            ids = sorted(int(match.group(1)) for match in
                         map(_NODE_DIR.match, os.listdir(base)) if match)
        except FileNotFoundError:
            ids = []
        if not ids:
            return [self._single_node()]
        nodes = []
        for node_id in ids:
            directory = os.path.join(base, 'node%d' % node_id)
            cpus = parse_cpulist(_read(os.path.join(directory, 'cpulist'),
                                       ''))
            distances = (_read(os.path.join(directory, 'distance')) or
                         '').split()
            nodes.append({
                'id': node_id,
                'socket': self._socket(cpus),
                'cpus': cpus,
                'memory_mb': _meminfo_mb(_read(os.path.join(directory,
                                                            'meminfo'))) or 0,
                'hugepages': self._hugepages(directory),
                'distances': {str(other): int(value) for other, value in
                              zip(ids, distances) if value.isdigit()},
            })
        return nodes

    def _single_node(self):
        online = _read(self._path('sys', 'devices', 'system', 'cpu',
                                  'online'), '')
        cpus = parse_cpulist(online)
        return {'id': 0, 'socket': self._socket(cpus), 'cpus': cpus,
                'memory_mb': _meminfo_mb(_read(self._path('proc',
                                                          'meminfo'))) or 0,
                'hugepages': [], 'distances': {'0': 10}}

    def _socket(self, cpus):
        for cpu in cpus:
            package = _read_int(self._path(
                'sys', 'devices', 'system', 'cpu', 'cpu%d' % cpu, 'topology',
                'physical_package_id'))
            if package is not None and package >= 0:
                return package
        return None

    def _hugepages(self, node_dir):
        directory = os.path.join(node_dir, 'hugepages')
        try:
            entries = sorted(os.listdir(directory))
        except FileNotFoundError:
            return []
        pages = []
        for entry in entries:
            match = _HUGEPAGES_DIR.match(entry)
            if not match:
                continue
            pages.append({
                'size_kb': int(match.group(1)),
                'total': _read_int(os.path.join(directory, entry,
                                                'nr_hugepages'), 0),
                'free': _read_int(os.path.join(directory, entry,
                                               'free_hugepages'), 0)})
        return sorted(pages, key=lambda page: page['size_kb'])

    # -- PCI devices ------------------------------------------------------

    def pci_devices(self, node_ids):
        base = self._path('sys', 'bus', 'pci', 'devices')
        try:
            addresses = sorted(os.listdir(base))
        except FileNotFoundError:
            return []
        devices = []
        for address in addresses:
            directory = os.path.join(base, address)
            device_class = _hex_id(_read(os.path.join(directory, 'class')))
            if not device_class or device_class.startswith(_SKIPPED_CLASSES):
                continue
            numa_node = _read_int(os.path.join(directory, 'numa_node'), -1)
            physfn = os.path.join(directory, 'physfn')
            interfaces = self._interfaces(directory)
            driver = os.path.join(directory, 'driver')
            device = {
                'address': address.lower(),
                'vendor_id': _hex_id(_read(os.path.join(directory,
                                                        'vendor'))),
                'product_id': _hex_id(_read(os.path.join(directory,
                                                         'device'))),
                'class': device_class,
                # -1, or a node sysfs does not list: unknown.
                'numa_node': numa_node if numa_node in node_ids else None,
                'physfn': (os.path.basename(os.readlink(physfn)).lower()
                           if os.path.islink(physfn) else None),
                'sriov_totalvfs': _read_int(os.path.join(
                    directory, 'sriov_totalvfs')),
                'sriov_numvfs': _read_int(os.path.join(
                    directory, 'sriov_numvfs')),
                'driver': (os.path.basename(os.readlink(driver))
                           if os.path.islink(driver) else None),
                'interfaces': interfaces,
                'physical_network': next(
                    (self.mappings[name] for name in interfaces
                     if name in self.mappings), None),
                'labels': {},
            }
            devices.append(device)
        self._inherit_physical_networks(devices)
        return devices

    @staticmethod
    def _interfaces(directory):
        """The network interfaces of a function: in its ``net/``, or in
        a child device's (virtio-net: ``virtio<N>/net/``)."""
        found = set()
        for net in [os.path.join(directory, 'net')] + glob.glob(
                os.path.join(directory, '*', 'net')):
            try:
                found.update(os.listdir(net))
            except (FileNotFoundError, NotADirectoryError):
                pass
        return sorted(found)

    @staticmethod
    def _inherit_physical_networks(devices):
        """A VF is on its PF's physical network."""
        by_address = {device['address']: device for device in devices}
        for device in devices:
            pf = by_address.get(device['physfn'])
            if pf is not None and device['physical_network'] is None:
                device['physical_network'] = pf['physical_network']
