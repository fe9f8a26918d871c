"""Drift: the consumers whose placement breaks what the operator stored
since they were placed, so that a controller (Watcher) can move them.

Two kinds: the host a consumer runs on is past a weigher's threshold
(weighing/: a usage share, a metric's value, a Cypher score; hard or soft)
for a weigher whose match takes the consumer's resource classes; or the
consumer holds a device that a PCI-NUMA affinity rule (topology/affinity.py,
not ``preferred``) wants on the NUMA node (or socket) of its own CPUs and
memory, and it is not.  On a flat host (CPUs and memory on the compute
node) the NUMA node an instance uses is the hypervisor's choice, unknown
here: no affinity drift is reported there.

Read from the process's copy of the graph (fresh: the graph version is
read first) and, for the hosts concerned only, the consumers' allocations
from the graph.
"""
import time

from tachyon_placement.domain import candidates as domain
from tachyon_placement.topology import affinity
from tachyon_placement.weighing import model as weighing_model
from tachyon_placement.weighing import ranking

THRESHOLD = 'threshold'
PCI_AFFINITY = 'pci_affinity'
# What a missing policy's exclusion says (weighing/ranking.py): no
# threshold is broken by a host without a value.
_NO_VALUE = 'no value'


def report(store, staleness_limit):
    """{'consumers': [{consumer_uuid, root_provider_uuid, host,
    allocations, reasons}], 'hosts': [{root_provider_uuid, host,
    consumers, reasons}]}, consumers by uuid, hosts by name."""
    world = store.worlds.current()
    consumers = {}
    hosts = {}
    for root, reasons in _past_thresholds(world, staleness_limit).items():
        weighers = {reason['weigher'] for reason in reasons}
        hosts[root] = {'reasons': reasons, 'consumers': 0}
        for uuid, allocations in _consumers_of_tree(store, world,
                                                    root).items():
            summary = weighing_model.RequestSummary(
                resource_classes=frozenset(
                    rc for resources in allocations.values()
                    for rc in resources))
            applying = {weigher.name for weigher in ranking.applicable(
                world.weighers, summary)} & weighers
            kept = [reason for reason in reasons
                    if reason['weigher'] in applying]
            if kept:
                _entry(consumers, uuid, root, allocations)['reasons'] += kept
    for uuid, root, allocations, rules in _affinity_broken(store, world):
        _entry(consumers, uuid, root, allocations)['reasons'] += [
            {'kind': PCI_AFFINITY, 'rule': name,
             'why': 'holds a device away from the NUMA node (or socket) '
                    'of its CPUs and memory'} for name in rules]
        hosts.setdefault(root, {'reasons': [], 'consumers': 0})
    listed = []
    for uuid, entry in sorted(consumers.items()):
        hosts[entry['root_provider_uuid']]['consumers'] += 1
        listed.append(dict(entry, consumer_uuid=uuid,
                           host=_name(world, entry['root_provider_uuid'])))
    return {
        'consumers': listed,
        'hosts': sorted(
            ({'root_provider_uuid': root, 'host': _name(world, root),
              'consumers': entry['consumers'], 'reasons': entry['reasons']}
             for root, entry in hosts.items()),
            key=lambda host: (host['host'] or '', host['root_provider_uuid'])),
    }


def _name(world, root):
    record = world.records.get(root)
    return record.provider.name if record is not None else None


def _entry(consumers, uuid, root, allocations):
    return consumers.setdefault(uuid, {
        'root_provider_uuid': root,
        'allocations': {rp: {'resources': resources}
                        for rp, resources in sorted(allocations.items())},
        'reasons': []})


def _past_thresholds(world, staleness_limit):
    """{root: [reason]} of the hosts past a stored threshold now."""
    thresholded = tuple(sorted(
        (weigher for weigher in world.weighers
         if weigher.scorer.get('threshold')),
        key=lambda weigher: weigher.name))
    if not thresholded:
        return {}
    ranked = world.ranking(thresholded, int(time.time() * 1000),
                           staleness_limit * 1000)
    past = {}
    for mode, barred in ((weighing_model.HARD, ranked.excluded),
                         (weighing_model.SOFT, ranked.avoided)):
        for root, reasons in barred.items():
            for name, why in reasons:
                if why != _NO_VALUE:
                    past.setdefault(root, []).append(
                        {'kind': THRESHOLD, 'weigher': name, 'mode': mode,
                         'why': why})
    return past


def _consumers_of_tree(store, world, root):
    """{consumer uuid: {provider uuid: {class: amount}}} of the
    allocations on the tree of ``root``."""
    found = {}
    for record in world.trees.get(root, ()):
        if not any(inventory.used for inventory
                   in record.inventories.values()):
            continue
        held = store.allocations.of_provider(record.uuid)
        if held is None:
            continue
        for consumer, entry in held[1].items():
            found.setdefault(consumer, {})[record.uuid] = dict(
                entry['resources'])
    return found


def _affinity_broken(store, world):
    """(consumer uuid, root, its allocations on that host, [rule names])
    of the consumers breaking a PCI-NUMA affinity rule."""
    rules = [rule for rule in world.pci_affinity
             if rule.policy != affinity.PREFERRED]
    if not rules or not world.layouts:
        return []
    refiner = affinity.Refiner(rules, world.layouts, world.records)
    broken = []
    for root in sorted(world.layouts):
        devices = [record for record in world.trees.get(root, ())
                   if any(rule.names({rc: inventory.used}, record.traits)
                          for rule in rules
                          for rc, inventory in record.inventories.items()
                          if inventory.used)]
        if not devices:
            continue
        tree = _consumers_of_tree(store, world, root)
        holders = set()
        for record in devices:
            holders.update(consumer for consumer, allocations in tree.items()
                           if record.uuid in allocations)
        for consumer in sorted(holders):
            allocations = tree[consumer]
            names = refiner.broken_by(domain.AllocationRequest(
                anchor=root, allocations=allocations, mappings={}))
            if names:
                broken.append((consumer, root, allocations, names))
    return broken
