"""A per-process copy of the provider graph, exactly fresh.

Reads that look at many providers (GET /resource_providers with filters,
GET /allocation_candidates) are served from memory instead of loading the
cloud from the engine on every request.  Freshness is exact: before each
use the graph version is read (one indexed lookup); if it moved, only the
providers stamped since are reloaded (see graph/versioning.py), so a
client always reads its own writes, whichever worker served them.

A ``World`` is immutable once built; a refresh builds a new one that
shares every unchanged record with the old one, so requests in other
threads keep a consistent view without locks.
"""
import bisect
import collections
import gc
import itertools
import operator
import random
import threading
import time
import weakref

from oslo_log import log as logging

from tachyon_placement.domain import candidates as candidate_rules
from tachyon_placement.domain import models
from tachyon_placement.domain import providers as provider_rules
from tachyon_placement.domain import sharded
from tachyon_placement.graph import versioning
from tachyon_placement.topology import affinity
from tachyon_placement.weighing import ranking

LOG = logging.getLogger(__name__)

# Changed or deleted providers a version read brings along (see above).
_CHANGES_ALONG = 64
# Changed providers read at once past that (world_reads.changed).
_CHANGED_PAGE = 2000
# Seconds a copy that may lack part of its newest write serves before the
# next request checks (WorldCache.current): under a stream of writes the
# next copy comes first and no check is made.
_SETTLE_AFTER = 0.05

_EMPTY = frozenset()
# Fewest providers made between two gc.freeze() (see settle()).
_FREEZE_AFTER = 500
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


class ProviderRecord:
    """One provider with everything the in-memory reads look at."""

    __slots__ = ('provider', 'seq', 'traits', 'aggregates', 'inventories',
                 'stamp', 'rendered', 'order', 'modified')

    def __init__(self, provider, seq, traits, aggregates, inventories,
                 stamp=0):
        self.provider = provider          # domain.models.Provider
        self.seq = seq if seq is not None else 0
        # Placement's listing order, the key every index is sorted by
        # (kept, not computed per comparison: the bisections of each copy
        # of the graph compare it tens of thousands of times a second).
        self.order = (self.seq, provider.uuid)
        # Its Last-Modified (a listing takes the newest of thousands).
        self.modified = provider.last_modified
        self.traits = traits              # frozenset of names
        self.aggregates = aggregates      # frozenset of uuids
        self.inventories = inventories    # {rc: models.Inventory}
        # The graph version of the provider's last change (its cursor in
        # the change feed).
        self.stamp = stamp or 0
        # {shape: encoded document} (api/handlers/resource_provider.py):
        # a record is replaced, never changed, when its provider changes,
        # so each shape is rendered once per change, not per list.
        self.rendered = {}

    @property
    def uuid(self):
        return self.provider.uuid

    def as_document(self):
        """The provider with its inventories (usage included), traits
        and aggregates, as the topology view and the change feed show
        it."""
        provider = self.provider
        return {
            'uuid': provider.uuid,
            'name': provider.name,
            'generation': provider.generation,
            'parent_provider_uuid': provider.parent_uuid,
            'root_provider_uuid': provider.root_uuid,
            'inventories': {
                rc: {'total': inv.total, 'reserved': inv.reserved,
                     'min_unit': inv.min_unit, 'max_unit': inv.max_unit,
                     'step_size': inv.step_size,
                     'allocation_ratio': inv.allocation_ratio,
                     'used': inv.used}
                for rc, inv in sorted(self.inventories.items())},
            'traits': sorted(self.traits),
            'aggregates': sorted(self.aggregates),
        }

    @property
    def root_uuid(self):
        return self.provider.root_uuid

    @property
    def parent_uuid(self):
        return self.provider.parent_uuid


_creation_order = operator.attrgetter('order')


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
    at = bisect.bisect_left(entries, record.order, key=_creation_order)
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
                                      key=_creation_order)
        for record in changes.added:
            if id(record) not in swapped:
                for key in keys_of(record):
                    bisect.insort(entries(key), record, key=_creation_order)
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
    {metric: (collected_at ms, {provider uuid: value})}."""

    def __init__(self, version, values):
        self.version = version
        self.values = values

    def fresh(self, now_ms, staleness_ms):
        """{metric: {provider uuid: value}} of the metrics collected less
        than ``staleness_ms`` before ``now_ms``."""
        return {name: values
                for name, (collected_at, values) in self.values.items()
                if collected_at is not None
                and now_ms - collected_at <= staleness_ms}


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
                                       key=_creation_order))
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
                                      key=_creation_order)}
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
        signals = telemetry.fresh(now_ms, staleness_ms)
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
    return {(record.uuid, _creation_order(record)) for record in records
            if record.parent_uuid is None}


def _labels(reads):
    """({uuid: trait names}, {uuid: aggregate uuids}) of every provider."""
    traits, aggregates = {}, {}
    for row in reads.traits():
        traits.setdefault(row['uuid'], set()).add(row['name'])
    for row in reads.aggregates():
        aggregates.setdefault(row['uuid'], set()).add(row['name'])
    return traits, aggregates


def _inventory(row):
    """A models.Inventory of an inventory row (or map) of the reads."""
    fields = {key: row[key] for key in models.Inventory.FIELDS
              if row[key] is not None}
    fields['used'] = int(row['used'] or 0)
    return models.Inventory(resource_class=row['rc'], **fields)


class LabelSets:
    """One frozenset per distinct set of labels (traits, aggregates) that
    the process's records hold: a cloud has few (the 9,132 providers of
    the bench's 2,000 hosts have 23 sets of traits and 12 of aggregates),
    and a set each was 2.5 of the records' 11 MiB there (a set of six
    traits is 728 bytes).  Candidate nodes take the records' sets, so
    they share them too.  Weak: a set goes when no record holds it."""

    def __init__(self):
        # {sorted names: the set}: keyed by a tuple, not the set, whose
        # own key would keep it alive.
        self._sets = weakref.WeakValueDictionary()

    def __call__(self, labels):
        """The held frozenset equal to ``labels`` (any iterable)."""
        labels = frozenset(labels)
        key = tuple(sorted(labels))
        held = self._sets.get(key)
        if held is None:
            # Two threads may each keep their own: equal, and harmless.
            held = self._sets.setdefault(key, labels)
        return held

    def __len__(self):
        return len(self._sets)


_LABEL_SETS = LabelSets()


def _record(row, traits, aggregates, inventories):
    provider = models.Provider(
        uuid=row['uuid'], name=row['name'], generation=row['generation'],
        parent_uuid=row['parent_uuid'], root_uuid=row['root_uuid'],
        created_at=models.from_millis(row['created_at']),
        updated_at=models.from_millis(row['updated_at']))
    return ProviderRecord(provider, row['seq'], traits, aggregates,
                          inventories, row['stamp'])


def _same_record(held, record):
    """Whether ``held`` (a ProviderRecord or None) says what ``record``
    says (stamps alone do not tell: a read that saw part of a write saw
    its stamp)."""
    return held is not None and (
        held.stamp == record.stamp and held.provider == record.provider
        and held.seq == record.seq and held.traits == record.traits
        and held.aggregates == record.aggregates
        and held.inventories == record.inventories)


def _records(reads):
    """{uuid: ProviderRecord} of every provider, from the four per-kind
    reads (graph/world_reads.py)."""
    traits, aggregates = _labels(reads)
    inventories = {}
    for row in reads.inventories():
        inventories.setdefault(row['uuid'], {})[row['rc']] = _inventory(row)
    return {row['uuid']: _record(
        row, _LABEL_SETS(traits.get(row['uuid'], _EMPTY)),
        _LABEL_SETS(aggregates.get(row['uuid'], _EMPTY)),
        inventories.get(row['uuid'], {}))
        for row in reads.providers() if row['uuid'] is not None}


def _changed_records(rows, since, held):
    """{uuid: ProviderRecord} of the providers stamped after ``since``
    (``rows``: their _CHANGED_PROVIDER maps), keeping the traits and
    aggregates of those whose labels did not change from ``held`` ({uuid:
    ProviderRecord} of the copy being brought up to date)."""
    records = {}
    for row in rows:
        if row['uuid'] is None:
            # Deleted while read (Neo4j: read-committed): its tombstone,
            # stamped after ``since``, comes with this read or the next.
            continue
        old = held.get(row['uuid'])
        if old is not None and (row['labels_stamp'] or 0) <= since:
            traits, aggregates = old.traits, old.aggregates
        else:
            # Equal sets are one object: the old record's when they did
            # not change (a copy re-reads its newest write when it was
            # not whole).
            traits = _LABEL_SETS(row['traits'])
            aggregates = _LABEL_SETS(row['aggregates'])
        records[row['uuid']] = _record(
            row, traits, aggregates,
            {inventory['rc']: _inventory(inventory)
             for inventory in row['inventories']})
    return records


_unfrozen = [0]       # objects of the graph copies made since the last freeze
# When frozen objects were last collected too (monotonic seconds).
_swept = [time.monotonic()]
# Seconds between two collections of the frozen objects (see settle()).
_SWEEP_INTERVAL = 600
# This process's share of _SWEEP_INTERVAL before its next sweep, drawn at
# its first settle() and after each sweep (see _sweep_due()).
_sweep_share = [None]
# A sweep that took this long (seconds) is logged at info, not debug.
_SWEEP_NOTED = 0.25


def settle(new, size, sweep=True):
    """Keep the collector off the in-memory copies of the graph.

    ``new``: providers (records or search nodes) just made; ``size``: how
    many the copy holds; ``sweep``: whether frozen objects can turn into
    garbage cycles (Engine.leaves_cycles_in_flight).  The copies are most
    of the process's objects and live long; every full collection walked
    them, pausing requests for tens of milliseconds at 1000 hosts and
    hundreds at 10000.  Once a tenth is new, collect what is garbage and
    move the rest out of the collector's sight (gc.freeze); what is
    dropped later is freed by its reference count only, so nothing that
    lives past a request may be in a reference cycle: records and search
    nodes hold none, and requests leave none (api/app.py ForgetRequest;
    test_graph_version.py).  What a driver leaves in cycles while in
    flight at a freeze (the neo4j driver's results and transactions) is
    collected with everything frozen about every _SWEEP_INTERVAL seconds:
    one full collection then, and a bounded leak between two.
    """
    _unfrozen[0] += new
    if _unfrozen[0] >= max(_FREEZE_AFTER, size // 10):
        _unfrozen[0] = 0
        if sweep and _sweep_due():
            frozen, start = gc.get_freeze_count(), time.monotonic()
            gc.unfreeze()
            gc.collect()
            _swept[0] = time.monotonic()
            took = _swept[0] - start
            LOG.log(logging.INFO if took >= _SWEEP_NOTED else logging.DEBUG,
                    'Swept %(frozen)d frozen objects in %(took).2f s',
                    {'frozen': frozen, 'took': took})
        else:
            gc.collect()
        gc.freeze()


def _sweep_due():
    """Whether the frozen objects are to be collected now.  A full
    collection at 10,000 hosts holds the interpreter for most of a second;
    the workers of a server start together, so each waits its own share
    of the interval (half to one and a half) lest they all pause at once."""
    if _sweep_share[0] is None:
        _sweep_share[0] = random.uniform(0.5, 1.5)
    if time.monotonic() - _swept[0] < _SWEEP_INTERVAL * _sweep_share[0]:
        return False
    _sweep_share[0] = None
    return True


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
        world, changed, gone = self._evolved(world, stamps, caught_up,
                                             settled)
        hosts = self._see_stamps(world, previous, stamps)
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
        if world is None or stamps.full_reload > world.complete:
            world = World(version, _records(reads))
            changed, gone = None, ()
            settle(len(world.records), len(world.records),
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
                rows = reads.changed(since, _CHANGED_PAGE)
            held = world.records
            changed, fresh = {}, {}
            for uuid, record in _changed_records(rows, since,
                                                 held).items():
                old = held.get(uuid)
                if _same_record(old, record):
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
            settle(len(fresh), len(world.records),
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
                    summaries[name] = TopologySummary.of(published[0],
                                                         published[1])
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
        if world.telemetry.version != telemetry_version:
            world.telemetry = TelemetryView(
                telemetry_version, self._store.metrics.values())
