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


class CursorGone(Exception):
    """The cursor is older than the feed's floor (tombstones pruned)."""

    def __init__(self, floor, head=None):
        super().__init__(floor)
        self.floor = floor
        self.head = head


def _recorded_reasons(reasons):
    """What the record keeps of the reasons: not ``why`` (a metric's value
    moves every refresh; the drift does not)."""
    return sorted(({key: value for key, value in reason.items()
                    if key != 'why'} for reason in reasons),
                  key=lambda reason: sorted(reason.items()))


class DriftRecorder:
    """Records the drift in the graph (graph/drift.py), what changed only,
    each cycle of the telemetry collector that holds the lease (one
    process of the deployment: telemetry/collector.py ``followers``), so
    that GET /tachyon/drift/changes can tell a controller what drifted
    or stopped drifting after its cursor."""

    def __init__(self, store, staleness_limit):
        self.store = store
        self.staleness_limit = staleness_limit
        # Whether the last record held drift (None: not recorded yet).
        self._held = None

    def wanted(self):
        """Whether there may be drift to record or to end (the lease is
        taken for it: not in a deployment without thresholds or rules)."""
        if self._held is None:
            self._held = bool(self.store.drift.held())
        if self._held:
            return True
        world = self.store.worlds.current()
        return any(weigher.scorer.get('threshold')
                   for weigher in world.weighers) or any(
            rule.policy != affinity.PREFERRED
            for rule in world.pci_affinity)

    def run(self):
        """Record the drift now; (consumers that drifted or changed
        reasons, consumers whose drift ended)."""
        found = report(self.store, self.staleness_limit)['consumers']
        wanted = {entry['consumer_uuid']: (
            entry['root_provider_uuid'],
            _recorded_reasons(entry['reasons'])) for entry in found}
        held = self.store.drift.held()
        drifted = [(consumer, root, reasons)
                   for consumer, (root, reasons) in sorted(wanted.items())
                   if held.get(consumer) != (root, reasons)]
        cleared = [(consumer, held[consumer][0])
                   for consumer in sorted(held) if consumer not in wanted]
        if drifted or cleared:
            self.store.drift.write(drifted, cleared)
        self._held = bool(wanted)
        return len(drifted), len(cleared)


def changes(store, since):
    """The recorded drift changes after the cursor ``since`` (None: the
    drift recorded now), and the cursor to resume from: ({'changes':
    [...], 'cursor': n}).  CursorGone (``head`` set: the cursor is ahead of
    the graph, restored or imported again)."""
    head = store.versions.written()
    if since is None:
        held = store.drift.held()
        entries = [(None, consumer, root, reasons)
                   for consumer, (root, reasons) in sorted(held.items())]
    else:
        if since > head:
            raise CursorGone(0, head)
        floor = store.changes.floor()
        if since < floor:
            raise CursorGone(floor)
        # Up to the head read above: a change recorded meanwhile is told
        # after the cursor answered, not before it (where a client resuming
        # from that cursor would be told it twice).
        entries = store.drift.since(since, upto=head)
    world = store.worlds.current()
    listed = [{'cursor': stamp, 'consumer_uuid': consumer,
               'root_provider_uuid': root, 'host': _name(world, root),
               'drifted': reasons is not None, 'reasons': reasons or []}
              for stamp, consumer, root, reasons in entries]
    return {'changes': listed, 'cursor': head}
