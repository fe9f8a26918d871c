"""How a process's copy of the graph follows the engine, exactly fresh.

Before each use the graph version is read (one indexed lookup); if it
moved, only the providers stamped since are read again (see
graph/versioning.py and graph/world_reads.py), so a client always reads
its own writes, whichever worker served them.
"""
import threading
import time

from oslo_log import log as logging

from tachyon_placement.domain import allocations as domain_allocations
from tachyon_placement.graph import versioning
from tachyon_placement.monitoring import metrics
from tachyon_placement.topology import affinity
from tachyon_placement.weighing import model as weighing_model
from tachyon_placement.weighing import scorers as weighing_scorers
from tachyon_placement.world import records as provider_records
from tachyon_placement.world import world as world_module

LOG = logging.getLogger(__name__)

# Changed or deleted providers a version read brings along (see
# graph/world_reads.py VERSION_AND_CHANGES).
_CHANGES_ALONG = 64
# Changed providers read at once past that (world_reads.changed).
_CHANGED_PAGE = 2000
# Seconds a copy that may lack part of its newest write serves before the
# next request checks (WorldCache.current): under a stream of writes the
# next copy comes first and no check is made.
_SETTLE_AFTER = 0.05


class WorldCache:
    """Hands out the current World, refreshing it when the graph moved."""

    def __init__(self, store):
        self._store = store
        self._world = None
        self._lock = threading.Lock()
        # Called with (the version up to which the previous copy was whole,
        # None for the first; the new World, changed records {uuid:
        # record} or None when the new one was made anew, deleted [(uuid,
        # stamp)], hosts' topologies [(name, stamp, state or None)]) each
        # time the copy moves forward (the change feed listens).
        self.listeners = []

    def latest(self):
        """The copy as it is (None before the first), without asking the
        engine whether the graph moved."""
        return self._world

    def forget(self):
        """Drop the copy (the next read makes one anew): the change feed
        server's, once its subscribers left, so that what the copy took
        while they were there (spread over the memory they used) is
        given back with the rest."""
        with self._lock:
            self._world = None

    def held_provider_states(self, provider_uuids):
        """{uuid: ProviderState} of ``provider_uuids`` as the process's
        copy of the graph holds them (no I/O: it may be behind), or None
        when it holds no copy yet or lacks one of them."""
        world = self._world
        if world is None:
            return None
        states = {}
        for uuid in provider_uuids:
            record = world.records.get(uuid)
            if record is None:
                return None
            states[uuid] = domain_allocations.ProviderState(
                uuid=uuid, generation=record.provider.generation,
                inventories=record.inventories)
        return states

    def current(self, whole=False):
        """The copy of the graph as of now.  ``whole``: also known to hold
        every write up to its version whole (World.complete), as the
        change feed needs; otherwise a copy that may lack part of its
        newest write serves on for _SETTLE_AFTER seconds (its content is
        never older than the version read, only perhaps short of a write
        that was being committed then)."""
        world = self._world
        stamps, caught_up = self._read(world)
        if (world is not None and world.version == stamps.version
                and world.telemetry.version == stamps.telemetry
                and not self._settle_due(world, whole)):
            return world
        with self._lock:
            world = self._world
            if world is None or world.version < stamps.version:
                world = self._move(world, stamps, caught_up, 0)
            if not self._settle_due(world, whole):
                self._see_telemetry(world, stamps.telemetry)
                return world
            # A copy that may lack part of its newest write: once that
            # write is known whole (the settled version), what changed
            # since the copy was whole is read again.
            settled = self._store.versions.settled()
            stamps, caught_up = self._read(world)
            return self._move(world, stamps, caught_up, settled)

    def _read(self, world):
        """(GraphVersion now, (since, changed rows, deleted [(uuid,
        stamp)]) after ``world.complete`` when they were few enough to
        come with the version, else None)."""
        if world is None:
            return self._store.versions.graph(), None
        row = self._store.world_reads.version_and_changes(
            world.complete, _CHANGES_ALONG + 1)
        caught_up = None
        if max(len(row['changed']), len(row['deleted'])) <= _CHANGES_ALONG:
            caught_up = (world.complete, row['changed'], [
                (gone['uuid'], gone['stamp']) for gone in row['deleted']])
        return versioning.graph_version_of(row), caught_up

    def _move(self, world, stamps, caught_up, settled):
        """Make the copy at ``stamps`` from ``world`` current (under the
        lock) and tell the listeners."""
        previous = self._world
        since = previous.complete if previous is not None else None
        started = time.monotonic()
        world, changed, gone = self._evolved(world, stamps, caught_up,
                                             settled)
        metrics.world_refreshed(
            'reloaded' if changed is None else 'patched',
            time.monotonic() - started,
            stamps.version - previous.version if previous else 0,
            world.version, len(world.records))
        stamped = previous
        if changed is None and previous is not None and (
                stamps.feed_floor > previous.topology_stamp):
            # The hosts deleted since the previous copy's topologies may
            # have been pruned too: read them all anew.
            stamped = None
        hosts = self._see_stamps(world, stamped, stamps)
        self._world = world
        for listener in self.listeners:
            listener(since, world, changed, gone, hosts, previous)
        return world

    def _settle_due(self, world, whole):
        """Whether ``world`` may lack part of its newest write and is to be
        checked: ``whole`` asked, or it served long enough."""
        return world.complete < world.version and (
            whole or time.monotonic() - world.made >= _SETTLE_AFTER)

    def _evolved(self, world, stamps, caught_up, settled):
        """(the copy at ``stamps`` from ``world`` (None: the first), the
        records changed since (None: a copy made anew), the deleted
        [(uuid, stamp)]): what changed after ``world.complete``
        (``caught_up``: (since, rows, deleted) read with the version, or
        None to read them); ``settled``: a version known whole."""
        version = stamps.version
        # What the copy holds whole: an engine whose reads can see part of
        # a commit (Neo4j) shows the graph version of a write before all
        # its changes; every earlier write has finished, since it let go
        # of the version's lock before this one took it.
        reads = self._store.world_reads
        complete = version if reads.reads_whole_commits else (
            max(version - 1, settled))
        # A copy older than the feed's floor may lack deletions whose
        # tombstones were pruned since (an idle worker's, after more
        # writes than [changes] retention_versions): made anew.
        if world is None or max(stamps.full_reload,
                                stamps.feed_floor) > world.complete:
            world = world_module.World(
                version, provider_records.from_reads(reads))
            changed, gone = None, ()
            provider_records.settle(len(world.records), len(world.records),
                                    reads.leaves_cycles_in_flight)
        else:
            since = world.complete
            if caught_up is not None and caught_up[0] <= since:
                # What changed since the version read's copy; another
                # thread may have moved the copy since (not to this
                # version): what changed after that is still all here
                # (the rest the copy holds already).
                _since, rows, gone = caught_up
                rows = [row for row in rows if row['stamp'] > since]
                gone = [(uuid, stamp) for uuid, stamp in gone
                        if stamp > since]
            else:
                # Too many to bring along: from the copy's version.
                gone = reads.deleted(since)
                if self._store.versions.graph().feed_floor > since:
                    # Pruned past the copy since the version read: some
                    # of its deletions may have gone before being read.
                    return self._evolved(None, stamps, None, settled)
                rows = reads.changed(since, _CHANGED_PAGE)
            held = world.records
            changed, fresh = {}, {}
            for uuid, record in provider_records.changed_records(
                    rows, since, held).items():
                old = held.get(uuid)
                if provider_records.same_record(old, record):
                    # Read again as the copy holds it (the newest write of
                    # a copy not known whole): the held record stays, and
                    # the trees and indexes made of it.
                    changed[uuid] = old
                else:
                    changed[uuid] = fresh[uuid] = record
            if version == world.version and not fresh and not any(
                    uuid in held for uuid, _stamp in gone):
                # Made whole with nothing it lacked (as a rule): the very
                # copy, its indexes and the searches' snapshot kept.
                world.complete = complete
                return world, changed, gone
            world = world.evolve(version, fresh,
                                 [uuid for uuid, _stamp in gone])
            provider_records.settle(len(fresh), len(world.records),
                                    reads.leaves_cycles_in_flight)
        world.complete = complete
        return world, changed, gone

    def _see_stamps(self, world, previous, stamps):
        """Give ``world`` the weighers, metric values, PCI affinity rules
        and host layouts of ``stamps`` (from ``previous`` when they did
        not move); the hosts published or deleted since ``previous``."""
        # A stamp is taken as seen only as far as the copy is whole: what
        # a write left half-read is read again by the next copy.
        weighers_stamp = min(stamps.weighers, world.complete)
        if previous is None or stamps.weighers > previous.weighers_stamp:
            world.weighers = tuple(self._store.weighers.list())
        else:
            world.weighers = previous.weighers
            weighers_stamp = previous.weighers_stamp
        world.weighers_stamp = weighers_stamp
        if previous is not None:
            world.telemetry = previous.telemetry
        self._see_telemetry(world, stamps.telemetry)
        return self._see_affinity(world, previous, stamps)

    def _see_affinity(self, world, previous, stamps):
        """Give ``world`` the PCI affinity rules and the host layouts of
        ``stamps`` (reloading the rules, and the topologies published
        since ``previous``, when they changed); the hosts published or
        deleted since, [(name, stamp, {generation, document} or None)]."""
        if previous is None or stamps.pci_affinity > (
                previous.pci_affinity_stamp):
            world.pci_affinity = tuple(
                self._store.pci_affinity.list())
            world.pci_affinity_stamp = min(stamps.pci_affinity,
                                           world.complete)
        else:
            world.pci_affinity = previous.pci_affinity
            world.pci_affinity_stamp = previous.pci_affinity_stamp
        since = previous.topology_stamp if previous is not None else -1
        # Shared with the previous copy unless a publication changed them
        # (most writes do not: no copy per write).
        layouts = previous.layouts if previous is not None else {}
        roots = previous.layout_roots if previous is not None else {}
        summaries = (previous.topology_summaries if previous is not None
                     else {})
        latest = {}
        if stamps.topology > since:
            layouts, roots = dict(layouts), dict(roots)
            summaries = dict(summaries)
            changed, gone = self._store.topology.changes(since)
            for name, stamp in gone:
                latest[name] = max(latest.get(name, (-1, None)),
                                   (stamp, None), key=lambda item: item[0])
            for name, stamp, generation, document, links in changed:
                if stamp >= latest.get(name, (-1, None))[0]:
                    latest[name] = (stamp, (generation, document, links))
            for name, (_stamp, published) in latest.items():
                layouts.pop(roots.pop(name, None), None)
                summaries.pop(name, None)
                if published is not None:
                    summaries[name] = world_module.TopologySummary.of(
                        published[0], published[1])
                if published is not None and published[2].host:
                    _generation, document, links = published
                    roots[name] = links.host
                    layouts[links.host] = affinity.HostLayout.from_topology(
                        document, links)
        world.layouts, world.layout_roots = layouts, roots
        world.topology_summaries = summaries
        world.topology_stamp = max(min(stamps.topology, world.complete),
                                   since, 0)
        return [(name, stamp, None if published is None else {
            'generation': published[0], 'document': published[1]})
            for name, (stamp, published) in latest.items()]

    def _see_telemetry(self, world, telemetry_version):
        """Give ``world`` the metric values of ``telemetry_version`` (one
        read when they changed)."""
        # Placements count from when this process took in the values, or
        # from when a weigher began counting them (placed_load), until the
        # next values: this copy's usage then is where they start.
        classes = weighing_model.placed_classes(world.weighers)
        telemetry = world.telemetry
        if telemetry.version != telemetry_version or not (
                classes <= telemetry.usage_classes):
            values = (telemetry.values
                      if telemetry.version == telemetry_version
                      else self._store.metrics.values())
            usage = ({root: weighing_scorers.tree_usage(tree, classes)
                      for root, tree in world.trees.items()}
                     if classes else None)
            world.telemetry = world_module.TelemetryView(
                telemetry_version, values, usage, frozenset(classes))
