"""What a search answers: allocation requests, provider summaries, and the
pieces a document is made of (``Run``: what a document always lists
together, made once and shared)."""
import dataclasses

from tachyon_placement.domain.candidates import snapshot as snapshots


# Slots: a root remembers the requests found at it (found_memo), so a
# worker holds many.
@dataclasses.dataclass(slots=True)
class AllocationRequest:
    anchor: str
    # {rp_uuid: {resource_class: amount}}, in request group order
    allocations: dict
    # {suffix: [rp_uuid, ...]}, in request group order
    mappings: dict
    # The roots of the providers in ``allocations`` (for the summaries).
    roots: frozenset = dataclasses.field(default=frozenset(), compare=False,
                                         repr=False)


class ProviderSummary:
    """``provider``: the SummarizedProvider; ``resources``:
    {resource_class: {'capacity': int, 'used': int}}; ``traits``: [name].
    Made once per node (a node never changes) and shared by every
    candidate document that shows it: a document shows thousands.

    ``resources`` and ``traits`` are made when asked for, from the node's
    inventories and traits (shared, not copied): the renderer keeps each
    summary's JSON per shape (SummarizedProvider.encoded, Run.encoded) and
    asks again only for a shape it has not seen, while the dicts kept for
    every provider a document ever showed were 3 of the 36 MiB a worker
    kept after the bench's reads at 2,000 hosts.
    """

    __slots__ = ('provider', '_inventories', '_traits')

    def __init__(self, provider, inventories, traits):
        self.provider = provider
        self._inventories = inventories
        self._traits = traits

    @property
    def resources(self):
        return {rc: {'capacity': snapshots.int_capacity(inventory),
                     'used': inventory.used}
                for rc, inventory in sorted(self._inventories.items())}

    @property
    def traits(self):
        return sorted(self._traits,
                      key=lambda name: (name.startswith('CUSTOM_'), name))


class SummarizedProvider:
    """What a provider summary shows of its node (not the node itself:
    the node holds its summary, and must not be in a reference cycle), and
    ``encoded``: {render shape: the summary as JSON}, for the API's
    renderer."""

    __slots__ = ('uuid', 'parent_uuid', 'root_uuid', 'encoded')

    def __init__(self, node):
        self.uuid = node.uuid
        self.parent_uuid = node.parent_uuid
        self.root_uuid = node.root_uuid
        self.encoded = None


class Run:
    """Items that a candidate document always lists together, in this
    order: the requests a search remembered at an anchor, or the summaries
    of a whole tree.  Made once and shared by every document that lists
    them (never changed): ``encoded`` is {render shape: the items as JSON,
    joined}, for the API's renderer, so that a document of a thousand
    requests joins a hundred pieces encoded before.

    ``roots``: the roots the items' providers belong to; ``sharing_only``:
    whether an item (a request) is made of sharing providers alone.
    ``derived``: what another room computes from the items alone (the
    providers they name do not change while the Run lives: a changed tree
    or sharing provider makes new Runs), kept as long as they are, e.g.
    how many times the requests fit (capacity/counting.py).
    """

    __slots__ = ('items', 'roots', 'sharing_only', 'encoded', 'derived')

    def __init__(self, items, roots=frozenset(), sharing_only=False):
        self.items = items
        self.roots = roots
        self.sharing_only = sharing_only
        self.encoded = None
        self.derived = None


@dataclasses.dataclass
class Candidates:
    allocation_requests: list
    provider_summaries: list
    # The same lists in pieces, in order: Runs and single items (None:
    # item by item).
    request_pieces: list = None
    summary_pieces: list = None


def empty():
    return Candidates([], [])


def nested(snapshot, request):
    roots = [snapshot.by_uuid[rp].root_uuid for rp in request.allocations]
    return len(roots) != len(set(roots))


def summaries(snapshot, pieces, everything, nested_aware):
    """The provider summaries of the requests in ``pieces`` (Runs and
    single requests), root by root (oldest first), and the same in pieces:
    each tree's summaries as one Run, when every provider of the tree is
    listed (nested-aware microversions); None otherwise."""
    roots = set().union(*[piece.roots for piece in pieces])
    used = None
    if not nested_aware:
        used = {rp for request in everything for rp in request.allocations}
    summaries = []
    summary_pieces = [] if used is None else None
    for root in sorted(roots, key=snapshot.root_key):
        if used is None:
            run = _tree_summaries(snapshot, root)
            summaries.extend(run.items)
            summary_pieces.append(run)
        else:
            summaries.extend([node._summary or summarize(node)
                              for node in snapshot.trees[root]
                              if node.uuid in used])
    return summaries, summary_pieces


def _tree_summaries(snapshot, root):
    """A Run of the summaries of the tree of ``root``, remembered on its
    root node."""
    root_node = snapshot.by_uuid.get(root)
    if root_node is not None and root_node._tree_summaries is not None:
        return root_node._tree_summaries
    run = Run(tuple([node._summary or summarize(node)
                     for node in snapshot.trees[root]]))
    if root_node is not None:
        root_node._tree_summaries = run
    return run


def summarize(node):
    """The node's ProviderSummary, made once (a node never changes)."""
    summary = node._summary
    if summary is None:
        summary = node._summary = ProviderSummary(
            SummarizedProvider(node), node.inventories, node.traits)
    return summary
