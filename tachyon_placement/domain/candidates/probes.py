"""Narrowing the search space before loading trees: pure planning of cheap
questions to the graph (the store runs them) whose answers bound the roots
a candidate can be anchored at."""
import dataclasses
import functools
import operator


@dataclasses.dataclass
class Probe:
    """A cheap question to the graph whose answer bounds the anchors.

    ``kind`` 'rc': providers with room for ``amount`` of ``rc`` (in the tree
    of ``root`` when set); 'traits': providers with any of ``names``
    (``roots_only``: root providers); 'aggs': providers in any of
    ``names``.  Each matching provider can anchor a candidate at its root
    and, when it shares, at the roots of its aggregate mates.
    """
    key: str
    kind: str
    group: int = None
    rc: str = None
    amount: int = 0
    root: str = None
    names: tuple = ()
    roots_only: bool = False

    @property
    def selective(self):
        return self.kind != 'rc'

    def as_params(self):
        return {'key': self.key, 'rc': self.rc, 'amount': self.amount,
                'root': self.root, 'names': list(self.names),
                'roots_only': self.roots_only}


class IdentityMemo:
    """Results of functions of immutable values (frozensets, tuples, the
    lists of a copy of the graph's indexes), by the identity of the
    arguments, which it holds (so their ids are not reused).  The sets a
    request intersects (the roots with room for a class, kept per copy
    of the graph and carried to the next while they do not change) are
    mostly the very same from request to request: ten thousand roots
    intersected anew each time was a twentieth of a scheduling loop's
    request."""

    def __init__(self, size=64):
        # Small: an entry may hold sets of every root of the cloud.  The
        # bench's four kinds of candidate request take 58 entries, 5.7 MiB
        # at 10,000 hosts; at 32 they evicted one another in turn.
        self._found = {}
        self._size = size

    def __call__(self, function, *arguments):
        key = (function,) + tuple(map(id, arguments))
        found = self._found.get(key)
        if found is None:
            if len(self._found) >= self._size:
                self._found.clear()
            found = self._found[key] = (arguments, function(*arguments))
        return found[1]


# Intersections and unions of frozensets of roots (see IdentityMemo).
SET_OPERATIONS = IdentityMemo()


def _frozen(*values):
    return all(type(value) is frozenset for value in values)


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What a probe matched: the roots of the matching providers, the
    roots the matching sharing providers reach beyond their own, and (for
    aggregate probes) the matching providers."""
    roots: frozenset = frozenset()
    reach: frozenset = frozenset()
    uuids: frozenset = frozenset()

    @property
    def anchors(self):
        if not self.reach:
            return self.roots
        if _frozen(self.roots, self.reach):
            return SET_OPERATIONS(operator.or_, self.roots, self.reach)
        return self.roots | self.reach


def plan_probes(groups, wide, in_tree_roots=None):
    in_tree_roots = in_tree_roots or {}
    probes = []
    for name in sorted(wide.root_required or ()):
        probes.append(Probe(key='root:%s' % name, kind='traits',
                            names=(name,), roots_only=True))
    for index, group in enumerate(groups):
        for number, any_of in enumerate(group.required_traits):
            probes.append(Probe(key='g%d:t%d' % (index, number),
                                kind='traits', group=index,
                                names=tuple(sorted(any_of))))
        for number, any_of in enumerate(group.member_of):
            probes.append(Probe(key='g%d:a%d' % (index, number),
                                kind='aggs', group=index,
                                names=tuple(sorted(any_of))))
        for rc, amount in group.resources.items():
            probes.append(Probe(key='g%d:r:%s' % (index, rc), kind='rc',
                                group=index, rc=rc, amount=amount,
                                root=in_tree_roots.get(index)))
    return probes


def group_anchors(probes, results):
    """{group index (None: request wide): anchors allowed by its probes}.

    A group without probes is absent (it does not narrow anything).
    """
    bounds = {}
    for probe in probes:
        result = results.get(probe.key, ProbeResult())
        # Root providers asked for by root_required anchor themselves only.
        anchors = result.roots if probe.roots_only else result.anchors
        if probe.group in bounds:
            # New sets, never in place: the probes' own sets (kept per
            # copy of the graph) are not copied (a request at 10,000 hosts
            # made a dozen copies of 10,000 roots).
            bounds[probe.group] = intersection(bounds[probe.group], anchors)
        else:
            bounds[probe.group] = anchors
    return bounds


def candidate_roots(probes, results, bounds=None):
    """The anchors every probed group allows, or None when no probe ran
    (``bounds``: group_anchors(probes, results) if already made)."""
    if bounds is None:
        bounds = group_anchors(probes, results)
    if not bounds:
        return None
    return functools.reduce(intersection, bounds.values())


def intersection(one, other):
    """one & other, remembered (SET_OPERATIONS) when both are frozen."""
    if _frozen(one, other):
        return SET_OPERATIONS(operator.and_, one, other)
    return one & other
