"""Allocation candidates: the search behind GET /allocation_candidates.

Pure functions, no I/O.  The caller (usecases/candidates.py, over the
process's copy of the graph, world/candidates.py) proves which roots can
anchor a candidate (``plan_probes``/``candidate_roots``), hands over a
``Snapshot`` with the trees of the sharing providers reaching them and a
function that loads more whole trees (providers with parent, root,
traits, aggregates and inventories including usage); ``find_candidates``
visits the roots in order, loading their trees in batches as it goes,
and finds the allocation requests exactly as Placement 16.0.0 defines
them:

* A request is a list of ``RequestGroup``.  The unsuffixed group may spread
  its resources over the providers of one tree plus the sharing providers
  (``MISC_SHARES_VIA_AGGREGATE``) associated with that tree by aggregate;
  its traits are satisfied collectively by the providers that supply its
  resources, its ``member_of`` by each provider or by the tree's root.
  A suffixed group is satisfied by one provider on its own.
* Every candidate is *anchored* at one root: a provider's own root, or for
  a sharing provider also the root of any tree that has a member in one of
  its aggregates.  All groups of a candidate share the anchor.
* ``group_policy=isolate`` puts suffixed groups on distinct providers,
  ``same_subtree`` requires one of the providers of the named groups to be
  an ancestor of all of them, ``root_required`` filters anchors, amounts
  that several groups take from one provider must fit together.

Placement builds each group's candidates independently and then walks the
cartesian product of them, which explodes on wide trees of identical
children.  Here every group (and every resource class of the unsuffixed
group) is a *slot*; per anchor a backtracking search assigns providers to
slots, most constrained slot first (by how many providers could ever hold
each, with nothing used: so a claim only takes candidates away and never
reorders the others, which GET /tachyon/capacity counts on), checking
capacity, isolation and subtree constraints as soon as they can fail, and
skipping a provider that is interchangeable with one that already failed at
the same point (same parent, traits, aggregates, inventory and usage, not
yet used by this candidate).  A slot whose choice constrains no other (its
classes asked for by no other slot, outside isolation and same_subtree) is
not searched again for each of its options: the deeper solutions are
replayed, and when every slot is such, the candidates are the product of
the options.  What a provider fits is memoized on it per slot signature,
across requests: it never changes.  Results stream per anchor, depth-first
or breadth-first, so a ``limit`` stops the work (and the loading) early.

``randomize_allocation_candidates``: Placement samples ``limit`` candidates
from everything it generated.  Here roots and choices are visited in random
order and, with a limit, roots are interleaved (one candidate each in turn)
so the answer spreads over hosts as a sample would, without generating
what will not be returned.

The package follows the search's phases; each module's docstring says
what it decides:

* ``request``: what a request asks for (groups, request-wide parameters,
  settings);
* ``probes``: cheap questions to the graph that bound the anchors, asked
  before any tree is loaded; ``checks``: Placement's order of failures;
* ``snapshot``: the providers a search sees (trees of frozen nodes);
* ``slots`` and ``plan``: what the search assigns, decided once per
  request; ``anchor_search``: the backtracking at one anchor;
* ``search``: ``find_candidates``, the steps from the roots to visit to
  the answer; ``results``: requests, summaries and shared pieces.

The rest of the code uses the names below, from this package.
"""
from tachyon_placement.domain.candidates.anchor_search import same_subtree
from tachyon_placement.domain.candidates.checks import check_request
from tachyon_placement.domain.candidates.checks import UnknownResourceClass
from tachyon_placement.domain.candidates.checks import UnknownTrait
from tachyon_placement.domain.candidates.probes import candidate_roots
from tachyon_placement.domain.candidates.probes import group_anchors
from tachyon_placement.domain.candidates.probes import IdentityMemo
from tachyon_placement.domain.candidates.probes import intersection
from tachyon_placement.domain.candidates.probes import plan_probes
from tachyon_placement.domain.candidates.probes import Probe
from tachyon_placement.domain.candidates.probes import ProbeResult
from tachyon_placement.domain.candidates.probes import SET_OPERATIONS
from tachyon_placement.domain.candidates.request import BREADTH_FIRST
from tachyon_placement.domain.candidates.request import DEPTH_FIRST
from tachyon_placement.domain.candidates.request import RequestGroup
from tachyon_placement.domain.candidates.request import RequestWide
from tachyon_placement.domain.candidates.request import Settings
from tachyon_placement.domain.candidates.request import SHARING_TRAIT
from tachyon_placement.domain.candidates.results import AllocationRequest
from tachyon_placement.domain.candidates.results import Candidates
from tachyon_placement.domain.candidates.results import empty
from tachyon_placement.domain.candidates.results import Run
from tachyon_placement.domain.candidates.results import summarize
from tachyon_placement.domain.candidates.search import find_candidates
from tachyon_placement.domain.candidates.snapshot import int_capacity
from tachyon_placement.domain.candidates.snapshot import ProviderNode
from tachyon_placement.domain.candidates.snapshot import Snapshot

__all__ = [
    'AllocationRequest', 'BREADTH_FIRST', 'Candidates', 'DEPTH_FIRST',
    'IdentityMemo', 'Probe', 'ProbeResult', 'ProviderNode', 'RequestGroup',
    'RequestWide', 'Run', 'SET_OPERATIONS', 'SHARING_TRAIT', 'Settings',
    'Snapshot', 'UnknownResourceClass', 'UnknownTrait', 'candidate_roots',
    'check_request', 'empty', 'find_candidates', 'group_anchors',
    'int_capacity', 'intersection', 'plan_probes', 'same_subtree',
    'summarize']
