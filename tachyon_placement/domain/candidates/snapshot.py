"""The providers a search sees: whole trees, indexed (``Snapshot``), of
compact nodes that never change (``ProviderNode``), so that what is found
about one can be remembered on it across requests."""
import collections
import itertools

from tachyon_placement.domain import sharded
from tachyon_placement.domain.candidates import request


def int_capacity(inventory):
    """The capacity Placement reports and checks merged amounts against."""
    return int((inventory.total - inventory.reserved)
               * inventory.allocation_ratio)


_SERIALS = itertools.count()


class ProviderNode:
    """A provider as the search sees it (``Snapshot`` fills in the rest).

    Compact: a worker holds one per provider of the cloud once candidate
    requests have visited every tree (227,641 in the bench's 50,000-host
    cloud), so what is equal is shared, not copied: the traits and
    aggregates sets and the inventories mapping are the ones given (the
    store's record, replaced, never changed, when its provider changes),
    the anchors of a tree's providers one set, and the lineage a tuple.
    """

    __slots__ = ('uuid', 'parent_uuid', 'root_uuid', 'seq', 'traits',
                 'aggregates', 'inventories', 'sharing', 'ancestors',
                 'sym_class', 'anchors', 'fit_memo', 'found_memo',
                 '_summary', '_tree_summaries', 'serial')

    def __init__(self, uuid, parent_uuid=None, root_uuid=None, seq=0,
                 traits=(), aggregates=(), inventories=None):
        self.uuid = uuid
        self.parent_uuid = parent_uuid
        self.root_uuid = root_uuid or uuid
        self.seq = seq if seq is not None else 0
        # frozenset() of a frozenset is that very set.
        self.traits = frozenset(traits)
        self.aggregates = frozenset(aggregates)
        # {resource class: models.Inventory, with ``used``}; kept as given
        # and never changed.
        self.inventories = inventories if inventories is not None else {}
        self.sharing = request.SHARING_TRAIT in self.traits
        # The uuids of the node and its ancestors up to the root (set by
        # the Snapshot that indexes it).
        self.ancestors = (uuid,)
        self.sym_class = None
        # Roots this provider can anchor a candidate at: its own root,
        # and for a sharing provider the roots it reaches (set by the
        # Snapshot that indexes it).
        self.anchors = None
        # {slot signature: does it fit}: the node never changes, so this
        # holds across requests.
        self.fit_memo = None
        # {search key: (serials of the sharing providers reaching it, a
        # Run of the allocation requests anchored here)}, on roots
        # (see find_candidates): they never change either.
        self.found_memo = None
        # Unique for the process's life: names this node in other nodes'
        # memos without a reference (no cycle among frozen nodes).
        self.serial = next(_SERIALS)
        # Its ProviderSummary, made on first use (see summarize).  Nothing
        # a node holds refers back to a node: nodes are frozen out of the
        # garbage collector's sight (world/records.py settle), so one in
        # a reference cycle would never be freed.
        self._summary = None
        # On roots: a Run of the summaries of the whole tree (made on first
        # use; a changed tree is made of new nodes).
        self._tree_summaries = None

    def room(self, rc):
        """(What is left to allocate of ``rc``, its max_unit), for the
        amounts several slots merge on this provider (computed, not
        kept: a dict of them per node was the largest part of a node)."""
        inventory = self.inventories[rc]
        return int_capacity(inventory) - inventory.used, inventory.max_unit

    def __repr__(self):
        return 'ProviderNode(%s)' % self.uuid


class Snapshot:
    """Whole provider trees, indexed for the search.

    ``mates``: {sharing provider uuid: roots of the providers that share an
    aggregate with it}, as the store knows it for the whole cloud; trees can
    then be added as the search needs them.  Without it the snapshot is the
    whole world and the mates are derived from the loaded aggregates.
    """

    def __init__(self, nodes=(), mates=None):
        # Sharded: see extend.
        self.by_uuid = sharded.ShardedDict()
        self.trees = sharded.ShardedDict()  # root -> [node] in creation order
        # root uuid -> {resource class: the tree's providers of it}
        self.tree_classes = sharded.ShardedDict()
        self.sharing_nodes = []
        self._mates = mates
        # root uuid -> sharing nodes reaching it (see reaching)
        self._reaching = None
        self.add(nodes)
        if mates is None:
            members = collections.defaultdict(set)
            for node in self.by_uuid.values():
                for agg in node.aggregates:
                    members[agg].add(node.root_uuid)
            for node in self.sharing_nodes:
                node.anchors = node.anchors.union(
                    *(members[agg] for agg in node.aggregates))

    @classmethod
    def extend(cls, earlier, dropped, nodes, mates):
        """A snapshot of the trees the snapshot ``earlier`` indexed, less
        those of the roots ``dropped``, plus ``nodes`` (whole trees, none
        of them among the trees kept).

        The trees kept are taken as they are (shared, never touched
        again): a kept sharing provider's anchors, set from the mates it
        had, must still be right (drop its tree when its reach changed).
        """
        snapshot = cls.__new__(cls)
        snapshot._mates = mates
        # Copies of the earlier indexes less the trees not taken: under a
        # stream of writes a new snapshot is made per write that a
        # candidate request sees.  Re-indexing every kept node in Python
        # made that O(cloud) in the interpreter, and even C-level copies of
        # whole dicts were a tenth of a scheduling loop's request at 10,000
        # hosts: the indexes are sharded, and a copy copies only the shards
        # it changes.
        snapshot.by_uuid = earlier.by_uuid.copy()
        snapshot.trees = earlier.trees.copy()
        snapshot.tree_classes = earlier.tree_classes.copy()
        snapshot.sharing_nodes = [node for node in earlier.sharing_nodes
                                  if node.root_uuid not in dropped]
        # Which sharing providers reach which roots: the same unless one
        # went or came (add forgets it then).
        snapshot._reaching = (
            earlier._reaching
            if len(snapshot.sharing_nodes) == len(earlier.sharing_nodes)
            else None)
        for root in dropped:
            for node in snapshot.trees.pop(root, ()):
                if snapshot.by_uuid.get(node.uuid) is node:
                    del snapshot.by_uuid[node.uuid]
            snapshot.tree_classes.pop(root, None)
        snapshot.add(nodes)
        return snapshot

    def add(self, nodes):
        """Index whole trees (parents before children or not: any order)."""
        touched = set()
        for node in nodes:
            if node.uuid in self.by_uuid:
                continue
            self.by_uuid[node.uuid] = node
            self.trees.setdefault(node.root_uuid, []).append(node)
            touched.add(node.root_uuid)
            if node.sharing:
                self.sharing_nodes.append(node)
                self._reaching = None
        for root in touched:
            tree = self.trees[root]
            tree.sort(key=lambda node: (node.seq, node.uuid))
            by_class = {}
            for node in tree:
                for rc in node.inventories:
                    by_class.setdefault(rc, []).append(node)
            if root in self.by_uuid:
                self.tree_classes[root] = by_class
            parents = {node.parent_uuid for node in tree}
            own_root = frozenset((root,))
            for node in tree:
                if node.anchors is None:
                    node.anchors = own_root
                    if node.sharing and self._mates is not None:
                        node.anchors = own_root.union(
                            self._mates.get(node.uuid, ()))
                node.ancestors = self._lineage(node)
                node.sym_class = None
                if node.parent_uuid and node.uuid not in parents:
                    # Interchangeable leaves: swapping two of these (while
                    # the candidate being built uses neither) maps every
                    # solution onto another one.
                    node.sym_class = (
                        node.parent_uuid, node.traits, node.aggregates,
                        tuple(sorted(
                            (rc, inv.total, inv.reserved, inv.min_unit,
                             inv.max_unit, inv.step_size,
                             inv.allocation_ratio, inv.used)
                            for rc, inv in node.inventories.items())))
        self.sharing_nodes.sort(key=lambda node: (node.seq, node.uuid))

    def _lineage(self, node):
        """(node, its parent, ..., its root) as uuids."""
        seen = []
        while node is not None and node.uuid not in seen:
            seen.append(node.uuid)
            node = self.by_uuid.get(node.parent_uuid)
        return tuple(seen)

    def root_key(self, root_uuid):
        root = self.by_uuid.get(root_uuid)
        return (root.seq if root is not None else 0, root_uuid)

    @property
    def providers(self):
        return sorted(self.by_uuid.values(),
                      key=lambda node: (node.seq, node.uuid))

    def reaching(self, anchor):
        """The sharing providers of other trees that reach ``anchor``."""
        if self._reaching is None:
            # Indexed once per snapshot from the few sharing providers'
            # side: each anchor asking them all was O(anchors x sharing).
            reaching = {}
            for node in self.sharing_nodes:
                for root in node.anchors:
                    if root != node.root_uuid:
                        reaching.setdefault(root, []).append(node)
            self._reaching = reaching
        return self._reaching.get(anchor, ())

    def candidates_at(self, anchor, rc=None):
        """The providers that can serve a candidate anchored at
        ``anchor``: its tree and the sharing providers reaching it; those
        with an inventory of ``rc`` when given."""
        reaching = self.reaching(anchor)
        if rc is None:
            nodes = self.trees.get(anchor, [])
        else:
            nodes = self.tree_classes.get(anchor, {}).get(rc, [])
            if reaching:
                reaching = [node for node in reaching
                            if rc in node.inventories]
        if not reaching:
            return nodes
        return sorted(nodes + reaching, key=lambda node: (node.seq,
                                                          node.uuid))

    def __contains__(self, uuid):
        return uuid in self.by_uuid
