"""The reads behind GET /allocation_candidates, answered from the
process's copy of the graph (world/world.py World): no statement runs
for a search.

A WorldReader answers what domain.candidates asks: the sharing providers
(MISC_SHARES_VIA_AGGREGATE) with the trees each one can serve; probes
(a trait, an aggregate, a resource class with room) bounding the roots a
candidate can be anchored at, from the World's indexes; the roots in
Placement's order (creation); and the search's snapshot of every tree,
built once per World and patched from the previous one's unchanged trees.
How weighers and PCI-NUMA affinity order and refine the search over the
same World is the use case's (usecases/candidates.py).
"""
import operator
import threading
import weakref

from tachyon_placement.domain import candidates as domain
from tachyon_placement.world import records as provider_records


class Candidates:
    """Store.candidates: what the allocation candidate search reads,
    answered from the process's copy of the graph (world/cache.py)."""

    def __init__(self, worlds, sweep_frozen):
        self._worlds = worlds
        self._sweep_frozen = sweep_frozen

    def reader(self):
        """A WorldReader of the process's current copy of the graph."""
        return WorldReader(self._worlds.current(), self._sweep_frozen)


def _rc_reach(matched_roots, *sharing_entries):
    """The roots the sharing providers among ``matched_roots`` (trees)
    reach beyond them; ``sharing_entries``: sharing_providers().values()
    (the very tuples from one copy of the graph to the next while they do
    not change)."""
    reach = set()
    for root, reaching in sharing_entries:
        if root in matched_roots:
            reach |= reaching
    return frozenset(reach)


def _reach_of(*sharing_entries):
    """The roots the sharing providers of ``sharing_entries`` (entries of
    sharing_providers()) reach."""
    return frozenset().union(*(reach for _root, reach in sharing_entries))


def _aggregate_members(*member_lists):
    """(uuids, root uuids) of the providers in ``member_lists`` (lists of
    a World's by_aggregate index, never changed once made)."""
    members = [record for listed in member_lists for record in listed]
    return (frozenset(record.uuid for record in members),
            frozenset(record.root_uuid for record in members))


def _sharing_roots(*sharing_entries):
    """The roots of the sharing providers (``sharing_entries``:
    sharing_providers().values())."""
    return frozenset(root for root, _reaching in sharing_entries)


def _same_tree(before, now):
    """Whether a tree holds the very records it held (a copy of the graph
    that made its index of trees anew has other lists of the same
    records: comparing the lists alone rebuilt every tree)."""
    return before is now or (
        now is not None and len(before) == len(now)
        and all(old is new for old, new in zip(before, now)))


def _mates(sharing):
    """domain.Snapshot's ``mates`` from sharing_providers()."""
    return {uuid: reach for uuid, (_root, reach) in sharing.items()}


# Per World (immutable, one per graph version): the sharing providers and
# the search's snapshot of every tree.
_SHARING_BY_WORLD = weakref.WeakKeyDictionary()
_SNAPSHOT_BY_WORLD = weakref.WeakKeyDictionary()
# {sharing provider uuid: (its record, the member lists of its
# aggregates, its sharing_providers() entry)} of the last World asked.
_SHARING_REACH = {}
# The sharing providers (sharing_providers()) each snapshot was built with.
_SHARING_OF_SNAPSHOT = weakref.WeakKeyDictionary()
_SNAPSHOT_LOCK = threading.Lock()
# The (world, snapshot) built last: the next one reuses its unchanged trees.
_LAST_SNAPSHOT = [None]


class WorldReader:
    """The candidate search's reads, answered from an in-memory World.
    ``sweep_frozen``: see world/records.py settle()'s ``sweep``."""

    def __init__(self, world, sweep_frozen):
        self.world = world
        self.sweep_frozen = sweep_frozen

    def sharing_providers(self):
        world = self.world
        found = _SHARING_BY_WORLD.get(world)
        if found is None:
            found = {}
            reached = {}
            for record in world.sharing:
                members = tuple([world.by_aggregate[agg]
                                 for agg in sorted(record.aggregates)])
                # The very record and member lists as in an earlier copy
                # of the graph (evolve shares what a write left alone):
                # the same reach, not gathered again from every member.
                earlier = _SHARING_REACH.get(record.uuid)
                if (earlier is not None and earlier[0] is record
                        and len(earlier[1]) == len(members)
                        and all(map(operator.is_, earlier[1], members))):
                    entry = earlier[2]
                else:
                    reach = {record.root_uuid}
                    for listed in members:
                        reach.update(mate.root_uuid for mate in listed)
                    entry = (record.root_uuid, frozenset(reach))
                found[record.uuid] = entry
                reached[record.uuid] = (record, members, entry)
            _SHARING_REACH.clear()
            _SHARING_REACH.update(reached)
            _SHARING_BY_WORLD[world] = found
        return found

    def provider_roots(self, uuids):
        records = self.world.records
        return {uuid: records[uuid].root_uuid for uuid in uuids
                if uuid in records}

    def order_roots(self, uuids):
        world = self.world
        wanted = (uuids if isinstance(uuids, (set, frozenset))
                  else set(uuids))
        if len(wanted) * 16 >= len(world.root_uuids):
            # Lazily: a limited search only visits the first few
            # thousand.
            return filter(wanted.__contains__, world.root_uuids)
        records = world.records
        roots = [records[uuid] for uuid in wanted if uuid in records
                 and records[uuid].parent_uuid is None]
        return [record.uuid for record in sorted(
            roots, key=lambda record: (record.seq, record.uuid))]

    def run_probes(self, probes, sharing, roots=None):
        world = self.world
        allowed = None
        if roots is not None:
            # The bounded trees and the sharing providers' (which reach
            # across trees).  Like every set below, the very same set
            # from one request to the next while the graph's answers do
            # not change (domain.SET_OPERATIONS: a request at 10,000
            # hosts intersected ten thousand roots anew for each class).
            allowed = domain.SET_OPERATIONS(
                operator.or_, frozenset(roots),
                domain.SET_OPERATIONS(_sharing_roots, *sharing.values()))
        found = {}
        for probe in probes:
            uuids = frozenset()
            if probe.kind == 'aggs':
                uuids, matched_roots = domain.SET_OPERATIONS(
                    _aggregate_members,
                    *[world.by_aggregate.get(agg, ()) for agg in probe.names])
                # Exactly the sharing providers in the aggregates reach
                # beyond them.
                reach = domain.SET_OPERATIONS(
                    _reach_of, *[entry for uuid, entry in sharing.items()
                                 if uuid in uuids])
            else:
                if probe.kind == 'rc':
                    matched_roots = world.rc_roots(probe.rc, probe.amount)
                    if probe.root is not None:
                        matched_roots = matched_roots & {probe.root}
                    if allowed is not None:
                        matched_roots = domain.intersection(matched_roots,
                                                            allowed)
                else:
                    matched_roots = world.trait_roots(probe.names,
                                                      probe.roots_only)
                reach = domain.SET_OPERATIONS(
                    _rc_reach, matched_roots, *sharing.values())
            found[probe.key] = domain.ProbeResult(
                roots=matched_roots, reach=reach, uuids=uuids)
        return found

    def search_snapshot(self, sharing, roots):
        """Every tree, indexed once per World: nothing left to load."""
        world = self.world
        snapshot = _SNAPSHOT_BY_WORLD.get(world)
        if snapshot is None:
            with _SNAPSHOT_LOCK:
                snapshot = _SNAPSHOT_BY_WORLD.get(world)
                if snapshot is None:
                    snapshot = self._build_snapshot(sharing)
                    _SNAPSHOT_BY_WORLD[world] = snapshot
                    _LAST_SNAPSHOT[0] = (world, snapshot)
        return snapshot, None

    def _build_snapshot(self, sharing):
        """A domain.Snapshot of the whole World.

        A tree that the World the last snapshot was built from had already
        (the very list: World.evolve shares untouched trees) keeps that
        snapshot's nodes; a tree with a sharing provider is rebuilt too
        when that provider's reach changed (it depends on other trees).
        Which trees changed since is what the World knows of its last few
        versions (touched_since), or else found by comparing every tree.
        """
        world = self.world
        trees = world.trees
        last = _LAST_SNAPSHOT[0]
        if last is None:
            last_world, last_snapshot = None, domain.Snapshot()
        else:
            last_world, last_snapshot = last
        last_sharing = _SHARING_OF_SNAPSHOT.get(last_snapshot, {})
        sharing_roots = {root for uuid, (root, reach) in sharing.items()
                         if last_sharing.get(uuid) != (root, reach)}
        sharing_roots.update(root for uuid, (root, _reach)
                             in last_sharing.items() if uuid not in sharing)
        touched = (world.touched_since(last_world)
                   if last_world is not None else None)
        if touched is not None:
            dropped = touched | sharing_roots
            fresh_roots = [root for root in dropped if root in trees]
        else:
            last_trees = last_world.trees if last_world is not None else {}
            dropped = {root for root, before in last_trees.items()
                       if not _same_tree(before, trees.get(root))}
            dropped |= sharing_roots
            fresh_roots = [root for root, records in trees.items()
                           if root in dropped or root not in last_trees]
        fresh = self.candidate_trees(fresh_roots)
        snapshot = domain.Snapshot.extend(last_snapshot, dropped, fresh,
                                          mates=_mates(sharing))
        _SHARING_OF_SNAPSHOT[snapshot] = sharing
        # Once the snapshot is whole: its indexes, made after the nodes,
        # are as long-lived as they are (left in the collector's sight, a
        # full collection walked them every few candidate requests).
        provider_records.settle(len(fresh), len(world.records),
                                self.sweep_frozen)
        return snapshot

    def candidate_trees(self, roots):
        trees = self.world.trees
        return [
            domain.ProviderNode(
                record.uuid, parent_uuid=record.parent_uuid,
                root_uuid=record.root_uuid, seq=record.seq,
                traits=record.traits, aggregates=record.aggregates,
                inventories=record.inventories)
            for root in roots for record in trees.get(root, ())]


class PrivateReader(WorldReader):
    """The candidate search's reads of a private World (a what-if
    session's, tachyon_placement/whatif/): ``world`` evolved from
    ``base`` (a WorldReader of the process's copy of the graph) by
    changing the usage of the providers of the trees ``touched`` (roots),
    nothing else.  Nothing it builds is shared with the process's own
    searches: the search's snapshot is the base's with those trees made
    anew (not the process's last snapshot: the next real request patches
    from its own), the sharing providers the base's (usage changes move
    no aggregate)."""

    def __init__(self, world, base, touched):
        super().__init__(world, base.sweep_frozen)
        self.base = base
        self.touched = frozenset(touched)
        self._snapshot = None

    def sharing_providers(self):
        return self.base.sharing_providers()

    def search_snapshot(self, sharing, roots):
        if self._snapshot is None:
            base, _load = self.base.search_snapshot(sharing, roots)
            self._snapshot = domain.Snapshot.extend(
                base, self.touched,
                self.candidate_trees(
                    [root for root in self.touched
                     if root in self.world.trees]),
                mates=_mates(sharing))
        return self._snapshot, None
