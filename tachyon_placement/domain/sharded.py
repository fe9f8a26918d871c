"""A dict that is copied in a fraction of its size.

The candidate search's snapshot of the cloud is made anew for every copy
of the graph a request sees, from the previous one less the few trees a
write touched (domain.candidates.Snapshot.extend).  Copying its indexes
whole (tens of thousands of entries, each copy touching every node's
reference count) was a tenth of a scheduling loop's request at 10,000
hosts.  A ShardedDict keeps its entries in shards by key hash; a copy
shares every shard with its original, and either copies a shard only
when it first writes into it.
"""
import collections.abc
import itertools

_SHARDS = 1024
_MASK = _SHARDS - 1


class ShardedDict(collections.abc.MutableMapping):
    """A mapping in ``_SHARDS`` dicts by key hash, copied on write.

    Iteration follows the shards, not the insertion order.  Lookups cost
    a Python call more than a dict's: for indexes copied often and read a
    few thousand times per copy.
    """

    __slots__ = ('_shards', '_owned', '_size')

    def __init__(self):
        self._shards = [{} for _ in range(_SHARDS)]
        # Indexes of the shards this one may write into; None: all.
        self._owned = None
        # Kept, not summed over the shards: the copy's size is read on
        # every change to the graph (summing 1,024 shards was 0.8 % of a
        # worker's time in the scheduling loop at 10,000 hosts).
        self._size = 0

    def copy(self):
        """A copy sharing every shard: each writes into a shard only
        after copying it (the original too, from now on)."""
        twin = ShardedDict.__new__(ShardedDict)
        twin._shards = list(self._shards)
        twin._owned = set()
        twin._size = self._size
        self._owned = set()
        return twin

    def __getitem__(self, key):
        return self._shards[hash(key) & _MASK][key]

    def get(self, key, default=None):
        return self._shards[hash(key) & _MASK].get(key, default)

    def __contains__(self, key):
        return key in self._shards[hash(key) & _MASK]

    def __iter__(self):
        return itertools.chain.from_iterable(self._shards)

    def values(self):
        """An iterator (not a view) over the values, shard by shard."""
        return itertools.chain.from_iterable(
            [shard.values() for shard in self._shards])

    def items(self):
        """An iterator (not a view) over the items, shard by shard."""
        return itertools.chain.from_iterable(
            [shard.items() for shard in self._shards])

    @classmethod
    def of(cls, mapping):
        """A ShardedDict of ``mapping``'s items."""
        made = cls()
        shards = made._shards
        for key, value in mapping.items():
            shards[hash(key) & _MASK][key] = value
        made._size = sum(map(len, shards))
        return made

    def __len__(self):
        return self._size

    def _writable(self, key):
        index = hash(key) & _MASK
        owned = self._owned
        if owned is not None and index not in owned:
            self._shards[index] = dict(self._shards[index])
            owned.add(index)
        return self._shards[index]

    def __setitem__(self, key, value):
        shard = self._writable(key)
        if key not in shard:
            self._size += 1
        shard[key] = value

    def __delitem__(self, key):
        del self._writable(key)[key]
        self._size -= 1

    def setdefault(self, key, default=None):
        shard = self._writable(key)
        if key not in shard:
            self._size += 1
        return shard.setdefault(key, default)

    def pop(self, key, *default):
        shard = self._writable(key)
        if key in shard:
            self._size -= 1
        return shard.pop(key, *default)

    def __repr__(self):
        return 'ShardedDict(%r)' % dict(self)
