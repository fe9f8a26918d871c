"""A provider as the process's copy of the graph holds it (ProviderRecord),
made from the rows of graph/world_reads.py, and how the copies' objects
are kept away from the garbage collector (settle)."""
import gc
import operator
import random
import time
import weakref

from oslo_log import log as logging

from tachyon_placement.domain import models

LOG = logging.getLogger(__name__)

_EMPTY = frozenset()
# Fewest providers made between two gc.freeze() (see settle()).
_FREEZE_AFTER = 500


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


# A record's creation order, as the indexes sort by it.
creation_order = operator.attrgetter('order')


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


def same_record(held, record):
    """Whether ``held`` (a ProviderRecord or None) says what ``record``
    says (stamps alone do not tell: a read that saw part of a write saw
    its stamp)."""
    return held is not None and (
        held.stamp == record.stamp and held.provider == record.provider
        and held.seq == record.seq and held.traits == record.traits
        and held.aggregates == record.aggregates
        and held.inventories == record.inventories)


def from_reads(reads):
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


def changed_records(rows, since, held):
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
