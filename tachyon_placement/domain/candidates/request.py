"""What a candidate request asks for: its groups, what applies to it as a
whole, and the deployment's settings (Placement's ``[placement]`` knobs,
the microversion's switches, the capabilities' say)."""
import dataclasses
import random

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
DEPTH_FIRST = 'depth-first'
BREADTH_FIRST = 'breadth-first'


@dataclasses.dataclass
class RequestGroup:
    """One request group; ``suffix`` '' is the unsuffixed group.

    ``required_traits`` and ``member_of`` are lists of sets: every set must
    be satisfied by any one of its members.
    """
    suffix: str = ''
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggs: set = dataclasses.field(default_factory=set)
    in_tree: str = None

    @property
    def use_same_provider(self):
        return bool(self.suffix)


@dataclasses.dataclass
class RequestWide:
    """The parameters that apply to the request as a whole."""
    limit: int = None
    group_policy: str = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    same_subtrees: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Settings:
    """``[placement]`` knobs and the microversion switch for nested trees.

    ``option_key``: ((rc, amount), ...) of a slot -> a sort key of
    provider nodes or None, to try some providers of a slot before others
    (the weighers' preference within a tree); None (or a None key) keeps
    Placement's order.

    ``refiner``: an object with ``accept(request)`` (False drops an
    allocation request) and ``ranks``/``rank(request)`` (when ``ranks``,
    each anchor's requests are ordered by rank, stably, in the places its
    requests had): a capability's say on whole candidates (PCI-NUMA
    affinity, topology/affinity.py); None changes nothing.

    ``summaries``: False leaves the provider summaries out (empty).
    """
    max_candidates: int = -1
    strategy: str = DEPTH_FIRST
    randomize: bool = False
    nested_aware: bool = True
    rng: random.Random = None
    option_key: object = None
    refiner: object = None
    # False: no provider summaries (a count of the candidates needs none).
    summaries: bool = True
