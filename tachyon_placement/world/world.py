"""A per-process copy of the provider graph (a World) and its indexes.

Reads that look at many providers (GET /resource_providers with filters,
GET /allocation_candidates) are served from memory instead of loading the
cloud from the engine on every request.  A ``World`` is immutable once
built; a refresh (world/cache.py) builds a new one that shares every
unchanged record with the old one (evolve), so requests in other threads
keep a consistent view without locks.
"""
import bisect
import collections
import itertools
import time

from oslo_log import log as logging

from tachyon_placement.domain import candidates as candidate_rules
from tachyon_placement.domain import providers as provider_rules
from tachyon_placement.domain import sharded
from tachyon_placement.telemetry import metrics
from tachyon_placement.weighing import model as weighing_model
from tachyon_placement.weighing import ranking
from tachyon_placement.world import records as provider_records

LOG = logging.getLogger(__name__)

_EMPTY = frozenset()
# Rankings a World keeps (weigher sets x telemetry versions) before it
# forgets them all.
_RANKINGS_KEPT = 16
# Copies of the graph whose indexes were not used that a copy still
# patches its indexes across (beyond, they are built afresh if used).
_STEPS_KEPT = 16
# ... or than this many changed records (or a quarter of the cloud).
_PENDING_KEPT = 500
# Distinct tests (a resource class and amount, a set of traits) whose
# roots a World remembers (see rc_roots, trait_roots).
_ROOT_SETS_KEPT = 32
# ... and whose providers with room it keeps listed (see with_room).
_ROOMS_KEPT = 16
# Sets of records a World keeps for provider lists' filters (see narrowed).
_MEMBER_SETS_KEPT = 16


def _everyone(_record):
    return (None,)


def _root_of(record):
    return (record.root_uuid,)


def _if_root(record):
    return (None,) if record.parent_uuid is None else ()


def _traits_of(record):
    return record.traits


def _aggregates_of(record):
    return record.aggregates


def _classes_of(record):
    return record.inventories


def _if_sharing(record):
    return (None,) if candidate_rules.SHARING_TRAIT in record.traits else ()


# The indexes of a World: {name: what a record is filed under}; each index
# is {key: [records with that key, in creation order]} ('ordered', 'roots'
# and 'sharing' file under None).  'sharing' is by_trait's list of the
# sharing trait on its own: every candidate request reads it, and a write
# that patched by_trait copied the lists of each trait of the provider it
# changed (a compute node's: tens of thousands of entries at 10,000
# hosts, a twentieth of a scheduling loop's candidate request).
_INDEXES = {
    'ordered': _everyone,
    'trees': _root_of,
    'by_trait': _traits_of,
    'by_aggregate': _aggregates_of,
    'by_class': _classes_of,
    'roots': _if_root,
    'sharing': _if_sharing,
}
# Indexes of as many keys as trees: sharded (domain/sharded.py), since
# each patch (see _patched_index) copies the index (a dict of 10,000
# roots: another twentieth of that request).
_SHARDED_INDEXES = frozenset(['trees'])


def _keys_of(name):
    """What a record is filed under in the index ``name``: one of
    _INDEXES, or ('room', rc, amount), the providers with room for
    ``amount`` of ``rc`` (see World.with_room), filed under None."""
    keys_of = _INDEXES.get(name)
    if keys_of is None:
        _room, rc, amount = name

        def keys_of(record):
            if provider_rules.has_capacity(record.inventories.get(rc),
                                           amount):
                return _EVERYONE
            return ()
    return keys_of


_EVERYONE = (None,)


def _is_room(name):
    return isinstance(name, tuple)


def _index(records, keys_of, sharded_index=False):
    """{key: [records with that key, in creation order]}; ``records`` in
    creation order."""
    index = {}
    for record in records:
        for key in keys_of(record):
            index.setdefault(key, []).append(record)
    return sharded.ShardedDict.of(index) if sharded_index else index


def _at(entries, record):
    """Where ``record`` is in ``entries`` (in creation order), found by
    bisection: a scan of the list per changed provider made each copy of
    the graph cost O(changes x providers) under a stream of writes."""
    at = bisect.bisect_left(entries, record.order,
                            key=provider_records.creation_order)
    if at < len(entries) and entries[at] is record:
        return at
    return entries.index(record)    # not where its order says: look


class Changes:
    """One write's records out (``gone``, as the copy before it holds
    them) and in (``added``): what patches an index to the next copy of
    the graph."""

    __slots__ = ('gone', 'added', 'replaced')

    def __init__(self, gone, added):
        self.gone = gone
        self.added = added
        # {uuid: the record that replaces one of ``gone`` in the same
        # place}: most writes change a provider's usage or traits, not its
        # creation order, and it is swapped where it stands.
        new = {record.uuid: record for record in added}
        self.replaced = {
            old.uuid: new[old.uuid] for old in gone
            if old.uuid in new and new[old.uuid].order == old.order}

    def __len__(self):
        return len(self.gone) + len(self.added)


def _patched_index(index, keys_of, steps):
    """``index`` with ``steps`` (Changes, oldest first) applied.

    Copy on write: only the lists of the keys the changes touch are
    copied (once, however many steps), the others (and ``index`` itself)
    are shared with the World it came from, which other threads may still
    be reading.
    """
    index = index.copy()
    touched = {}

    def entries(key):
        entries = touched.get(key)
        if entries is None:
            entries = touched[key] = list(index.get(key, ()))
        return entries
    for changes in steps:
        swapped = set()
        for old in changes.gone:
            new = changes.replaced.get(old.uuid)
            new_keys = keys_of(new) if new is not None else ()
            for key in keys_of(old):
                listed = entries(key)
                if key in new_keys:
                    listed[_at(listed, old)] = new
                else:
                    del listed[_at(listed, old)]
            if new is not None:
                swapped.add(id(new))
                for key in new_keys:
                    if key not in keys_of(old):
                        bisect.insort(entries(key), new,
                                      key=provider_records.creation_order)
        for record in changes.added:
            if id(record) not in swapped:
                for key in keys_of(record):
                    bisect.insort(entries(key), record,
                                  key=provider_records.creation_order)
    for key, entries_of_key in touched.items():
        if entries_of_key:
            index[key] = entries_of_key
        else:
            # A key that one step brought in and a later one emptied was
            # never in ``index``.
            index.pop(key, None)
    return index


class TopologySummary(collections.namedtuple(
        'TopologySummary', 'generation sockets numa_nodes pci_devices')):
    """What the topology list shows of a host's published document."""
    __slots__ = ()

    @classmethod
    def of(cls, generation, document):
        return cls(generation, len(document['sockets']),
                   len(document['numa_nodes']), len(document['pci_devices']))


class TelemetryView:
    """The metric values stored at one telemetry version:
    {metric: (collected_at ms, {provider uuid: value})}, and each root's
    usage of the classes weighers count placements of when this process
    took them in ({root: {class: used}}, see weighing.model
    USAGE_AT_SAMPLE)."""

    def __init__(self, version, values, usage=None,
                 usage_classes=frozenset()):
        self.version = version
        self.values = values
        self.usage = usage
        self.usage_classes = usage_classes

    def fresh(self, now_ms, staleness_ms):
        """{metric: {provider uuid: value}} of the metrics collected less
        than ``staleness_ms`` before ``now_ms`` (and the usage then, for
        the scorers that count placements since)."""
        fresh = {name: values
                 for name, (collected_at, values) in self.values.items()
                 if collected_at is not None
                 and now_ms - collected_at <= staleness_ms}
        if fresh and self.usage is not None:
            fresh[weighing_model.USAGE_AT_SAMPLE] = self.usage
        return fresh


class World:
    """An immutable, indexed copy of every provider at one graph version."""

    def __init__(self, version, records):
        self.version = version
        # The version up to which the copy holds every write whole (see
        # WorldCache._evolved): its own version, or the one before when
        # the engine may have shown part of the newest write; the next
        # copy reads what changed after it.  When it was made (monotonic
        # seconds): a copy short of whole is checked again after a while.
        self.complete = version
        self.made = time.monotonic()
        # {uuid: ProviderRecord}, sharded: each write's copy of the graph
        # copies only the shards its records fall in (a dict of the whole
        # cloud copied per write, and freed per write, was a tenth of a
        # scheduling loop's server time at 10,000 hosts).
        if not isinstance(records, sharded.ShardedDict):
            records = sharded.ShardedDict.of(records)
        self.records = records
        # Indexes (see _INDEXES) are made on first use: {name: index}
        # built for this version, and {name: (index of an earlier version,
        # the Changes of each write since, how many records they hold)} to
        # patch it from (see evolve).
        self._built = {}
        self._pending = {}
        self._root_uuids = None
        # {test: roots of the trees where some provider passes it} (see
        # rc_roots, trait_roots, _passes).
        self._root_sets = {}
        # {key: set of the records of an index's list} (see _members).
        self._member_sets = {}
        # The weighers at this version (WorldCache sets them) and their
        # rankings, built on first use per set of weighers.
        self.weighers = ()
        self.weighers_stamp = 0
        # PCI-NUMA affinity rules and what they need of the hosts'
        # published topologies (WorldCache sets them, see
        # topology/affinity.py): {root uuid: HostLayout}, and {host name:
        # root uuid} to replace a host's layout when it is published again.
        self.pci_affinity = ()
        self.pci_affinity_stamp = 0
        self.layouts = {}
        self.layout_roots = {}
        # {host name: TopologySummary} of every published topology, for
        # the topology list (no engine read per request).
        self.topology_summaries = {}
        self.topology_stamp = 0
        # The metric values (WorldCache replaces the view when the
        # collector stored new ones, whether or not the graph moved).
        self.telemetry = TelemetryView(0, {})
        self._rankings = {}
        # (rankings of an earlier World, roots whose trees changed since):
        # a ranking is updated from there rather than made anew.
        self._basis = None
        # (telemetry version, layouts, metrics) and the signals with the
        # per-NUMA metrics given to providers (see _numa_mapped).
        self._numa_signals = None
        # {version of an earlier World: roots whose trees changed since},
        # for the last _STEPS_KEPT versions, and what this World and those
        # it evolved from (or to) share, to know the trail is theirs (see
        # touched_since).
        self._trail = {}
        self._lineage = object()

    def evolve(self, version, changed, deleted):
        """The World at ``version``: ``changed`` ({uuid: ProviderRecord})
        written since this one, ``deleted`` (uuids) gone.

        Its indexes are patched from this one's rather than rebuilt (a
        write touches a handful of providers; rebuilding them for the
        whole cloud after every allocation was most of a scheduling loop's
        time on a large cloud), and only when first used: a process that
        follows the graph without searching it (a change feed server)
        only carries the changes along, and past _STEPS_KEPT copies or a
        quarter of the cloud forgets them and builds afresh if ever
        asked.
        """
        records = self.records.copy()
        gone = []
        for uuid in deleted:
            old = records.pop(uuid, None)
            if old is not None:
                gone.append(old)
        for uuid, record in changed.items():
            old = records.get(uuid)
            if old is not None:
                gone.append(old)
            records[uuid] = record
        changes = Changes(gone, sorted(changed.values(),
                                       key=provider_records.creation_order))
        world = World(version, records)
        most = max(_PENDING_KEPT, len(records) // 4)
        # (list(): the names as of now, whatever reader threads add.)
        for name in list(self._built) + list(self._pending):
            built = self._built.get(name)
            if built is not None:
                world._pending[name] = (built, (changes,), len(changes))
                continue
            earlier = self._pending.get(name)
            if earlier is None:
                continue
            base, steps, size = earlier
            if len(steps) < _STEPS_KEPT and size + len(changes) <= most:
                world._pending[name] = (base, steps + (changes,),
                                        size + len(changes))
        touched = {record.root_uuid for record in gone}
        touched.update(record.root_uuid for record in changes.added)
        trail = {earlier: roots | touched
                 for earlier, roots in self._trail.items()}
        # (A copy made whole again keeps its version: the roots touched
        # since the earlier copy of that version add up.)
        trail[self.version] = trail.get(self.version, frozenset()) | (
            frozenset(touched))
        if len(trail) > _STEPS_KEPT:
            del trail[min(trail)]
        world._trail = trail
        world._lineage = self._lineage
        if self._root_uuids is not None and _roots_of(gone) == _roots_of(
                changes.added):
            # No root came, went or moved: the very list, which also keeps
            # what is made once per base order (Ranking.best_first).
            world._root_uuids = self._root_uuids
        if self._rankings:
            world._basis = (self._rankings, frozenset(touched))
        elif self._basis is not None:
            world._basis = (self._basis[0], self._basis[1] | touched)
        for test, roots in list(self._root_sets.items()):
            passing = {root for root in touched
                       if world._tree_passes(root, test)}
            if passing <= roots and roots.isdisjoint(touched - passing):
                # Most writes leave every tree on the same side: the very
                # set (no copy of thousands of roots per write, and the
                # intersections made of it stay remembered, see
                # domain.SET_OPERATIONS).
                world._root_sets[test] = roots
            else:
                world._root_sets[test] = (roots - touched) | passing
        return world

    def touched_since(self, earlier):
        """The roots whose trees changed (or came, or went) between the
        World ``earlier`` and this one, when this one came from it by at
        most _STEPS_KEPT evolve() steps; None otherwise."""
        if earlier._lineage is not self._lineage:
            return None
        if earlier.version == self.version:
            return frozenset() if earlier is self else None
        return self._trail.get(earlier.version)

    def _index_of(self, name):
        """The index ``name`` of this version: built, patched from an
        earlier version's, or made from the records."""
        index = self._built.get(name)
        if index is None:
            pending = self._pending.get(name)
            if pending is not None:
                index = _patched_index(pending[0], _keys_of(name),
                                       pending[1])
            elif name == 'ordered':
                index = {None: sorted(self.records.values(),
                                      key=provider_records.creation_order)}
            elif _is_room(name):
                index = _index(self.by_class.get(name[1], ()),
                               _keys_of(name))
            else:
                index = _index(self.ordered, _INDEXES[name],
                               name in _SHARDED_INDEXES)
            # Two threads may both make it: the same index either way.
            self._built[name] = index
            self._pending.pop(name, None)
        return index

    @property
    def ordered(self):
        """Records in creation order (Placement's listing order)."""
        return self._index_of('ordered').get(None, [])

    @property
    def trees(self):
        """{root uuid: [records of the tree in creation order]}."""
        return self._index_of('trees')

    @property
    def by_trait(self):
        return self._index_of('by_trait')

    @property
    def by_aggregate(self):
        return self._index_of('by_aggregate')

    @property
    def by_class(self):
        return self._index_of('by_class')

    @property
    def sharing(self):
        """The sharing providers in creation order."""
        return self._index_of('sharing').get(None, [])

    def narrowed(self, filters):
        """The records matching ``filters`` (domain.providers.
        ProviderFilters), in creation order: the same list as
        domain.providers.select(self.ordered, filters).

        It starts from the shortest list a match must be in (providers
        with room for a resource, with a required trait, in a required
        aggregate) and keeps those of it in every other such list, in one
        of each list of choices (``in:``) and in none of the forbidden
        ones, each a test of membership in a set of records.  Records hash
        by identity, so the tests read no record: a copy of the graph
        loaded under a stream of writes has them scattered over the heap,
        and reading each one's traits, aggregates and inventories was most
        of a long list's time.
        """
        def lists(key, index, names):
            # (key of a set of records, the index's list it is made from)
            return [((key, name), index.get(name, ())) for name in names]

        # The lists a match must be in, the lists of choices (it must be
        # in one of each), the lists it must not be in.
        musts = [(('room', rc, amount), self.with_room(rc, amount))
                 for rc, amount in filters.resources.items()]
        choices = []
        for key, index, required in (
                ('trait', self.by_trait, filters.required_traits),
                ('aggregate', self.by_aggregate, filters.member_of)):
            for any_of in required:
                if len(any_of) == 1:
                    musts.extend(lists(key, index, any_of))
                else:
                    choices.append(lists(key, index, any_of))
        forbidden = (
            lists('trait', self.by_trait, filters.forbidden_traits)
            + lists('aggregate', self.by_aggregate,
                    filters.forbidden_aggregates))

        # Filters chained over the shortest list, the shortest of the
        # other lists first: one pass, in C (set.__contains__ needs no
        # Python frame per record).
        musts.sort(key=lambda must: len(must[1]))
        records = musts[0][1] if musts else self.ordered
        for must in musts[1:]:
            records = filter(self._members(*must).__contains__, records)
        for key, members in forbidden:
            if members:
                records = itertools.filterfalse(
                    self._members(key, members).__contains__, records)
        for options in choices:
            sets = [self._members(*option) for option in options]
            records = [record for record in records
                       if any(record in within for within in sets)]
        return list(records)

    def _members(self, key, members):
        """The set of the records ``members`` (an index's list, named by
        ``key``), made on first use by this World (records change from
        one World to the next) and kept up to _MEMBER_SETS_KEPT; then
        they are all forgotten."""
        within = self._member_sets.get(key)
        if within is None:
            if len(self._member_sets) >= _MEMBER_SETS_KEPT:
                self._member_sets.clear()
            within = self._member_sets[key] = set(members)
        return within

    def with_room(self, rc, amount):
        """The records with room for ``amount`` of ``rc`` (Placement's
        capacity test), in creation order.

        An index like the others (patched from an earlier copy's, not
        rebuilt, when first used after a write), one per (rc, amount)
        asked for, up to _ROOMS_KEPT; then they are all forgotten.
        """
        name = ('room', rc, amount)
        if name not in self._built and name not in self._pending:
            rooms = [kept for kept in list(self._built) + list(self._pending)
                     if _is_room(kept)]
            if len(rooms) >= _ROOMS_KEPT:
                for kept in rooms:
                    self._built.pop(kept, None)
                    self._pending.pop(kept, None)
        return self._index_of(name).get(None, [])

    @property
    def roots(self):
        """Root provider records in creation order."""
        return self._index_of('roots').get(None, [])

    @property
    def root_uuids(self):
        """The uuids of ``roots``."""
        if self._root_uuids is None:
            self._root_uuids = [record.provider.uuid for record in self.roots]
        return self._root_uuids

    def ranking(self, weighers, now_ms, staleness_ms):
        """The weighing.ranking.Ranking of every tree for ``weighers``
        (a tuple of this World's weighers) with the metric values
        collected less than ``staleness_ms`` before ``now_ms``; made once
        per World, weigher set and telemetry version."""
        telemetry = self.telemetry
        signals = self._numa_mapped(telemetry.fresh(now_ms, staleness_ms))
        key = (weighers, telemetry.version, frozenset(signals))
        ranked = self._rankings.get(key)
        if ranked is None:
            if len(self._rankings) >= _RANKINGS_KEPT:
                self._rankings.clear()
            earlier = self._basis and self._basis[0].get(key)
            same_trees = next((kept for (kept_weighers, _v, _s), kept
                               in self._rankings.items()
                               if kept_weighers == weighers), None)
            if earlier is not None:
                # A write changed a few trees: score only those again.
                ranked = earlier.updated(self.trees, signals,
                                         self._basis[1])
            elif same_trees is not None:
                # Only the metric values changed: only the weighers that
                # read them score again.
                ranked = same_trees.with_signals(self.trees, signals)
            else:
                ranked = ranking.Ranking(weighers, self.trees, signals)
            self._rankings[key] = ranked
        return ranked

    def _numa_mapped(self, signals):
        """``signals`` with the values of per-NUMA metrics (keyed by
        telemetry.metrics.numa_key) given to the providers of each NUMA
        node instead: the node's provider where the tree models NUMA, and
        the device providers the published topology puts on the node
        (weighers then order a host's NUMA nodes or devices by their
        node's value, and score the host by their mean).  Made once per
        telemetry version and set of host layouts."""
        token = (self.telemetry.version, id(self.layouts), frozenset(signals))
        kept = self._numa_signals
        if kept is not None and kept[0] == token:
            return kept[1]
        mapped = dict(signals)
        for name, values in signals.items():
            if name == weighing_model.USAGE_AT_SAMPLE or not any(
                    metrics.is_numa_key(key) for key in values):
                continue
            nodes = {}
            for key, value in values.items():
                parsed = metrics.split_numa_key(key)
                if parsed is not None:
                    nodes[parsed] = value
            given = {}
            for root, layout in self.layouts.items():
                for group in (layout.numa_providers, layout.device_numa):
                    for uuid, node in group.items():
                        if (root, node) in nodes:
                            given[uuid] = nodes[(root, node)]
            mapped[name] = given
        self._numa_signals = (token, mapped)
        return mapped

    def rc_roots(self, rc, amount):
        """The roots of the trees where some provider has room for
        ``amount`` of ``rc`` (Placement's capacity test).

        Remembered per (rc, amount) and carried over by evolve(), which
        re-tests only the trees a write touched: the answer is about the
        whole cloud, the work per write is not.
        """
        return self._roots_where(('room', rc, amount), 'by_class', (rc,))

    def trait_roots(self, names, roots_only=False):
        """The roots of the trees where some provider (the root itself
        when ``roots_only``) has any of the traits ``names`` (a tuple).
        Remembered and carried over as rc_roots are: a request's sets
        are then the very same from one request (and write) to the next,
        and so are the intersections made of them."""
        return self._roots_where(('traits', names, roots_only), 'by_trait',
                                 names)

    def _roots_where(self, test, index, keys):
        """The roots of the records filed under ``keys`` in the index
        ``index`` that pass ``test`` (see _passes), remembered per test.
        The index is looked at only when the set is not remembered: one
        carried over by evolve() spares a copy made after a write the
        patching of an index of the whole cloud (a tenth of a scheduling
        loop's server time at 10,000 hosts)."""
        found = self._root_sets.get(test)
        if found is None:
            listed = self._index_of(index)
            found = frozenset(record.root_uuid for key in keys
                              for record in listed.get(key, ())
                              if _passes(test, record))
            if len(self._root_sets) >= _ROOT_SETS_KEPT:
                self._root_sets.clear()
            self._root_sets[test] = found
        return found

    def _tree_passes(self, root, test):
        return any(_passes(test, record)
                   for record in self.trees.get(root, ()))


def _passes(test, record):
    """Whether ``record`` passes a World's root-set test: ('room', rc,
    amount), room for ``amount`` of ``rc``; ('traits', names,
    roots_only), any of the traits ``names`` (and being a root when
    ``roots_only``)."""
    if test[0] == 'room':
        _kind, rc, amount = test
        return provider_rules.has_capacity(record.inventories.get(rc),
                                           amount)
    _kind, names, roots_only = test
    return ((not roots_only or record.parent_uuid is None)
            and not record.traits.isdisjoint(names))


def _roots_of(records):
    """{(uuid, creation order)} of the roots among ``records``."""
    return {(record.uuid, provider_records.creation_order(record))
            for record in records if record.parent_uuid is None}
