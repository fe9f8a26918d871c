"""The reads behind GET /allocation_candidates.

A handful of static statements, whatever the request:

* ``SHARING`` lists the sharing providers (MISC_SHARES_VIA_AGGREGATE, few
  in any cloud) with the roots of their aggregate mates: the trees each
  one can serve.
* Probes bound the roots a candidate can be anchored at.  Each starts from
  an index (a trait, an aggregate, a resource class) and returns the roots
  of the providers it matches.  The selective probes (traits, aggregates)
  run first; the resource probes then only look in the trees those
  allowed (and the sharing providers', which reach across trees).
* ``ROOTS`` orders the surviving roots by creation.
* ``TREES`` loads whole trees, with traits, aggregates and inventories
  (``used`` is kept on the PROVIDES edge: no allocation is read).  The
  search asks for them in batches, in the order it visits roots, sized so
  that a request with a limit stops loading when it has its candidates.

Probes and ``ROOTS`` answer with one row of lists and ``TREES`` with one
string per inventory: decoding many small values costs far more than the
queries themselves.  The search is ``domain.candidates``.
"""
import operator
import random
import threading
import time
import weakref

from tachyon_placement.domain import candidates as domain
from tachyon_placement.domain import models
from tachyon_placement.graph import snapshot as snapshot_module
from tachyon_placement.graph.cypher import Statement
from tachyon_placement.topology import affinity
from tachyon_placement.weighing import ranking

SHARING = Statement('cand_sharing', common="""
MATCH (:Trait {name: $sharing})<-[:HAS_TRAIT]-(rp:ResourceProvider)
OPTIONAL MATCH (rp)-[:MEMBER_OF]->(:Aggregate)<-[:MEMBER_OF]-
               (mate:ResourceProvider)
RETURN rp.uuid AS uuid, rp.root_uuid AS root_uuid,
       collect(DISTINCT mate.root_uuid) AS mates
""")

# One row per probe: the roots of the matching providers and, for
# aggregates, the matching providers themselves.  A sharing provider
# counts as matched when its root is listed (a bound may be loose, never
# too tight).
PROBE_TRAITS = Statement('cand_probe_traits', common="""
UNWIND $probes AS probe
UNWIND probe.names AS trait_name
MATCH (:Trait {name: trait_name})<-[:HAS_TRAIT]-(rp:ResourceProvider)
WHERE NOT probe.roots_only OR rp.parent_uuid IS NULL
RETURN probe.key AS key, collect(DISTINCT rp.root_uuid) AS roots,
       [] AS uuids
""")

PROBE_AGGREGATES = Statement('cand_probe_aggregates', common="""
UNWIND $probes AS probe
UNWIND probe.names AS agg_uuid
MATCH (:Aggregate {uuid: agg_uuid})<-[:MEMBER_OF]-(rp:ResourceProvider)
RETURN probe.key AS key, collect(DISTINCT rp.root_uuid) AS roots,
       collect(DISTINCT rp.uuid) AS uuids
""")

# Placement's capacity test; the domain repeats it exactly, this only has
# to keep every provider that could pass.
_HAS_ROOM = """
WHERE (probe.root IS NULL OR rp.root_uuid = probe.root)
  AND coalesce(inv.used, 0) + probe.amount <=
      (inv.total - coalesce(inv.reserved, 0))
      * coalesce(inv.allocation_ratio, 1.0)
  AND coalesce(inv.min_unit, 1) <= probe.amount
  AND coalesce(inv.max_unit, inv.total) >= probe.amount
  AND probe.amount % coalesce(inv.step_size, 1) = 0
RETURN probe.key AS key, collect(DISTINCT rp.root_uuid) AS roots,
       [] AS uuids
"""

# Unbounded: from the resource class.
PROBE_RESOURCES = Statement('cand_probe_resources', common="""
UNWIND $probes AS probe
MATCH (:ResourceClass {name: probe.rc})<-[inv:PROVIDES]-(rp:ResourceProvider)
""" + _HAS_ROOM)

# Bounded by the roots the other probes allowed: from those trees.
PROBE_RESOURCES_IN_ROOTS = Statement(
    'cand_probe_resources_in_roots', common="""
UNWIND $roots AS wanted_root
MATCH (rp:ResourceProvider {root_uuid: wanted_root})-[inv:PROVIDES]->
      (rc:ResourceClass)
UNWIND $probes AS probe
WITH probe, rp, inv, rc
WHERE rc.name = probe.rc
WITH probe, rp, inv
""" + _HAS_ROOM)

PROVIDERS = Statement('cand_providers', common="""
UNWIND $uuids AS wanted
MATCH (rp:ResourceProvider {uuid: wanted})
RETURN rp.uuid AS uuid, rp.root_uuid AS root_uuid
""")

# One row: creation seq and uuid of each of $uuids that is a root.
ROOTS = Statement('cand_roots', common="""
UNWIND $uuids AS wanted
MATCH (rp:ResourceProvider {uuid: wanted})
WHERE rp.parent_uuid IS NULL
RETURN collect(rp.seq) AS seqs, collect(rp.uuid) AS uuids
""")

_INVENTORY_FIELDS = (('total', int), ('reserved', int), ('min_unit', int),
                     ('max_unit', int), ('step_size', int),
                     ('allocation_ratio', float), ('used', int))
# "NAME total reserved ... used" (resource class names have no space); an
# absent field is an empty word.
_INVENTORY = " + ' ' + ".join(
    ['rc.name'] + ["coalesce(toString(inv.%s), '')" % field
                   for field, _kind in _INVENTORY_FIELDS])

TREES = Statement('cand_trees', common="""
UNWIND $roots AS wanted_root
MATCH (rp:ResourceProvider {root_uuid: wanted_root})
OPTIONAL MATCH (rp)-[:HAS_TRAIT]->(t:Trait)
WITH rp, collect(t.name) AS traits
OPTIONAL MATCH (rp)-[:MEMBER_OF]->(a:Aggregate)
WITH rp, traits, collect(a.uuid) AS aggregates
OPTIONAL MATCH (rp)-[inv:PROVIDES]->(rc:ResourceClass)
RETURN rp.uuid AS uuid, rp.parent_uuid AS parent_uuid,
       rp.root_uuid AS root_uuid, rp.seq AS seq, traits, aggregates,
       collect(%s) AS inventories
""" % _INVENTORY)

_PROBE_STATEMENTS = {'traits': PROBE_TRAITS, 'aggs': PROBE_AGGREGATES,
                     'rc': PROBE_RESOURCES}


def _inventory(text):
    name, *values = text.split(' ')
    fields = {field: kind(float(value)) for (field, kind), value
              in zip(_INVENTORY_FIELDS, values) if value != ''}
    return models.Inventory(resource_class=name, **fields)


class CandidateStore:
    """Mixin of Store: what the allocation candidate search reads.

    ``candidate_reader()`` answers the same questions from the per-process
    copy of the graph (graph/snapshot.py) when the store keeps one; the
    methods here ask the engine.
    """

    def candidate_reader(self, in_memory=True):
        worlds = getattr(self, 'worlds', None)
        if in_memory and worlds is not None:
            return self._world_reader()
        return self

    def _world_reader(self):
        """A WorldReader of the process's current copy of the graph."""
        return WorldReader(self.worlds.current(),
                           self.engine.leaves_cycles_in_flight)

    def sharing_providers(self):
        """{uuid: (root uuid, frozenset of the roots it can serve)} of
        every sharing provider."""
        return {row['uuid']: (row['root_uuid'],
                              frozenset(row['mates']) | {row['root_uuid']})
                for row in self.engine.read(
                    SHARING, sharing=domain.SHARING_TRAIT)}

    def provider_roots(self, uuids):
        """{uuid: its root uuid} for the providers that exist."""
        if not uuids:
            return {}
        return {row['uuid']: row['root_uuid']
                for row in self.engine.read(PROVIDERS,
                                            uuids=sorted(set(uuids)))}

    def weighed(self, roots, request, staleness_limit, subset_size=1):
        """As WorldReader.weighed: weighers score the trees of the
        process's copy of the graph; Placement's order from the engine."""
        return self._world_reader().weighed(
            roots, request, staleness_limit, subset_size,
            placement_order=self.order_roots)

    def affinity_refiner(self, numa_free_metric=None, staleness_limit=0):
        """As WorldReader.affinity_refiner."""
        return self._world_reader().affinity_refiner(
            numa_free_metric, staleness_limit)

    def option_key(self, request, staleness_limit):
        """As WorldReader.option_key."""
        return self._world_reader().option_key(
            request, staleness_limit)

    def order_roots(self, uuids):
        """The root providers among ``uuids``, oldest first."""
        if not uuids:
            return []
        rows = self.engine.read(ROOTS, uuids=sorted(uuids))
        if not rows:
            return []
        return [uuid for _seq, uuid in sorted(
            zip((seq or 0 for seq in rows[0]['seqs']), rows[0]['uuids']))]

    def run_probes(self, probes, sharing, roots=None):
        """{probe key: domain.ProbeResult} for ``probes`` of any kinds.

        ``sharing`` as returned by sharing_providers(); ``roots`` (resource
        probes only): look in these trees (and the sharing providers')
        only.
        """
        found = {probe.key: domain.ProbeResult() for probe in probes}
        by_kind = {}
        for probe in probes:
            by_kind.setdefault(probe.kind, []).append(probe.as_params())
        reach_of_root = {}
        for root, reach in sharing.values():
            reach_of_root.setdefault(root, set()).update(reach)
        for kind, params in sorted(by_kind.items()):
            statement = _PROBE_STATEMENTS[kind]
            extra = {}
            if kind == 'rc' and roots is not None:
                statement = PROBE_RESOURCES_IN_ROOTS
                extra['roots'] = sorted(set(roots) | set(reach_of_root))
            for row in self.engine.read(statement, probes=params, **extra):
                uuids = frozenset(row['uuids'])
                reach = set()
                if kind == 'aggs':
                    # Exactly the sharing providers in the aggregates.
                    for uuid in uuids.intersection(sharing):
                        reach |= sharing[uuid][1]
                else:
                    for root in row['roots']:
                        reach |= reach_of_root.get(root, set())
                found[row['key']] = domain.ProbeResult(
                    roots=frozenset(row['roots']), reach=frozenset(reach),
                    uuids=uuids)
        return found

    def search_snapshot(self, sharing, roots):
        """(domain.Snapshot, load) for domain.find_candidates: the trees
        of the sharing providers that reach ``roots`` up front, the others
        loaded as the search gets to them."""
        snapshot = domain.Snapshot(
            self.candidate_trees({root for root, reach in sharing.values()
                                  if reach & roots}),
            mates=_mates(sharing))
        return snapshot, self.candidate_trees

    def candidate_trees(self, roots):
        """[domain.ProviderNode] of the whole trees of ``roots``."""
        if not roots:
            return []
        nodes = []
        for row in self.engine.read(TREES, roots=sorted(roots)):
            inventories = [_inventory(text) for text in row['inventories']]
            nodes.append(domain.ProviderNode(
                row['uuid'], parent_uuid=row['parent_uuid'],
                root_uuid=row['root_uuid'], seq=row['seq'],
                traits=row['traits'], aggregates=row['aggregates'],
                inventories={inventory.resource_class: inventory
                             for inventory in inventories}))
        return nodes


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
    """CandidateStore's reads, answered from an in-memory World.
    ``sweep_frozen``: see graph/snapshot.py settle()'s ``sweep``."""

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

    def _ranking(self, request, staleness_limit):
        """The Ranking of the weighers that apply to ``request`` (a
        weighing.model.RequestSummary), with the metric values at most
        ``staleness_limit`` seconds old; None when no weigher applies."""
        world = self.world
        if not world.weighers:
            return None
        weighers = ranking.applicable(world.weighers, request)
        if not weighers:
            return None
        return world.ranking(weighers, int(time.time() * 1000),
                             staleness_limit * 1000)

    def weighed(self, roots, request, staleness_limit, subset_size=1,
                placement_order=None):
        """``roots`` in the order the search visits them: best first for
        the weighers that apply to ``request`` (ties in Placement's order,
        the best ``subset_size`` shuffled), else Placement's order
        (``placement_order``, by default order_roots).  An iterable: drawn
        from lazily when it filters the order of every root, as a limited
        search only visits the first few thousand."""
        placement_order = placement_order or self.order_roots
        ranked = self._ranking(request, staleness_limit)
        if ranked is None:
            return placement_order(roots)
        world = self.world
        wanted = roots if isinstance(roots, (set, frozenset)) else set(roots)
        if len(wanted) * 16 >= len(world.root_uuids):
            # Most roots: filter the ranking's own order of all of them.
            ordered = filter(wanted.__contains__,
                             ranked.best_first(world.root_uuids))
        else:
            ordered = ranked.order(placement_order(wanted))
        return ranking.spread(ordered, subset_size, random)

    def option_key(self, request, staleness_limit):
        """How the weighers that apply to ``request`` order the providers
        of a slot within a tree (weighing.ranking.option_key), or None."""
        ranked = self._ranking(request, staleness_limit)
        if ranked is None:
            return None
        return ranked.option_key()

    def affinity_refiner(self, numa_free_metric=None, staleness_limit=0):
        """The PCI-NUMA affinity refiner of the operator's rules over the
        hosts' published topologies (topology/affinity.py), with the
        values of ``numa_free_metric`` (MiB free per NUMA node) at most
        ``staleness_limit`` seconds old; None when there is no rule."""
        world = self.world
        if not world.pci_affinity:
            return None
        numa_free = None
        if numa_free_metric:
            numa_free = world.telemetry.fresh(
                int(time.time() * 1000), staleness_limit * 1000).get(
                    numa_free_metric)
        return affinity.Refiner(world.pci_affinity, world.layouts,
                                world.records, numa_free)

    def order_roots(self, uuids):
        world = self.world
        wanted = (uuids if isinstance(uuids, (set, frozenset))
                  else set(uuids))
        if len(wanted) * 16 >= len(world.root_uuids):
            # Lazily: see weighed.
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
        snapshot_module.settle(len(fresh), len(world.records),
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
