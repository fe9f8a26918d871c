"""PCI-NUMA affinity of allocation candidates, with the meanings of Nova's
``hw:pci_numa_affinity_policy``.

Nova reports PCI devices (and VFs on their PF, vGPUs on their GPU) as
providers without saying which NUMA node they sit on, so a candidate can
pair a device with CPUs and memory that cannot be on its NUMA node. With
hosts' topologies published (topology/), an operator's affinity rules
(``/tachyon/pci_affinity/{name}``: a resource class or a trait, and a
policy) decide, for each candidate whose allocations take such a device:

- ``required``: the device's NUMA node must be one of the instance's (or,
  when the instance's CPUs and memory come from the compute node itself,
  have room for them); devices whose NUMA node is unknown are refused.
- ``legacy``: as required, but a device whose NUMA node is unknown is fine.
- ``socket``: the device must be on the socket of one of the instance's
  NUMA nodes (or of a NUMA node with room).
- ``preferred``: nothing is refused; within a host, the candidates whose
  devices are affine come first.

The instance's NUMA nodes are those of the providers its VCPU, PCPU and
MEMORY_MB come from (NUMA providers, ``HW_NUMA_ROOT``, linked to the
topology's nodes). Room on a NUMA node: its provider's free capacity when
the tree models NUMA, else the memory free there by a per-NUMA metric
(``[telemetry] numa_free_memory_metric``) and the node's CPUs, else the
node's size in the topology (Nova's NUMA fitting decides the rest).
Hosts without a published topology, and candidates that take no device a
rule names, are left alone. Without rules, nothing changes (Placement's
candidates, Placement's order).
"""
import dataclasses

from tachyon_placement.telemetry import metrics

REQUIRED = 'required'
LEGACY = 'legacy'
PREFERRED = 'preferred'
SOCKET = 'socket'
POLICIES = (REQUIRED, LEGACY, PREFERRED, SOCKET)
# Where rules of several policies name the same device, the strictest
# counts.
_STRICTNESS = {PREFERRED: 0, LEGACY: 1, SOCKET: 2, REQUIRED: 3}

CPU_CLASSES = ('VCPU', 'PCPU')
MEMORY_CLASS = 'MEMORY_MB'


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    policy: str
    resource_class: str = None
    trait: str = None
    generation: int = 0

    @classmethod
    def from_document(cls, name, document, generation=0):
        return cls(name=name, policy=document['policy'],
                   resource_class=document.get('resource_class'),
                   trait=document.get('trait'), generation=generation)

    def stored(self):
        document = {'policy': self.policy}
        if self.resource_class:
            document['resource_class'] = self.resource_class
        if self.trait:
            document['trait'] = self.trait
        return document

    def as_document(self):
        return dict(self.stored(), name=self.name,
                    generation=self.generation)

    def names(self, resources, traits):
        """Whether a provider from which a candidate takes ``resources``
        ({class: amount}) and which has ``traits`` is a device of this
        rule."""
        if self.resource_class and self.resource_class in resources:
            return True
        return bool(self.trait and self.trait in traits)


@dataclasses.dataclass
class HostLayout:
    """What affinity needs of one host's topology: per NUMA node its
    socket, CPU count and memory; which providers stand for NUMA nodes and
    which NUMA node each device provider's devices are on."""
    numa_socket: dict           # {node id: socket id or None}
    numa_cpus: dict             # {node id: CPU count}
    numa_memory_mb: dict        # {node id: MiB}
    numa_providers: dict        # {provider uuid: node id}
    device_numa: dict           # {provider uuid: node id or None}

    @classmethod
    def from_topology(cls, document, links):
        """From a published document and its links (topology.links)."""
        nodes = document['numa_nodes']
        device_numa = {}
        for device in document['pci_devices']:
            provider = links.pci.get(device['address'])
            if provider is None:
                continue
            numa = device.get('numa_node')
            if provider in device_numa and device_numa[provider] != numa:
                # A provider whose devices sit on different nodes (VFs of
                # one PF never do): no single NUMA node.
                numa = None
            device_numa[provider] = numa
        return cls(
            numa_socket={node['id']: node.get('socket') for node in nodes},
            numa_cpus={node['id']: len(node['cpus']) for node in nodes},
            numa_memory_mb={node['id']: node['memory_mb'] for node in nodes},
            numa_providers={uuid: node_id for node_id, uuid
                            in links.numa.items()},
            device_numa=device_numa)


class Refiner:
    """For domain.candidates.Settings.refiner: ``accept(request)`` and
    ``rank(request)`` of allocation requests under ``rules``.

    ``layouts``: {root provider uuid: HostLayout}; ``records``: {provider
    uuid: record with ``parent_uuid``, ``traits`` and ``inventories``}
    (the copy of the graph the search runs on); ``numa_free_mb``: {
    telemetry.metrics.numa_key(root, node id): MiB free on that NUMA
    node}, fresh values of the per-NUMA metric if any.
    """

    def __init__(self, rules, layouts, records, numa_free_mb=None):
        self.rules = tuple(rules)
        self.layouts = layouts
        self.records = records
        self.numa_free_mb = numa_free_mb or {}
        self.ranks = any(rule.policy == PREFERRED for rule in self.rules)

    def _numa_of(self, layout, uuid):
        """The NUMA node a provider stands for or sits under, or None."""
        while uuid is not None:
            if uuid in layout.numa_providers:
                return layout.numa_providers[uuid]
            record = self.records.get(uuid)
            uuid = record.parent_uuid if record is not None else None
        return None

    def _room(self, layout, root, node_id, cpus, memory):
        provider = next((uuid for uuid, n in layout.numa_providers.items()
                         if n == node_id), None)
        record = self.records.get(provider) if provider else None
        if record is not None and record.inventories:
            free = {rc: inv.capacity - inv.used
                    for rc, inv in record.inventories.items()}
            cpu_free = sum(free.get(rc, 0) for rc in CPU_CLASSES)
            return (free.get(MEMORY_CLASS, 0) >= memory
                    and cpu_free >= cpus)
        free_mb = self.numa_free_mb.get(metrics.numa_key(root, node_id))
        if free_mb is None:
            free_mb = layout.numa_memory_mb.get(node_id, 0)
        return (free_mb >= memory
                and layout.numa_cpus.get(node_id, 0) >= cpus)

    def _verdicts(self, request):
        """[(policy, affine, socket_affine, numa known)] of the devices of
        ``request`` that rules name; None when the host has no layout."""
        layout = self.layouts.get(request.anchor)
        if layout is None:
            return None
        devices = []
        instance_nodes = set()
        flat = False
        cpus = memory = 0
        for uuid, resources in request.allocations.items():
            record = self.records.get(uuid)
            traits = record.traits if record is not None else ()
            policies = [rule.policy for rule in self.rules
                        if rule.names(resources, traits)]
            if policies:
                devices.append((uuid, max(policies,
                                          key=_STRICTNESS.__getitem__)))
            asks = sum(resources.get(rc, 0) for rc in CPU_CLASSES)
            if asks or resources.get(MEMORY_CLASS):
                cpus += asks
                memory += resources.get(MEMORY_CLASS, 0)
                node = self._numa_of(layout, uuid)
                if node is None:
                    flat = True
                else:
                    instance_nodes.add(node)
        if not devices:
            return []
        if flat or not instance_nodes:
            # The compute node's own CPUs and memory: any NUMA node with
            # room could take the instance.
            instance_nodes = {node for node in layout.numa_socket
                              if self._room(layout, request.anchor, node,
                                            cpus, memory)}
        sockets = {layout.numa_socket.get(node) for node in instance_nodes}
        verdicts = []
        for uuid, policy in devices:
            node = layout.device_numa.get(uuid)
            if node is None:
                node = self._numa_of(layout, uuid)
            known = node is not None
            verdicts.append((policy, known and node in instance_nodes,
                             known and layout.numa_socket.get(node) in (
                                 sockets - {None}), known))
        return verdicts

    def accept(self, request):
        verdicts = self._verdicts(request)
        if not verdicts:
            return True
        for policy, affine, socket_affine, known in verdicts:
            if policy == REQUIRED and not affine:
                return False
            if policy == LEGACY and known and not affine:
                return False
            if policy == SOCKET and not socket_affine:
                return False
        return True

    def broken_by(self, request):
        """The names of the rules (required, legacy, socket) that
        ``request``, a placed consumer's allocations, breaks: a device a
        rule names away from the NUMA nodes (or the socket) of its own
        CPUs and memory, as accept() would refuse it.  [] when none, or
        when its CPUs and memory are the compute node's own (a flat host:
        which NUMA node they use is the hypervisor's choice, unknown
        here)."""
        layout = self.layouts.get(request.anchor)
        if layout is None:
            return []
        devices = []
        instance_nodes = set()
        for uuid, resources in request.allocations.items():
            record = self.records.get(uuid)
            traits = record.traits if record is not None else ()
            devices += [(uuid, rule) for rule in self.rules
                        if rule.policy != PREFERRED
                        and rule.names(resources, traits)]
            if sum(resources.get(rc, 0) for rc in CPU_CLASSES) or (
                    resources.get(MEMORY_CLASS)):
                node = self._numa_of(layout, uuid)
                if node is None:
                    return []
                instance_nodes.add(node)
        if not devices or not instance_nodes:
            return []
        sockets = {layout.numa_socket.get(node)
                   for node in instance_nodes} - {None}
        broken = set()
        for uuid, rule in devices:
            node = layout.device_numa.get(uuid)
            if node is None:
                node = self._numa_of(layout, uuid)
            known = node is not None
            affine = known and node in instance_nodes
            if rule.policy == REQUIRED and not affine:
                broken.add(rule.name)
            elif rule.policy == LEGACY and known and not affine:
                broken.add(rule.name)
            elif rule.policy == SOCKET and not (
                    known and layout.numa_socket.get(node) in sockets):
                broken.add(rule.name)
        return sorted(broken)

    def rank(self, request):
        """How many preferred devices of ``request`` are not affine (fewer
        first)."""
        verdicts = self._verdicts(request) or ()
        return sum(1 for policy, affine, _s, _k in verdicts
                   if policy == PREFERRED and not affine)
